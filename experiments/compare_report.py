"""The reports of experiments.compare: the summary over splits (paired differences against a reference method),
its Markdown, the first split in detail, and the rows reused from an earlier result."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .compare_fit import FIT_NAME


def _fmt(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def summarise_seeds(per_seed: dict[int, dict[str, Any]], reference: str = FIT_NAME) -> dict[str, Any]:
    """Mean and sample sd of each method's test metrics over splits, and how often `reference` beats it.

    "Beats" is per split and per metric: a higher AUC, a lower log-loss. The paired difference (reference minus
    method, averaged over splits) is reported too, since the splits share nothing but the data.
    """
    methods = list(next(iter(per_seed.values()))["methods"])
    metrics = ("accuracy", "auc", "log_loss", "brier", "ece", "within_question_auc", "per_llm_auc", "aiq",
               "routed_llms_max")
    # values[name][metric]: one number per split, in the order of per_seed (NaN where a run did not measure it)
    values = {name: {metric: np.array([result["methods"][name]["test"]["overall"].get(metric, np.nan)
                                       for result in per_seed.values()]) for metric in metrics}
              for name in methods}
    summary: dict[str, Any] = {"seeds": sorted(per_seed), "methods": {}}
    for name in methods:
        rows = values[name]
        entry: dict[str, Any] = {}
        for metric, column in rows.items():
            entry[metric] = {"mean": float(column.mean()),
                             "sd": float(column.std(ddof=1)) if len(column) > 1 else float("nan")}
        used = rows["routed_llms_max"][np.isfinite(rows["routed_llms_max"])]
        entry["routed_llms_range"] = [int(used.min()), int(used.max())] if len(used) else None
        if reference in methods and name != reference:
            ref = values[reference]
            entry["reference_better"] = {"auc": int((ref["auc"] > rows["auc"]).sum()),
                                         "log_loss": int((ref["log_loss"] < rows["log_loss"]).sum())}
            diffs = {"auc": ref["auc"] - rows["auc"], "log_loss": ref["log_loss"] - rows["log_loss"]}
            entry["reference_minus_method"] = {metric: float(d.mean()) for metric, d in diffs.items()}
            # Standard error of the mean paired difference: the splits are independent draws of the same data.
            entry["reference_minus_method_se"] = {
                metric: float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
                for metric, d in diffs.items()
            }
            entry["paired"] = paired_differences(ref, rows)
        summary["methods"][name] = entry
    return summary


# The paired differences the comparison reports, and whether higher is better for each.
PAIRED_METRICS = {"auc": True, "log_loss": False, "accuracy": True, "aiq": True}


def paired_differences(ref: dict[str, np.ndarray], rows: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Per metric: the reference minus the method, mean and sample sd over splits, and on how many splits the
    reference is better (higher, or lower for log-loss); NaN where a split did not measure the metric."""
    out: dict[str, dict[str, float]] = {}
    for metric, higher_better in PAIRED_METRICS.items():
        d = ref[metric] - rows[metric]
        better = d > 0 if higher_better else d < 0
        out[metric] = {"mean": float(d.mean()), "sd": float(d.std(ddof=1)) if len(d) > 1 else float("nan"),
                       "reference_better": int(better.sum()), "splits": len(d)}
    return out


def paired_markdown(summary: dict[str, Any], reference: str) -> list[str]:
    """The paired-differences table: reference minus method, mean ± sd over splits, (splits where it is better)."""
    lines = ["", (f"Paired differences, {reference} minus the method: mean ± sd over splits (splits on which "
                  f"{reference} is better: higher AUC, accuracy and AIQ, lower log-loss)."), "",
             "| method | Δ AUC | Δ log-loss | Δ accuracy | Δ AIQ |", "|---|---:|---:|---:|---:|"]
    for name, entry in summary["methods"].items():
        if "paired" not in entry:
            continue
        cells = []
        for metric in PAIRED_METRICS:
            p = entry["paired"][metric]
            cells.append("n/a" if math.isnan(p["mean"]) else
                         f"{p['mean']:+.4f} ± {p['sd']:.4f} ({p['reference_better']}/{p['splits']})")
        lines.append(f"| {label(name)} | " + " | ".join(cells) + " |")
    return lines


# Rows whose method name stayed while the method's care changed: labelled so that a table says which it is.
LABELS = {"mirt_text": "mirt_text (constant lr, as before)", "embedllm_mf": "embedllm_mf (constant lr, as before)"}


def label(name: str) -> str:
    return LABELS.get(name, name)


def seeds_markdown(dataset: str, summary: dict[str, Any], reference: str = FIT_NAME) -> str:
    seeds = summary["seeds"]
    lines = [
        f"## {dataset}: test metrics over {len(seeds)} splits (seeds {', '.join(map(str, seeds))})",
        "",
        (f"Mean ± sd over splits. The last columns: on how many splits {reference} has the higher AUC / the lower "
         f"log-loss than the method, and the mean paired difference ({reference} minus the method) ± its standard "
         "error over splits."),
        "",
        f"| method | accuracy | AUC | log-loss | ECE | {reference} better (AUC / log-loss) | Δ AUC | Δ log-loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in summary["methods"].items():
        def pm(metric: str, entry: dict[str, Any] = entry) -> str:
            return f"{entry[metric]['mean']:.4f} ± {entry[metric]['sd']:.4f}"

        if "reference_better" in entry:
            wins, diff, se = entry["reference_better"], entry["reference_minus_method"], entry["reference_minus_method_se"]
            extra = (f"{wins['auc']}/{len(seeds)} / {wins['log_loss']}/{len(seeds)} | {diff['auc']:+.4f} ± "
                     f"{se['auc']:.4f} | {diff['log_loss']:+.4f} ± {se['log_loss']:.4f}")
        else:
            extra = "| |"
        lines.append(f"| {label(name)} | {entry['accuracy']['mean']:.3f} | {pm('auc')} | {pm('log_loss')} | "
                     f"{entry['ece']['mean']:.3f} | {extra} |")
    lines += ["", ("What a router uses (experiments/routing_metrics.py): the AUC within each question (the order of the "
                   "LLMs), the mean per-LLM AUC (the order of the questions), and the area under the accuracy–cost "
                   "curve (AIQ) of routing by P − λ·cost among the LLMs with a cost proxy; mean ± sd over splits."),
              "", "| method | within-question AUC | per-LLM AUC | AIQ | LLMs used (most over λ; range over splits) |",
              "|---|---:|---:|---:|---:|"]
    for name, entry in summary["methods"].items():
        cells = [f"{entry[m]['mean']:.4f} ± {entry[m]['sd']:.4f}" if not math.isnan(entry[m]["mean"]) else "n/a"
                 for m in ("within_question_auc", "per_llm_auc", "aiq")]
        used = entry.get("routed_llms_range")
        cells.append(f"{used[0]}–{used[1]}" if used else "n/a")
        lines.append(f"| {label(name)} | " + " | ".join(cells) + " |")
    lines += paired_markdown(summary, reference)
    return "\n".join(lines) + "\n"


def to_markdown(result: dict[str, Any]) -> str:
    s = result["split"]
    lines = [
        f"## {result['dataset']}: test metrics",
        "",
        (f"{result['n_llms']} LLMs, {result['n_questions']} questions; split by question (identical texts together, "
        f"stratified by subject): train {s['train']} / val {s['val']} / test {s['test']} questions, "
        f"{s['test_cells']} test cells. ECE with {result['ece_bins']} equal-width bins; accuracy at p >= 0.5."),
        "",
        "| method | accuracy | AUC | log-loss | Brier | ECE | fit s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in result["methods"].items():
        o = r["test"]["overall"]
        lines.append(f"| {label(name)} | {_fmt(o['accuracy'])} | {_fmt(o['auc'])} | {_fmt(o['log_loss'])} | "
                     f"{_fmt(o['brier'])} | {_fmt(o['ece'])} | {r['fit_seconds']:.0f} |")
    for group_key, title in (("by_subject", "subject"), ("by_benchmark", "benchmark")):
        # rows filled in by --reuse carry overall metrics only
        names = [n for n, r in result["methods"].items() if group_key in r["test"]]
        if not names:
            continue
        first = result["methods"][names[0]]
        for metric in ("auc", "log_loss"):
            lines += ["", f"### Test {metric.replace('_', '-')} per {title}", "",
                      f"| {title} | cells | " + " | ".join(names) + " |",
                      "|---|---:|" + "---:|" * len(names)]
            for group, values in first["test"][group_key].items():
                row = [_fmt(result["methods"][n]["test"][group_key][group][metric]) for n in names]
                lines.append(f"| {group} | {int(values['n'])} | " + " | ".join(row) + " |")
    if "diagnostic_2pl" in result:
        d = result["diagnostic_2pl"]
        f = d["subject_order_flips"]
        lines += ["", "### Plain 2PL on the training matrix (diagnostic)", "",
                  (f"{d['items']} items: {100 * d['share_negative_a']:.1f}% negative discrimination, "
                  f"{100 * d['share_abs_a_below_0.1']:.1f}% with |a| < 0.1 (theta standardised to sd 1), "
                  f"median a {d['median_a']:.2f}. LLM pairs whose order flips between subjects by at least "
                  f"{f['margin']:.2f} accuracy each way: {f['flipping_pairs']} of {f['pairs']}."), ""]
        lines += [f"- {e}" for e in f["examples"]]
    return "\n".join(lines) + "\n"


def splits_of(run: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The splits a result file holds, by seed: a one-split run as it is; a several-split run (`--seeds`) as its
    first split in detail plus, for each other split, the summarised rows `per_seed` kept (their test metrics,
    validation loss and choices), enough for the summary over splits and for --reuse."""
    own = int(run["settings"]["seed"])
    splits = {own: run}
    for seed, rows in run.get("per_seed", {}).items():
        if int(seed) != own:
            cells = {row["test"].get("n") for row in rows.values()}
            splits[int(seed)] = {"split": {"test_cells": cells.pop() if len(cells) == 1 else None},
                                 "methods": {m: _method_of_summary(row) for m, row in rows.items()}}
    return splits


def _method_of_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A method's entry of one split, from the row a summarised result keeps of it (per_seed): no fit time."""
    return {"fit_seconds": float("nan"), "tuned": row["tuned"], "val": row["val"], "test": {"overall": row["test"]}}


def reuse_rows(per_seed: dict[int, dict[str, Any]], earlier: dict[str, Any], methods: Sequence[str],
               source: str) -> None:
    """Add `methods`' per-split test rows from an earlier summarised result to the splits that lack them (a
    method whose code did not change need not be trained again on the same split). Refused where the earlier
    result lacks the split or the method, or where its split differs (another number of test cells)."""
    if not methods:
        raise SystemExit("--reuse needs --reuse-methods")
    for seed, run in per_seed.items():
        stored = earlier.get("per_seed", {}).get(str(seed), {})
        for method in methods:
            if method in run["methods"]:
                continue
            if method not in stored:
                raise SystemExit(f"{source} has no {method!r} on split seed {seed}")
            row = stored[method]
            if row["test"].get("n") != run["split"]["test_cells"]:
                raise SystemExit(f"{source}: split seed {seed} has {row['test'].get('n')} test cells, this run "
                                 f"{run['split']['test_cells']}: not the same split")
            run["methods"][method] = {**_method_of_summary(row), "reused_from": source}


def write_report(result: dict[str, Any], per_seed: dict[int, dict[str, Any]], out: Path, reference: str) -> int:
    """Write <out>/<dataset>.json and .md: `result` (the first split in detail) plus the summary over splits."""
    seeds = sorted(per_seed)
    name = result["dataset"]
    if len(seeds) > 1:
        result["over_seeds"] = summarise_seeds(per_seed, reference)
        result["per_seed"] = {str(seed): {m: {"tuned": r["tuned"], "val": r["val"], "test": r["test"]["overall"],
                                              **({"reused_from": r["reused_from"]} if "reused_from" in r else {})}
                                          for m, r in per_seed[seed]["methods"].items()} for seed in seeds}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=float))
    markdown = to_markdown(result)
    if "over_seeds" in result:
        markdown = seeds_markdown(name, result["over_seeds"], reference) + "\n" + markdown.replace(
            f"## {name}: test metrics", f"## {name}: test metrics on the first split (seed {seeds[0]})", 1)
    (out / f"{name}.md").write_text(markdown)
    print(markdown)
    return 0
