"""The router that ships inside the package loads with no path and routes real question texts."""

from __future__ import annotations

import numpy as np

from jeirt_lite import Router
from jeirt_lite.router import DEFAULT_ROUTER_PATH


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
