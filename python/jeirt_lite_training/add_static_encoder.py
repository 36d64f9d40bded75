"""Give a static router its Rust fast path: extract the token table and adapter from its ONNX graph into
static_encoder.safetensors, point the graph's copies of them at that file, and bind both into router.json.

    python -m jeirt_lite_training.add_static_encoder python/jeirt_lite/default_router    # the shipped router (migration)
    python -m jeirt_lite_training.add_static_encoder ROUTER_DIR

Only graphs written by `jeirt_lite_training.static_encoder.export_static_router_graph` qualify (Gather, masked mean, L2
normalise, Gemm, Relu, Gemm); the values are copied bit for bit (the table keeps its stored dtype). The graph then
keeps no copy of its own: each of its initializers that static_encoder.safetensors holds, bit for bit under the
same name, becomes ONNX external data (location, offset, length) into that file, so the folder stores the table
once (jeirt_lite._onnx_external checks the two files agree at every load). Rerunning it on such a folder rewrites
both files consistently; it also converts a folder whose graph still embeds its table. The new folder replaces the
old only once its fast path's vectors are checked to be the ONNX graph's, so a failure leaves the router as it
was. Needs the `onnx` package (the train extra); the runtime reads the
result with safetensors and onnxruntime alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

STATIC_OPS = [
    "Gather",
    "Cast",
    "Cast",
    "Unsqueeze",
    "MatMul",
    "Squeeze",
    "ReduceSum",
    "Max",
    "Div",
    "ReduceL2",
    "Max",
    "Div",
    "Gemm",
    "Relu",
    "Gemm",
]
CHECK_TEXTS = [
    "Which enzyme unwinds DNA during replication?",
    "Café naïve ÉCOLE 北京 résumé [MASK] 😀 x" + "y" * 120,
]


def graph_tensors(onnx_path: Path) -> dict[str, np.ndarray]:
    """The static graph's table and adapter weights; ValueError for any other graph."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    ops = [node.op_type for node in model.graph.node]
    # A trailing Identity only exposes the pooled embedding as the `features` output (scripts.add_feature_output).
    if ops[len(STATIC_OPS) :] == ["Identity"]:
        ops = ops[: len(STATIC_OPS)]
    if ops != STATIC_OPS:
        raise ValueError(f"{onnx_path}: not a static encoder graph (nodes {ops})")
    weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    gemm_first, gemm_last = model.graph.node[12], model.graph.node[14]
    if any(
        not node.attribute or node.attribute[0].name != "transB" or node.attribute[0].i != 1
        for node in (gemm_first, gemm_last)
    ):
        raise ValueError(f"{onnx_path}: the adapter's Gemm nodes are not x W^T + b")
    names = [model.graph.node[0].input[0], *gemm_first.input[1:], *gemm_last.input[1:]]
    return {
        key: np.ascontiguousarray(weights[name])
        for key, name in zip(("table", "w1", "b1", "w2", "b2"), names)
    }


def link_graph(onnx_path: Path, static_path: Path, out_path: Path) -> list[str]:
    """Write `onnx_path`'s graph to `out_path` with every initializer that `static_path` holds bit for bit under
    the same name read from there (ONNX external data; `out_path` must sit next to `static_path`); returns the
    names linked. Initializers it lacks or holds with other values stay inside the graph."""
    import onnx
    from onnx import TensorProto, numpy_helper
    from onnx.external_data_helper import set_external_data
    from safetensors.numpy import load_file

    from ._runtime import safetensors_layout

    if out_path.parent.resolve() != static_path.parent.resolve():
        raise ValueError(f"{out_path} must be written next to {static_path}, the file it reads from")
    model = onnx.load(str(onnx_path))  # external data already in the graph is read in, so any layout converts
    stored, layout = load_file(str(static_path)), safetensors_layout(static_path)
    linked = []
    for init in model.graph.initializer:
        values = numpy_helper.to_array(init)
        twin = stored.get(init.name)
        same = twin is not None and twin.dtype == values.dtype and twin.shape == values.shape
        if not same or twin.tobytes() != values.tobytes():
            continue
        _, _, begin, end = layout[init.name]
        set_external_data(init, static_path.name, offset=begin, length=end - begin)
        init.data_location = TensorProto.EXTERNAL
        init.ClearField("raw_data")
        linked.append(init.name)
    # Serialised by hand: onnx.save would try to write external data of its own.
    out_path.write_bytes(model.SerializeToString())
    return linked


def static_encoder_files(graph: Path, folder: Path) -> tuple[Path, Path]:
    """Write static_encoder.safetensors (the static `graph`'s table and adapter) and the graph reading its tensors
    from it into `folder`; returns (static file, graph)."""
    from ._runtime import ENCODER_FILE, STATIC_ENCODER_FILE, write_tensors

    static = folder / STATIC_ENCODER_FILE
    write_tensors(static, graph_tensors(graph), {"source": "initializers of encoder.onnx"})
    linked = folder / ENCODER_FILE
    link_graph(graph, static, linked)
    return static, linked


def add_static_encoder(router_dir: Path) -> Path:
    """Rewrites the router at `router_dir` with static_encoder.safetensors, the graph reading its tensors from
    there, and their entries in router.json; returns the static file. The new folder replaces the old only once
    its fast path has passed check_parity, so a failure leaves the router as it was."""
    from ._runtime import STATIC_ENCODER_FILE, Router
    from .staging import staged_router

    # Saved through Router.save, which hashes both files into router.json, checks the graph's references into
    # the static file, and binds router.json to the table.
    router = Router.load(router_dir, threads=1, fast_path=False)
    graph = router.path / router.manifest.files["encoder"].path
    with tempfile.TemporaryDirectory() as scratch, staged_router(router_dir, overwrite=True) as staged:
        static, linked = static_encoder_files(graph, Path(scratch))
        router.save(staged, static_encoder=static, encoder_onnx=linked)
        check_parity(staged, name=router_dir)
    return router_dir / STATIC_ENCODER_FILE


def check_parity(router_dir: Path, tolerance: float = 1e-4, *, name: Path | None = None) -> float:
    """Max abs difference of the fast path's question vectors to the ONNX graph's; raises above tolerance.
    `name`: the router the errors name (default `router_dir`; a staging folder's final name)."""
    from ._runtime import Router

    name = router_dir if name is None else name
    fast, reference = Router.load(router_dir, threads=1), Router.load(router_dir, threads=1, fast_path=False)
    if type(fast._encoder).__name__ != "StaticEncoder":
        raise RuntimeError(
            f"{name}: the fast path did not load (tokenizer.json of an unsupported shape?)"
        )
    diff = float(np.abs(fast.encode(CHECK_TEXTS, features=False).vectors - reference.encode(CHECK_TEXTS, features=False).vectors).max())
    if not diff <= tolerance:
        raise RuntimeError(f"{name}: fast path and ONNX differ by {diff:.3g} > {tolerance}")
    return diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("router", type=Path, help="a static router folder")
    args = parser.parse_args(argv)
    path = add_static_encoder(args.router)
    graph = path.parent / "encoder.onnx"
    print(
        f"{path} written ({path.stat().st_size / 1e6:.1f} MB), {graph.name} reads its tensors from it "
        f"({graph.stat().st_size / 1e3:.1f} kB); router.json updated; ONNX parity checked"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
