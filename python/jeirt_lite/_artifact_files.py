"""Reading a router folder's files: router.json as JSON, safetensors tensors and metadata, and the check that
router.json is the one saved with the LLM table (the binding: LLM names in table order and a digest of router.json's
content, stored in llms.safetensors' metadata); writing safetensors files byte for byte reproducibly; and the rule on
what a router folder written may replace; every file of a folder, for the Ray engine to ship."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np

from ._errors import JeirtError
from ._json_keys import RepeatedKey, unique_keys
from ._manifest import content_digest

MANIFEST_FILE = "router.json"
# llms.safetensors metadata keys that bind router.json to the table.
NAMES_KEY = "llm_names"
DIGEST_KEY = "manifest_sha256"


def read_manifest_json(path: Path) -> Any:
    """router.json's JSON; a key given twice in one object is refused (which of the two counts cannot be told).
    Its values are checked by `_manifest.parse_manifest`, NaN and infinities included."""
    if not path.is_file():
        raise JeirtError(f"{path}: missing; a router folder needs its manifest")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle, object_pairs_hook=unique_keys)
    except RepeatedKey as err:
        raise JeirtError(f"{path}: the key {err.key!r} appears twice in one object") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise JeirtError(f"{path}: not readable JSON ({err})") from err


def check_binding(manifest_path: Path, raw: Any, metadata: Mapping[str, str], llms_path: Path) -> None:
    """router.json must be the one saved with this table: same LLM names in the same order, same content."""
    if NAMES_KEY not in metadata or DIGEST_KEY not in metadata:
        raise JeirtError(
            f"{llms_path}: carries no LLM names or router.json digest in its metadata, so it cannot be checked "
            "against router.json; re-save the router with jeirt-lite"
        )
    try:
        table_names = json.loads(metadata[NAMES_KEY])
    except (ValueError, RecursionError):
        table_names = None
    listed = list(raw["llms"])
    if table_names != listed:
        if not isinstance(table_names, list):
            raise JeirtError(f"{llms_path}: the LLM names in its metadata are unreadable")
        if len(table_names) != len(listed):
            raise JeirtError(
                f"{manifest_path}: lists {len(listed)} LLMs but {llms_path.name} has {len(table_names)}; "
                "router.json and the table do not belong together"
            )
        row = next(i for i, (a, b) in enumerate(zip(listed, table_names)) if a != b)
        raise JeirtError(
            f"{manifest_path}: lists LLM {row} as {listed[row]!r}, but row {row} of {llms_path.name} belongs to "
            f"{table_names[row]!r}; router.json and the table do not belong together"
        )
    if metadata[DIGEST_KEY] != content_digest(raw):
        raise JeirtError(
            f"{manifest_path}: its content differs from the router.json saved with {llms_path.name} (edited by "
            "hand, or taken from another router); save routers with Router.save or training, never edit router.json"
        )


def write_tensors(path: Path, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None) -> None:
    """Write a safetensors file whose bytes follow from its content alone: the same tensors and metadata give the
    same file in any process, so a router saved twice is the same folder (and router.json the same hashes)."""
    from safetensors.numpy import save

    # safetensors keeps the metadata in a hash map, whose order changes from one map to the next; the header is
    # written again with the metadata's keys sorted (the tensors' entries and their data stay as save put them).
    # The bytes go through open(): save_file would create the file owner-only (0600), unreadable to other users
    # of a router installed system-wide.
    raw = save(dict(tensors), metadata=dict(metadata) if metadata else None)
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    if "__metadata__" in header:
        header = {"__metadata__": dict(sorted(header.pop("__metadata__").items())), **header}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as save leaves it
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + size :])


def read_metadata(path: Path) -> dict[str, str]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            return dict(handle.metadata() or {})
    except Exception as err:  # safetensors raises its own error types and OSError/ValueError
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err


def read_tensors(path: Path, names: Sequence[str]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The named float32 tensors of a safetensors file, and its metadata."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            found = set(handle.keys())
            missing = [name for name in names if name not in found]
            if missing:
                raise JeirtError(f"{path}: has no tensor {missing[0]!r} (found {sorted(found)})")
            tensors = {name: handle.get_tensor(name) for name in names}
            metadata = dict(handle.metadata() or {})
    except JeirtError:
        raise
    except Exception as err:  # safetensors raises its own error types and OSError/ValueError
        raise JeirtError(f"{path}: not a readable safetensors file ({err})") from err
    for name, table in tensors.items():
        if table.dtype != np.float32:
            raise JeirtError(f"{path}: {name} must be float32, got {table.dtype}")
    return tensors, metadata


def refuse_existing(target: Union[str, Path], overwrite: bool) -> None:
    """Whatever is at `target` is replaced only with `overwrite`, and only when it is a router folder or an empty
    folder: the one refusal of every writer of a router folder, training included, which makes it before anything
    is trained too. A mistyped path (`..`, a project folder, a file) is never replaced whole."""
    path = Path(target)
    if not path.exists() and not path.is_symlink():
        return
    if not overwrite:
        raise JeirtError(f"{target} already exists (pass overwrite=True to replace it)")
    if path.is_symlink():
        raise JeirtError(f"{target} is a symbolic link; overwrite replaces only a router folder (save to the folder "
                         "it points to, or remove the link first)")
    if not path.is_dir():
        raise JeirtError(f"{target} is not a folder; overwrite replaces only a router folder (remove it first)")
    if not (path / MANIFEST_FILE).is_file() and any(path.iterdir()):
        raise JeirtError(f"{target} is not a router folder (it holds no {MANIFEST_FILE}); overwrite replaces only a "
                         "router folder or an empty one, so choose another path")


def read_router_files(router_path: Path) -> dict[str, bytes]:
    """Every file of a (flat) router folder, to ship to the Ray engine's workers through the object store."""
    files = {entry.name: entry.read_bytes() for entry in sorted(router_path.iterdir()) if entry.is_file()}
    if MANIFEST_FILE not in files:
        raise JeirtError(f"{router_path}: not a router folder (no {MANIFEST_FILE})")
    return files
