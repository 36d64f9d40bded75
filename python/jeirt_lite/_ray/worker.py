"""The Ray engine's worker: an actor that loads the router once and scores whole Arrow batches of texts with the
code of the single-machine path (`batch.score_chunk`, `_io.writers.score_table`)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from .._errors import SKIP_BAD, hinted_error
from .._io.optional import require_pyarrow
from .._io.vocabulary import group_problem, id_problem, score_columns, text_problem
from .._io.writers import ScoredChunk, score_table
from .._score_request import ScoreOptions
from ..batch import score_chunk
from .group_sums import GROUP_COLUMN
from .row_numbers import ROW_NUMBER_COLUMN


class BankScorer:
    """One per worker: loads the router once, then turns Arrow batches of texts into Arrow batches of scores."""

    def __init__(
        self,
        router_path: str,
        text_column: str,
        id_column: str,
        k: int,
        all_probabilities: bool,
        skip_bad: bool,
        threads: int,
        router_files: Optional[dict[str, bytes]] = None,
        routing: Optional[dict[str, Any]] = None,
        costs: Optional[dict[str, float]] = None,
        group_column: Optional[str] = None,
    ):
        from .._router import Router

        if router_files is not None:
            # A private copy for this worker's lifetime; Router.load checks it against router.json's hashes.
            self._router_copy = tempfile.TemporaryDirectory(prefix="jeirt-router-")
            for name, data in router_files.items():
                (Path(self._router_copy.name) / name).write_bytes(data)
            router_path = self._router_copy.name
        self.router = Router.load(router_path, threads=threads)
        if costs is not None:  # instead of the stored ones, as `--costs FILE` does on one machine
            self.router = self.router.with_costs(costs, replace=True)
        self.pa = require_pyarrow()
        self.text_column, self.id_column = text_column, id_column
        # Each row's value of this column, as text, goes out beside its scores in GROUP_COLUMN (`--forecast-by`).
        self.group_column = group_column
        self.options = ScoreOptions(k=k, all_probabilities=all_probabilities, skip_bad=skip_bad, **(routing or {}))
        self.fallback = self.options.min_probability is not None  # the `fallback` column, as one machine writes it
        self.columns = score_columns(k, self.router.llms, all_probabilities, self.fallback)
        self.name_array = self.pa.array(list(self.router.llms), type=self.pa.string())

    def __call__(self, batch: Any) -> Any:
        pa = self.pa
        texts = batch.column(self.text_column).to_pylist()
        ids = batch.column(self.id_column).combine_chunks()
        groups = batch.column(self.group_column).to_pylist() if self.group_column is not None else None
        keep = []
        for i, (text, ident) in enumerate(zip(texts, ids.to_pylist())):
            problem = text_problem(text) or id_problem(ident)  # the rules of the single-machine reader, in its order
            if problem is None and groups is not None:
                problem = group_problem(groups[i])
            if problem is None:
                keep.append(i)
            elif not self.options.skip_bad:
                raise hinted_error(f"{self._row_name(ident)}: {problem}", SKIP_BAD)
        if len(keep) < len(texts):
            ids = ids.take(pa.array(keep, type=pa.int64()))
            texts = [texts[i] for i in keep]
        ids = _as_written(pa, ids)
        if not texts:  # every row of the batch was bad and skipped
            scores = empty_scores(pa, ids.type, self.options.k, self.router.llms, self.options.all_probabilities,
                                  self.fallback)
        else:
            chunk = score_chunk(self.router, [], self.router.encode(texts), self.options)
            scores = score_table(pa, ids, chunk, self.name_array, self.columns)
        if groups is None:
            return scores
        # read as text, as one machine reads them: 3 and "3" are one group
        return scores.append_column(GROUP_COLUMN, pa.array([str(groups[i]) for i in keep], pa.string()))

    def _row_name(self, ident: Any) -> str:
        """A row named in an error: by its number when the ids are the data row numbers (`row_numbers`), else by its
        id (the rows of a distributed dataset have no global number)."""
        if self.id_column == ROW_NUMBER_COLUMN:
            return f"data row {ident} (1-based)"
        return f"row with {self.id_column} {ident!r}"


def empty_scores(
    pa: Any, id_type: Any, k: int, llms: Sequence[str], all_probabilities: bool, fallback: bool = False
) -> Any:
    """The scores of no rows: an empty Arrow table with the columns and types a scored batch of ids of `id_type`
    has (`fallback`: routed by a minimum probability, with the `fallback` column). A worker returns it for a batch
    whose every row was skipped; the driver writes its schema when no batch comes at all (Ray Data drops empty
    batches)."""
    chunk = ScoredChunk.empty(k, len(llms), all_probabilities, fallback)
    ids = _as_written(pa, pa.array([], type=id_type))
    names = pa.array(list(llms), type=pa.string())
    return score_table(pa, ids, chunk, names, score_columns(k, llms, all_probabilities, fallback))


def _as_written(pa: Any, ids: Any) -> Any:
    """The ids as the output holds them: large strings become the plain strings the single-machine writer writes."""
    return ids.cast(pa.string()) if pa.types.is_large_string(ids.type) else ids
