"""The router artifact: a folder of plain, inspectable files.

    router.json        manifest: format version, d, LLM names, encoder description, file hashes, training
                       summary and metrics
    tokenizer.json     Hugging Face `tokenizers` file
    encoder.onnx       input_ids + attention_mask (int64) in, question vectors (N, d) float32 out; a static
                       router's graph reads its table and adapter from static_encoder.safetensors (ONNX external
                       data, checked against that file's header: _onnx_external.py)
    llms.safetensors   the (K, d) float32 table of LLM vectors, tensor name "llm_vectors"
    reference.safetensors  optional: "reference_directions" (R, d) float32, unit directions of a sample of training
                       questions around their mean "reference_center" (d,), with the manifest's "alignment" block
                       (threshold set on validation questions; _reference_tables.py); routers without it have no
                       alignment scores
    corrections.safetensors  optional: onboarded LLMs' logit corrections on the encoder's features (the graph's
                       second output, encoder.feature_output); see _feature_offsets.py
    training_questions.npy  optional: sorted uint64 hashes of the question texts the router learned from
                       (_training_questions.py); add_llm reads it
    neighbours.safetensors  optional: the training questions' features and answers, whose similarity-weighted
                       vote joins each LLM's logit (manifest block "neighbours"; _neighbours.py)

Loading checks every file against the manifest and names the file at fault; saving writes a temporary folder and
renames it into place, so a reader never sees half a router. router.json is bound to the tables: llms.safetensors'
metadata holds the LLM names in table order and a digest of router.json's content (`manifest.content_digest`), so
a router.json edited after saving (two names swapped, encoder inputs swapped, alignment settings changed) or put
next to another router's tables is refused. File paths are plain names inside the folder (no directories, `..`,
absolute paths or symlinks leading out), and so are the graph's external data references. The typed manifest is
`manifest.Manifest`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ._artifact_files import (
    DIGEST_KEY,
    NAMES_KEY,
    check_binding,
    read_manifest_json,
    read_metadata,
    read_tensors,
    write_tensors,
)

# Re-exported with the folder's other file names, and for every writer of a router folder.
from ._artifact_files import MANIFEST_FILE as MANIFEST_FILE
from ._artifact_files import refuse_existing as refuse_existing
from ._errors import JeirtError
from ._feature_offsets import CORRECTIONS_FILE, FeatureCorrections
from ._io.outputs import (
    HIDDEN_WRITE_KINDS,
    WRITING_KIND,
    hidden_beside,
    move_into_place,
    remove_stale_folders,
)
from ._manifest import (
    FORMAT_NAME,
    FORMAT_VERSION,
    STATIC_ROLE,
    EncoderSpec,
    Manifest,
    check_llm_names,
    content_digest,
    json_safe,
    names_in_order,
    parse_manifest,
)
from ._neighbours import NEIGHBOURS_FILE, NEIGHBOURS_ROLE, NeighbourVotes
from ._onnx_external import check_external_data
from ._optional_tables import read_corrections, read_neighbours
from ._reference_tables import CENTER_TENSOR, REFERENCE_TENSOR, read_reference, saved_reference
from ._training_questions import TRAINING_QUESTIONS_FILE, TRAINING_QUESTIONS_ROLE, read_record, write_record

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Artifact",
    "Manifest",
    "load_artifact",
    "read_manifest",
    "save_artifact",
]

TOKENIZER_FILE = "tokenizer.json"
ENCODER_FILE = "encoder.onnx"
LLMS_FILE = "llms.safetensors"
LLM_TENSOR = "llm_vectors"
REFERENCE_FILE = "reference.safetensors"
STATIC_ENCODER_FILE = "static_encoder.safetensors"

# Fields save_artifact writes itself; `extra` may not set them.
_SAVED_FIELDS = (
    "format", "format_version", "package_version", "label", "dim", "llms", "encoder", "files", "training",
    "metrics", "alignment", "corrections", "neighbours",
)

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Artifact:
    """A validated router folder: the manifest and the LLM table, with paths to the tokenizer and encoder."""

    path: Path
    manifest: Manifest
    llm_vectors: np.ndarray  # (K, d) float32, C-contiguous, read-only
    reference_directions: Optional[np.ndarray] = None  # (R, d) float32, read-only; None when the router has none
    reference_center: Optional[np.ndarray] = None  # (d,) float32: the mean training question vector
    corrections: Optional[FeatureCorrections] = None  # onboarded LLMs' feature corrections; None when none
    training_questions: Optional[np.ndarray] = None  # sorted uint64 hashes of its training questions; None: unknown
    neighbours: Optional[NeighbourVotes] = None  # its training questions' answers, voted by similarity; None: none

    @property
    def llm_names(self) -> tuple[str, ...]:
        return self.manifest.llms

    @property
    def dim(self) -> int:
        return int(self.llm_vectors.shape[1])

    @property
    def encoder(self) -> EncoderSpec:
        return self.manifest.encoder

    @property
    def tokenizer_path(self) -> Path:
        return self.path / self.manifest.files["tokenizer"].path

    @property
    def encoder_path(self) -> Path:
        return self.path / self.manifest.files["encoder"].path

    @property
    def static_encoder_path(self) -> Optional[Path]:
        """The static routers' token table and adapter for the Rust fast path (jeirt_lite._static_path), if any."""
        entry = self.manifest.files.get(STATIC_ROLE)
        return None if entry is None else self.path / entry.path


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
    names = check_llm_names(list(llm_names), where)
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


def save_artifact(
    path: PathLike,
    *,
    llm_names: Sequence[str],
    llm_vectors: np.ndarray,
    tokenizer_json: PathLike,
    encoder_onnx: PathLike,
    encoder: Union[Mapping[str, Any], EncoderSpec],
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
    training_questions: Optional[np.ndarray] = None,
    neighbours: Optional[NeighbourVotes] = None,
) -> Path:
    """Write a router folder atomically and return its path.

    The tokenizer and encoder files are copied in; the LLM table is written as safetensors with the LLM names
    and router.json's digest in its metadata; the manifest records the sha256 of each file. Everything goes to a
    temporary sibling folder first and is renamed into place at the end, so an interrupted save leaves no half
    router at `path`.

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
        extra: further top-level manifest fields (calibration, costs, onboarded, ...).
        overwrite: replace an existing folder at `path` (the old one is removed only after the new one is in place).
        reference_directions: optional (R, d) unit directions of training questions, for alignment scores.
        alignment: with `reference_directions`: at least {"threshold": float}, the in-distribution cut-off
            (optional "top_k", default DEFAULT_ALIGNMENT_TOP_K).
        reference_center: (d,) mean training question vector the directions are taken around (default zeros).
        static_encoder: a static router's static_encoder.safetensors (token table and adapter, the same
            computation as `encoder_onnx`), copied in for the Rust fast path.
        corrections: onboarded LLMs' feature corrections (their LLMs must be in `llm_names`).
        training_questions: the hashes of the questions it learned from (`_training_questions.training_question_set`).
        neighbours: its training questions' features and answers, and the fitted vote (`_neighbours`).
    """
    target = Path(path)
    vectors = validate_llm_table(llm_names, llm_vectors, str(target))
    sources = _source_files(target, tokenizer_json, encoder_onnx, static_encoder)
    refuse_existing(target, overwrite)
    fields = _standard_fields(vectors, llm_names, encoder, training, metrics, label)
    reference = center = None
    if reference_directions is not None or alignment is not None:
        reference, center, fields["alignment"] = saved_reference(
            reference_directions, alignment, reference_center, vectors.shape[1], str(target)
        )
    fields.update(_added_fields(target, extra, corrections, neighbours))
    try:
        _write_folder(target, json_safe(fields), vectors, sources, reference, center, corrections,
                      training_questions, neighbours)
    except OSError as err:
        raise _cannot_write(target, err, sources.values()) from err
    return target


def _cannot_write(target: Path, err: OSError, sources: Iterable[Path]) -> JeirtError:
    """An OSError writing a router folder (a read-only or full disk, a file where a folder of its path should be)
    as an error naming the folder asked for: its own text names the hidden folder written first, or says 'File
    exists' of a parent that is a file. A file copied in (`sources`) that cannot be read is named instead: the
    folder asked for is not the problem."""
    reason = os.strerror(err.errno) if err.errno else str(err)
    unreadable = next((source for source in sources if err.filename is not None and Path(err.filename) == source),
                      None)
    if unreadable is not None:
        return JeirtError(f"{target}: cannot save, {unreadable} cannot be read ({reason})")
    blocking = next((parent for parent in target.parents if parent.exists() and not parent.is_dir()), None)
    why = f"{blocking} is a file, not a folder" if blocking else reason
    return JeirtError(f"{target}: cannot write the router folder ({why})")


def _source_files(
    target: Path, tokenizer_json: PathLike, encoder_onnx: PathLike, static_encoder: Optional[PathLike]
) -> dict[str, Path]:
    """The files copied into the folder, by their names there; one that does not exist is refused by name."""
    sources = {TOKENIZER_FILE: Path(tokenizer_json), ENCODER_FILE: Path(encoder_onnx)}
    if static_encoder is not None:
        sources[STATIC_ENCODER_FILE] = Path(static_encoder)
    for source in sources.values():
        if not source.is_file():
            raise JeirtError(f"{target}: cannot save, {source} does not exist")
    return sources


def _standard_fields(
    vectors: np.ndarray, llm_names: Sequence[str], encoder: Union[Mapping[str, Any], EncoderSpec],
    training: Optional[Mapping[str, Any]], metrics: Optional[Mapping[str, Any]], label: Optional[str],
) -> dict[str, Any]:
    """router.json's fields that every router has, in their order."""
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "package_version": package_version(),
        "label": label,
        "dim": int(vectors.shape[1]),
        "llms": list(llm_names),
        "encoder": encoder.to_json() if isinstance(encoder, EncoderSpec) else dict(encoder),
        "training": dict(training) if training is not None else None,
        "metrics": dict(metrics) if metrics is not None else None,
    }


def _added_fields(
    target: Path, extra: Optional[Mapping[str, Any]], corrections: Optional[FeatureCorrections],
    neighbours: Optional[NeighbourVotes],
) -> dict[str, Any]:
    """router.json's fields after the standard ones: `extra`'s (refused where one would overwrite a standard
    field), then the corrections' and the neighbour votes' blocks."""
    fields: dict[str, Any] = {}
    for key, value in (extra or {}).items():
        if key in _SAVED_FIELDS:
            raise JeirtError(f"{target}: extra manifest field {key!r} would overwrite a standard field")
        fields[key] = value
    if corrections is not None:
        fields["corrections"] = corrections.manifest_block()
    if neighbours is not None:
        fields["neighbours"] = neighbours.manifest_block()
    return fields


def _write_folder(
    target: Path,
    fields: dict[str, Any],
    vectors: np.ndarray,
    sources: Mapping[str, Path],
    reference: Optional[np.ndarray],
    center: Optional[np.ndarray],
    corrections: Optional[FeatureCorrections] = None,
    training_questions: Optional[np.ndarray] = None,
    neighbours: Optional[NeighbourVotes] = None,
) -> None:
    """Stage every file, bind router.json to the table, validate the manifest, then rename into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_folders(target, HIDDEN_WRITE_KINDS)  # what writes of it killed outright left beside it
    staging = hidden_beside(target, WRITING_KIND)
    staging.mkdir()
    try:
        for name, source in sources.items():
            shutil.copyfile(source, staging / name)
        roles = [("tokenizer", TOKENIZER_FILE), ("encoder", ENCODER_FILE)]
        if STATIC_ENCODER_FILE in sources:
            roles.append((STATIC_ROLE, STATIC_ENCODER_FILE))
        if reference is not None and center is not None:
            write_tensors(staging / REFERENCE_FILE, {REFERENCE_TENSOR: reference, CENTER_TENSOR: center})
            roles.append(("reference", REFERENCE_FILE))
        if corrections is not None:
            write_tensors(staging / CORRECTIONS_FILE, corrections.tensors())
            roles.append(("corrections", CORRECTIONS_FILE))
        if training_questions is not None:
            write_record(staging / TRAINING_QUESTIONS_FILE, training_questions)
            roles.append((TRAINING_QUESTIONS_ROLE, TRAINING_QUESTIONS_FILE))
        if neighbours is not None:
            write_tensors(staging / NEIGHBOURS_FILE, neighbours.tensors())
            roles.append((NEIGHBOURS_ROLE, NEIGHBOURS_FILE))
        fields["files"] = {role: {"path": name, "sha256": sha256_of(staging / name)} for role, name in roles}
        static = staging / STATIC_ENCODER_FILE if STATIC_ENCODER_FILE in sources else None
        check_external_data(staging / ENCODER_FILE, static)  # a pair that does not match is never written
        binding = {NAMES_KEY: names_in_order(fields["llms"]), DIGEST_KEY: content_digest(fields)}
        write_tensors(staging / LLMS_FILE, {LLM_TENSOR: vectors}, binding)
        fields["files"]["llms"] = {"path": LLMS_FILE, "sha256": sha256_of(staging / LLMS_FILE)}
        parse_manifest(fields, f"{target / MANIFEST_FILE}")  # the same checks a load makes, before it is in place
        with open(staging / MANIFEST_FILE, "w", encoding="utf-8") as handle:
            json.dump(fields, handle, indent=2, allow_nan=False)
            handle.write("\n")
        move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_artifact(path: PathLike, *, allow_legacy: bool = False) -> Artifact:
    """Read and validate a router folder; every problem names the file at fault.

    `allow_legacy` reads format 1 folders (no binding between router.json and the tables); only the migration
    (`jeirt_lite.migrate`) uses it.
    """
    folder, raw, manifest, files = _open_folder(path, allow_legacy=allow_legacy)
    for role, file_path in files.items():
        actual = sha256_of(file_path)
        expected = manifest.files[role].sha256
        if actual != expected:
            raise JeirtError(
                f"{file_path}: sha256 {actual[:12]}… does not match router.json ({expected[:12]}…); "
                "the file is corrupt or belongs to another router"
            )
    # Both files match router.json; now the graph's external data must be an exact view of the static file.
    check_external_data(files["encoder"], files.get(STATIC_ROLE))
    tensors, metadata = read_tensors(files["llms"], (LLM_TENSOR,))
    if manifest.format_version == FORMAT_VERSION:
        check_binding(folder / MANIFEST_FILE, raw, metadata, files["llms"])
    vectors = validate_llm_table(manifest.llms, tensors[LLM_TENSOR], str(files["llms"]))
    if vectors.shape[1] != manifest.dim:
        raise JeirtError(
            f"{files['llms']}: LLM vectors have dimension {vectors.shape[1]}, router.json says {manifest.dim}"
        )
    vectors.setflags(write=False)
    reference = center = None
    if manifest.alignment is not None:
        reference, center = read_reference(files["reference"], manifest.alignment, manifest.dim)
    return Artifact(
        path=folder, manifest=manifest, llm_vectors=vectors, reference_directions=reference, reference_center=center,
        corrections=read_corrections(manifest, files),
        training_questions=read_record(files[TRAINING_QUESTIONS_ROLE]) if TRAINING_QUESTIONS_ROLE in files else None,
        neighbours=read_neighbours(manifest, files),
    )


def read_manifest(path: PathLike) -> Manifest:
    """router.json of a router folder, validated and checked against the LLM table's metadata, without hashing
    or loading the (large) encoder: for callers that need only the LLM names or the encoder description (the
    Ray driver). A full `load_artifact` still checks every file."""
    folder, raw, manifest, files = _open_folder(path)
    check_binding(folder / MANIFEST_FILE, raw, read_metadata(files["llms"]), files["llms"])
    return manifest


def router_folder(path: PathLike) -> Path:
    """`path` as a Path, refused by name when no folder is there (the first check of every reader of a router)."""
    folder = Path(path)
    if not folder.is_dir():
        raise JeirtError(f"{folder}: no router folder here")
    return folder


def _plain_file(folder: Path, name: str, role: str) -> Path:
    """The one rule for every file of a router folder, router.json included: a regular file directly inside the
    folder, never a symbolic link (a link's target can change after the hashes were checked, or lie outside)."""
    path = folder / name
    if path.is_symlink():
        raise JeirtError(
            f"{path}: a link; every file of a router folder, router.json included, must be a plain file inside it"
        )
    if not path.is_file():
        what = "a router folder needs its manifest" if role == "manifest" else f"router.json lists it as the {role} file"
        raise JeirtError(f"{path}: missing or not a regular file ({what})")
    return path


def _open_folder(
    path: PathLike, *, allow_legacy: bool = False
) -> tuple[Path, Any, Manifest, dict[str, Path]]:
    """The folder, router.json's JSON and parsed manifest, and the confined path of each file it lists."""
    folder = router_folder(path)
    manifest_path = _plain_file(folder, MANIFEST_FILE, "manifest")
    raw = read_manifest_json(manifest_path)
    manifest = parse_manifest(raw, str(manifest_path), allow_legacy=allow_legacy)
    files = {role: _plain_file(folder, entry.path, role) for role, entry in manifest.files.items()}
    return folder, raw, manifest, files
