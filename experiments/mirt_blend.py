"""Whether a careful MIRT on the router's own features, its logit averaged with the router's, predicts better.

    python -m experiments.mirt_blend --data data/mmlu_pro --router DIR --split-seed S [--json OUT]

DIR: the shipped recipe built with split S's test part kept out (`python -m scripts.build_default_router --holdout
0.2 --split-seed S --out DIR`). On the same split's training and validation questions, the careful MIRT
(experiments.baselines.mirt.same_care_mirt_refit: d and schedule chosen on validation, then refitted on both parts)
is trained on the router's features, the pooled encoder output its adapter reads: a MIRT head is all a static router
could add without a second encoder. Then the test answers are scored by the router, the MIRT and their logits
averaged with weights w (the router's) in WEIGHTS. Issue #30 asked that what makes the careful baselines strong be
taken into JE-IRT where it helps; an average of the two families is the cheapest way to find out whether MIRT's
predictions hold anything the router's lack (docs/research/baselines-same-care.md, "What JE-IRT takes from the
careful baselines").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .residual_features import headline_metrics

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def blended(p_router: np.ndarray, p_other: np.ndarray, weight: float) -> np.ndarray:
    """sigmoid(weight * logit(p_router) + (1 - weight) * logit(p_other)), probabilities clipped to [1e-6, 1 - 1e-6]."""
    def logit(p: np.ndarray) -> np.ndarray:
        p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    return 1.0 / (1.0 + np.exp(-(weight * logit(p_router) + (1 - weight) * logit(p_other))))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.mirt_blend", description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the data folder the router was built on")
    ap.add_argument("--router", required=True, type=Path, help="the recipe built with the split's test part kept out")
    ap.add_argument("--split-seed", type=int, default=0, help="the split the router was built with (default: 0)")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    import torch
    from jeirt_lite import Router
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.splits import make_split

    from .baselines.mirt import same_care_mirt_refit

    torch.set_num_threads(1)
    data = load_dataset(args.data)
    router = Router.load(args.router)
    texts = list(data.texts)
    learned = router.learned_from(texts)
    split = make_split(data, seed=args.split_seed)
    if learned is None or not np.array_equal(np.sort(split.test), np.flatnonzero(~learned)):
        raise SystemExit(f"{args.router} was not built with split {args.split_seed}'s test part kept out")
    encoded = router.encode(texts, features=True)
    if encoded.features is None:
        raise SystemExit("the router's encoder gives no features")
    features = np.asarray(encoded.features, dtype=np.float32)
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    position = np.full(data.n_questions, -1)
    position[split.test] = np.arange(len(split.test))
    llm = np.array([router.llms.index(name) for name in data.llm_names])
    p_router = router.predict_proba(encoded.rows(np.sort(split.test)))[position[test.question], llm[test.llm]]
    start = time.perf_counter()
    mirt = same_care_mirt_refit(seed=0).fit(features, train, val, data.n_llms)
    seconds = time.perf_counter() - start
    p_mirt = mirt.predict_proba(features, test.question, test.llm)
    y = test.correct.astype(np.float64)
    out: dict[str, Any] = {"data": args.data.name, "router": args.router.name, "split_seed": args.split_seed,
                           "test_questions": len(split.test), "answers": len(y), "mirt": dict(mirt.config),
                           "mirt_epochs": mirt.epochs, "mirt_seconds": seconds, "by_router_weight": {}}
    print(f"MIRT on the router's features: {mirt.config}, {seconds:.0f} s")
    for weight in WEIGHTS:
        row = headline_metrics(y, blended(p_router, p_mirt, weight))
        out["by_router_weight"][str(weight)] = row
        print(f"router weight {weight:.2f}: " + ", ".join(f"{key} {value:.4f}" for key, value in row.items()))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
