"""Each LLM's expected accuracy per group of a bank's questions (`score --forecast-by subject`,
`Router.forecast_by`): the sums of P(correct) per (group, LLM), added chunk by chunk, so memory grows with the
groups and the LLMs, never with the rows.

Groups are ordered by their text (code point order), so a bank gives the same table whatever its row order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._errors import JeirtError
from ._io.vocabulary import group_problem
from ._text import counted
from ._type_names import TypeOf, python_type

# A group is a column of the printed table: past this many, the column is more likely an id than a category, and
# the table would be unreadable. Enough for every subject of MMLU-Pro or MMLU's 57 subjects.
MAX_GROUPS = 100
NO_FORECAST = "no question was scored, so there is no forecast (empty bank, or every row skipped)"
# Router.forecast's words for no questions at all (the kernel's, rust/src/error.rs), which forecast_by gives too.
EMPTY_BANK = "cannot forecast on an empty question bank"


@dataclass(frozen=True)
class GroupForecast:
    """Each LLM's expected accuracy (mean P(correct)) on the whole bank and on each group of its questions."""

    column: str  # the column whose values name the groups
    overall: dict[str, float]  # {llm: p} on every question, as `--forecast` gives it
    groups: dict[str, dict[str, float]]  # {group: {llm: p}}, groups in their text's order
    counts: dict[str, int]  # {group: questions}, same order

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def checked_groups(groups: object, count: int, type_of: TypeOf = python_type) -> list[str]:
    """One group per question, as text (an integer is read as its digits, as a CSV cell is), checked by the rules
    a bank's group column is read by; a JeirtError naming the first bad one. A list, or a table's column as the
    texts may be one (a NumPy array, a pandas Series, a pyarrow array); a single string is refused: it would
    otherwise be read as one group per character. No questions at all is refused as `Router.forecast` refuses it.

    The one check of `Router.forecast_by`'s groups and of a `/v1/forecast` request's, so both refuse the same
    groups in the same words; `type_of` names a wrong value's type (the service passes JSON's names)."""
    if count == 0:  # no questions, whatever the groups: refused as Router.forecast refuses them
        raise JeirtError(EMPTY_BANK)
    groups = _listed(groups, type_of)
    if len(groups) != count:
        raise JeirtError(f"groups holds {counted(len(groups), 'value')} for {counted(count, 'question')}: "
                         "give one group per question")
    for i, group in enumerate(groups):
        problem = group_problem(group, type_of)
        if problem is not None:
            raise JeirtError(f"groups[{i}]: {problem}")
    return [str(group) for group in groups]


def _listed(groups: object, type_of: TypeOf) -> list[Any]:
    """The groups as a list of Python values: a table's column gives them as its own list method does (NumPy's
    int64 is not an int, a pyarrow scalar not a str); a whole table or anything else is refused."""
    if hasattr(groups, "columns") or hasattr(groups, "column_names"):  # a DataFrame, a pyarrow Table
        raise JeirtError(f"groups must be one group per question, not {type_of(groups)} (pass its group column)")
    convert = getattr(groups, "to_pylist", None) or getattr(groups, "tolist", None)  # pyarrow; NumPy and pandas
    values = convert() if callable(convert) else groups
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise JeirtError(f"groups must be a list of one group per question, not {type_of(groups)}")
    return [value.item() if isinstance(value, np.generic) else value for value in values]


class GroupSums:
    """Sums of P(correct) per group and LLM, and each group's question count."""

    def __init__(self, llms: Sequence[str], column: str, max_groups: Optional[int] = MAX_GROUPS):
        self.llms = tuple(llms)
        self.column = column
        self.max_groups = max_groups
        self.index: dict[str, int] = {}  # group -> its row in `sums`, in order of first appearance
        self.sums = np.zeros((0, len(self.llms)), dtype=np.float64)
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, groups: Sequence[str], probabilities: np.ndarray) -> None:
        """Add one chunk: each row's group and its (rows, LLMs) P(correct)."""
        if len(groups) != len(probabilities):
            raise JeirtError(f"{counted(len(groups), 'group value')} for {counted(len(probabilities), 'question')}: "
                             "give one per question")
        codes = np.fromiter((self._code(group) for group in groups), dtype=np.intp, count=len(groups))
        np.add.at(self.sums, codes, probabilities.astype(np.float64, copy=False))
        self.counts += np.bincount(codes, minlength=len(self.counts))

    def add_sums(self, group: str, sums: Sequence[float], count: int) -> None:
        """Add one group's sums of P(correct) (one per LLM) over `count` questions, summed elsewhere (a Ray
        worker's batch)."""
        code = self._code(group)
        self.sums[code] += np.asarray(sums, dtype=np.float64)
        self.counts[code] += count

    def partial_sums(self) -> list[tuple[str, np.ndarray, int]]:
        """Each group's (group, sums per LLM, count) so far, in order of first appearance: what `add_sums` takes."""
        return [(group, self.sums[code], int(self.counts[code])) for group, code in self.index.items()]

    def _code(self, group: str) -> int:
        code = self.index.get(group)
        if code is None:
            code = self.index[group] = len(self.index)
            self._grow()
        return code

    def _grow(self) -> None:
        if self.max_groups is not None and len(self.index) > self.max_groups:
            raise JeirtError(
                f"column {self.column!r} has more than {self.max_groups} distinct values, each a column of the "
                "forecast's table: group by a column of categories (a subject, a benchmark), not an id"
            )
        if len(self.index) > len(self.counts):  # doubled, so that many groups (no bound) cost linear time
            spare = max(8, len(self.counts))
            self.sums = np.vstack([self.sums, np.zeros((spare, len(self.llms)))])
            self.counts = np.append(self.counts, np.zeros(spare, dtype=np.int64))

    def result(self) -> GroupForecast:
        total = int(self.counts.sum())
        if total == 0:
            raise JeirtError(NO_FORECAST)
        order = sorted(self.index)
        return GroupForecast(
            column=self.column,
            overall=self._means(self.sums.sum(axis=0), total),
            groups={group: self._means(self.sums[self.index[group]], int(self.counts[self.index[group]]))
                    for group in order},
            counts={group: int(self.counts[self.index[group]]) for group in order},
        )

    def _means(self, sums: np.ndarray, count: int) -> dict[str, float]:
        return {name: float(total / count) for name, total in zip(self.llms, sums.tolist())}
