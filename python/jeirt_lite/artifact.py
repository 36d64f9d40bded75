"""The router artifact: a folder of plain, inspectable files.

    router.json        manifest: format version, d, LLM names, encoder description, file hashes, training
                       summary and metrics
    tokenizer.json     Hugging Face `tokenizers` file
    encoder.onnx       input_ids + attention_mask (int64) in, question vectors (N, d) float32 out
    llms.safetensors   the (K, d) float32 table of LLM vectors, tensor name "llm_vectors"
    reference.safetensors  optional: "reference_directions" (R, d) float32, unit directions of a sample of training
                       questions around their mean "reference_center" (d,), with the manifest's "alignment" block
                       (threshold set on validation questions); routers without it have no alignment scores
    corrections.safetensors  optional: onboarded LLMs' logit corrections on the encoder's features (the graph's
                       second output, encoder.feature_output); see _feature_offsets.py

Loading checks every file against the manifest and names the file at fault; saving writes a temporary folder and
renames it into place, so a reader never sees half a router.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ._errors import JeirtError
from ._feature_offsets import CORRECTIONS_FILE, FeatureCorrections, parse_corrections
from ._llm_params import parse_calibration, parse_costs

FORMAT_NAME = "jeirt-lite-router"
FORMAT_VERSION = 1
MANIFEST_FILE = "router.json"
TOKENIZER_FILE = "tokenizer.json"
ENCODER_FILE = "encoder.onnx"
LLMS_FILE = "llms.safetensors"
LLM_TENSOR = "llm_vectors"
REFERENCE_FILE = "reference.safetensors"
STATIC_ENCODER_FILE = "static_encoder.safetensors"
REFERENCE_TENSOR = "reference_directions"
CENTER_TENSOR = "reference_center"

# Encoder fields the runtime relies on; anything else in the encoder block is descriptive.
REQUIRED_ENCODER_FIELDS = ("name", "max_seq_length", "input_names", "output_name")

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Artifact:
    """A validated router folder: the manifest and the LLM table, with paths to the tokenizer and encoder."""

    path: Path
    manifest: Mapping[str, Any]
    llm_names: tuple[str, ...]
    llm_vectors: np.ndarray  # (K, d) float32, C-contiguous, read-only
    reference_directions: Optional[np.ndarray] = None  # (R, d) float32, read-only; None when the router has none
    reference_center: Optional[np.ndarray] = None  # (d,) float32: the mean training question vector
    corrections: Optional[FeatureCorrections] = None  # onboarded LLMs' feature corrections; None when none

    @property
    def dim(self) -> int:
        return int(self.llm_vectors.shape[1])

    @property
    def encoder(self) -> Mapping[str, Any]:
        encoder: Mapping[str, Any] = self.manifest["encoder"]
        return encoder

    @property
    def tokenizer_path(self) -> Path:
        return self.path / str(self.manifest["files"]["tokenizer"]["path"])

    @property
    def encoder_path(self) -> Path:
        return self.path / str(self.manifest["files"]["encoder"]["path"])

    @property
    def static_encoder_path(self) -> Optional[Path]:
        """The static routers' token table and adapter for the Rust fast path (jeirt_lite._static_path), if any."""
        entry = self.manifest["files"].get("static_encoder")
        return None if entry is None else self.path / str(entry["path"])


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_version() -> str:
    from . import __version__

    return __version__


def validate_llm_table(llm_names: Sequence[str], llm_vectors: np.ndarray, where: str) -> np.ndarray:
    """Check names and table agree; return the table as C-contiguous float32."""
    names = list(llm_names)
    if not names:
        raise JeirtError(f"{where}: a router needs at least one LLM")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            raise JeirtError(f"{where}: LLM name {i} must be a non-empty string, got {name!r}")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise JeirtError(f"{where}: LLM name {name!r} appears twice (rows {seen[name]} and {i})")
        seen[name] = i
    vectors = np.asarray(llm_vectors)
    if vectors.ndim != 2:
        raise JeirtError(f"{where}: LLM table must be 2-D (K, d), got shape {vectors.shape}")
    if vectors.shape[0] != len(names):
        raise JeirtError(f"{where}: LLM table has {vectors.shape[0]} rows but there are {len(names)} LLM names")
    if vectors.shape[1] < 1:
        raise JeirtError(f"{where}: LLM table has dimension 0")
    if not np.issubdtype(vectors.dtype, np.floating):
        raise JeirtError(f"{where}: LLM table must be floating point, got {vectors.dtype}")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    bad_rows = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad_rows.size:
        raise JeirtError(f"{where}: LLM row {int(bad_rows[0])} ({names[bad_rows[0]]!r}) contains NaN or inf")
    return vectors


def _json_safe(value: Any) -> Any:
    """Metrics may carry numpy scalars or NaN: store plain JSON (NaN as null) so any reader can parse it."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def save_artifact(
    path: PathLike,
    *,
    llm_names: Sequence[str],
    llm_vectors: np.ndarray,
    tokenizer_json: PathLike,
    encoder_onnx: PathLike,
    encoder: Mapping[str, Any],
    training: Optional[Mapping[str, Any]] = None,
    metrics: Optional[Mapping[str, Any]] = None,
    label: Optional[str] = None,
    extra: Optional[Mapping[str, Any]] = None,
    overwrite: bool = False,
    reference_directions: Optional[np.ndarray] = None,
    alignment: Optional[Mapping[str, Any]] = None,
    reference_center: Optional[np.ndarray] = None,
    static_encoder: Optional[PathLike] = None,
    corrections: Optional[FeatureCorrections] = None,
) -> Path:
    """Write a router folder atomically and return its path.

    The tokenizer and encoder files are copied in; the LLM table is written as safetensors; the manifest records
    the sha256 of each file. Everything goes to a temporary sibling folder first and is renamed into place at the
    end, so an interrupted save leaves no half router at `path`.

    Args:
        path: the folder to create.
        llm_names: one unique name per row of `llm_vectors`.
        llm_vectors: (K, d) float table.
        tokenizer_json: a Hugging Face tokenizers file.
        encoder_onnx: ONNX graph mapping `encoder["input_names"]` to `encoder["output_name"]`, shape (N, d).
        encoder: description of the encoder; needs name, max_seq_length, input_names, output_name.
        training: summary of the training run (data, split, hyper-parameters).
        metrics: evaluation results (test metrics).
        label: a human-readable note, e.g. that a router is a placeholder.
        extra: further top-level manifest fields (later features such as calibration or costs).
        overwrite: replace an existing folder at `path` (the old one is removed only after the new one is in place).
        reference_directions: optional (R, d) unit directions of training questions, for alignment scores.
        alignment: with `reference_directions`: at least {"threshold": float}, the in-distribution cut-off.
        reference_center: (d,) mean training question vector the directions are taken around (default zeros).
        static_encoder: a static router's static_encoder.safetensors (token table and adapter, the same
            computation as `encoder_onnx`), copied in for the Rust fast path.
        corrections: onboarded LLMs' feature corrections (their LLMs must be in `llm_names`).
    """
    target = Path(path)
    vectors = validate_llm_table(llm_names, llm_vectors, str(target))
    missing = [field for field in REQUIRED_ENCODER_FIELDS if field not in encoder]
    if missing:
        raise JeirtError(f"{target}: encoder description lacks {', '.join(missing)}")
    sources = (tokenizer_json, encoder_onnx) + ((static_encoder,) if static_encoder is not None else ())
    for source in map(Path, sources):
        if not source.is_file():
            raise JeirtError(f"{target}: cannot save, {source} does not exist")
    if target.exists() and not overwrite:
        raise JeirtError(f"{target} already exists (pass overwrite=True to replace it)")
    reference = center = None
    if reference_directions is not None or alignment is not None:
        reference = validate_reference(reference_directions, alignment, vectors.shape[1], str(target))
        center = validate_center(reference_center, vectors.shape[1], str(target))

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        shutil.copyfile(tokenizer_json, staging / TOKENIZER_FILE)
        shutil.copyfile(encoder_onnx, staging / ENCODER_FILE)
        _write_llm_table(staging / LLMS_FILE, vectors)
        manifest: dict[str, Any] = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "package_version": package_version(),
            "label": label,
            "dim": int(vectors.shape[1]),
            "llms": list(llm_names),
            "encoder": dict(encoder),
            "files": {
                role: {"path": name, "sha256": sha256_of(staging / name)}
                for role, name in (("tokenizer", TOKENIZER_FILE), ("encoder", ENCODER_FILE), ("llms", LLMS_FILE))
            },
            "training": dict(training) if training is not None else None,
            "metrics": dict(metrics) if metrics is not None else None,
        }
        if static_encoder is not None:
            shutil.copyfile(static_encoder, staging / STATIC_ENCODER_FILE)
            manifest["files"]["static_encoder"] = {
                "path": STATIC_ENCODER_FILE, "sha256": sha256_of(staging / STATIC_ENCODER_FILE)
            }
        if reference is not None and center is not None:
            _write_tensors(staging / REFERENCE_FILE, {REFERENCE_TENSOR: reference, CENTER_TENSOR: center})
            manifest["files"]["reference"] = {"path": REFERENCE_FILE, "sha256": sha256_of(staging / REFERENCE_FILE)}
            manifest["alignment"] = dict(alignment or {}, n_reference=int(reference.shape[0]))
        _write_corrections(staging, manifest, corrections)
        for key, value in (extra or {}).items():
            if key in manifest:
                raise JeirtError(f"{target}: extra manifest field {key!r} would overwrite a standard field")
            manifest[key] = value
        with open(staging / MANIFEST_FILE, "w", encoding="utf-8") as handle:
            json.dump(_json_safe(manifest), handle, indent=2, allow_nan=False)
            handle.write("\n")
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _write_corrections(staging: Path, manifest: dict[str, Any], corrections: Optional[FeatureCorrections]) -> None:
    if corrections is not None:
        _write_tensors(staging / CORRECTIONS_FILE, corrections.tensors())
        manifest["files"]["corrections"] = {"path": CORRECTIONS_FILE, "sha256": sha256_of(staging / CORRECTIONS_FILE)}
        manifest["corrections"] = corrections.manifest_block()


def validate_reference(
    reference: Optional[np.ndarray], alignment: Optional[Mapping[str, Any]], dim: int, where: str
) -> np.ndarray:
    """Check the optional reference directions and their alignment block; return them as float32."""
    if reference is None or alignment is None:
        raise JeirtError(f"{where}: reference directions and the alignment block (threshold) go together")
    array = np.asarray(reference)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] != dim:
        raise JeirtError(f"{where}: reference directions must have shape (R >= 1, {dim}), got {array.shape}")
    if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise JeirtError(f"{where}: reference directions must be finite floats")
    threshold = alignment.get("threshold") if isinstance(alignment, Mapping) else None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise JeirtError(f"{where}: alignment.threshold must be a finite number, got {threshold!r}")
    return np.ascontiguousarray(array, dtype=np.float32)


def validate_center(center: Optional[np.ndarray], dim: int, where: str) -> np.ndarray:
    if center is None:
        return np.zeros(dim, dtype=np.float32)
    array = np.asarray(center)
    if array.shape != (dim,) or not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise JeirtError(f"{where}: reference center must be {dim} finite floats, got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _write_llm_table(path: Path, vectors: np.ndarray) -> None:
    _write_tensors(path, {LLM_TENSOR: vectors})


def _write_tensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    from safetensors.numpy import save

    # Serialise to bytes and write with open(): safetensors' save_file creates the file owner-only (0600), which
    # would make a router installed system-wide unreadable to other users.
    path.write_bytes(save(tensors))


def _move_into_place(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    # A folder cannot be atomically swapped for another; move the old one aside first so that at every moment
    # `target` is either the complete old router or the complete new one (or briefly absent, never half).
    retired = target.parent / f".{target.name}.old-{uuid.uuid4().hex}"
    os.replace(target, retired)
    os.replace(staging, target)
    shutil.rmtree(retired, ignore_errors=True)


def load_artifact(path: PathLike) -> Artifact:
    """Read and validate a router folder; every problem names the file at fault."""
    folder = Path(path)
    if not folder.is_dir():
        raise JeirtError(f"{folder}: no router folder here")
    manifest = _read_manifest(folder / MANIFEST_FILE)
    files = manifest["files"]
    optional = tuple(role for role in ("reference", "static_encoder", "corrections") if role in files)
    roles = ("tokenizer", "encoder", "llms") + optional
    for role in roles:
        entry = files.get(role)
        if not isinstance(entry, Mapping) or "path" not in entry or "sha256" not in entry:
            raise JeirtError(f"{folder / MANIFEST_FILE}: files.{role} must give a path and a sha256")
        file_path = folder / str(entry["path"])
        if not file_path.is_file():
            raise JeirtError(f"{file_path}: missing (router.json lists it as the {role} file)")
        actual = sha256_of(file_path)
        if actual != entry["sha256"]:
            raise JeirtError(
                f"{file_path}: sha256 {actual[:12]}… does not match router.json ({str(entry['sha256'])[:12]}…); "
                "the file is corrupt or belongs to another router"
            )
    llm_path = folder / str(files["llms"]["path"])
    vectors = _read_llm_table(llm_path)
    names = manifest["llms"]
    vectors = validate_llm_table(names, vectors, str(llm_path))
    if vectors.shape[1] != manifest["dim"]:
        raise JeirtError(f"{llm_path}: LLM vectors have dimension {vectors.shape[1]}, router.json says {manifest['dim']}")
    vectors.setflags(write=False)
    # Per-LLM fields are checked here so that a bad router fails at load, naming router.json.
    parse_calibration(manifest, len(names), str(folder / MANIFEST_FILE))
    parse_costs(manifest, names, str(folder / MANIFEST_FILE))
    reference = center = None
    if "reference" in files or "alignment" in manifest:
        if "reference" not in files:
            raise JeirtError(f"{folder / MANIFEST_FILE}: has an alignment block but files.reference is missing")
        ref_path = folder / str(files["reference"]["path"])
        table = _read_tensor(ref_path, REFERENCE_TENSOR)
        reference = validate_reference(table, manifest.get("alignment"), vectors.shape[1], str(ref_path))
        center = validate_center(_read_tensor(ref_path, CENTER_TENSOR), vectors.shape[1], str(ref_path))
        reference.setflags(write=False)
        center.setflags(write=False)
    return Artifact(
        path=folder, manifest=manifest, llm_names=tuple(names), llm_vectors=vectors, reference_directions=reference,
        reference_center=center, corrections=_read_corrections(folder, manifest),
    )


def _read_corrections(folder: Path, manifest: Mapping[str, Any]) -> Optional[FeatureCorrections]:
    files = manifest["files"]
    if "corrections" not in files and "corrections" not in manifest:
        return None
    if "corrections" not in files:
        raise JeirtError(f"{folder / MANIFEST_FILE}: has a corrections block but files.corrections is missing")
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    path = folder / str(files["corrections"]["path"])
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err
    feature_dim = manifest["encoder"].get("feature_dim") if manifest["encoder"].get("feature_output") else None
    return parse_corrections(manifest.get("corrections"), tensors, manifest["llms"], feature_dim, str(path))


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise JeirtError(f"{path}: missing; a router folder needs its manifest")
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise JeirtError(f"{path}: not readable JSON ({err})") from err
    if not isinstance(manifest, dict):
        raise JeirtError(f"{path}: must hold a JSON object")
    if manifest.get("format") != FORMAT_NAME:
        raise JeirtError(f"{path}: format is {manifest.get('format')!r}, expected {FORMAT_NAME!r}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise JeirtError(
            f"{path}: format_version {version!r} is not supported by jeirt-lite {package_version()} "
            f"(supports 1..{FORMAT_VERSION})"
        )
    for field, kind in (("dim", int), ("llms", list), ("encoder", dict), ("files", dict)):
        if not isinstance(manifest.get(field), kind):
            raise JeirtError(f"{path}: field {field!r} must be a {kind.__name__}")
    if manifest["dim"] < 1:
        raise JeirtError(f"{path}: dim must be positive, got {manifest['dim']}")
    missing = [field for field in REQUIRED_ENCODER_FIELDS if field not in manifest["encoder"]]
    if missing:
        raise JeirtError(f"{path}: encoder lacks {', '.join(missing)}")
    max_length = manifest["encoder"]["max_seq_length"]
    if not isinstance(max_length, int) or max_length < 1:
        raise JeirtError(f"{path}: encoder.max_seq_length must be a positive integer, got {max_length!r}")
    return manifest


def _read_llm_table(path: Path) -> np.ndarray:
    return _read_tensor(path, LLM_TENSOR)


def _read_tensor(path: Path, name: str) -> np.ndarray:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err
    if name not in tensors:
        raise JeirtError(f"{path}: has no tensor {name!r} (found {sorted(tensors)})")
    table = tensors[name]
    if table.dtype != np.float32:
        raise JeirtError(f"{path}: {name} must be float32, got {table.dtype}")
    return table
