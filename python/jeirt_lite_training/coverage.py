"""Which LLMs never answered a whole benchmark of the data a router learns from (block-missing data), and the floor
that knows each LLM's accuracy per benchmark.

A router still gives such an LLM a P(correct) on that benchmark's questions: its vector, fitted on the other
benchmarks alone, says nothing reliable there. On zeroeval (docs/guide/training-data.md, "Block-missing data") one
LLM that answered only GSM8K was forecast 0.85 on MATH level 5, where the same model under another name scored 0.51.
`fit` names these LLMs when it loads the data and router.json records them (training.unanswered_benchmarks), so that
`info` and `score --forecast` can mark them: a measured rating told from an extrapolated one. `route` and `serve`
do not mark them (a question's text says nothing of its benchmark).
"""

from __future__ import annotations

import numpy as np

from ._runtime import counted, first_and_more
from .types import Dataset, Responses

SHOWN = 5  # LLMs named in the printed note; router.json keeps them all
# An LLM with fewer answers to learn from is named when the data is loaded: its vector is fitted to so few that one
# correct answer can rank it near the top for every question (P(correct) 0.9 from one answer, in an audit's run).
FEW_ANSWERS = 50


def unanswered_benchmarks(data: Dataset, cells: Responses) -> dict[str, list[str]]:
    """{LLM name: the benchmarks of `data` none of whose questions it answered in `cells`}, for the LLMs with
    answers that miss at least one benchmark; empty when the data holds one benchmark (or the cells none)."""
    benchmarks = np.asarray(data.benchmarks).astype(str)
    names = sorted(set(benchmarks.tolist()))
    if len(names) < 2 or len(cells) == 0:
        return {}
    column = {name: j for j, name in enumerate(names)}
    per_question = np.array([column[b] for b in benchmarks], dtype=np.int64)
    answered = np.zeros((data.n_llms, len(names)), dtype=bool)
    answered[cells.llm, per_question[cells.question]] = True
    return {
        data.llm_names[m]: [names[j] for j in np.flatnonzero(~answered[m])]
        for m in range(data.n_llms) if answered[m].any() and not answered[m].all()
    }


def coverage_note(missing: dict[str, list[str]], n_llms: int) -> str | None:
    """What `fit` prints about `unanswered_benchmarks`'s result; None when every LLM answered every benchmark."""
    if not missing:
        return None
    named = first_and_more([f"{name} (none of {', '.join(gaps)})" for name, gaps in missing.items()], SHOWN,
                           separator="; ")
    return (f"block-missing answers: {len(missing)} of {n_llms} LLMs answered none of the questions of some benchmark; "
            "their P(correct) there is extrapolated from the benchmarks they answered and can be far off "
            "(docs/guide/training-data.md, \"Block-missing data\"; router.json lists them under "
            f"training.unanswered_benchmarks): {named}")


def benchmark_floor_p(data: Dataset, learned: Responses, cells: Responses, prior: float = 1.0) -> np.ndarray | None:
    """P(correct) of `cells` by each LLM's accuracy on the cell's benchmark among the `learned` cells (smoothed
    towards the LLM's own accuracy by `prior` pseudo-counts; the LLM's accuracy where it answered none of that
    benchmark); None when the data holds one benchmark. On zeroeval this table alone reaches test AUC 0.811 against
    the per-LLM floor's 0.682 and the router's 0.824: the floor a router must beat to show it reads more than which
    benchmark a question is from."""
    benchmarks = np.unique(np.asarray(data.benchmarks).astype(str), return_inverse=True)[1]
    n_benchmarks = int(benchmarks.max(initial=0)) + 1
    if n_benchmarks < 2:
        return None
    hits = np.bincount(learned.llm, weights=learned.correct, minlength=data.n_llms)
    counts = np.bincount(learned.llm, minlength=data.n_llms)
    own = (hits + prior) / (counts + 2 * prior)
    key = learned.llm * n_benchmarks + benchmarks[learned.question]
    size = data.n_llms * n_benchmarks
    cell_hits = np.bincount(key, weights=learned.correct, minlength=size)
    cell_counts = np.bincount(key, minlength=size)
    table = (cell_hits + prior * np.repeat(own, n_benchmarks)) / (cell_counts + prior)
    return np.asarray(table[cells.llm * n_benchmarks + benchmarks[cells.question]])


def few_answers_note(cells: Responses, llm_names: list[str]) -> str | None:
    """What `fit` prints about the LLMs with fewer than FEW_ANSWERS answers among `cells` (those the router learns
    from), fewest first; None when every LLM has enough."""
    counts = np.bincount(cells.llm, minlength=len(llm_names))
    few = [int(m) for m in np.argsort(counts, kind="stable") if counts[m] < FEW_ANSWERS]
    if not few:
        return None
    named = first_and_more([f"{llm_names[m]} ({counts[m]})" for m in few], SHOWN)
    return (f"few answers: {counted(len(few), 'LLM')} of {len(llm_names)} with fewer than {FEW_ANSWERS} answers to learn "
            f"from; their P(correct) rests on those few and can be far off (a few correct answers can rank one first "
            f"everywhere): {named}")
