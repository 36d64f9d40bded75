"""The markdown tables of docs/research/onboarding.md from the results JSONs of experiments.onboarding_ood and
experiments.onboarding_suggest_eval.

    python -m experiments.onboarding_tables docs/results/onboarding_*.json docs/results/suggest_*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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
              "average, half the prior on the vector alone", "hybrid": "hybrid (add_llm)"}


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
    results = [(path, json.loads(Path(path).read_text())) for path in (argv if argv is not None else sys.argv[1:])]
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
