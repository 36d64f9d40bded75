"""Which LLMs never answered a whole benchmark of the data a router learns from (block-missing data).

A router still gives such an LLM a P(correct) on that benchmark's questions: its vector, fitted on the other
benchmarks alone, says nothing reliable there. On zeroeval (docs/guide/training-data.md, "Block-missing data") one
LLM that answered only GSM8K was forecast 0.85 on MATH level 5, where the same model under another name scored 0.51.
`fit` names these LLMs when it loads the data and router.json records them (training.unanswered_benchmarks), so that
a user reading a forecast or a route can tell a measured rating from an extrapolated one.
"""

from __future__ import annotations

import numpy as np

from .types import Dataset, Responses

SHOWN = 5  # LLMs named in the printed note; router.json keeps them all


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
    shown = [f"{name} (none of {', '.join(gaps)})" for name, gaps in list(missing.items())[:SHOWN]]
    more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
    return (f"block-missing answers: {len(missing)} of {n_llms} LLMs answered none of the questions of some benchmark; "
            "their P(correct) there is extrapolated from the benchmarks they answered and can be far off "
            "(docs/guide/training-data.md, \"Block-missing data\"; router.json lists them under "
            f"training.unanswered_benchmarks): {'; '.join(shown)}{more}")
