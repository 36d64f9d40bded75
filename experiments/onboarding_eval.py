"""Onboarding proof on real data: add held-out LLMs from a fraction of their answers, compare with joint training;
and adaptive (suggest_questions) against random question selection.

    python -m experiments.onboarding_eval      # after python -m experiments.onboarding_runs

Protocol (data/mmlu_pro, split seed 0, default JE-IRT hyper-parameters): `experiments.onboarding_runs` holds out
HELD_OUT_COUNT LLMs (one per band of training accuracy, seeded) and trains JE-IRT on the other LLMs; it also trains
one joint run on all LLMs. Each held-out LLM is then added with `fit_llm_vector` (question side frozen, prior at
the mean LLM vector) from a random fraction of its answers to TRAINING questions, and scored on its TEST answers.
Fractions below 100% are averaged over SEEDS random draws.

Adaptive vs random: labels are bought in ROUNDS rounds (optionally after a random half); each round asks the questions `suggest_indices` picks
(greedy D-optimal under the current estimate, refitted from the answers so far) among the LLM's training questions.

Correction on vs off: the same draws added with add_llm's fit (`fit_onboarding`: the vector plus the feature
correction on the encoder's own features, here the MiniLM embeddings the adapter reads) and with the vector alone,
beside per-LLM logistic regression and KNN on those features (experiments.onboarding_ood's in-domain protocol);
`--out` writes them as JSON for experiments.onboarding_tables. add_llm is told which answered questions the
held-out run learned from (its training part: every given answer here), as a router exported from it records them;
`--learned-unknown` leaves that out, as add_llm fitted before routers kept the record.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from jeirt_lite import kernels
from jeirt_lite._metrics import accuracy, log_loss, roc_auc
from jeirt_lite._onboarding import fit_llm_vector

from .onboarding_methods import alignment_flags, learned_flags
from .onboarding_ood import in_domain, summary
from .onboarding_runs import DEFAULT_DATA, REPO_ROOT
from .onboarding_tables import methods_table
from .suggest_questions import suggest_indices

FRACTIONS = (0.01, 0.05, 0.10, 0.25, 1.0)
CURVE_FRACTIONS = (0.0025, 0.005, 0.01, 0.02, 0.05, 0.10)
SEEDS = 3
ROUNDS = 4


def _cells(cells, llm: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    mask = cells.llm == llm
    return cells.question[mask], cells.correct[mask].astype(np.float64)


def _scores(qv: np.ndarray, m: np.ndarray, questions: np.ndarray, y: np.ndarray) -> dict[str, float]:
    p = kernels.probabilities(qv[questions], m[None, :])[:, 0].astype(np.float64)
    return {"auc": roc_auc(y, p), "accuracy": accuracy(y, p), "log_loss": log_loss(y, p)}


def adaptive_rows(
    qv: np.ndarray, y: np.ndarray, budget: int, prior: np.ndarray, random_first: int = 0
) -> np.ndarray:
    """Rows of (qv, y) bought in ROUNDS rounds of suggest_indices, answers revealed after each round; with
    `random_first`, that many random questions (seed 0) are asked first and the rest adaptively."""
    first = np.random.default_rng(0).choice(len(y), random_first, replace=False) if random_first else []
    known: dict[int, int] = {int(i): int(y[i]) for i in first}
    sizes = np.diff(np.linspace(0, budget - len(known), ROUNDS + 1).round().astype(int))
    for size in sizes:
        if size > 0:
            for i in suggest_indices(qv, int(size), prior_mean=prior, known=known):
                known[int(i)] = int(y[i])
    return np.array(sorted(known), dtype=np.int64)


def main(argv: list[str] | None = None) -> int:
    from jeirt_lite_training.prepared import prepare

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--runs", type=Path, default=REPO_ROOT / ".scratch" / "runs")
    parser.add_argument("--out", type=Path, default=None, help="also write the correction on/off results here")
    parser.add_argument("--skip-curves", action="store_true", help="only the correction on/off comparison")
    parser.add_argument(
        "--seeds", type=int, default=SEEDS, help=f"draws per fraction below 100%% in that comparison (default {SEEDS})"
    )
    parser.add_argument(
        "--learned-unknown", action="store_true",
        help="fit add_llm as if the router kept no record of its training questions (add_llm before that record)",
    )
    args = parser.parse_args(argv)
    prep = prepare(args.data, split_seed=0, progress=False)
    joint, held = np.load(args.runs / "joint.npz"), np.load(args.runs / "heldout.npz")
    kept = set(held["kept"].tolist())
    held_out = [k for k in range(prep.data.n_llms) if k not in kept]
    qv_h, prior = held["question_vectors"], held["llm_vectors"].mean(axis=0)
    print(
        f"held out: {', '.join(prep.data.llm_names[k] for k in held_out)}; "
        f"held-out run {float(held['seconds']):.0f}s, joint run {float(joint['seconds']):.0f}s of training\n"
    )
    if not args.skip_curves:
        vector_tables(prep, joint, qv_h, prior, held_out)
    correction_section(prep, qv_h, prior, held_out, args.out, args.seeds, args.learned_unknown)
    return 0


def correction_section(  # type: ignore[no-untyped-def]
    prep, qv_h: np.ndarray, prior: np.ndarray, held_out: list[int], out: Path | None, seeds: int = SEEDS,
    learned_unknown: bool = False,
) -> None:
    """add_llm (correction on) against the vector alone (off) and the feature baselines, same draws;
    `learned_unknown`: add_llm is not told which answered questions the held-out run learned from."""
    # The in-distribution flags a router exported from the held-out run would carry (add_llm reads them).
    flags = alignment_flags(qv_h[prep.split.train], qv_h[prep.split.val], qv_h)
    # Which questions such a router would record as learned from (its training part; add_llm reads them).
    learned = learned_flags([prep.data.texts[i] for i in prep.split.train], prep.data.texts)
    rows = in_domain(prep.data, qv_h, prep.embeddings, prior, held_out, list(range(seeds)), flags,
                     None if learned_unknown else learned)
    setup = {"data": prep.data.name, "trained_on": f"{prep.data.name} ({prep.encoder}, experiments.onboarding_runs)",
             "held_out": [prep.data.llm_names[k] for k in held_out], "seeds": list(range(seeds)),
             "in_distribution_share": float(np.mean(flags)), "learned_share": None if learned_unknown else float(np.mean(learned))}
    result = {"setup": setup, "summary": summary(rows, "fraction"), "rows": rows}
    print("#### correction on (add_llm) vs off (vector alone), with the feature baselines\n")
    print(methods_table(result) + "\n")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")


def vector_tables(prep, joint, qv_h: np.ndarray, prior: np.ndarray, held_out: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Per held-out LLM: the vector fitted from 1-100% of its answers against joint training; then adaptive vs
    random picks."""
    rows: dict[str, list[dict[str, float]]] = {}
    curve: dict[str, list[float]] = {}
    for k in held_out:
        name = prep.data.llm_names[k]
        tq, ty = _cells(prep.train, k)
        sq, sy = _cells(prep.test, k)
        table = {"prior only (0 labels)": _scores(qv_h, prior, sq, sy)}
        for fraction in FRACTIONS:
            n = max(2, round(fraction * len(tq)))
            draws = 1 if fraction == 1.0 else SEEDS
            results = []
            for seed in range(draws):
                pick = np.random.default_rng(seed).choice(len(tq), n, replace=False)
                m = fit_llm_vector(qv_h[tq[pick]], ty[pick], prior_mean=prior)
                results.append(_scores(qv_h, m, sq, sy))
            table[f"{fraction:.0%} ({n} labels)"] = {
                key: float(np.mean([r[key] for r in results])) for key in results[0]
            }
        table["joint training"] = _scores(joint["question_vectors"], joint["llm_vectors"][k], sq, sy)
        for label, scores in table.items():
            rows.setdefault(label.split(" (")[0], []).append(scores)
        print(
            f"#### {name} ({len(tq)} training answers, {len(sq)} test answers, train accuracy {ty.mean():.3f})\n"
        )
        print("| labels | test AUC | accuracy | log-loss |\n|---|---:|---:|---:|")
        for label, s in table.items():
            print(f"| {label} | {s['auc']:.3f} | {s['accuracy']:.3f} | {s['log_loss']:.3f} |")
        print()
        # adaptive vs random, AUC per budget
        pool = qv_h[tq]
        for fraction in CURVE_FRACTIONS:
            n = max(2, round(fraction * len(tq)))
            rand = [
                _scores(qv_h, fit_llm_vector(pool[p], ty[p], prior_mean=prior), sq, sy)
                for p in (np.random.default_rng(s).choice(len(tq), n, replace=False) for s in range(SEEDS))
            ]
            chosen = adaptive_rows(pool, ty, n, prior)
            adapt = _scores(qv_h, fit_llm_vector(pool[chosen], ty[chosen], prior_mean=prior), sq, sy)
            mixed = adaptive_rows(pool, ty, n, prior, random_first=n // 2)
            hybrid = _scores(qv_h, fit_llm_vector(pool[mixed], ty[mixed], prior_mean=prior), sq, sy)
            curve.setdefault(f"{fraction:.1%}", []).extend(
                [
                    n,
                    np.mean([r["auc"] for r in rand]),
                    adapt["auc"],
                    np.mean([r["log_loss"] for r in rand]),
                    adapt["log_loss"],
                    hybrid["auc"],
                    hybrid["log_loss"],
                ]
            )

    print(
        "#### mean over the held-out LLMs\n\n| labels | test AUC | accuracy | log-loss |\n|---|---:|---:|---:|"
    )
    for label, scores in rows.items():
        mean = {key: float(np.mean([s[key] for s in scores])) for key in scores[0]}
        print(f"| {label} | {mean['auc']:.3f} | {mean['accuracy']:.3f} | {mean['log_loss']:.3f} |")
    print("\n#### adaptive vs random (test AUC and log-loss, mean over the held-out LLMs)\n")
    print("Columns: random; adaptive (4 rounds of suggest_indices); half random then 4 adaptive rounds.\n")
    print(
        "| fraction | mean labels | AUC random | AUC adaptive | AUC half+half | log-loss random | "
        "log-loss adaptive | log-loss half+half |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for fraction, values in curve.items():
        v = np.array(values).reshape(-1, 7).mean(axis=0)
        print(
            f"| {fraction} | {v[0]:.0f} | {v[1]:.3f} | {v[2]:.3f} | {v[5]:.3f} | {v[3]:.3f} | {v[4]:.3f} "
            f"| {v[6]:.3f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
