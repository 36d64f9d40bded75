"""Rebuild the router that ships with jeirt-lite, in one command:

    python -m training.build_default_router                      # → python/jeirt_lite/default_router/
    python -m training.build_default_router --out /tmp/router    # anywhere else
    python -m training.build_default_router --encoder transformer  # the full MiniLM graph instead (93 MB)

The shipped router uses the static encoder distilled from all-MiniLM-L6-v2 (far faster to encode, a little less
accurate than the transformer; the measured table is in docs/encoders.md). Trains JE-IRT on data/mmlu_pro with the hyper-parameters chosen on the validation split (see DEFAULT_HYPER and
`python -m training sweep`), evaluates on the held-out test split and writes the router with those test metrics
in its manifest. Deterministic: the same data, seeds and thread count give the same router.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .pipeline import fit_and_export, folder_size_mb, prepare
from .shipped import DEFAULT_DATA, DEFAULT_HYPER, DEFAULT_OUT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (more stalls on a busy 2-core box)")
    parser.add_argument(
        "--encoder",
        choices=("static", "transformer"),
        default="static",
        help="static (the shipped default, see docs/encoders.md) or the full MiniLM transformer (93 MB)",
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    label = f"default router: JE-IRT trained on {args.data.name}"
    if args.encoder == "static":
        from .build_variants import build_static

        build_static(args.out.parent, args.data, args.threads, folder=args.out.name, label=label)
    else:
        prep = prepare(args.data, split_seed=0)
        res = fit_and_export(prep, args.out, label=label, overwrite=True, **DEFAULT_HYPER)
        from .calibration import calibrate_router
        from .routing_eval import cost_proxies

        # Calibration fitted on validation and the parameter-count cost proxy (LLMs of unknown size: no cost).
        calibrate_router(args.out, prep, res.predictor, costs=cost_proxies(prep.data.llm_names))
    from jeirt_lite import Router

    router = Router.load(args.out)
    test, floor = router.manifest["metrics"]["test"], router.manifest["metrics"]["test_per_llm_accuracy_baseline"]
    print(f"default router written to {args.out} ({folder_size_mb(args.out):.1f} MB, {args.encoder} encoder)")
    print(
        f"  test AUC {test['auc']:.3f}, log-loss {test['log_loss']:.3f}, accuracy {test['accuracy']:.3f}, "
        f"ECE {test['ece']:.3f}; per-LLM-accuracy floor: AUC {floor['auc']:.3f}, log-loss {floor['log_loss']:.3f}"
    )
    print(f"  {time.perf_counter() - t0:.0f}s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
