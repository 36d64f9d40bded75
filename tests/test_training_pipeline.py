"""jeirt_lite_training.pipeline around the choice and the refit: the output is refused before anything is trained,
the folds it chooses on partition the pool with each held out once, `--folds auto` counts every answer it learns
from, the costs and metrics reach the router with or without a calibration, and the metrics say how the votes
were scored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import jeirt_lite_training.pipeline as pipeline
from jeirt_lite import JeirtError, Router
from jeirt_lite_training.__main__ import fit_summary
from jeirt_lite_training.pipeline import choose_refit_and_export, fit_and_export, fold_parts
from jeirt_lite_training.router_writer import folder_size_mb
from synthetic_answers import embedding_cells, synthetic_prepared
from tiny_router import build_tiny_router

QUICK = {"dims": (8,), "dropouts": (0.5,), "max_epochs": 3, "seed": 0, "progress": False, "log": lambda _: None}


def _prep():  # type: ignore[no-untyped-def]
    emb, cells = embedding_cells(240, 6, 8, 3)
    return synthetic_prepared(emb, cells, 6, (np.arange(150), np.arange(150, 200), np.arange(200, 240)))


def test_an_existing_output_is_refused_before_anything_is_trained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_training(*args: object, **kwargs: object) -> None:
        pytest.fail("trained before the output was checked")

    monkeypatch.setattr(pipeline, "choose", no_training)
    monkeypatch.setattr(pipeline, "JeirtPredictor", no_training)
    (tmp_path / "router").mkdir()
    for train in (choose_refit_and_export, fit_and_export):
        with pytest.raises(JeirtError, match=r"router already exists \(pass overwrite=True to replace it\)"):
            train(_prep(), tmp_path / "router")


def test_each_fold_holds_out_its_own_questions_and_trains_on_all_the_others() -> None:
    prep = _prep()
    pool = np.arange(200)
    parts = fold_parts(prep.data, pool, 4, seed=0)
    held_out = [np.unique(val.question) for _, val in parts]
    assert np.array_equal(np.sort(np.concatenate(held_out)), pool)  # each question held out exactly once
    for (train, val), own in zip(parts, held_out):
        trained_on = np.unique(train.question)
        assert not np.isin(trained_on, own).any()  # never trained on what it is scored on
        assert np.array_equal(np.sort(np.concatenate([trained_on, own])), pool)
        assert len(train) + len(val) == 6 * len(pool)  # every answer of the pool, once


def test_auto_folds_counts_the_training_and_validation_answers_together(monkeypatch: pytest.MonkeyPatch) -> None:
    prep = _prep()
    n = len(prep.train) + len(prep.val)  # 900 + 300 answers
    for limit, folds, said in ((n, pipeline.AUTO_FOLDS, f"on {pipeline.AUTO_FOLDS} folds"), (n - 1, 1, "on a held-out part")):
        monkeypatch.setattr(pipeline, "AUTO_FOLDS_MAX_CELLS", limit)
        lines: list[str] = []
        res = choose_refit_and_export(prep, None, calibration=None, neighbours=False,
                                      **{**QUICK, "log": lines.append})  # type: ignore[arg-type]
        assert res.extra["selection"]["folds"] == folds and f"choosing d x dropout {said} ..." in lines


@pytest.mark.parametrize("calibration", [None, "global"])
def test_the_costs_and_metrics_reach_the_router_with_or_without_a_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calibration: str | None
) -> None:
    written: dict[str, object] = {}

    def tiny_export(prep: object, predictor: object, out_dir: Path, **kwargs: object) -> tuple[Path, None]:
        written.update(kwargs)
        return build_tiny_router(out_dir, n_llms=6), None  # the same LLM names, llm-0 ... llm-5

    monkeypatch.setattr(pipeline, "export_trained", tiny_export)
    monkeypatch.setattr(pipeline, "training_summary", lambda prep, predictor: {})  # reads a real encoder's spec
    costs = {f"llm-{j}": float(j + 1) for j in range(6)}
    res = choose_refit_and_export(_prep(), tmp_path / "router", folds=1, calibration=calibration, neighbours=False,
                                  costs=lambda names: {name: costs[name] for name in names}, **QUICK)  # type: ignore[arg-type]
    router = Router.load(tmp_path / "router", threads=1)
    assert res.router_path == tmp_path / "router" and router.costs == costs
    assert (router.calibration is None) == (calibration is None)
    size = sum(f.stat().st_size for f in (tmp_path / "router").iterdir()) / 1e6  # what fit prints it wrote
    assert folder_size_mb(tmp_path / "router") == pytest.approx(size) and f"({size:.1f} MB)" in fit_summary(res)
    metrics = written["metrics"]
    assert isinstance(metrics, dict) and metrics["heldout"] == res.val and metrics["test"] == res.test
    assert metrics["test_uncalibrated"] == res.extra["test_uncalibrated"] and metrics["test"]["n"] == 40 * 6
    assert ("No calibration." in metrics["how"]) == (calibration is None)
    assert "neighbour votes" not in metrics["how"]


def test_the_metrics_say_the_test_part_is_scored_with_the_votes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Written(Exception):
        pass

    def record(prep: object, predictor: object, out_dir: Path, **kwargs: object) -> None:
        raise Written(kwargs["metrics"])

    monkeypatch.setattr(pipeline, "export_trained", record)
    monkeypatch.setattr(pipeline, "training_summary", lambda prep, predictor: {})
    for test_part, said in ((np.arange(200, 240), "; test has them. "), (np.arange(0), "are not in heldout. ")):
        prep = _prep()
        prep = synthetic_prepared(prep.embeddings, prep.data.responses, 6, (np.arange(150), np.arange(150, 200),
                                                                            test_part))
        with pytest.raises(Written) as written:  # votes kept on these short runs, which leave the geometry weak
            choose_refit_and_export(prep, tmp_path / "router", folds=1, **QUICK)  # type: ignore[arg-type]
        (metrics,) = written.value.args
        assert "The neighbour votes (training.selection.neighbours) were chosen on them too" in metrics["how"]
        assert said in metrics["how"] and (metrics["test"] is None) == (not len(test_part))
        assert ("No test part (--holdout 0): every question was learned from." in metrics["how"]) == (not len(test_part))
        assert ("so without it the votes are not scaled as chosen: not a model to use)." in metrics["how"]) == bool(
            len(test_part))


@pytest.mark.parametrize("folds", [0, -2])
def test_fewer_than_one_fold_is_refused(folds: int) -> None:
    with pytest.raises(ValueError, match=f"need at least 2 folds, got {folds}"):
        choose_refit_and_export(_prep(), None, folds=folds, **QUICK)  # type: ignore[arg-type]


def test_table_pulls_are_for_a_static_table_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import jeirt_lite_training.static_finetune as static_finetune

    def no_pulls(*args: object, **kwargs: object) -> None:
        pytest.fail("a table pull chosen for an encoder without a static table")

    monkeypatch.setattr(static_finetune, "choose_table_pull", no_pulls)
    res = choose_refit_and_export(_prep(), None, folds=1, table_pulls=(0.0, 0.5), neighbours=False, **QUICK)  # type: ignore[arg-type]
    assert "static_table" not in res.extra["selection"]
