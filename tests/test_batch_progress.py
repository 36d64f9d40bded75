"""What a `score_file` run counts and shows on each of its three paths (texts encoded in turn, texts encoded in the
background by the Rust fast path, precomputed vectors): the progress line ends at every row read, bad ones
included, never goes back, and the run's counters and scores are those of the good rows, with bad rows in every
chunk (one chunk keeps a single good row) and chunks longer than one encoder slice."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest
from jeirt_lite import EncodedQuestions, Router, batch
from jeirt_lite._progress import Progress
from jeirt_lite.batch import ScoreOptions, ScoreState, score_file
from test_batch import column, read_scores, write_bank

ROWS, CHUNK = 700, 300
# Rows with an empty text: three in the first chunk, all but its last row of the second (so that the count of
# bad rows goes from 3 to 302: the step is 299, which 302 ^ 3 or 302 | 3 would not give), one in the last.
BAD = {10, 280, 290, *range(CHUNK, 2 * CHUNK - 1), 650}


class RecordingProgress(Progress):
    """A progress line that keeps how far it had got after each advance."""

    seen: list[list[int]] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.steps: list[int] = []
        RecordingProgress.seen.append(self.steps)

    def advance(self, rows: int) -> None:
        super().advance(rows)
        self.steps.append(self.done)


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    RecordingProgress.seen = []
    monkeypatch.setattr(batch, "Progress", RecordingProgress)
    return RecordingProgress.seen


def _texts(real_texts: list[str]) -> list[str]:
    return [f"{real_texts[i % len(real_texts)]} ({i})" for i in range(ROWS)]


def _bank(path: Path, texts: list[str]) -> Path:
    """The texts as a CSV bank with ids q0, q1, ..., the rows in BAD left empty."""
    return write_bank(path, [{"id": f"q{i}", "text": "" if i in BAD else text} for i, text in enumerate(texts)])


def _check_run(router: Router, steps: list[list[int]], source: dict[str, Path], out: Path, want: np.ndarray) -> None:
    state = ScoreState()
    before = time.perf_counter()
    summary = score_file(
        router, output=out, options=ScoreOptions(k=1, chunk_size=CHUNK, skip_bad=True), state=state, **source
    )
    elapsed = time.perf_counter() - before
    good = [i for i in range(ROWS) if i not in BAD]
    assert (state.rows_read, state.rows_skipped, state.rows_scored) == (ROWS, len(BAD), len(good))
    assert (summary.rows, summary.skipped) == (len(good), len(BAD))
    assert 0 < summary.seconds <= elapsed
    (progress,) = steps
    assert progress[-1] == ROWS  # every row read counts, bad ones included
    assert progress == sorted(progress)
    rows = read_scores(out)
    assert [row["id"] for row in rows] == [f"q{i}" for i in good]
    np.testing.assert_allclose(column(rows, "p_1"), want[good], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_texts_on_the_shipped_router_in_turn_or_in_the_background(
    steps: list[list[int]], real_texts: list[str], tmp_path: Path, threads: int
) -> None:
    """The shipped router reads the encoder's features for its neighbour votes: one thread encodes a chunk in
    slices and joins vectors and features, two hand the chunk to the Rust pool."""
    router = Router.load(threads=threads)
    assert router.neighbours is not None
    texts = _texts(real_texts)
    want = router.route(texts, k=1).probabilities[:, 0]
    _check_run(router, steps, {"input_path": _bank(tmp_path / "bank.csv", texts)}, tmp_path / "out.csv", want)


def test_texts_on_a_router_with_an_onnx_encoder(
    steps: list[list[int]], real_texts: list[str], tmp_path: Path, tiny_router_path: Path
) -> None:
    router = Router.load(tiny_router_path, threads=1)
    texts = _texts(real_texts)
    want = router.route(texts, k=1).probabilities[:, 0]
    _check_run(router, steps, {"input_path": _bank(tmp_path / "bank.csv", texts)}, tmp_path / "out.csv", want)


def test_vectors_with_bad_rows(steps: list[list[int]], tmp_path: Path, tiny_router_path: Path) -> None:
    router = Router.load(tiny_router_path, threads=1)
    vectors = np.random.default_rng(0).normal(size=(ROWS, router.dim)).astype(np.float32)
    vectors[sorted(BAD)] = np.nan  # a row with a NaN is a bad row
    np.save(tmp_path / "q.npy", vectors)
    (tmp_path / "ids.txt").write_text("".join(f"q{i}\n" for i in range(ROWS)), encoding="utf-8")
    want = np.zeros(ROWS)
    good = [i for i in range(ROWS) if i not in BAD]
    want[good] = router.route(EncodedQuestions(vectors[good]), k=1).probabilities[:, 0]
    source = {"vectors_path": tmp_path / "q.npy", "ids_path": tmp_path / "ids.txt"}
    _check_run(router, steps, source, tmp_path / "out.csv", want)


def test_no_progress_line_unless_asked(
    tiny_router_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    router = Router.load(tiny_router_path, threads=1)
    bank = _bank(tmp_path / "bank.csv", ["What is 7 * 8?"] * 20)
    score_file(router, input_path=bank, output=tmp_path / "quiet.csv", options=ScoreOptions(skip_bad=True))
    assert capsys.readouterr().err == ""
    shown = io.StringIO()
    score_file(router, input_path=bank, output=tmp_path / "shown.csv", options=ScoreOptions(skip_bad=True),
               show_progress=True, progress_stream=shown)
    assert shown.getvalue().endswith("\n") and "20 rows" in shown.getvalue()
