"""Batch scoring of question banks of any size: read a chunk, encode it, score it with the Rust kernels, write
it, repeat. Memory holds one chunk at a time (a few, see below); output rows keep the input order; the
output file appears only when the run is complete (see `_io.outputs.atomic_output`).

With a transformer encoder the encoder is over 99% of the time and already uses every core, so one thread does
it all, in turn. A static router's Rust fast path encodes so fast that reading, scoring and writing (Python, under
the GIL) become about a third of the run: with more than one thread, each chunk is handed to the Rust pool to
encode in the background (`_pipeline`: no Python thread involved, so the pool never waits for the GIL; a router's
neighbour votes are computed in the same jobs) while this thread reads the next chunks and scores and writes the
finished ones, in order; at most `_pipeline.IN_FLIGHT` chunks are being encoded at a time
(docs/research/throughput.md has the measured scaling).

Example:
    >>> from jeirt_lite import Router
    >>> from jeirt_lite.batch import ScoreOptions, score_file
    >>> summary = score_file(Router.load(), input_path=Path("bank.csv"), output=Path("scores.parquet"),
    ...                      options=ScoreOptions(k=3, forecast=True))   # doctest: +SKIP
    >>> summary.forecast                                                  # doctest: +SKIP
    {'llm-a': 0.71, 'llm-b': 0.64}
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np

from ._errors import JeirtError
from ._group_forecast import NO_FORECAST, GroupForecast, GroupSums
from ._io.formats import format_of, open_text_reader, open_vector_reader, open_writer
from ._io.optional import require_pyarrow
from ._io.outputs import atomic_output, check_output_path
from ._io.texts import TextReader
from ._io.vectors import VectorReader
from ._io.writers import ScoredChunk, Writer
from ._pipeline import in_background, pipelines, scoring_copy
from ._progress import Progress
from ._questions import EncodedQuestions, distinct_texts
from ._router import Router
from ._routing import routing_rows
from ._score_request import DEFAULT_CHUNK_SIZE, ScoreOptions, check_score_request
from .artifact import PathLike

# Texts go to the encoder in slices of this many rows so the progress line moves during a chunk: a 4096-row
# chunk takes minutes with a transformer encoder on a small CPU. The router sorts each slice by length, and
# 256 texts already give batches of similar lengths.
ENCODE_SLICE = 256
# What the chunk sources yield: ids and the encoded questions (vectors, the encoder's features where scoring reads
# them, the neighbour votes' sums where the background jobs computed them).
Chunks = Iterator[tuple[list[Any], Optional[list[str]], EncodedQuestions]]  # ids, group values (or None), questions


# ScoreOptions is defined with the one check of a scoring request (_score_request) and is public here.
__all__ = ["DEFAULT_CHUNK_SIZE", "ScoreOptions", "ScoreState", "ScoreSummary", "score_file"]

@dataclass
class ScoreState:
    """Counters updated while a run goes, so a caller can say how far an interrupted or failed run got."""

    rows_read: int = 0  # input rows consumed, good or bad
    rows_scored: int = 0  # rows encoded, scored and (when there is an output) written
    rows_skipped: int = 0
    workers_started: bool = False  # on Ray: the run passed its checks and handed the bank to the workers


@dataclass
class ScoreSummary:
    rows: int
    skipped: int
    seconds: float
    output: Optional[Path]
    forecast: Optional[dict[str, float]] = field(default=None)
    # with `ScoreOptions.forecast_by`: the forecast on the whole bank and on each group of it (`forecast` is its
    # `overall`)
    group_forecast: Optional[GroupForecast] = field(default=None)


class ForecastSums:
    """Each LLM's sum of P(correct) over the rows seen, chunk by chunk; never holds the N x K matrix."""

    def __init__(self, router: Router, group_column: Optional[str] = None):
        self.router = router
        self.sums = np.zeros(len(router.llms), dtype=np.float64)
        self.count = 0
        # Per group, the sums need each row's P(correct): the chunk's (rows, LLMs) matrix, never the bank's.
        self.by_group = None if group_column is None else GroupSums(router.llms, group_column)

    def add(self, questions: EncodedQuestions, groups: Optional[list[str]] = None) -> None:
        rows = len(questions.vectors)
        if rows == 0:
            return
        if self.by_group is not None:
            self.by_group.add(groups or [], self.router.predict_proba(questions))
            return
        # The kernel's per-chunk mean times the chunk size is that chunk's sum; float64 keeps 1M rows exact
        # enough.
        means = self.router.forecast(questions)
        self.sums += np.fromiter(means.values(), dtype=np.float64, count=len(means)) * rows
        self.count += rows

    def result(self) -> dict[str, float]:
        if self.by_group is not None:
            return self.grouped().overall
        if self.count == 0:
            raise JeirtError(NO_FORECAST)
        return {name: float(total / self.count) for name, total in zip(self.router.llms, self.sums.tolist())}

    def grouped(self) -> GroupForecast:
        assert self.by_group is not None
        return self.by_group.result()


def score_chunk(router: Router, ids: list[Any], questions: EncodedQuestions, options: ScoreOptions) -> ScoredChunk:
    """Top-k LLMs, difficulty and (optionally) every probability for one chunk of encoded questions; with
    `options.min_probability`, which rows fell back to the most likely LLM."""
    result = router.route(
        questions, k=options.k, llms=options.llms, cost_weight=options.cost_weight,
        min_probability=options.min_probability,
    )
    return ScoredChunk(
        ids=ids,
        indices=result.indices,
        probabilities=result.probabilities,
        difficulty=router.difficulty(questions),
        all_probabilities=router.predict_proba(questions) if options.all_probabilities else None,
        fallback=result.fallback,
    )


def _embedded_chunks(
    router: Router, reader: TextReader, progress: Progress, state: ScoreState
) -> Chunks:
    # With onboarded corrections the encoder's features come with the vectors (the Rust fast path gives both).
    for chunk in reader:
        texts, rows = distinct_texts(chunk.texts)  # a text the chunk holds more than once is encoded once
        parts = []
        for start in range(0, len(texts), ENCODE_SLICE):
            part = texts[start : start + ENCODE_SLICE]
            parts.append(router.encode(part))  # features only where scoring reads them
            progress.advance(len(part))
        vectors = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, router.dim), np.float32)
        features = None if not parts or parts[0][1] is None else np.concatenate([p[1] for p in parts])
        # Bad rows and repeated texts count as read for the percentage.
        progress.advance(reader.skipped - state.rows_skipped + len(chunk.texts) - len(texts))
        state.rows_read, state.rows_skipped = reader.rows_read, reader.skipped
        encoded = EncodedQuestions(vectors, features)
        yield chunk.ids, chunk.groups, encoded if rows is None else encoded.rows(rows)
    state.rows_read, state.rows_skipped = reader.rows_read, reader.skipped


def _pipelined_chunks(
    router: Router, reader: TextReader, progress: Progress, state: ScoreState
) -> Chunks:
    """Chunks encoded by the Rust fast path in the background (`_pipeline.in_background`, on the router's pool,
    the GIL released) while this thread parses the next ones and scores and writes the previous ones; results
    come back in input order, at most `_pipeline.IN_FLIGHT` chunks in flight, so memory stays flat."""
    # The reader's counters as they were when each chunk was read (the reader is ahead of the chunk scored).
    # The reader has checked every text (a string, not blank, valid UTF-8), as `Router.encode` would.
    read = ((chunk.ids, chunk.texts, chunk.groups, reader.rows_read, reader.skipped) for chunk in reader)
    for (ids, _, groups, rows_read, skipped), questions in in_background(router, read, lambda item: item[1]):
        progress.advance(len(ids) + skipped - state.rows_skipped)  # bad rows count as read for the percentage
        state.rows_read, state.rows_skipped = rows_read, skipped
        yield ids, groups, questions
    state.rows_read, state.rows_skipped = reader.rows_read, reader.skipped


def _chunk_source(router: Router, reader: Any, progress: Progress, state: ScoreState) -> tuple[Chunks, Router]:
    """The (ids, group values or None, encoded questions) chunks of the input, and the router that scores them."""
    if isinstance(reader, TextReader) and pipelines(router):
        return _pipelined_chunks(router, reader, progress, state), scoring_copy(router)
    if isinstance(reader, TextReader):
        return _embedded_chunks(router, reader, progress, state), router
    return _vector_chunks(reader, progress, state), router


def _vector_chunks(
    reader: VectorReader, progress: Progress, state: ScoreState
) -> Chunks:
    for chunk in reader:
        progress.advance(reader.rows_read - state.rows_read)
        state.rows_read, state.rows_skipped = reader.rows_read, reader.skipped
        yield chunk.ids, None, EncodedQuestions(chunk.vectors)


def _check_vectors_source(router: Router, vectors_path: Optional[Path]) -> None:
    """Refuse a .npy of question vectors for a router whose scoring reads the encoder's features too."""
    if vectors_path is not None and router.corrections is not None:
        # The corrections read the encoder's features, which a .npy of question vectors does not carry (they
        # are wider than the vectors and come only from the texts): refused before anything is read or written.
        raise JeirtError(
            f"this router corrects {', '.join(router.corrections.llms)} with the encoder's features, which a .npy "
            "of question vectors does not carry: score the question texts instead (an input file), or score the "
            "vectors with a router without those LLMs (Router.select_llms)"
        )
    if vectors_path is not None and router.neighbours is not None:
        raise JeirtError(
            "this router adds its training questions' answers by similarity of the encoder's features (neighbour "
            "votes), which a .npy of question vectors does not carry: score the question texts instead (an input "
            "file), or score the vectors without the votes (--no-neighbours; Router.with_neighbours(None))"
        )


@contextlib.contextmanager
def _naming(output: Optional[Path]) -> Iterator[None]:
    """An OSError writing the output (a read-only folder, a full disk) as an error naming the output that was asked
    for: it named the hidden temporary file written first, or no file at all (`[Errno 28] No space left on
    device`). pyarrow's own text names the temporary file too: the errno's text stands for it."""
    try:
        yield
    except OSError as err:
        why = os.strerror(err.errno) if err.errno else str(err)
        raise JeirtError(f"{output}: cannot write the output ({why})") from err


def score_file(
    router: Router,
    *,
    input_path: Optional[PathLike] = None,
    vectors_path: Optional[PathLike] = None,
    ids_path: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    text_column: Optional[str] = None,
    id_column: Optional[str] = None,
    options: Optional[ScoreOptions] = None,
    state: Optional[ScoreState] = None,
    show_progress: bool = False,
    progress_stream: Optional[TextIO] = None,
) -> ScoreSummary:
    """Score a question bank file (texts) or an .npy of question vectors, streaming chunk by chunk.

    Args:
        router: the router to score with.
        input_path: a CSV, JSONL or Parquet file with a text column (exclusive with `vectors_path`); this path
            and the others below are a str or a Path, as `Router.load` takes.
        vectors_path: an (N, d) .npy of question vectors already embedded with this router's encoder.
        ids_path: ids for the vector rows (.npy or one per line); default: the row numbers.
        output: .csv, .jsonl or .parquet file for the scores; None only with `options.forecast`.
        text_column, id_column: column names in the input; the text column defaults to the first of `text`,
            `question`, `prompt` present, the id column to the first of `id`, `question_id`, `qid`, else the data
            row number (1-based, header not counted, as errors name rows).
        options: k, all probabilities, forecast (`forecast_by`: per group of a column, into the summary's
            `group_forecast`), chunk size, skip bad rows.
        state: counters to read after an interruption (rows done so far).
        show_progress: draw a progress line on `progress_stream` (default stderr).

    Raises:
        JeirtError: a bad input, row (named by its 1-based data row) or argument; nothing is left at `output`.
    """
    options = options or ScoreOptions()
    state = state if state is not None else ScoreState()
    source, vectors, ids, target = (None if path is None else Path(path) for path in (input_path, vectors_path,
                                                                                       ids_path, output))
    fmt = _checked_request(router, options, source, vectors, ids, target)
    if "parquet" in (fmt, source and format_of(source)):
        # Import pyarrow before the clock starts (its first array conversion also imports pandas when
        # installed, up to a second), so the reported time is the scoring loop's.
        require_pyarrow().array([0])
    started = time.perf_counter()
    reader = _open_reader(router, source, vectors, ids, text_column, id_column, options)
    progress = Progress(
        reader.total_rows,
        estimate_total=reader.estimated_rows if isinstance(reader, TextReader) else None,
        enabled=show_progress,
        stream=progress_stream,
    )
    chunks, scorer = _chunk_source(router, reader, progress, state)
    forecast = ForecastSums(scorer, options.forecast_by) if options.forecasting else None
    try:
        result = _score_into(target, fmt, reader, chunks, scorer, router.llms, forecast, options, state)
    finally:
        progress.close()
    return ScoreSummary(
        rows=state.rows_scored,
        skipped=state.rows_skipped,
        seconds=time.perf_counter() - started,
        output=target,
        forecast=result,
        group_forecast=forecast.grouped() if forecast is not None and forecast.by_group is not None else None,
    )


def _checked_request(
    router: Router, options: ScoreOptions, input_path: Optional[Path], vectors_path: Optional[Path],
    ids_path: Optional[Path], output: Optional[Path],
) -> Optional[str]:
    """Every check of the request, before anything is read or written; the output's format (None: no output)."""
    check_score_request(options, len(router.llms), input_path=input_path, vectors_path=vectors_path,
                        ids_path=ids_path, output=output)
    routing_rows(router.llms, options.k, options.cost_weight, options.min_probability, options.llms, router.costs)
    _check_vectors_source(router, vectors_path)
    sources = [path for path in (input_path, vectors_path, ids_path) if path is not None]
    return check_output_path(output, sources, router.path) if output is not None else None


def _open_reader(
    router: Router, input_path: Optional[Path], vectors_path: Optional[Path], ids_path: Optional[Path],
    text_column: Optional[str], id_column: Optional[str], options: ScoreOptions,
) -> Any:
    """The chunked reader of the input: question texts, or question vectors (with their ids)."""
    if input_path is not None:
        return open_text_reader(
            input_path, text_column=text_column, id_column=id_column, chunk_size=options.chunk_size,
            skip_bad=options.skip_bad, group_column=options.forecast_by,
        )
    assert vectors_path is not None
    return open_vector_reader(vectors_path, router.dim, options.chunk_size, options.skip_bad, ids_path)


def _score_into(
    output: Optional[Path], fmt: Optional[str], reader: Any, chunks: Chunks, scorer: Router, llms: tuple[str, ...],
    forecast: Optional[ForecastSums], options: ScoreOptions, state: ScoreState,
) -> Optional[dict[str, float]]:
    """Every chunk scored into `output` (which appears only when all of them are written) and into the forecast's
    sums; the reader closed at the end. Returns the forecast, when one was asked for."""
    with reader, atomic_output(output) if output is not None else contextlib.nullcontext() as temporary:
        id_type = reader.id_arrow_type() if isinstance(reader, TextReader) and fmt == "parquet" else None
        with _naming(output):
            writer = (
                open_writer(temporary, fmt, options.k, llms, options.all_probabilities, id_type,
                            options.min_probability is not None)
                if temporary is not None and fmt is not None
                else None
            )
        _write_chunks(chunks, writer, scorer, forecast, options, state, output)
        # inside the guard: no forecast means a failed run and no output
        return forecast.result() if forecast is not None else None


def _write_chunks(
    chunks: Chunks, writer: Optional[Writer], scorer: Router, forecast: Optional[ForecastSums],
    options: ScoreOptions, state: ScoreState, output: Optional[Path],
) -> None:
    """Each chunk added to the forecast's sums and, scored, to the writer (None: no output); the writer closed at
    the end, whatever happens."""
    try:
        for ids, groups, questions in chunks:
            if forecast is not None:
                forecast.add(questions, groups)
            if writer is not None and len(questions.vectors):
                scored = score_chunk(scorer, ids, questions, options)
                with _naming(output):
                    writer.write(scored)
            state.rows_scored += len(questions.vectors)
    finally:
        if writer is not None:
            with _naming(output):
                writer.close()
