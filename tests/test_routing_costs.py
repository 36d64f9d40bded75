"""Calibration and costs in the router: stored and validated in the artifact, cost-aware and threshold routing
against a NumPy reference, routing restricted to a subset of LLMs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, JeirtError, Router
from jeirt_lite._llm_params import Calibration, cost_vector, make_calibration
from jeirt_lite._routing import subset_rows
from jeirt_lite.kernels import probabilities

COSTS = {"llm-0": 70.0, "llm-1": 7.0, "llm-2": 8.0, "llm-3": 1.5, "llm-4": 34.0}


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1).with_costs(COSTS)


def _questions(router: Router, n: int = 400, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=(n, router.dim)) * 0.8).astype(np.float32)


def test_calibration_is_applied_everywhere_and_survives_save(router: Router, tmp_path: Path) -> None:
    scale, bias = [0.5, 1.0, 2.0, 1.5, 0.8], [0.1, -0.2, 0.0, 0.3, -0.1]
    calibrated = router.with_calibration(scale, bias)
    q = _questions(router)
    want = probabilities(q, router.llm_vectors, scale=scale, bias=bias)
    np.testing.assert_allclose(calibrated.predict_proba(EncodedQuestions(q)), want, rtol=1e-6)
    np.testing.assert_allclose(list(calibrated.forecast(EncodedQuestions(q)).values()), want.mean(axis=0), rtol=1e-5)
    best = calibrated.route(EncodedQuestions(q), k=1)
    np.testing.assert_array_equal(best.indices[:, 0], np.argmax(want, axis=1))
    calibrated.save(tmp_path / "r")
    loaded = Router.load(tmp_path / "r", threads=1)
    np.testing.assert_allclose(loaded.predict_proba(EncodedQuestions(q)), want, rtol=1e-6)
    assert loaded.costs == COSTS
    # Selecting LLMs keeps each one's calibration and cost; removing calibration restores the raw model.
    sub = loaded.select_llms(["llm-2", "llm-0"])
    np.testing.assert_allclose(sub.predict_proba(EncodedQuestions(q)), want[:, [2, 0]], rtol=1e-6)
    assert sub.costs == {"llm-2": 8.0, "llm-0": 70.0}
    np.testing.assert_allclose(
        loaded.without_calibration().predict_proba(EncodedQuestions(q)), probabilities(q, router.llm_vectors), rtol=1e-6
    )


def test_cost_weight_maximises_probability_minus_weighted_cost(router: Router) -> None:
    q = _questions(router)
    p = router.predict_proba(EncodedQuestions(q)).astype(np.float64)
    cost = np.array([COSTS[n] for n in router.llms])
    for weight in (0.0, 0.002, 0.01, 1.0):
        got = router.route(EncodedQuestions(q), k=2, cost_weight=weight)
        keys = p - weight * cost
        want = np.argsort(-keys, axis=1, kind="stable")[:, :2]
        chosen = got.indices.astype(np.int64)
        np.testing.assert_allclose(
            np.take_along_axis(keys, chosen, axis=1), np.take_along_axis(keys, want, axis=1), atol=2e-6
        )
        np.testing.assert_allclose(got.probabilities, np.take_along_axis(p, chosen, axis=1), atol=2e-6)
    # A huge weight routes everything to the cheapest LLM.
    assert set(router.route(EncodedQuestions(q), cost_weight=100.0).best) == {"llm-3"}


def test_threshold_picks_the_cheapest_llm_above_it_or_falls_back(router: Router) -> None:
    q = _questions(router)
    p = router.predict_proba(EncodedQuestions(q))
    cost = np.array([COSTS[n] for n in router.llms])
    for t in (0.0, 0.3, 0.6, 0.9, 1.0):
        got = router.route(EncodedQuestions(q), min_probability=t)
        assert got.fallback is not None
        for i in range(len(q)):
            clear = np.flatnonzero(p[i] >= t)
            if clear.size:
                want = clear[np.argmin(cost[clear])]
                assert not got.fallback[i]
            else:
                want = int(np.argmax(p[i]))
                assert got.fallback[i]
            assert got.indices[i, 0] == want
            assert got.probabilities[i, 0] == p[i, want]


def test_routing_among_a_subset_and_with_costs_passed_in(router: Router) -> None:
    q = _questions(router)
    p = router.predict_proba(EncodedQuestions(q))
    got = router.route(EncodedQuestions(q), k=2, llms=["llm-4", "llm-1"])
    assert set(got.indices.ravel().tolist()) <= {1, 4}
    np.testing.assert_array_equal(got.indices[:, 0], np.where(p[:, 1] > p[:, 4], 1, 4))
    # Costs passed in replace the stored ones for that call.
    flipped = {name: 100.0 - cost for name, cost in COSTS.items()}
    assert set(router.route(EncodedQuestions(q), cost_weight=100.0, costs=flipped).best) == {"llm-0"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"llms": ["nope"]}, "unknown LLM 'nope'"),
        ({"llms": []}, "at least one LLM"),
        ({"llms": ["llm-1", "llm-1"]}, "names an LLM twice"),
        ({"cost_weight": -1.0}, r"cost_weight must be in \[0, inf\]"),
        ({"cost_weight": float("nan")}, "cost_weight must be finite"),
        ({"cost_weight": "0.1"}, "cost_weight must be a number"),
        ({"cost_weight": 1e300, "costs": {f"llm-{i}": 1e10 for i in range(5)}}, "overflows"),
        ({"min_probability": 1.5}, r"min_probability must be in \[0, 1\]"),
        ({"min_probability": float("nan")}, "min_probability must be finite"),
        ({"min_probability": 0.5, "cost_weight": 0.1}, "not both"),
        ({"cost_weight": 0.1, "costs": {"llm-9": 1.0}}, "unknown LLM 'llm-9'"),
        ({"cost_weight": 0.1, "costs": {"llm-0": -1.0}}, "finite and >= 0"),
        ({"k": 6}, r"k must be between 1 and the 5 LLMs routed among \(the router's LLMs\), got 6"),
        ({"k": 0}, r"k must be between 1 and the 5 LLMs routed among \(the router's LLMs\), got 0"),
        ({"k": 3, "llms": ["llm-0", "llm-1"]}, r"between 1 and the 2 LLMs routed among \(the given LLMs\), got 3"),
        ({"k": 2.0}, r"got 2\.0"),
        ({"k": True}, r"got True"),
    ],
)
def test_bad_routing_arguments_are_named(router: Router, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        router.route(EncodedQuestions(_questions(router, 3)), **kwargs)  # type: ignore[arg-type]


def test_a_subset_of_more_than_256_llms_is_taken_whole() -> None:
    # Its lengths compared by identity (`is not` for `!=`) agree only up to 256, CPython's cached integers: more
    # LLMs would all be refused as named twice.
    names = [f"llm-{i}" for i in range(300)]
    assert subset_rows(names, names[::-1]) == list(range(299, -1, -1))


def test_costs_are_needed_for_every_llm_named(tiny_router_path: Path) -> None:
    partial = Router.load(tiny_router_path, threads=1).with_costs({"llm-0": 1.0})
    with pytest.raises(JeirtError, match="missing: llm-1"):
        partial.route(EncodedQuestions(_questions(partial, 3)), cost_weight=0.1, llms=["llm-0", "llm-1"])
    with pytest.raises(JeirtError, match="stores none"):
        Router.load(tiny_router_path).route(EncodedQuestions(_questions(partial, 3)), min_probability=0.5)
    # Without `llms`, only the LLMs that have a cost are candidates.
    assert partial.route(EncodedQuestions(_questions(partial, 3)), cost_weight=0.1).best == ["llm-0"] * 3


def _edit_manifest(router_path: Path, tmp_path: Path, **fields: object) -> Path:
    import shutil

    target = tmp_path / "edited"
    shutil.copytree(router_path, target)
    manifest = json.loads((target / "router.json").read_text())
    manifest.update(fields)
    (target / "router.json").write_text(json.dumps(manifest))
    return target


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 4, "bias": [0.0] * 5}}, "list of 5 numbers"),
        # Too long as well as too short, and the length given, not the JSON type of the list (a mutation round).
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 6, "bias": [0.0] * 5}},
         r"calibration\.scale must be a list of 5 numbers \(one per LLM\), got 6$"),
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 5, "bias": [0.0] * 4}},
         r"calibration\.bias must be a list of 5 numbers \(one per LLM\), got 4$"),
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 3 + [-2.0, 0.0], "bias": [0.0] * 5}},
         r"calibration\.scale\[3\] must be > 0, got -2\.0$"),
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 5, "bias": [0.0] * 4 + ["x"]}}, r"bias\[4\]"),
        ({"calibration": {"kind": "per_llm", "scale": [1.0] * 4 + [0.0], "bias": [0.0] * 5}}, "must be > 0"),
        ({"calibration": {"kind": "isotonic", "scale": [1.0] * 5, "bias": [0.0] * 5}}, "kind must be one of"),
        ({"calibration": {"scale": [1.0] * 5}}, "lacks kind, bias"),
        ({"calibration": [1, 2]}, "calibration must be an object"),
        ({"costs": {"gpt-9": 1.0}}, "unknown LLM 'gpt-9'"),
        ({"costs": {"llm-0": "cheap"}}, "must be a number"),
        ({"costs": [1, 2]}, "costs must map LLM names"),
    ],
)
def test_bad_calibration_or_costs_in_the_manifest_fail_at_load(
    tiny_router_path: Path, tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    path = _edit_manifest(tiny_router_path, tmp_path, **fields)
    with pytest.raises(JeirtError, match=message) as info:
        Router.load(path)
    assert "router.json" in str(info.value)


def test_nan_in_a_stored_calibration_is_rejected(tiny_router_path: Path, tmp_path: Path) -> None:
    path = _edit_manifest(tiny_router_path, tmp_path)
    text = (path / "router.json").read_text().rstrip()[:-1]
    (path / "router.json").write_text(
        text + ', "calibration": {"kind": "global", "scale": [NaN, 1, 1, 1, 1], "bias": [0, 0, 0, 0, 0]}}'
    )
    with pytest.raises(JeirtError, match=r"field calibration\.scale\[0\] is nan"):
        Router.load(path)


def test_an_onboarded_llm_gets_identity_calibration_and_its_cost(router: Router) -> None:
    calibrated = router.with_calibration([2.0] * 5, [0.5] * 5)
    q = _questions(router, 50)
    grown = calibrated.add_llm("new", EncodedQuestions(q), (np.arange(50) % 2), cost=3.0)
    assert grown.calibration is not None
    assert grown.calibration.scale.tolist() == [2.0] * 5 + [1.0]
    assert grown.costs["new"] == 3.0
    with pytest.raises(JeirtError, match="cost of 'x' must be finite"):
        router.add_llm("x", EncodedQuestions(q), (np.arange(50) % 2), cost=float("inf"))


@pytest.mark.parametrize("scale", [0.0, -1.0, float("inf"), float("nan")])
def test_an_onboarded_llm_s_scale_must_be_a_positive_finite_number(scale: float) -> None:
    # add_llm gives a new LLM its fit's router_scale: one of 0, below 0 or infinite would make its probabilities
    # flat, inverted or 0 and 1 only (a mutation round found each of these but NaN accepted).
    with pytest.raises(JeirtError, match=rf"calibration scale must be a positive number, got {re.escape(repr(scale))}$"):
        Calibration.identity(2).extended(scale=scale)


def test_an_extended_calibration_gives_each_new_llm_the_scale_and_bias_zero() -> None:
    grown = Calibration.identity(2).extended(count=2, scale=0.5)
    assert grown.kind == "per_llm" and grown.scale.tolist() == [1.0, 1.0, 0.5, 0.5] and grown.bias.tolist() == [0.0] * 4
    assert Calibration.identity(3).extended().to_manifest() == {"kind": "per_llm", "scale": [1.0] * 4, "bias": [0.0] * 4}


def test_a_calibration_of_more_than_256_llms_is_taken() -> None:
    # Its length compared by identity (`is not` for `!=`) agrees only up to 256, CPython's cached integers.
    calibration = make_calibration([1.5] * 300, [0.0] * 300, "global", 300)
    assert calibration.kind == "global" and calibration.scale.shape == (300,)


def test_a_cost_of_zero_or_below_one_is_a_cost(router: Router) -> None:
    # A free (self-hosted) LLM costs 0, and a unit may make every cost a fraction: neither is refused.
    priced = router.with_costs({"llm-0": 0.0, "llm-1": 0.25})
    assert priced.costs["llm-0"] == 0.0 and priced.costs["llm-1"] == 0.25


def test_a_missing_costs_error_names_the_first_five_llms_without_one() -> None:
    names = [f"llm-{i}" for i in range(7)]
    with pytest.raises(JeirtError, match=r"needs a cost for every LLM; missing: llm-1, llm-2, llm-3, llm-4, llm-5$"):
        cost_vector({"llm-0": 1.0}, names, "cost-aware routing")


def test_cost_proxy_parses_parameter_counts() -> None:
    from scripts.cost_proxies import cost_proxies, cost_proxy, has_size

    assert cost_proxy("Llama-2-70b-hf") == 70
    assert cost_proxy("Mixtral-8x7B-Instruct-v0.1") == 56
    assert cost_proxy("Qwen1.5-110B") == 110
    assert cost_proxy("Meta-Llama-3_1-8B-Instruct") == 8
    assert cost_proxy("Yi-6b-Chat") == 6
    assert cost_proxy("Phi-3-mini-4k-instruct") == 3.8
    # No public size, no cost: never an invented default.
    for closed in ("gpt-4o-2024-05-13", "gemini-3.1-pro", "deepseek-2024-05"):
        assert cost_proxy(closed) is None and not has_size(closed)
    assert cost_proxies(["Yi-34B", "gemini-3.1-pro"]) == {"Yi-34B": 34.0}


def test_cost_aware_routing_leaves_out_llms_without_a_cost(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    priced = router.with_costs({router.llms[0]: 1.0, router.llms[2]: 2.0})
    assert priced.priced_llms == (router.llms[0], router.llms[2])
    q = _questions(router, 20)
    for result in (
        priced.route(EncodedQuestions(q), 2, cost_weight=0.01),
        priced.route(EncodedQuestions(q), 1, min_probability=0.5),
    ):
        assert set(np.unique(result.indices).tolist()) <= {0, 2}
    plain = priced.route(EncodedQuestions(q), 1)  # without a cost rule every LLM is a candidate
    assert plain.indices.shape == (20, 1)
    with pytest.raises(JeirtError, match="needs a cost for every LLM; missing"):
        priced.route(EncodedQuestions(q), 1, cost_weight=0.01, llms=[router.llms[0], router.llms[1]])
    with pytest.raises(JeirtError, match="this router stores none"):
        router.route(EncodedQuestions(q), 1, cost_weight=0.01)


def test_renamed_llms_keep_their_vectors_and_costs(tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    priced = router.with_costs({router.llms[1]: 4.0})
    renamed = priced.rename_llms({router.llms[1]: "plain-name"})
    assert renamed.llms[1] == "plain-name" and renamed.costs == {"plain-name": 4.0}
    assert np.array_equal(renamed.llm_vectors, router.llm_vectors)
    with pytest.raises(JeirtError, match="unknown LLM"):
        router.rename_llms({"nope": "x"})
    with pytest.raises(JeirtError, match="appears twice"):
        router.rename_llms({router.llms[1]: router.llms[0]})
