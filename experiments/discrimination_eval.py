"""Does JE-IRT already hold a per-question discrimination? The router's geometry against a plain 2PL.

MIRT's logit a_q·θ_m − b_q lets each question scale how much the LLMs' abilities matter. JE-IRT's logit
q̂·m − ‖q‖ has a unit direction q̂, yet the LLM vectors span at most L − 1 directions around their mean (L LLMs,
d ≥ L here): the part of q̂ outside that span moves no LLM against another, so the share inside it,
‖P q̂‖ ∈ [0, 1], scales the spread of a question's logits over the LLMs the way a 2PL's |a_q| does, and the
orientation of P q̂ orders the LLMs (a 2PL's negative a_q is a direction that reverses its one ability scale).

For every question this measures, on a router's question vectors and LLM table:
- `spread`: the standard deviation over the LLMs of q̂·m_k (a 2PL's |a_q| on its standardised θ scale),
- `in_span`: ‖P q̂‖, P the projection on the span of the centred LLM vectors (1: the whole direction orders LLMs),
- `ability_correlation`: the correlation over the LLMs of q̂·m_k with the 2PL's θ (its sign against a_q's),
and compares them with the 2PL fitted to the same questions' answers. A share near 1 on every question says the
router does not use that freedom (its per-question scale is then the spread of q̂·m within the span alone); a spread
that does not follow the 2PL's |a_q| says its scale does not track the 2PL's.

    python -m experiments.discrimination_eval --data data/mmlu_pro --json docs/research/analysis_discrimination.json
    python -m experiments.discrimination_eval --data data/zeroeval_crux_gsm_math --router zeroeval_router \
        --json docs/research/analysis_discrimination_zeroeval.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite_training.data import load_dataset
from scipy.stats import spearmanr

from .baselines.irt2pl import fit_2pl

CEILING = 0.95  # in_span above this: the direction is (nearly) all in the LLMs' span


def span_basis(llm_vectors: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
    """Orthonormal rows spanning the centred LLM vectors (at most L − 1 of them)."""
    centred = llm_vectors - llm_vectors.mean(axis=0)
    _, singular, right = np.linalg.svd(centred, full_matrices=False)
    return np.asarray(right[singular > tolerance * max(float(singular[0]), 1e-30)])


def discrimination_measures(question_vectors: np.ndarray, llm_vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Per question: the spread of q̂·m over the LLMs, the share of q̂ in their span, and q̂·m itself (N, L)."""
    q = np.asarray(question_vectors, dtype=np.float64)
    m = np.asarray(llm_vectors, dtype=np.float64)
    if q.ndim != 2 or m.ndim != 2 or q.shape[1] != m.shape[1]:
        raise ValueError(f"question vectors {q.shape} and LLM vectors {m.shape} must be (N, d) and (L, d)")
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a question vector is zero: it has no direction")
    unit = q / norms
    ability = unit @ m.T
    return {
        "spread": ability.std(axis=1),
        "in_span": np.linalg.norm(unit @ span_basis(m).T, axis=1),
        "ability": ability,
    }


def row_correlations(rows: np.ndarray, against: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row with one vector (0 where a row is constant)."""
    centred = rows - rows.mean(axis=1, keepdims=True)
    other = against - against.mean()
    denominator = np.linalg.norm(centred, axis=1) * np.linalg.norm(other)
    return np.where(denominator > 0, centred @ other / np.maximum(denominator, 1e-300), 0.0)


def quantiles(values: np.ndarray) -> dict[str, float]:
    return {f"q{int(p * 100):02d}": float(np.quantile(values, p)) for p in (0.05, 0.25, 0.5, 0.75, 0.95)}


def compare_with_2pl(measures: dict[str, np.ndarray], a: np.ndarray, theta: np.ndarray) -> dict[str, Any]:
    correlation = row_correlations(measures["ability"], theta)
    negative = a < 0
    return {
        "spearman_spread_vs_abs_a": float(spearmanr(measures["spread"], np.abs(a)).statistic),
        "spearman_in_span_vs_abs_a": float(spearmanr(measures["in_span"], np.abs(a)).statistic),
        "share_ability_sign_agrees_with_a": float(np.mean(np.sign(correlation) == np.sign(a))),
        "share_negative_a": float(np.mean(negative)),
        "share_reversed_where_a_negative": float(np.mean(correlation[negative] < 0)) if negative.any() else None,
        "share_reversed_where_a_positive": float(np.mean(correlation[~negative] < 0)) if (~negative).any() else None,
    }


def run(data_dir: Path, router_path: str | None) -> dict[str, Any]:
    from jeirt_lite import Router

    t0 = time.perf_counter()
    data = load_dataset(data_dir)
    router = Router.load(router_path)
    missing = sorted(set(data.llm_names) - set(router.llms))
    if missing:
        raise ValueError(f"the router has no vector for {len(missing)} of the data's LLMs, e.g. {missing[:3]}")
    rows = [router.llms.index(name) for name in data.llm_names]
    llm_vectors = router.llm_vectors[rows]
    fit = fit_2pl(data.responses, data.n_llms)  # on every answer: the router learned from all of them too
    measures = discrimination_measures(router.encode([data.texts[i] for i in fit.items]).vectors, llm_vectors)
    return {
        "data": data.name,
        "router": router_path or "shipped",
        "questions": len(fit.items),
        "llms": data.n_llms,
        "dim": int(llm_vectors.shape[1]),
        "span_dims": int(span_basis(llm_vectors.astype(np.float64)).shape[0]),
        "spread": quantiles(measures["spread"]),
        "in_span": quantiles(measures["in_span"]),
        "share_in_span_above": {str(CEILING): float(np.mean(measures["in_span"] > CEILING))},
        "abs_a": quantiles(np.abs(fit.a)),
        "against_2pl": compare_with_2pl(measures, fit.a, fit.theta),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="data folder whose LLMs the router holds")
    parser.add_argument("--router", default=None, help="router folder (default: the shipped router)")
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    result = run(args.data, args.router)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
