"""The markdown tables of docs/research/onboarding.md from the results JSONs of experiments.onboarding_ood and
experiments.onboarding_suggest_eval.

    python -m experiments.onboarding_tables docs/results/onboarding_*.json docs/results/suggest_*.json
    python -m experiments.onboarding_tables --baselines docs/results/onboarding_ood_to_zeroeval.json \
        docs/results/onboarding_ood_to_zeroeval_minilm_baselines.json

`--baselines`: runs of experiments.onboarding_ood on the same draws whose baselines read other features or were
fitted with other care, in one table, each baseline paired with add_llm draw by draw.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

NAMES = {"vector": "vector alone (add_llm before)", "add_llm": "add_llm (vector + feature correction)",
         "logistic": "logistic regression on the features", "knn": "cosine KNN on the features"}


def methods_table(result: dict[str, Any]) -> str:
    setup, summary = result["setup"], result["summary"]
    lines = [f"`{setup.get('trained_on', 'shipped router (MMLU-Pro)')}` → `{setup['data']}`"
             + (f", held out: {', '.join(setup['held_out'])}" if setup.get("held_out") else "")
             + (f"; {setup['in_distribution_share']:.0%} of the questions in distribution for the router"
                if "in_distribution_share" in setup else ""), ""]
    groups = list(summary)
    header = "| method | " + " | ".join(f"AUC {g}" if g != "all" else "AUC" for g in groups)
    header += " | " + " | ".join(f"log-loss {g}" if g != "all" else "log-loss" for g in groups) + " |"
    lines += [header, "|---|" + "---:|" * (2 * len(groups))]
    for method, label in NAMES.items():
        aucs = " | ".join(f"{summary[g][method]['auc']:.4f}" for g in groups)
        losses = " | ".join(f"{summary[g][method]['log_loss']:.4f}" for g in groups)
        lines.append(f"| {label} | {aucs} | {losses} |")
    wins = ", ".join(f"{summary[g]['add_llm_auc_above_logistic']}/{summary[g]['draws']}" for g in groups)
    lines += ["", f"add_llm's AUC above the logistic regression's: {wins} draws (LLM × seed)"]
    return "\n".join(lines)


def write_result(out: Path, result: dict[str, Any]) -> None:
    """A run's results JSON written to `out` (its folder made), and its summary printed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))


def paired(
    rows: list[dict[str, Any]], a: str, b: str, stats: tuple[str, ...] = ("auc", "log_loss")
) -> dict[str, float]:
    """Method a's `stats` (AUC and log-loss) minus b's over the same draws: mean, standard error, and the draws a's
    AUC is above."""
    out: dict[str, float] = {}
    for stat in stats:
        diff = np.array([row[a][stat] - row[b][stat] for row in rows])
        out[stat] = float(diff.mean())
        out[f"{stat}_se"] = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
    out["auc_above"] = int(sum(row[a]["auc"] > row[b]["auc"] for row in rows))
    return out


FEATURE_NAMES = {"encoder": "the router's features", "minilm": "MiniLM embeddings"}


def _draws(result: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(row["llm"], row["seed"]): row for row in result["rows"]}


def baselines_table(results: list[dict[str, Any]]) -> str:
    """add_llm and the baselines of runs on the same draws (experiments.onboarding_ood, any --baseline-features and
    --logistic-care; a run without the record read the router's features with the published care): mean AUC and
    log-loss, and add_llm minus each baseline, mean ± standard error over the draws, with the draws add_llm is above."""
    first = _draws(results[0])
    for result in results[1:]:
        draws = _draws(result)
        # add_llm is refitted in each run: the same up to float rounding.
        if draws.keys() != first.keys() or any(
            abs(draws[k]["add_llm"]["auc"] - first[k]["add_llm"]["auc"]) > 1e-9 for k in first
        ):
            raise SystemExit("the runs do not share their draws (or add_llm differs): they cannot be paired")
    rows = list(first.values())
    columns: dict[str, list[dict[str, Any]]] = {
        "vector alone": [r["vector"] for r in rows], "add_llm": [r["add_llm"] for r in rows]}
    knn: dict[str, list[dict[str, Any]]] = {}  # after the logistic regressions; KNN has no care to vary
    for result in results:
        setup = result["setup"]
        features = FEATURE_NAMES[setup.get("baseline_features", "encoder")]
        care = setup.get("logistic_care", "published")
        ordered = [_draws(result)[k] for k in first]
        columns[f"logistic regression, {features}, {care} care"] = [r["logistic"] for r in ordered]
        knn[f"cosine KNN, {features}"] = [r["knn"] for r in ordered]
    columns.update(knn)
    lines = [f"`{results[0]['setup'].get('trained_on', 'shipped router (MMLU-Pro)')}` → `{results[0]['setup']['data']}`, "
             f"{len(rows)} draws", "",
             "| method | AUC | log-loss | add_llm − it, AUC | add_llm − it, log-loss | add_llm's AUC above |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, cells in columns.items():
        auc, loss = np.mean([c["auc"] for c in cells]), np.mean([c["log_loss"] for c in cells])
        if name == "add_llm":
            lines.append(f"| {name} | {auc:.4f} | {loss:.4f} | | | |")
            continue
        d = paired([{"a": r["add_llm"], "b": c} for r, c in zip(rows, cells)], "a", "b")
        lines.append(f"| {name} | {auc:.4f} | {loss:.4f} | {d['auc']:+.4f} ± {d['auc_se']:.4f} | "
                     f"{d['log_loss']:+.4f} ± {d['log_loss_se']:.4f} | {d['auc_above']}/{len(rows)} |")
    return "\n".join(lines)


def suggest_table(result: dict[str, Any]) -> str:
    setup, summary = result["setup"], result["summary"]
    title = f"`{setup.get('trained_on', 'shipped router (MMLU-Pro)')}` → `{setup['data']}`" + (
        f", held out: {', '.join(setup['held_out'])}" if setup.get("held_out") else ""
    )
    lines = [title, "", "| labels | LLMs | AUC random | AUC adaptive | log-loss random | log-loss adaptive "
             "| AUC random (vector alone) | AUC adaptive (vector alone) |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for budget, row in summary.items():
        lines.append(
            f"| {budget} | {row['llms']} | {row['random add_llm auc']:.4f} | {row['adaptive add_llm auc']:.4f} | "
            f"{row['random add_llm log_loss']:.4f} | {row['adaptive add_llm log_loss']:.4f} | "
            f"{row['random vector auc']:.4f} | {row['adaptive vector auc']:.4f} |"
        )
    return "\n".join(lines)


RULE_NAMES = {"simplest": "simplest within 1 (own kind: 2) SE", "average": "average", "average_half_alone":
              "average, half the prior on the vector alone", "hybrid": "hybrid (add_llm until 2026-12-04)"}


def weighting_table(results: list[dict[str, Any]]) -> str:
    """One row per setup and group (experiments.onboarding_weighting): each rule's AUC minus the vector alone's."""
    lines = ["| setup | draws | vector alone | " + " | ".join(RULE_NAMES.values()) + " |",
             "|---|---:|---:|" + "---:|" * len(RULE_NAMES)]
    for result in results:
        for group, row in result["summary"].items():
            name = result["setup"]["setup"] + ("" if group == "all" else f" {float(group):.0%}")
            cells = " | ".join(f"{row[rule]['minus_vector']:+.4f} ± {row[rule]['se']:.4f}" for rule in RULE_NAMES)
            lines.append(f"| {name} (seeds {result['setup']['seeds']}) | {row['draws']} | {row['vector']:.4f} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results JSONs of onboarding_ood / onboarding_suggest_eval")
    parser.add_argument("--baselines", action="store_true",
                        help="one table of runs on the same draws, each baseline paired with add_llm draw by draw")
    args = parser.parse_args(argv)
    if args.baselines:
        print(baselines_table([json.loads(path.read_text()) for path in args.results]))
        return 0
    results = [(str(path), json.loads(path.read_text())) for path in args.results]
    weighting = [result for _, result in results if "rules" in result["setup"]]
    if weighting:
        print(weighting_table(weighting) + "\n")
    for path, result in results:
        if "rules" in result["setup"]:
            continue
        print(f"{path}:\n")
        print(suggest_table(result) if "budgets" in result["setup"] else methods_table(result))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
