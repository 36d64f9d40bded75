"""The two JE-IRT training runs the calibration, routing and onboarding evaluations share, cached as .npz.

    python -m experiments.onboarding_runs --out .scratch/runs

* ``joint.npz``: the default recipe (jeirt_lite_training.pipeline defaults, split seed 0) on all LLMs of data/mmlu_pro.
* ``heldout.npz``: the same recipe with HELD_OUT_COUNT LLMs removed entirely (chosen by `held_out_llms`).

Each file holds the trained question vectors of ALL questions (the adapter is frozen afterwards, so every
evaluation can run on vectors, without torch), the LLM table, the split and the LLM names. Training runs once;
later calls load the files.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from jeirt_lite_training.prepared import Prepared, prepare
from jeirt_lite_training.types import Responses

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT / "data" / "mmlu_pro"
HELD_OUT_COUNT = 4
HELD_OUT_SEED = 0


def held_out_llms(prep: Prepared, count: int = HELD_OUT_COUNT, seed: int = HELD_OUT_SEED) -> list[int]:
    """One LLM from each of `count` bands of training accuracy (strongest band to weakest), picked at random
    within its band with `seed`: the held-out set spans strong and weak LLMs by construction."""
    hits = np.bincount(prep.train.llm, weights=prep.train.correct, minlength=prep.data.n_llms)
    counts = np.bincount(prep.train.llm, minlength=prep.data.n_llms)
    order = np.argsort(-(hits / np.maximum(counts, 1)), kind="stable")
    rng = np.random.default_rng(seed)
    return sorted(int(rng.choice(band)) for band in np.array_split(order, count))


def _without(cells: Responses, dropped: list[int], remap: np.ndarray) -> Responses:
    keep = ~np.isin(cells.llm, dropped)
    return Responses(cells.question[keep], remap[cells.llm[keep]], cells.correct[keep])


def train_and_save(prep: Prepared, out: Path, dropped: list[int], threads: int) -> None:
    import torch
    from jeirt_lite_training.model import JeirtPredictor

    from scripts.shipped import PUBLISHED_SCHEDULE

    torch.set_num_threads(threads)
    kept = [k for k in range(prep.data.n_llms) if k not in dropped]
    remap = np.full(prep.data.n_llms, -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    train, val = _without(prep.train, dropped, remap), _without(prep.val, dropped, remap)
    t0 = time.perf_counter()
    # The schedule of the published onboarding numbers.
    predictor = JeirtPredictor(seed=0, **PUBLISHED_SCHEDULE)
    predictor.fit(prep.embeddings, train, val, len(kept), progress=True)
    np.savez(
        out,
        question_vectors=predictor.question_vectors(prep.embeddings),
        llm_vectors=predictor.llm_vectors,
        llm_names=np.array([prep.data.llm_names[k] for k in kept]),
        kept=np.array(kept, dtype=np.int64),
        seconds=np.float64(time.perf_counter() - t0),
        best_epoch=np.int64(predictor.best_epoch),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / ".scratch" / "runs")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    prep = prepare(args.data, split_seed=0, progress=False)
    for name, dropped in (("joint", []), ("heldout", held_out_llms(prep))):
        path = args.out / f"{name}.npz"
        if path.exists():
            print(f"{path} exists, kept")
            continue
        print(f"training {name} (dropping {[prep.data.llm_names[k] for k in dropped]})", flush=True)
        train_and_save(prep, path, dropped, args.threads)
        print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
