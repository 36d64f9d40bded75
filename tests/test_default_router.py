"""The router that ships inside the package loads with no path and routes real question texts."""

from __future__ import annotations

import numpy as np
from jeirt_lite import Router
from jeirt_lite._router import DEFAULT_ROUTER_PATH


def test_default_router_routes_real_questions(real_texts: list[str]) -> None:
    router = Router.load(threads=2)
    assert router.path == DEFAULT_ROUTER_PATH
    texts = real_texts[:16]
    result = router.route(texts, k=3)
    assert result.indices.shape == (16, 3)
    assert set(np.unique(result.indices)) <= set(range(len(router.llms)))
    assert np.all((result.probabilities > 0) & (result.probabilities < 1))
    assert np.all(np.diff(result.probabilities, axis=1) <= 0)  # best first
    probabilities = router.predict_proba(texts)
    np.testing.assert_allclose(
        result.probabilities, np.take_along_axis(probabilities, result.indices.astype(np.int64), 1), rtol=1e-5
    )


def test_shipped_llm_names_are_plain_and_no_cost_is_invented() -> None:
    from scripts.cost_proxies import cost_proxies
    from scripts.plain_llm_names import DEFAULT_MODELS, plain_names

    router = Router.load(threads=1)
    for name in router.llms:
        assert not set(name) & set("(), "), name  # each one passes through --llms A,B as written
    assert not set(plain_names(DEFAULT_MODELS)) & set(router.llms)  # no label left to migrate
    # The cost is the parameter-count proxy where a size is public, and absent where not (never a default).
    assert router.costs == cost_proxies(list(router.llms))
    assert {"gpt-4o-2024-05-13", "gemini-3.1-pro"} <= set(router.llms) - set(router.priced_llms)


def test_the_shipped_router_was_chosen_then_refitted_on_every_question() -> None:
    """Built by `python -m scripts.build_default_router`: fit's choose-then-refit on all of data/mmlu_pro, the
    calibration fitted on the chosen setting's held-out predictions, metrics that say how they were obtained."""
    manifest = Router.load(threads=1).manifest
    training, metrics = manifest["training"], manifest["metrics"]
    selection = training["selection"]
    assert training["data"] == "data/mmlu_pro" and training["split"]["n_test_questions"] == 0
    assert selection["protocol"] == "choose-then-refit" and len(selection["candidates"]) == 6  # fit's d x dropout
    assert selection["refit_on"]["questions"] == training["n_questions"] == 10801
    assert (selection["chosen"]["dim"], selection["chosen"]["dropout"]) == (
        training["hyper_parameters"]["dim"], training["hyper_parameters"]["dropout"])
    assert training["hyper_parameters"]["lr_drops"] > 0  # fit's schedule, not the pinned one of the first router
    best = min(selection["candidates"], key=lambda c: c["val_loss"])
    assert (best["dim"], best["dropout"]) == (selection["chosen"]["dim"], selection["chosen"]["dropout"])
    assert metrics["test"] is None and metrics["heldout"]["auc"] > metrics["heldout_per_llm_accuracy_baseline"]["auc"]
    assert "slightly optimistic" in metrics["how"] and "fitted on the same held-out predictions" in metrics["how"]
    assert manifest["calibration"]["kind"] == "global"
