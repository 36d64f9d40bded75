"""A router's predictions on another dataset's questions, for the LLMs both datasets hold.

    python -m experiments.shared_llms_eval --data data/zeroeval_crux_gsm_math --router shipped --router DIR --json OUT

The shipped router learned MMLU-Pro's 32 LLMs from their answers to MMLU-Pro's questions; five of them also answered
zeroeval's (maths and code), questions unlike any the router learned from. Their answers there say how well the
router's own predictions carry to unlike questions, which is what a service routing arbitrary questions relies on
(add_llm's comparisons measure a new LLM's fit instead: docs/research/onboarding.md). LLM names are matched after
lower-casing and dropping '-', '_' and '.' (Meta-Llama-3_1-8B-Instruct is Meta-Llama-3.1-8B-Instruct).

For each router (`shipped`, or a router folder), with its neighbour votes and without: AUC, log-loss and accuracy
over all the shared LLMs' answers (pooled), and each shared LLM's own AUC (how well it orders that LLM's questions).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def name_key(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "-_.")


def shared_llms(router_llms: Sequence[str], data_llms: Sequence[str]) -> dict[str, str]:
    """{router's name: the data's name} for the LLMs both hold, in the router's order."""
    keyed = {name_key(name): name for name in data_llms}
    return {name: keyed[name_key(name)] for name in router_llms if name_key(name) in keyed}


def shared_metrics(router: Any, data: Any, pairs: dict[str, str], encoded: Any = None) -> dict[str, Any]:
    """The router's P(correct) for each shared LLM on every question of `data` that LLM answered, scored;
    `encoded`: `data`'s texts encoded by the router before (None: encoded here)."""
    from jeirt_lite._metrics import all_metrics

    if not pairs:
        raise ValueError("the router and the data share no LLM")
    probabilities = router.predict_proba(list(data.texts) if encoded is None else encoded)
    cells = data.responses
    p_all, y_all, per_llm = [], [], {}
    for router_name, data_name in pairs.items():
        mine = cells.llm == data.llm_names.index(data_name)
        p = probabilities[cells.question[mine], router.llms.index(router_name)].astype(np.float64)
        y = cells.correct[mine].astype(np.float64)
        p_all.append(p)
        y_all.append(y)
        per_llm[router_name] = {"answers": int(mine.sum()), "accuracy": float(y.mean()),
                                "auc": float(all_metrics(y, p)["auc"])}
    pooled = all_metrics(np.concatenate(y_all), np.concatenate(p_all))
    return {"pooled": {key: float(pooled[key]) for key in ("auc", "log_loss", "accuracy", "ece")},
            "per_llm": per_llm, "per_llm_auc_mean": float(np.mean([v["auc"] for v in per_llm.values()]))}


def evaluate(router_path: str, data: Any) -> dict[str, Any]:
    from jeirt_lite import Router

    router = Router.load(None if router_path == "shipped" else router_path)
    pairs = shared_llms(router.llms, data.llm_names)
    out: dict[str, Any] = {"router": router_path, "shared_llms": pairs}
    encoded = router.encode(list(data.texts))  # once: with and without the votes read the same vectors and features
    if router.neighbours is not None:
        out["with_votes"] = shared_metrics(router, data, pairs, encoded)
    out["without_votes"] = shared_metrics(router.with_neighbours(None), data, pairs, encoded)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.shared_llms_eval", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="data folder whose questions the routers never learned from")
    ap.add_argument("--router", action="append", required=True,
                    help="'shipped' or a router folder; repeat to compare routers")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    from jeirt_lite_training.data import load_dataset

    data = load_dataset(args.data)
    results = []
    for path in args.router:
        results.append(evaluate(path, data))
        for kind in ("with_votes", "without_votes"):
            if kind in results[-1]:
                m = results[-1][kind]
                print(f"{path} ({kind.replace('_', ' ')}): pooled AUC {m['pooled']['auc']:.4f}, log-loss "
                      f"{m['pooled']['log_loss']:.4f}, accuracy {m['pooled']['accuracy']:.4f}; "
                      f"per-LLM AUC {m['per_llm_auc_mean']:.4f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"data": Path(args.data).name, "routers": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
