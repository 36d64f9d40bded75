"""Hostile input to the library: unbounded numbers, texts the tokenizer refuses, giant texts, extreme cost
weights; and tests that pin rules a small bug would break silently (threshold equality, calibration rows of a
subset, the extreme-norm rescaling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._limits import MAX_CHARS_PER_TOKEN, MAX_THREADS
from jeirt_lite.kernels import probabilities

COSTS = {"llm-0": 70.0, "llm-1": 7.0, "llm-2": 7.0, "llm-3": 1.5, "llm-4": 1.5}


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1).with_costs(COSTS)


def _questions(dim: int, n: int = 300, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=(n, dim)) * 0.8).astype(np.float32)


@pytest.mark.parametrize("threads", [10**6, MAX_THREADS + 1, 0, -1, 2.5, True, "4"])
def test_threads_out_of_bounds_are_refused_at_once(tiny_router_path: Path, threads: object) -> None:
    with pytest.raises(JeirtError, match=rf"threads must be (in 1\.\.{MAX_THREADS}|an integer)"):
        Router.load(tiny_router_path, threads=threads)  # type: ignore[arg-type]


def test_the_thread_ceiling_itself_loads(tiny_router_path: Path) -> None:
    assert Router.load(tiny_router_path, threads=MAX_THREADS).threads == MAX_THREADS


@pytest.mark.parametrize("text", ["What \ud800 is 2+2?", "\udfff", "a\udcff"])
def test_a_lone_surrogate_is_named_by_its_text_index(router: Router, text: str) -> None:
    with pytest.raises(JeirtError, match=r"text 1 is not valid Unicode: a lone surrogate"):
        router.route(["what is the price", text])


def test_a_giant_text_is_cut_before_tokenising_and_scores_like_its_prefix(router: Router) -> None:
    limit = router.manifest.encoder.max_chars
    assert limit == MAX_CHARS_PER_TOKEN * router.manifest.encoder.max_seq_length
    giant = "what is the price of the market " * (10_000_000 // 32)  # 10 MB
    prefix = giant[:limit]
    np.testing.assert_array_equal(router.encode([giant], features=False).vectors, router.encode([prefix], features=False).vectors)
    assert router.route([giant], k=2).names == router.route([prefix], k=2).names
    # For natural text the cut changes nothing: the encoder reads only the first max_seq_length tokens.
    tokenizer = router._encoder.tokenizer
    moderate = giant[: limit * 4]
    assert tokenizer.encode(moderate).ids == tokenizer.encode(prefix).ids


@pytest.mark.parametrize("fast_path", [True, False])
def test_the_shipped_router_cuts_a_10_mb_text_to_what_its_encoder_reads(fast_path: bool) -> None:
    router = Router.load(threads=1, fast_path=fast_path)  # the Rust static path and the ONNX reference
    text = "Which enzyme unwinds DNA during replication? " * (10_000_000 // 45)
    limit = router.manifest.encoder.max_chars
    np.testing.assert_array_equal(router.encode([text], features=False).vectors, router.encode([text[:limit]], features=False).vectors)
    if not fast_path:
        tokenizer = router._encoder.tokenizer
        assert tokenizer.encode(text[: limit * 2]).ids == tokenizer.encode(text[:limit]).ids


def test_a_huge_cost_weight_reports_the_true_probabilities(router: Router) -> None:
    q = _questions(router.dim)
    p = router.predict_proba(EncodedQuestions(q))
    for weight in (1e8, 1e12, 1e300):
        got = router.route(EncodedQuestions(q), k=5, cost_weight=weight)
        chosen = got.indices.astype(np.int64)
        # P itself, bit for bit, whatever the weight.
        np.testing.assert_array_equal(got.probabilities, np.take_along_axis(p, chosen, axis=1))
        # Cheapest first; among LLMs of equal cost the more likely one first (float32 keys would tie them).
        for i in range(len(q)):
            first, second = chosen[i, :2]
            assert {first, second} == {3, 4}
            assert p[i, first] >= p[i, second]
            assert set(chosen[i, 2:4]) == {1, 2} and p[i, chosen[i, 2]] >= p[i, chosen[i, 3]]
            assert chosen[i, 4] == 0


def test_a_probability_equal_to_the_threshold_clears_it(router: Router) -> None:
    q = _questions(router.dim, 50, seed=3)
    p = router.predict_proba(EncodedQuestions(q))
    cheapest = 3  # llm-3 and llm-4 cost 1.5; ties go to the lower cost, then the higher P
    for i in range(len(q)):
        j = cheapest if p[i, 3] >= p[i, 4] else 4
        threshold = float(p[i, j])  # exactly representable: P == threshold
        got = router.route(EncodedQuestions(q[i : i + 1]), min_probability=threshold)
        assert got.fallback is not None and not got.fallback[0]
        assert got.indices[0, 0] == j, (i, threshold, p[i])
        assert got.probabilities[0, 0] == p[i, j]
    assert cheapest in (3, 4)


def test_subset_routing_on_a_calibrated_router_uses_each_llms_own_calibration(router: Router) -> None:
    scale, bias = [0.5, 1.7, 1.0, 2.5, 0.8], [0.4, -0.9, 0.0, 0.3, -0.2]
    calibrated = router.with_calibration(scale, bias)
    q = _questions(router.dim)
    want = probabilities(q, router.llm_vectors, scale=scale, bias=bias)
    subset = [4, 1, 3]
    got = calibrated.route(EncodedQuestions(q), k=3, llms=[f"llm-{j}" for j in subset])
    chosen = got.indices.astype(np.int64)
    assert set(np.unique(chosen)) <= set(subset)
    np.testing.assert_array_equal(got.probabilities, np.take_along_axis(want, chosen, axis=1))
    order = np.argsort(-want[:, subset], axis=1, kind="stable")
    np.testing.assert_array_equal(chosen, np.asarray(subset)[order])
    # The same with the cost rules, which take another path.
    got = calibrated.route(EncodedQuestions(q), k=2, llms=["llm-4", "llm-1"], cost_weight=0.001)
    np.testing.assert_array_equal(
        got.probabilities, np.take_along_axis(want, got.indices.astype(np.int64), axis=1)
    )


def test_extreme_question_norms_stay_finite_and_accurate_from_python() -> None:
    # The kernels rescale rows whose squared norm would overflow or underflow float32 (the Rust tests check
    # every SIMD level; this checks the path Python takes).
    rng = np.random.default_rng(5)
    d = 40
    unit = rng.normal(size=(6, d))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    scales = np.array([1e-42, 1e-30, 1.0, 1e18, 1e35, 3e38])[:, None]
    q = (unit * scales).astype(np.float32)
    llms = (rng.normal(size=(9, d)) * 3.0).astype(np.float32)
    q64 = q.astype(np.float64)
    n64 = np.linalg.norm(q64, axis=1, keepdims=True)
    logit = (q64 / n64) @ llms.astype(np.float64).T - n64
    with np.errstate(over="ignore"):  # exp(1e38) is inf: P is 0 there, as wanted
        want = 1.0 / (1.0 + np.exp(-logit))
    got = probabilities(q, llms)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got[3:].max() < 1e-30 and got[:3].min() > 1e-6  # huge norms: certain failure; tiny: the direction


def test_a_nul_inside_a_text_is_refused_by_the_api_as_by_the_table_readers(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    for call in (router.encode, router.predict_proba, lambda texts: router.route(texts, k=1)):
        with pytest.raises(JeirtError, match="text 1 holds a NUL character"):
            call(["what is the price", "acid\x00base"])


def test_a_table_a_mapping_or_a_set_of_texts_is_refused_not_routed_by_its_keys(tiny_router_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    router = Router.load(tiny_router_path, threads=1)
    table = pandas.DataFrame({"id": ["q1", "q2"], "text": ["Who wrote Hamlet?", "What is 7 * 8?"]})
    cases = [
        (table, r"got a DataFrame \(pass its text column, e\.g\. table\['text'\]\)"),
        ({"q1": "Who wrote Hamlet?"}, r"got a dict \(pass its values"),
        ({"Who wrote Hamlet?", "What is 7 * 8?"}, "got a set, which has no order"),
        (frozenset({"Who wrote Hamlet?"}), "got a frozenset, which has no order"),
    ]
    for texts, message in cases:
        for call in (router.encode, router.predict_proba, router.forecast, lambda t: router.route(t, k=1),
                     lambda t: router.add_llm("new", t, [1] * len(t))):
            with pytest.raises(JeirtError, match=message):
                call(texts)
    column = router.predict_proba(table["text"])  # a column is a sequence of texts
    np.testing.assert_array_equal(column, router.predict_proba(list(table["text"])))


def test_a_pyarrow_column_is_a_sequence_of_texts_and_a_pyarrow_table_is_refused_like_a_dataframe(
    tiny_router_path: Path,
) -> None:
    # The DataFrame's advice, table['text'], given a Parquet table read with pyarrow, ended in "text 0 is a
    # StringScalar, not a string"; the table itself in "text 0 is a ChunkedArray".
    pa = pytest.importorskip("pyarrow")
    router = Router.load(tiny_router_path, threads=1)
    texts = ["Who wrote Hamlet?", "What is 7 * 8?", "acid and base"]
    table = pa.table({"id": ["q1", "q2", "q3"], "text": texts})
    want = router.predict_proba(texts)
    for column in (table["text"], table.column("text").combine_chunks(), pa.chunked_array([texts[:1], texts[1:]])):
        np.testing.assert_array_equal(router.predict_proba(column), want)
    for whole in (table, pa.record_batch([pa.array(texts)], names=["text"])):
        with pytest.raises(JeirtError, match=rf"got a {type(whole).__name__} \(pass its text column, e\.g\. "
                                             r"table\['text'\]\)"):
            router.route(whole)
    with pytest.raises(JeirtError, match="text 1 is None, not a string"):
        router.route(pa.array(["Who wrote Hamlet?", None]))


def test_a_wrong_argument_is_named_with_what_to_pass_instead(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    with pytest.raises(JeirtError, match=r"select_llms takes a list of LLM names, not one string \(wrap it"):
        router.select_llms("llm-1")
    encoded = router.encode(["what is the price", "acid and base"])
    with pytest.raises(JeirtError, match=r"text 0 is an ndarray, not a string \(question vectors go in as Encoded"):
        router.predict_proba((encoded.vectors, encoded.features))  # type: ignore[arg-type]
    with pytest.raises(JeirtError, match=r"calibration.scale\[0\] must be > 0, got -1.0$"):
        router.with_calibration([-1.0] * len(router.llms), [0.0] * len(router.llms))
    result = router.route(encoded, k=2)
    assert result[0:1] == [result[0]] and result[:] == list(result) and result[::-1][0] == result[1]
    assert result[np.int64(1)] == result[-1]
    with pytest.raises(TypeError, match="indexed by a question's position or a slice, not list"):
        result[[0]]  # type: ignore[call-overload]


def test_a_router_folder_whose_path_is_not_utf8_is_refused_by_name(tiny_router_path: Path, tmp_path: Path) -> None:
    # A Linux name may hold any byte; the tokenizer and ONNX Runtime open files by a UTF-8 name, which such a
    # path has none of. The refusal says so and what to do, instead of the tokenizer's codec error.
    import os
    import shutil

    from jeirt_lite.cli import main

    try:
        folder = Path(shutil.copytree(tiny_router_path, tmp_path / os.fsdecode(b"router\xff")))
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes only UTF-8 names")
    with pytest.raises(JeirtError, match=r"the router folder's path is not valid UTF-8.*rename the folder"):
        Router.load(folder, threads=1)
    shutil.copytree(folder, tmp_path / "router")  # the same files under a UTF-8 name load
    assert Router.load(tmp_path / "router", threads=1).llms == Router.load(tiny_router_path, threads=1).llms
    assert main(["route", "What is 2 + 2?", "--router", str(folder)]) == 1  # the command line: one line, exit 1
