"""`score` with the static fast path on more than one thread (encoding overlapped with reading and writing)
gives the rows, order, errors and counters of the one-thread run."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import jeirt_lite
import numpy as np
import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite.batch import ScoreOptions, ScoreState, score_file

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    csv.field_size_limit(1 << 30)
    with open(REPO / "data" / "mmlu_pro" / "questions.csv", newline="", encoding="utf-8") as handle:
        return [row["text"] for row in csv.DictReader(handle)][:300]


def _bank(path: Path, texts: list[str]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "text"])
        writer.writerows([i, text] for i, text in enumerate(texts))
    return path


def test_two_threads_write_what_one_thread_writes(texts: list[str], tmp_path: Path) -> None:
    bank = _bank(tmp_path / "bank.csv", texts)
    one, two = Router.load(threads=1), Router.load(threads=2)
    assert one.fast_path and two.fast_path
    options = ScoreOptions(k=3, chunk_size=37, forecast=True, all_probabilities=True)
    first = score_file(one, input_path=bank, output=tmp_path / "one.csv", options=options)
    second = score_file(two, input_path=bank, output=tmp_path / "two.csv", options=options)
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()
    assert first.rows == second.rows == len(texts) and first.forecast == second.forecast


def test_repeated_texts_are_encoded_once_in_the_background_and_every_row_gets_its_own_scores(
    texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeirt_lite import _pipeline

    repeated = texts[:40] * 3  # a table of answers: each question once per LLM
    bank = _bank(tmp_path / "bank.csv", repeated)
    options = ScoreOptions(k=3, chunk_size=50, forecast=True, all_probabilities=True)
    started: list[int] = []
    start = _pipeline.start_encoding

    def counting(router: Router, batch: list[str]) -> object:
        started.append(len(batch))
        return start(router, batch)

    monkeypatch.setattr(_pipeline, "start_encoding", counting)
    two = score_file(Router.load(threads=2), input_path=bank, output=tmp_path / "two.csv", options=options)
    assert started == [len(set(repeated[i : i + 50])) for i in range(0, 120, 50)] == [40, 40, 20]
    one = score_file(Router.load(threads=1), input_path=bank, output=tmp_path / "one.csv", options=options)
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()
    assert one.forecast == two.forecast
    # Every row scored as the text is alone: the votes' sums and the features follow their rows.
    alone = Router.load(threads=1).predict_proba(texts[:40])
    with open(tmp_path / "two.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    first = Router.load(threads=1).llms[0]
    np.testing.assert_allclose([float(row[f"p[{first}]"]) for row in rows], np.tile(alone[:, 0], 3), rtol=1e-6)


def test_a_bad_row_in_a_later_chunk_is_named_after_the_earlier_chunks(texts: list[str], tmp_path: Path) -> None:
    bank = _bank(tmp_path / "bank.csv", texts[:50] + [""] + texts[:10])
    state = ScoreState()
    with pytest.raises(JeirtError, match="data row 51"):
        score_file(Router.load(threads=2), input_path=bank, output=tmp_path / "s.csv",
                   options=ScoreOptions(chunk_size=8), state=state)
    assert state.rows_scored == 48  # the six whole chunks before the one holding row 51, as on one thread
    assert not (tmp_path / "s.csv").exists()
    skipped = score_file(Router.load(threads=2), input_path=bank, output=tmp_path / "s.csv",
                         options=ScoreOptions(chunk_size=8, skip_bad=True))
    assert (skipped.rows, skipped.skipped) == (60, 1)


def test_a_background_job_gives_the_vectors_of_a_direct_call_once(texts: list[str]) -> None:
    router = Router.load(threads=2)
    encoder = router._encoder
    pending = [encoder.encode_start(texts[start : start + 100]) for start in (0, 100, 200)]  # type: ignore[union-attr]
    direct = router.encode(texts, features=False).vectors
    np.testing.assert_array_equal(np.concatenate([job.result()[0] for job in pending]), direct)
    with pytest.raises(JeirtError, match="already collected"):
        pending[0].result()


@pytest.mark.parametrize("rows", [0, 1, 63, 64, 65, 129])
def test_a_background_job_of_any_size_gives_every_row_in_place(texts: list[str], rows: int) -> None:
    # A job is queued as pieces of 64 texts that finish in any order: each must land in its rows.
    router = Router.load(threads=2)
    job = router._encoder.encode_start(texts[:rows])  # type: ignore[union-attr]
    np.testing.assert_array_equal(job.result()[0], router.encode(texts[:rows], features=False).vectors if rows else np.empty((0, router.dim)))


@pytest.mark.parametrize("rows", [0, 1, 65, 200])
def test_a_background_job_gives_the_features_and_the_votes_of_a_direct_call(texts: list[str], rows: int) -> None:
    # The votes are computed in the job, from features that never leave Rust: they must be what scoring the
    # same features on the calling thread gives, bit for bit.
    router = Router.load(threads=2)
    votes = router.neighbours
    assert votes is not None
    job = router._encoder.encode_start(texts[:rows], features=True, votes=votes.request())  # type: ignore[union-attr]
    vectors, features, sums = job.result()
    direct = router.encode(texts[:rows])
    assert features is not None and sums is not None and direct.features is not None
    np.testing.assert_array_equal(vectors, direct.vectors)
    np.testing.assert_array_equal(features, direct.features)
    want = votes.sums(direct.features, threads=1)
    np.testing.assert_array_equal(sums[0], want[0])
    np.testing.assert_array_equal(sums[1], want[1])
    plain = router._encoder.encode_start(texts[:rows]).result()  # type: ignore[union-attr]
    assert plain[1] is None and plain[2] is None


def test_a_background_job_refuses_a_lone_surrogate_by_its_index(texts: list[str]) -> None:
    encoder = Router.load(threads=2)._encoder
    with pytest.raises(JeirtError, match="text 2 is not valid Unicode"):
        encoder.encode_start([texts[0], texts[1], "bad \ud800 text"])  # type: ignore[union-attr]


def _route(stdin: bytes, threads: int) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    package_root = str(Path(jeirt_lite.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "jeirt_lite", "route", "--json", "--k", "2", "--threads",
                           str(threads)], input=stdin, capture_output=True, timeout=120, env=env, check=False)


def test_route_over_piped_stdin_on_two_threads_prints_what_one_thread_prints(texts: list[str]) -> None:
    lines = [text.replace("\n", " ").replace("\r", " ") for text in texts] * 4  # 1,200 lines: five batches
    stdin = ("\n".join(lines) + "\n").encode("utf-8")
    one, two = _route(stdin, 1), _route(stdin, 2)
    assert one.returncode == two.returncode == 0, two.stderr
    assert one.stdout == two.stdout and len(one.stdout.splitlines()) == len(lines)


def test_route_stops_at_a_bad_stdin_line_after_printing_the_lines_before_it(texts: list[str]) -> None:
    lines = [text.replace("\n", " ").replace("\r", " ").encode("utf-8") for text in texts] * 3
    done = _route(b"\n".join(lines[:700] + [b"bad \xff line"] + lines[700:]) + b"\n", 2)
    assert done.returncode == 1 and b"stdin line 701 is not valid UTF-8" in done.stderr
    assert len(done.stdout.splitlines()) == 512  # the two whole batches of 256 lines before the bad one


def test_a_failure_while_chunks_are_in_flight_leaves_no_output_and_a_working_pool(
    texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeirt_lite._io import writers

    bank, out = _bank(tmp_path / "bank.csv", texts), tmp_path / "s.csv"
    router = Router.load(threads=2)
    written = []

    def failing_write(self: writers.CsvWriter, chunk: writers.ScoredChunk) -> None:
        written.append(len(chunk.ids))
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(writers.CsvWriter, "write", failing_write)
        with pytest.raises(JeirtError, match=r"s\.csv: cannot write the output \(disk full\)"):
            score_file(router, input_path=bank, output=out, options=ScoreOptions(chunk_size=10))
    assert written == [10] and not out.exists() and not list(tmp_path.glob(".s.csv.partial-*"))
    # The jobs left behind finish on their own; the pool serves the next run.
    summary = score_file(router, input_path=bank, output=out, options=ScoreOptions(chunk_size=10))
    assert summary.rows == len(texts) and len(out.read_text().splitlines()) == len(texts) + 1
