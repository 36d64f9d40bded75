"""The static encoder's ONNX graph against a NumPy re-implementation of its lookup-and-average (+ adapter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import Router
from jeirt_lite.artifact import save_artifact
from jeirt_lite_training.static_encoder import (
    export_static_router_graph,
    pca,
    sif_weights,
    static_embed,
    token_frequencies,
)
from tiny_router import build_tokenizer

REPO = Path(__file__).resolve().parents[1]
SHIPPED_STATIC = REPO / "python" / "jeirt_lite" / "default_router"  # the shipped router is the static one


def _tokenize(router: Router, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and mask exactly as the router's tokenizer makes them, padded to the longest text."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(router.path / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(router.manifest["encoder"]["max_seq_length"]))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


def _graph_weights(router: Router) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(router.path / "encoder.onnx"))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def _reference(router: Router, texts: list[str]) -> np.ndarray:
    w = _graph_weights(router)
    ids, mask = _tokenize(router, texts)
    pooled = static_embed(w["table"].astype(np.float32), ids, mask)
    hidden = np.maximum(pooled.astype(np.float64) @ w["w1"].T + w["b1"], 0.0)  # the adapter (dropout off)
    return (hidden @ w["w2"].T + w["b2"]).astype(np.float32)


@pytest.fixture(scope="module", params=["float16", "float32"])
def random_static_router(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Router:
    folder = tmp_path_factory.mktemp(f"static-{request.param}")
    build_tokenizer(folder / "tokenizer.json")
    rng = np.random.default_rng(1)
    vocab, dim, hidden, d = 80, 24, 48, 16
    table = rng.normal(size=(vocab, dim)).astype(np.float32)
    adapter = (
        rng.normal(size=(hidden, dim)).astype(np.float32),
        rng.normal(size=hidden).astype(np.float32),
        rng.normal(size=(d, hidden)).astype(np.float32),
        rng.normal(size=d).astype(np.float32),
    )
    graph = export_static_router_graph(folder / "encoder.onnx", table, adapter, table_dtype=request.param)
    path = save_artifact(
        folder / "router",
        llm_names=["a", "b", "c"],
        llm_vectors=rng.normal(size=(3, d)).astype(np.float32),
        tokenizer_json=folder / "tokenizer.json",
        encoder_onnx=graph,
        encoder={
            "name": "random-static",
            "max_seq_length": 6,
            "batch_size": 3,
            "input_names": ["input_ids", "attention_mask"],
            "output_name": "question_vectors",
        },
    )
    return Router.load(path, threads=1)


TEXTS = [
    "What is the derivative of a function",
    "velocity",
    "How many prime number values are in the list and which law court decides a contract case",  # > 6 tokens
    "zebra unknown words only",
]


def test_graph_matches_numpy_lookup_and_average(random_static_router: Router) -> None:
    got = random_static_router.encode(TEXTS, features=False).vectors
    want = _reference(random_static_router, TEXTS)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_a_vector(random_static_router: Router) -> None:
    alone = random_static_router.encode([TEXTS[1]], features=False).vectors
    in_batch = random_static_router.encode(TEXTS, batch_size=len(TEXTS), features=False).vectors[1:2]
    np.testing.assert_allclose(alone, in_batch, rtol=1e-6, atol=1e-6)


def test_router_api_works_on_the_static_graph(random_static_router: Router) -> None:
    result = random_static_router.route(TEXTS, k=2)
    assert len(result) == len(TEXTS)
    assert random_static_router.predict_proba(TEXTS).shape == (len(TEXTS), 3)


@pytest.mark.skipif(not (SHIPPED_STATIC / "router.json").is_file(), reason="no static router shipped")
def test_shipped_static_router_matches_numpy(real_texts: list[str]) -> None:
    router = Router.load(SHIPPED_STATIC, threads=1)
    texts = sorted(real_texts, key=len)
    middle = len(texts) // 2
    sample = texts[:3] + texts[middle : middle + 3] + texts[-3:]  # the longest ones get truncated
    np.testing.assert_allclose(router.encode(sample, features=False).vectors, _reference(router, sample), rtol=1e-4, atol=1e-4)


def test_pca_keeps_the_leading_variance() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) * np.array([10.0, 5.0, 1.0, 0.5, 0.1, 0.01])
    reduced = pca(x.astype(np.float32), 2)
    assert reduced.shape == (500, 2)
    variances = reduced.var(axis=0)
    assert variances[0] > variances[1] > 0
    # PCA's first two components hold at least as much variance as the two widest input axes.
    assert variances.sum() >= 0.99 * x.var(axis=0)[:2].sum()


def test_sif_weights_fall_with_frequency() -> None:
    freq = token_frequencies([[0, 1, 1, 1, 2], [1, 1, 3]], vocab=5)
    assert freq.sum() == pytest.approx(1.0)
    weights = sif_weights(freq, a=0.1)
    assert weights[1] < weights[0] < weights[4]  # 1 is the most frequent, 4 never seen
    assert np.all((weights > 0) & (weights < 1))


def test_manifest_batch_size_is_the_default(random_static_router: Router) -> None:
    calls: list[int] = []
    encoder = random_static_router._encoder
    session = encoder.session

    class Counting:
        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            calls.append(len(feeds["input_ids"]))
            return session.run(names, feeds)  # type: ignore[no-any-return]

    encoder.session = Counting()
    try:
        random_static_router.encode(TEXTS, features=False)
        assert calls == [3, 1]  # encoder.batch_size = 3 from router.json
        calls.clear()
        random_static_router.encode(TEXTS, batch_size=2, features=False)
        assert calls == [2, 2]
    finally:
        encoder.session = session


def test_bad_manifest_batch_size_is_named(tmp_path: Path, random_static_router: Router) -> None:
    import json
    import shutil

    from jeirt_lite import JeirtError

    folder = tmp_path / "router"
    shutil.copytree(random_static_router.path, folder)
    manifest = json.loads((folder / "router.json").read_text())
    manifest["encoder"]["batch_size"] = 0
    (folder / "router.json").write_text(json.dumps(manifest))
    with pytest.raises(JeirtError, match="encoder.batch_size"):
        Router.load(folder)
