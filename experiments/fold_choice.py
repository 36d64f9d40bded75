"""`fit --folds K` with d x dropout tried on the first fold only, as rows of experiments.compare: what the folds'
gain on small sets is made of (docs/research/baselines-same-care.md, "What the folds' gain is made of").

fit tries every (d, dropout) on every fold and keeps the lowest loss over all of them; the chosen setting's runs
then give the schedule (the median over folds), and their out-of-fold predictions weigh the neighbour votes and fit
the calibration. Here the settings are tried on the first fold alone and the chosen one is then run on the other
folds: the same schedule, votes and calibration from every fold, the choice from a fifth of the questions. Every
other step is fit's own (experiments.compare_fit), and the rows are named "JE-IRT fit (grid on the first fold) ...".

    python -m experiments.fold_choice --data N --seeds 0,1,2,3,4 --threads 1 --no-2pl --methods jeirt_fit \\
        --fit-args "--folds 5" --out OUT

takes experiments.compare's options (only the fit rows change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

ROW_NAME = "JE-IRT fit (grid on the first fold)"


def first_fold_choose(
    embeddings: np.ndarray, parts: Sequence[Any], n_llms: int, *, dims: Sequence[int], dropouts: Sequence[float],
    log: Callable[[str], None] = lambda _: None, **hyper: Any,
) -> Any:
    """jeirt_lite_training.choose.choose with the grid tried on parts[0] alone, the chosen setting then on all parts
    (its first run again, same seed: the same run). The Selection's candidates are the first fold's."""
    from jeirt_lite_training.choose import choose

    first = choose(embeddings, parts[:1], n_llms, dims=dims, dropouts=dropouts, log=log, **hyper)
    if len(parts) == 1:
        return first
    dim, dropout = first.hyper["dim"], first.hyper["dropout"]
    log(f"  the first fold chose d={dim} dropout={dropout}; running it on all {len(parts)} folds")
    selection = choose(embeddings, parts, n_llms, dims=[dim], dropouts=[dropout], log=log, **hyper)
    selection.candidates = first.candidates
    return selection


def main(argv: Sequence[str] | None = None) -> int:
    import jeirt_lite_training.pipeline as pipeline

    from . import compare, compare_fit

    pipeline.choose = first_fold_choose  # the one call fit's choose_refit_and_export makes
    compare_fit.FIT_NAME = compare.FIT_NAME = ROW_NAME  # the rows' names and the summary's default reference
    return compare.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
