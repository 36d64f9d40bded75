"""router.json as a typed, frozen tree, parsed and validated once.

Every field the runtime reads is checked here (type, range, length against the LLM list) and every problem names
router.json and the field. Descriptive blocks (training summary, metrics, onboarding records, the encoder's
description) are kept as read-only JSON. `Manifest` is also a read-only mapping of the JSON itself, so
``manifest["metrics"]["test"]`` works as it did when the manifest was a plain dict (each lookup returns a copy).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from types import MappingProxyType
from typing import Any, Optional

from ._errors import JeirtError
from ._limits import (
    MAX_CHARS_PER_TOKEN,
    MAX_CHUNK_ROWS,
    MAX_DIM,
    MAX_NAME_CHARS,
    MAX_REFERENCE,
    MAX_SEQ_LENGTH,
    bounded_int,
    finite_float,
)
from ._llm_params import Calibration, parse_calibration, parse_costs, parse_onboarded
from ._manifest_values import check_llm_name as check_llm_name  # re-exported: the writers check names too
from ._manifest_values import check_llm_names as check_llm_names
from ._manifest_values import check_values
from ._type_names import json_type

FORMAT_NAME = "jeirt-lite-router"
# 2: router.json is bound to its tables (LLM names and a digest of router.json in llms.safetensors' metadata).
FORMAT_VERSION = 2
LEGACY_VERSIONS = (1,)
REQUIRED_FILE_ROLES = ("tokenizer", "encoder", "llms")
STATIC_ROLE = "static_encoder"  # a static router's token table and adapter for the Rust fast path (optional)
OPTIONAL_FILE_ROLES = ("reference", STATIC_ROLE, "corrections", "training_questions", "neighbours")
FILE_ROLES = REQUIRED_FILE_ROLES + OPTIONAL_FILE_ROLES
DEFAULT_ALIGNMENT_TOP_K = 10
MIGRATE_COMMAND = "python -m jeirt_lite.migrate"

_TOP_LEVEL = (
    "format", "format_version", "package_version", "label", "dim", "llms", "encoder", "files", "training",
    "metrics", "alignment", "calibration", "costs", "onboarded", "corrections", "neighbours",
)
_ENCODER_FIELDS = (
    "name", "max_seq_length", "input_names", "output_name", "batch_size", "feature_output", "feature_dim",
)
_ALIGNMENT_FIELDS = ("threshold", "top_k", "n_reference")


def freeze(value: Any) -> Any:
    """A read-only copy of a JSON value (objects become mapping proxies, arrays tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable JSON copy of a frozen value."""
    if isinstance(value, Mapping):
        return {str(k): thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def content_digest(raw: Mapping[str, Any]) -> str:
    """sha256 of router.json's content in canonical form, without the llms file's own entry (that file stores
    this digest, so its hash cannot be part of it)."""
    body = {key: value for key, value in raw.items() if key != "files"}
    files = raw.get("files")
    body["files"] = {k: v for k, v in files.items() if k != "llms"} if isinstance(files, Mapping) else files
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class FileEntry:
    path: str  # a plain file name inside the router folder
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "sha256": self.sha256}


@dataclass(frozen=True)
class EncoderSpec:
    """What the runtime needs to run the encoder; `details` holds the descriptive rest (source, pooling...)."""

    name: str
    max_seq_length: int
    input_names: tuple[str, str]  # token ids, attention mask
    output_name: str
    batch_size: Optional[int] = None
    feature_output: Optional[str] = None  # the graph's second output: features before the adapter (onboarding)
    feature_dim: int = 0
    details: Mapping[str, Any] = dataclass_field(default_factory=lambda: MappingProxyType({}))

    @property
    def max_chars(self) -> int:
        """Texts are cut to this many characters before tokenising (see limits.MAX_CHARS_PER_TOKEN)."""
        return self.max_seq_length * MAX_CHARS_PER_TOKEN

    @property
    def features_width(self) -> Optional[int]:
        """The width of the graph's features output, None when it has none (what tables on the features need)."""
        return self.feature_dim if self.feature_output else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "max_seq_length": self.max_seq_length,
            "input_names": list(self.input_names),
            "output_name": self.output_name,
        }
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.feature_output is not None:
            out["feature_output"] = self.feature_output
            out["feature_dim"] = self.feature_dim
        out.update(thaw(self.details))
        return out


@dataclass(frozen=True)
class AlignmentSpec:
    threshold: float  # in-distribution cut-off on the alignment score (a mean cosine, in [-1, 1])
    top_k: int  # nearest reference directions averaged, 1..n_reference
    n_reference: int
    details: Mapping[str, Any] = dataclass_field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        out = {"threshold": self.threshold, "top_k": self.top_k, "n_reference": self.n_reference}
        out.update(thaw(self.details))
        return out


@dataclass(frozen=True, eq=False)
class Manifest(Mapping[str, Any]):
    """The validated content of router.json."""

    format_version: int
    package_version: str
    label: Optional[str]
    dim: int
    llms: tuple[str, ...]
    encoder: EncoderSpec
    files: Mapping[str, FileEntry]
    calibration: Optional[Calibration] = None
    costs: Optional[Mapping[str, float]] = None
    alignment: Optional[AlignmentSpec] = None
    training: Any = None
    metrics: Any = None
    onboarded: Optional[tuple[Any, ...]] = None
    corrections: Any = None  # onboarded LLMs' feature corrections, as JSON (parsed with their tensors at load)
    neighbours: Any = None  # the neighbour votes' settings, as JSON (parsed with their tensors at load)
    extra: Mapping[str, Any] = dataclass_field(default_factory=lambda: MappingProxyType({}))  # further fields
    _json: Mapping[str, Any] = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_json", freeze(self._build_json()))

    def to_json(self) -> dict[str, Any]:
        """router.json's content as plain JSON values (a fresh copy)."""
        result: dict[str, Any] = thaw(self._json)
        return result

    def _build_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "package_version": self.package_version,
            "label": self.label,
            "dim": self.dim,
            "llms": list(self.llms),
            "encoder": self.encoder.to_json(),
            "files": {role: entry.to_json() for role, entry in self.files.items()},
            "training": thaw(self.training),
            "metrics": thaw(self.metrics),
        }
        if self.alignment is not None:
            out["alignment"] = self.alignment.to_json()
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_manifest()
        if self.costs is not None:
            out["costs"] = dict(self.costs)
        if self.onboarded is not None:
            out["onboarded"] = thaw(self.onboarded)
        if self.corrections is not None:
            out["corrections"] = thaw(self.corrections)
        if self.neighbours is not None:
            out["neighbours"] = thaw(self.neighbours)
        out.update(thaw(self.extra))
        return out

    def __getitem__(self, key: str) -> Any:
        return thaw(self._json[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._json)

    def __len__(self) -> int:
        return len(self._json)

    def __contains__(self, key: object) -> bool:
        return key in self._json


def _text(value: Any, field: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS:
        raise JeirtError(f"{where}: {field} must be a non-empty string, got {value!r}")
    return value


def _object(value: Any, field: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise JeirtError(f"{where}: field {field!r} must be an object, got {json_type(value)}")
    return value


def _int(value: Any, field: str, where: str, low: int, high: int) -> int:
    try:
        return bounded_int(value, field, low, high)
    except JeirtError as err:
        raise JeirtError(f"{where}: {err}") from None


def parse_encoder(value: Any, where: str) -> EncoderSpec:
    block = _object(value, "encoder", where)
    missing = [field for field in _ENCODER_FIELDS[:4] if field not in block]
    if missing:
        raise JeirtError(f"{where}: encoder lacks {', '.join(missing)}")
    inputs = block["input_names"]
    if not isinstance(inputs, list) or len(inputs) != 2:
        raise JeirtError(
            f"{where}: encoder.input_names must name two inputs (token ids, attention mask), got {inputs!r}"
        )
    ids_name = _text(inputs[0], "encoder.input_names[0]", where)
    mask_name = _text(inputs[1], "encoder.input_names[1]", where)
    output = _text(block["output_name"], "encoder.output_name", where)
    if len({ids_name, mask_name, output}) != 3:
        raise JeirtError(f"{where}: encoder input and output names must be distinct, got {inputs!r} -> {output!r}")
    batch = block.get("batch_size")
    feature_output = block.get("feature_output")
    if feature_output is not None:
        feature_output = _text(feature_output, "encoder.feature_output", where)
        if feature_output in (ids_name, mask_name, output):
            raise JeirtError(f"{where}: encoder.feature_output must be another output, got {feature_output!r}")
    # A graph with a features output states their width: the tables read on the features are checked against it.
    feature_dim = _int(block.get("feature_dim"), "encoder.feature_dim", where, 1, MAX_DIM) if feature_output else 0
    return EncoderSpec(
        name=_text(block["name"], "encoder.name", where),
        max_seq_length=_int(block["max_seq_length"], "encoder.max_seq_length", where, 1, MAX_SEQ_LENGTH),
        input_names=(ids_name, mask_name),
        output_name=output,
        batch_size=None if batch is None else _int(batch, "encoder.batch_size", where, 1, MAX_CHUNK_ROWS),
        feature_output=feature_output,
        feature_dim=feature_dim,
        details=freeze({k: v for k, v in block.items() if k not in _ENCODER_FIELDS}),
    )


def parse_files(value: Any, where: str) -> Mapping[str, FileEntry]:
    block = _object(value, "files", where)
    unknown = sorted(set(block) - set(FILE_ROLES))
    if unknown:
        raise JeirtError(f"{where}: files has unknown entries {unknown} (known: {', '.join(FILE_ROLES)})")
    roles = REQUIRED_FILE_ROLES + tuple(role for role in OPTIONAL_FILE_ROLES if role in block)
    out: dict[str, FileEntry] = {}
    for role in roles:
        entry = block.get(role)
        if not isinstance(entry, Mapping) or "path" not in entry or "sha256" not in entry:
            raise JeirtError(f"{where}: files.{role} must give a path and a sha256")
        out[role] = FileEntry(check_file_name(entry["path"], f"files.{role}.path", where), _sha(entry, role, where))
    paths = [entry.path for entry in out.values()]
    if len(set(paths)) != len(paths):
        raise JeirtError(f"{where}: two files entries name the same file ({paths})")
    return MappingProxyType(out)


def check_file_name(value: Any, field: str, where: str) -> str:
    """A plain file name: the folder's files may not live elsewhere (no directories, '..' or absolute paths)."""
    if (
        not isinstance(value, str)
        or value in ("", ".", "..")
        or any(sep in value for sep in ("/", "\\", "\0", ":"))
        or len(value) > 255
    ):
        raise JeirtError(f"{where}: {field} must be a plain file name inside the router folder, got {value!r}")
    return value


def _sha(entry: Mapping[str, Any], role: str, where: str) -> str:
    digest = entry["sha256"]
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise JeirtError(f"{where}: files.{role}.sha256 must be 64 lowercase hex digits, got {digest!r}")
    return digest


def parse_alignment(value: Any, where: str) -> AlignmentSpec:
    block = _object(value, "alignment", where)
    if "threshold" not in block or "n_reference" not in block:
        raise JeirtError(f"{where}: alignment must give threshold and n_reference")
    try:
        threshold = finite_float(block["threshold"], "alignment.threshold", -1.0, 1.0)
    except JeirtError as err:
        raise JeirtError(f"{where}: {err}") from None
    n_reference = _int(block["n_reference"], "alignment.n_reference", where, 1, MAX_REFERENCE)
    top_k = _int(block.get("top_k", DEFAULT_ALIGNMENT_TOP_K), "alignment.top_k", where, 1, n_reference)
    details = freeze({k: v for k, v in block.items() if k not in _ALIGNMENT_FIELDS})
    return AlignmentSpec(threshold, top_k, n_reference, details)


def check_format(raw: Any, where: str, *, allow_legacy: bool = False) -> int:
    """The manifest's format version, or a JeirtError for another format or an unsupported version."""
    if not isinstance(raw, Mapping):
        raise JeirtError(f"{where}: must hold a JSON object")
    if raw.get("format") != FORMAT_NAME:
        raise JeirtError(f"{where}: format is {raw.get('format')!r}, expected {FORMAT_NAME!r}")
    version = raw.get("format_version")
    if version in LEGACY_VERSIONS and not isinstance(version, bool):
        if allow_legacy:
            return int(version)
        raise JeirtError(
            f"{where}: format_version {version} is an older router format whose router.json is not bound to its "
            f"tables; convert it once with `{MIGRATE_COMMAND} ROUTER_FOLDER`"
        )
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise JeirtError(
            f"{where}: format_version {version!r} is not supported by this jeirt-lite (supports {FORMAT_VERSION})"
        )
    return FORMAT_VERSION


def parse_manifest(raw: Any, where: str, *, allow_legacy: bool = False) -> Manifest:
    """Validate router.json's content; every problem names `where` and the field."""
    version = check_format(raw, where, allow_legacy=allow_legacy)
    check_values(raw, where)  # NaN, infinities, huge integers, mistyped metrics anywhere, named by field
    # The types named in JSON's words, as router.json holds them: "an integer", never Python's "a int".
    for field, kind, name in (("dim", int, "an integer"), ("llms", list, "an array"), ("encoder", dict, "an object"),
                              ("files", dict, "an object")):
        if not isinstance(raw.get(field), kind) or isinstance(raw.get(field), bool):
            raise JeirtError(f"{where}: field {field!r} must be {name}")
    llms = check_llm_names(raw["llms"], where)
    label = raw.get("label")
    if label is not None and not isinstance(label, str):
        raise JeirtError(f"{where}: label must be a string or null, got {label!r}")
    package_version = raw.get("package_version", "unknown")
    if not isinstance(package_version, str):
        raise JeirtError(f"{where}: package_version must be a string, got {package_version!r}")
    for field in ("training", "metrics"):
        if raw.get(field) is not None and not isinstance(raw.get(field), Mapping):
            raise JeirtError(f"{where}: {field} must be an object or null")
    onboarded = parse_onboarded(raw, llms, where)
    has_alignment = raw.get("alignment") is not None
    if has_alignment != isinstance(raw["files"].get("reference"), Mapping):
        raise JeirtError(f"{where}: the alignment block and files.reference go together (one is missing)")
    costs = parse_costs(raw, llms, where)
    return Manifest(
        format_version=version,
        package_version=package_version,
        label=label,
        dim=_int(raw["dim"], "dim", where, 1, MAX_DIM),
        llms=llms,
        encoder=parse_encoder(raw["encoder"], where),
        files=parse_files(raw["files"], where),
        calibration=parse_calibration(raw, len(llms), where),
        costs=None if costs is None else MappingProxyType(costs),
        alignment=parse_alignment(raw["alignment"], where) if has_alignment else None,
        training=freeze(raw.get("training")),
        metrics=freeze(raw.get("metrics")),
        onboarded=None if onboarded is None else freeze(onboarded),
        corrections=freeze(raw.get("corrections")),
        neighbours=freeze(raw.get("neighbours")),
        extra=freeze({k: v for k, v in raw.items() if k not in _TOP_LEVEL}),
    )


def block_llms(block: Any, llm_names: Sequence[str], name: str, where: str) -> list[str]:
    """The LLM names an optional block of router.json lists ('llms': at least one, each once, each the router's)."""
    if not isinstance(block, Mapping) or not isinstance(block.get("llms"), list):
        raise JeirtError(f"{where}: the {name} block must list its LLMs ('llms')")
    names = [str(n) for n in block["llms"]]
    unknown = [n for n in names if n not in set(llm_names)]
    if unknown or len(set(names)) != len(names) or not names:
        raise JeirtError(f"{where}: {name} name unknown, repeated or no LLMs: {unknown or names}")
    return names


def block_tensors(tensors: Mapping[str, Any], names: Sequence[str], where: str) -> list[Any]:
    """The named tensors of an optional table, in order; the first one missing is an error naming it."""
    missing = [name for name in names if name not in tensors]
    if missing:
        raise JeirtError(f"{where}: has no tensor {missing[0]!r}")
    return [tensors[name] for name in names]


def check_feature_width(width: int, feature_dim: Optional[int], name: str, where: str) -> None:
    """An optional table read on the encoder's features must be as wide as they are (feature_dim None: none)."""
    if feature_dim is None or width != feature_dim:
        raise JeirtError(
            f"{where}: {name} need encoder features of size {width}, the encoder gives "
            f"{'none' if feature_dim is None else feature_dim}"
        )


def json_safe(value: Any) -> Any:
    """Metrics may carry numpy scalars or NaN: plain JSON (NaN as null) so any reader can parse it."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def names_in_order(names: Sequence[str]) -> str:
    return json.dumps(list(names), ensure_ascii=True)
