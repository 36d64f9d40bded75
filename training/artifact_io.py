"""`save_artifact` for the training side: the runtime's own writer when importable, else a stand-in.

The runtime package (`python/jeirt_lite/artifact.py`) owns the router format. Training imports it from the source
tree so a router is always written by the same code that reads it. The stand-in below exists only for checkouts
where that module is not there yet; it writes the same files and manifest fields.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

_PYTHON_SRC = Path(__file__).resolve().parent.parent / "python"


def _runtime_writer() -> Callable[..., Path] | None:
    """The installed jeirt_lite's writer, else the one in this checkout's python/ (needs the built extension)."""
    for attempt in range(2):
        try:
            from jeirt_lite.artifact import save_artifact as runtime_save
        except ImportError:
            if attempt == 0 and str(_PYTHON_SRC) not in sys.path:
                sys.path.append(str(_PYTHON_SRC))
                continue
            return None
        return runtime_save
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _standin_save(
    path: Path,
    *,
    llm_names: list[str],
    llm_vectors: np.ndarray,
    tokenizer_json: Path,
    encoder_onnx: Path,
    encoder: dict[str, Any],
    training: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    label: str | None = None,
    overwrite: bool = False,
) -> Path:
    from safetensors.numpy import save_file

    target = Path(path)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    staging.mkdir()
    shutil.copyfile(tokenizer_json, staging / "tokenizer.json")
    shutil.copyfile(encoder_onnx, staging / "encoder.onnx")
    save_file(
        {"llm_vectors": np.ascontiguousarray(llm_vectors, dtype=np.float32)},
        str(staging / "llms.safetensors"),
    )
    manifest = {
        "format": "jeirt-lite-router",
        "format_version": 1,
        "label": label,
        "dim": int(llm_vectors.shape[1]),
        "llms": list(llm_names),
        "encoder": encoder,
        "files": {
            role: {"path": name, "sha256": _sha256(staging / name)}
            for role, name in (
                ("tokenizer", "tokenizer.json"),
                ("encoder", "encoder.onnx"),
                ("llms", "llms.safetensors"),
            )
        },
        "training": training,
        "metrics": metrics,
    }
    (staging / "router.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)
    return target


def save_artifact(path: Path, **kwargs: Any) -> Path:
    """Writes a router folder, replacing an existing one at `path` (training rebuilds routers in place)."""
    writer = _runtime_writer()
    if writer is None:
        import warnings

        warnings.warn(
            "jeirt_lite is not importable (extension not built): writing the router with the training stand-in",
            stacklevel=2,
        )
        return _standin_save(Path(path), overwrite=True, **kwargs)
    return writer(path, overwrite=True, **kwargs)
