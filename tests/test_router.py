"""The Router API on a real ONNX graph built in code, checked against a NumPy re-implementation."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router, RouteResult
from tiny_router import build_tiny_router, copy_router, edit_and_reseal, reference_vectors

TEXTS = [
    "What is the derivative of a function",
    "How many prime number values are in the list",
    "Which court decides a contract law case",
    "acid base reaction in chemistry",
    "the market price and demand",
    "velocity",
    "What is the mass and force and energy of a cell protein in engineering circuit history",
]


def _formula(questions: np.ndarray, llms: np.ndarray) -> np.ndarray:
    q = questions.astype(np.float64)
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    logits = q @ llms.astype(np.float64).T / norms - norms
    return 1.0 / (1.0 + np.exp(-logits))


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=2)


def test_holds_names_and_dim(router: Router) -> None:
    assert router.llms == tuple(f"llm-{i}" for i in range(5))
    assert router.dim == 4
    assert router.llm_vectors.shape == (5, 4)
    assert "tiny test router" in repr(router)


@pytest.mark.parametrize("batch_size", [1, 2, 3, 64])
def test_embed_matches_reference_in_input_order(router: Router, tiny_router_path: Path, batch_size: int) -> None:
    got = router.encode(TEXTS, batch_size=batch_size, features=False).vectors
    np.testing.assert_allclose(got, reference_vectors(tiny_router_path, TEXTS), rtol=1e-5, atol=1e-6)


def test_a_text_given_more_than_once_is_encoded_once(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["what is the price of gold", "who wrote the law", "what is the price of gold", "acid", "acid"]
    alone = router.encode(["what is the price of gold", "who wrote the law", "acid"], features=True)
    seen: list[list[str]] = []
    encode = type(router._encoder).encode_with_features

    def recording(self: object, texts: list[str], **kwargs: object) -> object:
        seen.append(list(texts))
        return encode(self, texts, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(router._encoder), "encode_with_features", recording)
    twice = router.encode(texts, features=True)
    assert seen == [["what is the price of gold", "who wrote the law", "acid"]]
    rows = [0, 1, 0, 2, 2]
    np.testing.assert_array_equal(twice.vectors, alone.vectors[rows])
    assert twice.features is None and alone.features is None  # the tiny router's graph gives no features


def test_the_shipped_router_gives_a_repeated_text_its_vector_and_features_on_every_row(real_texts: list[str]) -> None:
    shipped = Router.load(threads=1)
    texts = real_texts[:5]
    twice = shipped.encode([*texts, *texts[::-1]])
    once = shipped.encode(texts)
    assert once.features is not None and twice.features is not None  # the votes read the features
    rows = [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]
    np.testing.assert_array_equal(twice.vectors, once.vectors[rows])
    np.testing.assert_array_equal(twice.features, once.features[rows])
    np.testing.assert_array_equal(shipped.predict_proba(twice), shipped.predict_proba(once)[rows])


def test_manifest_max_length_overrides_the_tokenizer_files_own_truncation(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = build_tiny_router(tmp_path / "r", max_seq_length=32)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=3)  # what MiniLM's file does with 128
    tokenizer.save(str(folder / "tokenizer.json"))
    edit_and_reseal(folder)
    long_text = " ".join(["price demand supply market economy"] * 4)  # 20 tokens
    got = Router.load(folder).encode([long_text], features=False).vectors
    np.testing.assert_allclose(got, reference_vectors(folder, [long_text]), rtol=1e-5, atol=1e-6)
    short = reference_vectors(folder, ["price demand supply"])
    assert not np.allclose(got, short)


def test_predict_route_difficulty_forecast_agree_with_the_formula(router: Router) -> None:
    vectors = router.encode(TEXTS, features=False).vectors
    expected = _formula(vectors, router.llm_vectors)
    np.testing.assert_allclose(router.predict_proba(TEXTS), expected, rtol=1e-5, atol=1e-6)

    result = router.route(TEXTS, k=3)
    assert isinstance(result, RouteResult) and len(result) == len(TEXTS) and result.k == 3
    order = np.argsort(-expected, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(result.indices, order)
    np.testing.assert_allclose(result.probabilities, np.take_along_axis(expected, order, 1), rtol=1e-5)
    assert result.best == [router.llms[i] for i in order[:, 0]]
    assert result[0][0] == (router.llms[order[0, 0]], pytest.approx(expected[0, order[0, 0]], rel=1e-5))
    assert [row for row in result] == [result[i] for i in range(len(TEXTS))]

    np.testing.assert_allclose(router.difficulty(TEXTS), np.linalg.norm(vectors, axis=1), rtol=1e-6)
    forecast = router.forecast(TEXTS)
    assert list(forecast) == list(router.llms)
    np.testing.assert_allclose(list(forecast.values()), expected.mean(axis=0), rtol=1e-5)


def test_vector_methods_check_their_input(router: Router) -> None:
    with pytest.raises(JeirtError, match=r"shape \(N, 4\), got \(2, 3\)"):
        router.route(EncodedQuestions(np.ones((2, 3))))
    with pytest.raises(JeirtError, match=r"shape \(N, 4\)"):
        router.predict_proba(EncodedQuestions(np.ones(4)))
    bad = np.ones((3, 4))
    bad[2, 1] = np.nan
    with pytest.raises(JeirtError, match="question row 2"):
        router.route(EncodedQuestions(bad))
    with pytest.raises(JeirtError, match="question row 2"):
        router.difficulty(EncodedQuestions(bad))
    with pytest.raises(JeirtError, match="numeric"):
        router.route(EncodedQuestions(np.array([["a"] * 4])))
    with pytest.raises(JeirtError, match="k must be"):
        router.route(EncodedQuestions(np.ones((1, 4))), k=6)


def test_a_vector_too_long_for_its_norm_is_named_by_its_first_row(router: Router) -> None:
    huge = np.ones((4, 4), np.float32)
    huge[[1, 3]] = 1e30  # its square overflows float32, its norm does not: the norm is computed in float64
    np.testing.assert_allclose(router.difficulty(EncodedQuestions(huge))[1], 2e30, rtol=1e-6)
    huge[[1, 3]] = 3e38  # finite, but the norm overflows float32
    with pytest.raises(JeirtError, match=r"question row 1 has a norm that overflows float32"):
        router.difficulty(EncodedQuestions(huge))
    huge[2, 0] = np.nan  # before it: named as what it is
    with pytest.raises(JeirtError, match=r"question row 2 contains NaN or inf"):
        router.difficulty(EncodedQuestions(huge))


def test_options_are_keyword_only(router: Router, tiny_router_path: Path, tmp_path: Path) -> None:
    # Positional options would bind to the wrong parameter the day one is added before them.
    calls = [
        lambda: Router.load(tiny_router_path, 2),
        lambda: router.encode(["velocity"], 8),
        lambda: router.route(["velocity"], 1, None),
        lambda: router.add_llm("new", ["velocity", "market"], [1, 0], 1.0),
        lambda: router.save(tmp_path / "copy", True),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="positional argument"):
            call()


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("a single string", "not a single string"),
        (["fine", ""], "text 1 is empty"),
        (["fine", "   "], "text 1 is empty"),
        (["fine", 3], "text 1 is an int, not a string"),
        ([None], "text 0 is None, not a string"),
        (5, "sequence of strings, got an int$"),
    ],
)
def test_bad_texts_are_named(router: Router, texts: object, message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        router.route(texts)  # type: ignore[arg-type]


def test_empty_batch(router: Router) -> None:
    assert router.encode([], features=False).vectors.shape == (0, 4)
    assert router.predict_proba([]).shape == (0, 5)
    assert len(router.route([], k=2)) == 0
    with pytest.raises(JeirtError, match="empty question bank"):
        router.forecast([])


@pytest.mark.parametrize("threads", [0, -1, 1.5, True])
def test_bad_threads(tiny_router_path: Path, threads: object) -> None:
    with pytest.raises(JeirtError, match="threads must be"):
        Router.load(tiny_router_path, threads=threads)  # type: ignore[arg-type]


def test_save_then_load_gives_the_same_router(router: Router, tmp_path: Path) -> None:
    saved = router.save(tmp_path / "copy")
    again = Router.load(saved)
    assert again.llms == router.llms
    np.testing.assert_array_equal(again.predict_proba(TEXTS), router.predict_proba(TEXTS))
    assert again.manifest["label"] == router.manifest["label"]
    with pytest.raises(JeirtError, match="already exists"):
        router.save(tmp_path / "copy")


def test_graph_that_does_not_match_the_manifest(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, lambda manifest: manifest["encoder"].update(output_name="sentence_embedding"))
    with pytest.raises(JeirtError, match="encoder.onnx: has no output 'sentence_embedding'"):
        Router.load(folder)


def test_onnx_file_that_is_not_a_graph(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    (folder / "encoder.onnx").write_bytes(b"not an onnx graph")
    edit_and_reseal(folder)
    # Refused before ONNX Runtime sees it: the graph is read first for its external data (_onnx_external).
    with pytest.raises(JeirtError, match=r"encoder.onnx: not a readable ONNX graph \(wire type 6"):
        Router.load(folder)
    # Bytes that are valid protobuf but no graph reach ONNX Runtime, which refuses them.
    (folder / "encoder.onnx").write_bytes(b"\x08\x01")
    edit_and_reseal(folder)
    with pytest.raises(JeirtError, match="encoder.onnx: ONNX Runtime cannot load it"):
        Router.load(folder)


@pytest.fixture(scope="module")
def shipped() -> Router:
    """The shipped router: the static encoder in Rust and neighbour votes, the paths the tiny router lacks."""
    return Router.load(threads=2)


@pytest.mark.parametrize("which", ["tiny", "shipped"])
def test_eight_threads_at_once_get_the_single_thread_answers(
    which: str, request: pytest.FixtureRequest
) -> None:
    router: Router = request.getfixturevalue("router" if which == "tiny" else "shipped")
    texts = TEXTS * 5
    expected = router.route(texts, k=2)
    barrier = threading.Barrier(8)
    results: list[RouteResult] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            results.append(router.route(texts, k=2))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    workers = [threading.Thread(target=work) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert len(results) == 8
    for result in results:
        np.testing.assert_array_equal(result.indices, expected.indices)
        np.testing.assert_array_equal(result.probabilities, expected.probabilities)


def _route_in_child(router: Router, queue: multiprocessing.Queue[object]) -> None:
    result = router.route(TEXTS * 5, k=2)
    queue.put((result.indices.tolist(), result.probabilities.tolist()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_after_loading_routes_as_its_parent(shipped: Router) -> None:
    # A service that loads once, then forks its workers (gunicorn --preload): the parent's thread pools, already
    # running, are not the child's.
    expected = shipped.route(TEXTS * 5, k=2)
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = context.Queue()
    child = context.Process(target=_route_in_child, args=(shipped, queue))
    child.start()
    indices, probabilities = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert indices == expected.indices.tolist() and probabilities == expected.probabilities.tolist()


def test_a_fast_path_without_the_graph_s_features_takes_them_from_the_graph() -> None:
    # Where the Rust fast path's pooled rows are not the graph's features (their widths differ), the features the
    # votes and corrections read come from the ONNX graph, built once, and equal the fast path's where it has them.
    shipped = Router.load(threads=1)
    assert shipped.needs_features
    texts = ["Which enzyme unwinds DNA during replication?", "What is 7 * 8?"]
    fast = shipped.encode(texts)
    shipped._encoder.gives_features = False  # as for a static table narrower than the graph's features
    via_graph = shipped.encode(texts)
    graph = shipped._graph
    assert graph is not None and via_graph.features is not None and fast.features is not None
    np.testing.assert_allclose(via_graph.features, fast.features, atol=1e-4)
    np.testing.assert_allclose(via_graph.vectors, fast.vectors, atol=1e-4)
    shipped.encode(texts)
    assert shipped._graph is graph  # not built again
    assert shipped.route(via_graph, k=1).best == shipped.route(fast, k=1).best
