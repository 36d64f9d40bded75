"""The static routers' Rust fast path against its references: token ids against Hugging Face `tokenizers` on
every public question and on Unicode edge cases, question vectors against the ONNX graph, loading and saving."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._static_path import StaticEncoder
from static_encoder_files import reference_token_ids
from unicode_texts import EDGE_TEXTS, random_texts

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "python" / "jeirt_lite" / "default_router"

# The router refuses a text holding a NUL, as the table readers do; its encoders are compared on it directly.
ROUTABLE_EDGE_TEXTS = [text.replace("\x00", "") for text in EDGE_TEXTS]


def _questions(dataset: str) -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / dataset / "questions.csv", newline="", encoding="utf-8") as handle:
        return [row["text"] for row in csv.DictReader(handle)]


def _hf_ids(router: Router, texts: list[str]) -> list[list[int]]:
    return reference_token_ids(router.path / "tokenizer.json", int(router.manifest["encoder"]["max_seq_length"]), texts)


@pytest.fixture(scope="module")
def fast() -> Router:
    return Router.load(SHIPPED, threads=1)


@pytest.fixture(scope="module")
def reference() -> Router:
    return Router.load(SHIPPED, threads=1, fast_path=False)


def _encoder(router: Router) -> StaticEncoder:
    encoder = router._encoder
    assert isinstance(encoder, StaticEncoder)
    return encoder


def test_the_shipped_router_uses_the_fast_path(fast: Router, reference: Router) -> None:
    assert isinstance(fast._encoder, StaticEncoder)
    assert not isinstance(reference._encoder, StaticEncoder)


@pytest.mark.parametrize("dataset", ["mmlu_pro", "zeroeval_crux_gsm_math"])
def test_token_ids_equal_tokenizers_on_every_public_question(fast: Router, dataset: str) -> None:
    texts = _questions(dataset)
    expected = _hf_ids(fast, texts)
    got = _encoder(fast).token_ids(texts)
    mismatches = [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]
    assert len(got) == len(texts) and not mismatches, (
        f"{len(mismatches)} texts differ, first {mismatches[:5]}"
    )


def test_token_ids_equal_tokenizers_on_edge_cases_and_random_unicode(fast: Router) -> None:
    texts = EDGE_TEXTS + random_texts(3000, seed=0)
    expected = _hf_ids(fast, texts)
    got = _encoder(fast).token_ids(texts)
    for text, a, b in zip(texts, expected, got):
        assert a == b, f"{text!r}: tokenizers {a[:20]}..., fast path {b[:20]}..."
    assert max(len(ids) for ids in got) == 512  # truncation was exercised


def test_question_vectors_match_the_onnx_graph(fast: Router, reference: Router) -> None:
    texts = _questions("mmlu_pro")[::20] + _questions("zeroeval_crux_gsm_math")[::20] + ROUTABLE_EDGE_TEXTS
    got, want = fast.encode(texts, features=False).vectors, reference.encode(texts, features=False).vectors
    np.testing.assert_allclose(_encoder(fast).encode(EDGE_TEXTS), reference._encoder.encode(EDGE_TEXTS), atol=2e-5)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
    top_fast, top_ref = fast.route(texts[:300], k=3), reference.route(texts[:300], k=3)
    np.testing.assert_allclose(top_fast.probabilities, top_ref.probabilities, atol=1e-5)


def test_threads_give_identical_vectors(fast: Router) -> None:
    texts = _questions("mmlu_pro")[:700]
    two = Router.load(SHIPPED, threads=2)
    assert np.array_equal(fast.encode(texts, features=False).vectors, two.encode(texts, features=False).vectors)


def test_a_lone_surrogate_is_named(fast: Router) -> None:
    with pytest.raises(JeirtError, match="text 1 is not valid Unicode"):
        fast.encode(["fine", "bad \ud800 text"], features=False)


def test_save_keeps_the_fast_path_and_a_tampered_file_is_refused(fast: Router, tmp_path: Path) -> None:
    saved = Router.load(fast.save(tmp_path / "copy"), threads=1)
    assert isinstance(saved._encoder, StaticEncoder)
    texts = EDGE_TEXTS[:3]
    assert np.array_equal(saved.encode(texts, features=False).vectors, fast.encode(texts, features=False).vectors)
    broken = tmp_path / "broken"
    shutil.copytree(tmp_path / "copy", broken)
    with open(broken / "static_encoder.safetensors", "r+b") as handle:
        handle.seek(-4, 2)
        handle.write(b"\x00\x00\x80\x7f")
    with pytest.raises(JeirtError, match="static_encoder.safetensors: sha256"):
        Router.load(broken)


def test_routers_without_the_file_keep_the_onnx_path(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    assert not isinstance(router._encoder, StaticEncoder)


def test_features_match_the_onnx_graph_and_a_corrected_llm_keeps_the_fast_path(
    fast: Router, reference: Router, tmp_path: Path
) -> None:
    from jeirt_lite.batch import ScoreOptions, score_file

    like = _questions("mmlu_pro")[::40]  # the shipped router's training questions
    texts = like + _questions("zeroeval_crux_gsm_math")[::40] + ROUTABLE_EDGE_TEXTS
    vectors, features = fast.encode(texts, features=True)
    want_vectors, want_features = reference.encode(texts, features=True)
    assert features is not None and want_features is not None and features.dtype == np.float32
    np.testing.assert_allclose(features, want_features, rtol=0, atol=2e-5)
    np.testing.assert_array_equal(vectors, fast.encode(texts, features=False).vectors)
    np.testing.assert_allclose(vectors, want_vectors, rtol=0, atol=2e-5)
    # An LLM whose answers follow the encoder's features: add_llm turns its correction on, on questions unlike the
    # router's (zeroeval's and the edge cases); its own MMLU-Pro questions count as the router's kind.
    signal = (features - features.mean(axis=0)) @ np.random.default_rng(0).normal(size=features.shape[1])
    labels = (signal > np.median(signal)).astype(int)
    own = fast.add_llm("own-llm", EncodedQuestions(vectors[: len(like)], features[: len(like)]), labels[: len(like)])
    assert own.manifest["onboarded"][-1]["like_router"] is True
    unlike = slice(len(like), None)
    grown = fast.add_llm("feature-llm", EncodedQuestions(vectors[unlike], features[unlike]), labels[unlike])
    assert grown.manifest["onboarded"][-1]["like_router"] is False
    assert grown.corrections is not None and grown.fast_path
    grown.save(tmp_path / "grown")
    loaded = Router.load(tmp_path / "grown", threads=1)
    graph = Router.load(tmp_path / "grown", threads=1, fast_path=False)
    assert loaded.fast_path and not graph.fast_path
    np.testing.assert_allclose(loaded.predict_proba(texts), graph.predict_proba(texts), atol=1e-5)
    np.testing.assert_allclose(
        loaded.route(texts, k=3).probabilities, graph.route(texts, k=3).probabilities, atol=1e-5
    )
    np.testing.assert_allclose(
        list(loaded.forecast(texts).values()), list(graph.forecast(texts).values()), atol=1e-5
    )
    assert loaded._graph is None  # no ONNX session was needed for the features
    # score: the pipelined fast path (threads > 1) streams the features to the correction too.
    questions = texts[: -len(EDGE_TEXTS)]
    bank = tmp_path / "bank.jsonl"
    bank.write_text("".join(json.dumps({"text": t}) + "\n" for t in questions), encoding="utf-8")
    two = Router.load(tmp_path / "grown", threads=2)
    summary = score_file(two, input_path=bank, output=None, options=ScoreOptions(chunk_size=16, forecast=True))
    assert summary.forecast is not None and two._graph is None
    want = graph.predict_proba(questions).mean(axis=0)
    np.testing.assert_allclose(list(summary.forecast.values()), want, atol=1e-5)


def _without_relu(folder: Path) -> None:
    """Remove the adapter's ReLU from the graph and re-seal the folder: every hash and the binding consistent."""
    onnx = pytest.importorskip("onnx")
    from tiny_router import edit_and_reseal

    model = onnx.load(str(folder / "encoder.onnx"), load_external_data=False)
    relu = next(node for node in model.graph.node if node.op_type == "Relu")
    for node in model.graph.node:
        node.input[:] = [relu.input[0] if name == relu.output[0] else name for name in node.input]
    model.graph.node.remove(relu)
    (folder / "encoder.onnx").write_bytes(model.SerializeToString())
    edit_and_reseal(folder)


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_graph_that_disagrees_with_the_fast_path_is_refused_at_load(tmp_path: Path, fast_path: bool) -> None:
    folder = Path(shutil.copytree(SHIPPED, tmp_path / "r"))
    _without_relu(folder)
    with pytest.raises(JeirtError, match=r"encoder\.onnx: computes other question vectors .* on fixed probe texts"):
        Router.load(folder, threads=1, fast_path=fast_path)


def _features_shifted(folder: Path) -> None:
    """Add 0.05 to every entry of the graph's features output (the question vectors unchanged) and re-seal the
    folder. (Doubling them would not do: the votes read their direction.)"""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    from tiny_router import edit_and_reseal

    model = onnx.load(str(folder / "encoder.onnx"), load_external_data=False)
    identity = next(node for node in model.graph.node if node.op_type == "Identity")
    output = identity.output[0]
    identity.output[0] = "features_before"
    model.graph.node.append(helper.make_node("Add", ["features_before", "shift"], [output]))
    model.graph.initializer.append(numpy_helper.from_array(np.array(0.05, dtype=np.float32), "shift"))
    (folder / "encoder.onnx").write_bytes(model.SerializeToString())
    edit_and_reseal(folder)


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_graph_whose_features_disagree_with_the_fast_path_is_refused_at_load(
    tmp_path: Path, fast_path: bool
) -> None:
    # The neighbour votes read the features: with them shifted in the graph alone, fast_path=False would give
    # other probabilities than the default.
    folder = Path(shutil.copytree(SHIPPED, tmp_path / "r"))
    _features_shifted(folder)
    with pytest.raises(JeirtError, match=r"encoder\.onnx: its features output differs .* on fixed probe texts"):
        Router.load(folder, threads=1, fast_path=fast_path)


def test_the_probe_texts_reach_truncation_and_both_encoders_agree_on_them(fast: Router, reference: Router) -> None:
    from jeirt_lite._static_path import PROBE_TEXTS, PROBE_TOLERANCE

    assert max(len(ids) for ids in _encoder(fast).token_ids(list(PROBE_TEXTS))) == fast.manifest.encoder.max_seq_length
    got = fast.encode(list(PROBE_TEXTS), features=False).vectors
    want = reference.encode(list(PROBE_TEXTS), features=False).vectors
    assert np.abs(got - want).max() <= PROBE_TOLERANCE * max(1.0, np.abs(want).max()) / 10  # a margin of 10x


def test_a_background_job_gives_what_encoding_in_the_foreground_gives(fast: Router) -> None:
    encoder = _encoder(fast)
    texts = _questions("zeroeval_crux_gsm_math")[::20] + ROUTABLE_EDGE_TEXTS  # pieces of 64 texts, the last short
    vectors, features = encoder.encode_with_features(texts)
    assert features is not None
    for asked in (False, True):  # a router with feature corrections and no votes asks for the features alone
        got_vectors, got_features, votes = encoder.encode_start(texts, features=asked).result()
        np.testing.assert_array_equal(got_vectors, vectors)
        assert votes is None
        if asked:
            np.testing.assert_array_equal(got_features, features)
        else:
            assert got_features is None
