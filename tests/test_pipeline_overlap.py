"""_pipeline.py: which routers encode in the background, how many batches are in flight at once, and an onboarded
router's corrections on that path (the rows and errors of `score` on it: tests/test_batch_pipelined.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jeirt_lite import Router
from jeirt_lite import _pipeline as pipeline
from jeirt_lite._questions import EncodedQuestions
from jeirt_lite.batch import ScoreOptions, score_file


def test_only_the_rust_fast_path_on_several_threads_encodes_in_the_background(tiny_router_path: Path) -> None:
    assert pipeline.pipelines(Router.load(threads=2))
    assert pipeline.pipelines(Router.load(threads=3))
    assert not pipeline.pipelines(Router.load(threads=1))
    assert not pipeline.pipelines(Router.load(threads=2, fast_path=False))  # the ONNX graph uses every core itself
    assert not pipeline.pipelines(Router.load(tiny_router_path, threads=2))  # no Rust encoder at all


def test_the_scoring_copy_scores_on_the_calling_thread_with_the_same_encoder() -> None:
    router = Router.load(threads=2)
    copy = pipeline.scoring_copy(router)
    assert copy.threads == 1 and copy._encoder is router._encoder and copy.llms == router.llms


class _Pending:
    def __init__(self, events: list[str], texts: list[str]) -> None:
        self.events, self.texts = events, texts

    def result(self) -> tuple[np.ndarray, None, None]:
        self.events.append(f"collect {self.texts[0]}")
        return np.zeros((len(self.texts), 2), np.float32), None, None


@pytest.mark.parametrize("items", [0, 1, pipeline.IN_FLIGHT, 10])
def test_at_most_in_flight_batches_are_started_and_not_collected(
    monkeypatch: pytest.MonkeyPatch, items: int
) -> None:
    events: list[str] = []

    def start(router: Any, texts: list[str]) -> _Pending:
        events.append(f"start {texts[0]}")
        return _Pending(events, texts)

    monkeypatch.setattr(pipeline, "start_encoding", start)
    done = []
    for item, questions in pipeline.in_background(None, range(items), lambda i: [str(i)]):  # type: ignore[arg-type]
        events.append(f"yield {item}")
        done.append(item)
        assert questions.vectors.shape == (1, 2)
    assert done == list(range(items))
    in_flight, most = 0, 0
    for event in events:
        in_flight += event.startswith("start") - event.startswith("collect")
        most = max(most, in_flight)
    assert most == min(items, pipeline.IN_FLIGHT) and in_flight == 0
    if items > pipeline.IN_FLIGHT:  # the oldest is collected only once IN_FLIGHT are under way, then one for one
        assert events[: pipeline.IN_FLIGHT + 2] == [*(f"start {i}" for i in range(pipeline.IN_FLIGHT)),
                                                    "collect 0", "yield 0"]


def test_an_onboarded_router_with_its_correction_scores_on_two_threads_as_on_one(tmp_path: Path) -> None:
    base = Router.load(threads=1).with_neighbours(None)
    rng = np.random.default_rng(7)
    texts = [f"question {i} about {w} and {v}" for i, (w, v) in enumerate(rng.choice(
        ["enzyme", "integral", "court", "market", "circuit", "poem", "python", "war"], size=(200, 2)))]
    vectors, features = base.encode(texts, features=True)
    assert features is not None
    signal = (features - features.mean(axis=0)) @ rng.normal(size=features.shape[1])
    grown = base.add_llm("feature-llm", EncodedQuestions(vectors, features), (signal > np.median(signal)).astype(int))
    assert grown.corrections is not None
    path = grown.save(tmp_path / "grown")
    one, two = Router.load(path, threads=1), Router.load(path, threads=2)
    assert pipeline.pipelines(two)
    bank = tmp_path / "bank.csv"
    bank.write_text("text\n" + "\n".join(texts) + "\n")
    options = ScoreOptions(k=3, chunk_size=16, all_probabilities=True)
    score_file(one, input_path=bank, output=tmp_path / "one.csv", options=options)
    score_file(two, input_path=bank, output=tmp_path / "two.csv", options=options)
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()
    assert "p[feature-llm]" in (tmp_path / "one.csv").read_text().splitlines()[0]
