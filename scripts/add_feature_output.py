"""Give an existing router's ONNX graph a second output: the encoder's features before the adapter.

    python -m scripts.add_feature_output python/jeirt_lite/default_router            # the shipped router
    python -m scripts.add_feature_output ROUTER --tensor pooled --out NEW_ROUTER

Routers exported by current training already have it (`features`); this upgrades older folders, the shipped one
included, by graph surgery: an Identity node copies the named intermediate tensor (for the static encoder,
`pooled`: the L2-normalised mean of the token vectors, the adapter's input) to a new graph output. Nothing else in
the graph changes, so question vectors stay bit-identical (checked). The manifest gets `encoder.feature_output`
and `encoder.feature_dim`, and the folder is rewritten atomically with the new file hash. Idempotent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

FEATURE_OUTPUT = "features"
DEFAULT_TENSOR = "pooled"
CHECK_TEXTS = ["What is the derivative of x**3 at x = 2?", "Which enzyme unwinds DNA during replication?"]


def add_output(onnx_path: Path, tensor: str, out_path: Path) -> int:
    """Writes the graph with `tensor` exposed as FEATURE_OUTPUT; returns its width (from the adapter's weights)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(onnx_path))
    graph = model.graph
    if not any(tensor in node.output for node in graph.node):
        raise SystemExit(f"{onnx_path}: no node produces a tensor named {tensor!r}")
    consumers = [node for node in graph.node if tensor in node.input and node.op_type == "Gemm"]
    weights = {init.name: init for init in graph.initializer}
    if not consumers or consumers[0].input[1] not in weights:
        raise SystemExit(f"{onnx_path}: {tensor!r} does not feed a Gemm with stored weights (the adapter)")
    adapter_in = numpy_helper.to_array(weights[consumers[0].input[1]])
    trans_b = any(a.name == "transB" and a.i == 1 for a in consumers[0].attribute)
    width = int(adapter_in.shape[1] if trans_b else adapter_in.shape[0])
    graph.node.append(helper.make_node("Identity", [tensor], [FEATURE_OUTPUT]))
    graph.output.append(helper.make_tensor_value_info(FEATURE_OUTPUT, TensorProto.FLOAT, ["batch", width]))
    onnx.checker.check_model(model)
    onnx.save(model, str(out_path))
    return width


def upgrade(router: Path, tensor: str = DEFAULT_TENSOR, out: Path | None = None) -> Path:
    from jeirt_lite import Router
    from jeirt_lite.artifact import MANIFEST_FILE, sha256_of

    target = router if out is None else out
    before = Router.load(router, threads=1, fast_path=False)  # the ONNX graph, which is what changes here
    if before.manifest["encoder"].get("feature_output"):
        if target != router:
            shutil.copytree(router, target, dirs_exist_ok=False)
        print(f"{router}: already exposes {before.manifest['encoder']['feature_output']!r}; nothing to do")
        return target
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staging = Path(tmp) / "router"
        shutil.copytree(router, staging)
        manifest = json.loads((staging / MANIFEST_FILE).read_text(encoding="utf-8"))
        onnx_file = staging / manifest["files"]["encoder"]["path"]
        width = add_output(router / manifest["files"]["encoder"]["path"], tensor, onnx_file)
        manifest["encoder"].update(feature_output=FEATURE_OUTPUT, feature_dim=width)
        manifest["files"]["encoder"]["sha256"] = sha256_of(onnx_file)
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        after = Router.load(staging, threads=1, fast_path=False)
        vectors, features = after.encode(CHECK_TEXTS, features=True)
        if not np.array_equal(vectors, before.encode(CHECK_TEXTS, features=False).vectors) or features is None:
            raise SystemExit("the upgraded graph changed the question vectors; nothing written")
        if target.exists():
            retired = Path(tmp) / "old"
            target.rename(retired)
        staging.rename(target)
    print(f"{target}: encoder.onnx now also outputs {FEATURE_OUTPUT!r} ({width} values, tensor {tensor!r})")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("router", type=Path, help="router folder to upgrade (in place unless --out)")
    parser.add_argument("--tensor", default=DEFAULT_TENSOR, help="the graph tensor that feeds the adapter")
    parser.add_argument("--out", type=Path, default=None, help="write the upgraded copy here instead")
    args = parser.parse_args(argv)
    upgrade(args.router, args.tensor, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
