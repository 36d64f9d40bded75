"""How add_llm weighs its fits, compared on draws kept apart from the reported ones.

    python -m experiments.onboarding_weighting --setup static_zeroeval --seeds 3,4,5 \
        --out docs/results/weighting_static_zeroeval.json
    python -m experiments.onboarding_weighting --setup in_domain --fractions 0.01 --seeds 14-45 \
        --out docs/results/weighting_in_domain_1pct.json

For every draw of a setup (the protocols of experiments.onboarding_ood and experiments.onboarding_eval, with other seeds),
the cross-validated held-out logits of every (router scale, ridge strength) of add_llm's grid and each fit's logits
on the scored questions are computed once; each rule then turns the held-out logits into weights over the grid and
is scored by the AUC of the weighted logits on the scored questions, against the vector alone (mean ± standard
error over the draws):

* `simplest`: the simplest fit within one standard error of the best (two for the router's own kind of question);
* `average`: every fit weighted by exp of its held-out log-likelihood (pseudo-Bayesian model averaging);
* `average_half_alone`, `average_alone_0.9`, `average_alone_0.99`: the same with that prior mass on the vector alone;
* `hybrid` (add_llm's rule until 2026-12-04): `simplest` for the router's own kind of question, `average` otherwise;
* `add_llm` (its rule since): `average`, with LIKE_ROUTER_ALONE_PRIOR of the prior on the vector alone for the
  router's own kind of question.

Setups: static_zeroeval (the shipped router → zeroeval; `--in-distribution-only`: only the questions it counts as in
distribution, so that nearly every draw counts as its own kind), static_mmlu (JE-IRT on zeroeval over the shipped
encoder → MMLU-Pro), minilm_zeroeval (JE-IRT on MMLU-Pro over MiniLM → zeroeval), in_domain (the held-out MMLU-Pro
LLMs of experiments.onboarding_runs, whose runs must exist).

    python -m experiments.onboarding_weighting --setup static_zeroeval --in-distribution-only --seeds 3,4,5 \
        --out docs/results/weighting_static_zeroeval_flagged_kept_apart.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from jeirt_lite._correction_grid import (
    DEFAULT_FOLDS,
    DEFAULT_ROUTER_SCALES,
    DEFAULT_STRENGTHS,
    LIKE_ROUTER_ALONE_PRIOR,
    VECTOR_ALONE,
    Choice,
    base_logits,
    evidence_weights,
    feature_design,
    like_the_routers_share,
    log_likelihoods,
    standardised_design,
)
from jeirt_lite._corrections import _cross_validated
from jeirt_lite._metrics import roc_auc
from jeirt_lite._onboarding import DEFAULT_L2, fit_llm_vector
from jeirt_lite._ridge import ridge_logistic, sigmoid

from .onboarding_tables import write_result

RULES = ("simplest", "average", "average_half_alone", "hybrid")
# Rules compared since (their rows lack in the results written before): the average with this much prior mass on
# the vector alone, and add_llm's rule now (the average, with LIKE_ROUTER_ALONE_PRIOR on the vector alone for the
# router's own kind of question).
EXTRA_RULES = ("average_alone_0.9", "average_alone_0.99", "add_llm")


def grid_draw(q: np.ndarray, f: np.ndarray, y: np.ndarray, prior: np.ndarray, q2: np.ndarray, f2: np.ndarray,
              seed: int) -> tuple[dict[Choice, np.ndarray], dict[Choice, np.ndarray]]:
    """(held-out logits, logits on the scored questions) of every fit of the grid, as add_llm computes them."""
    q, y, q2 = q.astype(np.float64), y.astype(np.float64), q2.astype(np.float64)
    design, center, scale = standardised_design(f, len(y))
    scored = feature_design(f2.astype(np.float64), center, scale)
    held_out = _cross_validated(q, design, y, prior.astype(np.float64), DEFAULT_L2, DEFAULT_STRENGTHS,
                                DEFAULT_ROUTER_SCALES, DEFAULT_FOLDS, seed)
    m = fit_llm_vector(q, y, prior_mean=prior, l2=DEFAULT_L2).astype(np.float64)
    base, base2 = base_logits(q, m), base_logits(q2, m)
    test = {VECTOR_ALONE: base2}
    for s in DEFAULT_ROUTER_SCALES:
        for strength in (a for a in DEFAULT_STRENGTHS if np.isfinite(a)):
            test[(s, strength)] = scored @ ridge_logistic(design, y, s * base, strength) + s * base2
    return held_out, test


def _simplicity(choice: Choice) -> tuple[float, float]:
    """Sort key, simplest first: the vector alone, then s = 1 from the strongest penalty down, then smaller s."""
    scale, strength = choice
    return (-1.0 if np.isinf(strength) else 1.0 - scale, -strength)


def simplest_within(y: np.ndarray, held_out: dict[Choice, np.ndarray], margin: float) -> Choice:
    """The simplest choice whose held-out log-loss is within `margin` standard errors (of the paired per-answer
    differences) of the best one's (add_llm's rule for the router's own kind of question until 2026-12-04)."""
    losses = {c: -log_likelihoods(y, z) for c, z in held_out.items()}
    best = min(losses, key=lambda c: (float(losses[c].mean()), _simplicity(c)))
    for choice in sorted(losses, key=_simplicity):
        gap = losses[choice] - losses[best]
        if gap.mean() <= margin * gap.std(ddof=1) / np.sqrt(len(y)):
            return choice
    return best


def rule_weights(rule: str, y: np.ndarray, held_out: dict[Choice, np.ndarray], like: bool) -> dict[Choice, float]:
    if rule == "add_llm":
        return evidence_weights(y, held_out, LIKE_ROUTER_ALONE_PRIOR if like else None)
    if rule == "simplest" or (rule == "hybrid" and like):
        return {simplest_within(y, held_out, 2.0 if like else 1.0): 1.0}
    if rule in ("average", "hybrid"):
        return evidence_weights(y, held_out)
    if rule == "average_half_alone":
        return average_with_alone_prior(y, held_out, 0.5)
    if rule.startswith("average_alone_"):
        return average_with_alone_prior(y, held_out, float(rule.removeprefix("average_alone_")))
    raise ValueError(f"unknown rule {rule!r}")


def average_with_alone_prior(y: np.ndarray, held_out: dict[Choice, np.ndarray], alone: float) -> dict[Choice, float]:
    """The evidence-weighted average with the prior mass `alone` on the vector alone, the rest shared evenly: the
    product's evidence_weights(..., alone_prior) without its MIN_WEIGHT cut, as the stored results were computed."""
    choices = list(held_out)
    prior = np.array([alone if c == VECTOR_ALONE else (1 - alone) / (len(choices) - 1) for c in choices])
    evidence = np.array([log_likelihoods(y, held_out[c]).sum() for c in choices]) + np.log(prior)
    weights = np.exp(evidence - evidence.max())
    return dict(zip(choices, (weights / weights.sum()).tolist()))


def draws(setup: str, seeds: list[int], fractions: list[float], flagged_only: bool = False) -> list[dict[str, Any]]:
    """Per draw: the rules' AUC on the scored questions and the vector alone's."""
    out = []
    for key, q, f, y, flags, q2, f2, y2, prior, seed in _setup_draws(setup, seeds, fractions, flagged_only):
        held_out, test = grid_draw(q, f, y, prior, q2, f2, seed)
        like = bool(np.mean(flags) >= like_the_routers_share(len(y)))
        row: dict[str, Any] = {"draw": key, "answers": len(y), "like_router": like,
                               "vector": roc_auc(y2, sigmoid(test[VECTOR_ALONE]))}
        for rule in RULES + EXTRA_RULES:
            weights = rule_weights(rule, y.astype(np.float64), held_out, like)
            row[rule] = roc_auc(y2, sigmoid(sum(w * test[c] for c, w in weights.items())))  # type: ignore[arg-type]
        out.append(row)
    return out


def _setup_draws(  # type: ignore[no-untyped-def]
    setup: str, seeds: list[int], fractions: list[float], flagged_only: bool = False
):
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split

    from .onboarding_ood import _cells, question_side

    if setup == "in_domain":
        from jeirt_lite_training.prepared import prepare

        from .onboarding_methods import alignment_flags
        from .onboarding_runs import REPO_ROOT

        prep = prepare(REPO_ROOT / "data" / "mmlu_pro", split_seed=0, progress=False)
        held = np.load(REPO_ROOT / ".scratch" / "runs" / "heldout.npz")
        qv, prior = held["question_vectors"], held["llm_vectors"].mean(axis=0)
        flags = alignment_flags(qv[prep.split.train], qv[prep.split.val], qv)
        kept = set(held["kept"].tolist())
        split = make_split(prep.data, seed=0)
        train, test = split.responses(prep.data, "train"), split.responses(prep.data, "test")
        for llm in (k for k in range(prep.data.n_llms) if k not in kept):
            tq, ty = _cells(train, llm)
            sq, sy = _cells(test, llm)
            for fraction in fractions:
                for seed in seeds:
                    pick = np.random.default_rng(seed).choice(len(ty), max(2, round(fraction * len(ty))), replace=False)
                    g = tq[pick]
                    yield ([prep.data.llm_names[llm], fraction, seed], qv[g], prep.embeddings[g], ty[pick], flags[g],
                           qv[sq], prep.embeddings[sq], sy, prior, seed)
        return
    encoder, target = setup.split("_")
    data = load_dataset(Path("data") / ("zeroeval_crux_gsm_math" if target == "zeroeval" else "mmlu_pro"))
    train_on = None if setup == "static_zeroeval" else Path(
        "data/mmlu_pro" if target == "zeroeval" else "data/zeroeval_crux_gsm_math")
    router = Router.load(threads=1) if encoder == "static" else None
    q, f, prior, _, _, flags, _ = question_side(router, data, train_on, False, encoder)
    for llm in range(data.n_llms):
        questions, y = _cells(data.responses, llm)
        if flagged_only:  # only the questions the router's alignment counts as in distribution
            questions, y = questions[flags[questions]], y[flags[questions]]
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(y))
            n = max(2, round(0.1 * len(y)))
            given, scored = questions[order[:n]], questions[order[n:]]
            if len(set(y[order[:n]])) < 2 or len(set(y[order[n:]])) < 2:
                continue
            yield ([data.llm_names[llm], seed], q[given], f[given], y[order[:n]], flags[given], q[scored], f[scored],
                   y[order[n:]], prior, seed)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"draws": len(rows), "vector": float(np.mean([r["vector"] for r in rows]))}
    for rule in (r for r in RULES + EXTRA_RULES if r in rows[0]):
        diff = np.array([r[rule] - r["vector"] for r in rows])
        se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
        out[rule] = {"auc": float(np.mean([r[rule] for r in rows])), "minus_vector": float(diff.mean()), "se": se}
    return out


def _seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = (int(part) for part in text.split("-"))
        return list(range(low, high + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setup", choices=("static_zeroeval", "static_mmlu", "minilm_zeroeval", "in_domain"),
                        required=True)
    parser.add_argument("--seeds", required=True, help="draw seeds: 3,4,5 or 14-45 (keep them apart from the reported)")
    parser.add_argument("--fractions", default="0.05,0.1,0.25", help="in_domain only: fractions of the answers")
    parser.add_argument("--in-distribution-only", action="store_true",
                        help="out of domain only: draw from the questions the router counts as in distribution")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.in_distribution_only and args.setup == "in_domain":
        parser.error("--in-distribution-only is for the out-of-domain setups")
    fractions = [float(x) for x in args.fractions.split(",")]
    rows = draws(args.setup, _seeds(args.seeds), fractions, args.in_distribution_only)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(f"{row['draw'][1]:g}" if args.setup == "in_domain" else "all", []).append(row)
    result = {"setup": {"setup": args.setup, "seeds": args.seeds, "rules": list(RULES),
                        "in_distribution_only": args.in_distribution_only},
              "summary": {name: summary(group) for name, group in groups.items()}, "rows": rows}
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
