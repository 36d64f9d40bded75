"""`jeirt-lite train`'s options: bounded where they are parsed (one line, exit 2), the data table's columns settable
from the command line and listed in --help, and --help working without the train extra (torch)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from jeirt_lite import JeirtError
from jeirt_lite.cli import main


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--threads", "100000"], "argument --threads: must be at most 256, got 100,000"),
        (["--threads", "-3"], "argument --threads: must be at least 1, got -3"),
        (["--dim", "-5"], "argument --dims/--dim: '-5': must be at least 1, got -5"),
        (["--dims", "64,,0"], "'0': must be at least 1"),
        (["--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
        (["--max-epochs", "0"], "argument --max-epochs: must be at least 1"),
        (["--patience", "-1"], "argument --patience: must be at least 0"),
        (["--val-fraction", "0"], "argument --val-fraction: must be a finite number in (0, 1), got 0"),
        (["--holdout", "1"], "argument --holdout/--test-fraction: must be a finite number in [0, 1), got 1"),
        (["--dropouts", "0.5,1.2"], "'1.2': must be a finite number in [0, 1)"),
        (["--lr", "nan"], "argument --lr: must be a finite number in (0, inf), got nan"),
        (["--lr", "0"], "argument --lr: must be a finite number in (0, inf), got 0"),
        (["--weight-decay=-1e-3"], "argument --weight-decay: must be a finite number in [0, inf)"),
        (["--ema-epochs", "inf"], "argument --ema-epochs: must be a finite number"),
        (["--folds", "0"], "argument --folds: must be at least 1, got 0 (or auto)"),
        (["--folds", "five"], "argument --folds: 'five' is not a whole number (or auto)"),
        (["--max-length", "7"], "argument --max-length: must be at least 8, got 7"),
        (["--max-length", "513"], "argument --max-length: must be at most 512, got 513"),  # past the positions
        (["--seed", "1" * 30], "argument --seed: must be at most"),
        # NumPy's generators take no negative seed, and every seed must fit an int64.
        (["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["--split-seed", "-2"], "argument --split-seed: must be at least 0, got -2"),
        (["--seed", str(1 << 63)], "must be at most 9,223,372,036,854,775,807, got 9,223,372,036,854,775,808"),
        (["--table-pulls", "1"], "'1': must be a finite number in [0, 1)"),
    ],
)
def test_a_training_option_out_of_bounds_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], option: list[str], message: str
) -> None:
    assert main(["train", "--data", "d", "--out", "r", *option]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jeirt-lite: error: ") and err.count("\n") == 1 and message in err, err


def test_the_encoder_names_the_parser_offers_are_the_training_encoders() -> None:
    pytest.importorskip("torch")
    from jeirt_lite_training.config import ENCODER_NAMES
    from jeirt_lite_training.encoders import ENCODERS

    assert tuple(ENCODERS) == ENCODER_NAMES


def test_help_lists_the_column_options_and_the_accepted_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--question-column", "--text-column", "--llm-column", "--correct-column"):
        assert flag in out
    for name in ("question_id", "qid", "prompt", "model_name", "is_correct", "docs/guide/training-data.md"):
        assert name in out


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """One option's help as --help prints it, unwrapped."""
    return " ".join((parser._get_formatter()._get_help_string(action) % vars(action)).split())


def _help_of(parser: argparse.ArgumentParser, flag: str) -> str:
    return _help_text(parser, next(a for a in parser._actions if flag in a.option_strings))


def test_help_explains_every_option_and_states_each_default() -> None:
    from jeirt_lite_training.options import fit_parser

    parser = fit_parser("jeirt-lite train")
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        text = _help_text(parser, action)
        assert action.help, f"{action.option_strings[0]} has no help"
        if action.default is not None and not isinstance(action.default, bool):
            assert "default" in text, f"{action.option_strings[0]}: {text!r} states no default"
    out = " ".join(parser.format_help().split())  # the lines as argparse wraps them, joined
    assert "the adapter's learning rate (AdamW) (default: 0.001)" in out
    assert "(default: 64,128,256)" in out and "(default: 0.3,0.7)" in out and "(default: 2)" in out


def test_help_and_bounds_work_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['pandas'] = None\n"
        "from jeirt_lite.cli import main\n"
        "help_code = main(['train', '--help'])\n"
        "try:\n    main(['train', '--data', 'd', '--out', 'r', '--threads', '0'])\n"
        "except SystemExit as exit:\n    print('bound', exit.code)\n"
        "print('help', help_code, 'torch' in sys.modules and sys.modules['torch'] is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    assert "usage: jeirt-lite train" in done.stdout and "help 0 False" in done.stdout
    assert "argument --threads: must be at least 1" in done.stderr


def test_folds_are_auto_unless_given_and_auto_follows_the_number_of_answers() -> None:
    from jeirt_lite_training.config import AUTO_FOLDS, AUTO_FOLDS_MAX_CELLS
    from jeirt_lite_training.options import AUTO, fit_parser

    parser = fit_parser("fit")
    assert parser.parse_args(["--data", "d", "--out", "r"]).folds == AUTO
    assert parser.parse_args(["--data", "d", "--out", "r", "--folds", " Auto "]).folds == AUTO
    assert parser.parse_args(["--data", "d", "--out", "r", "--folds", "1"]).folds == 1
    pytest.importorskip("torch")
    from jeirt_lite_training.pipeline import auto_folds

    assert AUTO_FOLDS > 1
    assert auto_folds(AUTO_FOLDS_MAX_CELLS) == AUTO_FOLDS and auto_folds(AUTO_FOLDS_MAX_CELLS + 1) == 1


def test_trains_defaults_are_the_documented_recipe_and_help_states_them() -> None:
    from jeirt_lite_training.config import DEFAULT_DIMS, DEFAULT_DROPOUTS, DEFAULT_ENCODER
    from jeirt_lite_training.options import AUTO, DEFAULTS, fit_parser

    parser = fit_parser("jeirt-lite train")
    args = parser.parse_args(["--data", "d", "--out", "r"])
    # Every question learned from, the published split seed, a held-out tenth (what a router's test part is
    # drawn again with first, training.router_split), threads left to the cores this process may use.
    assert (args.holdout, args.split_seed, args.val_fraction, args.threads) == (0.0, 0, 0.1, None)
    assert (args.folds, args.dims, args.dropouts) == (AUTO, list(DEFAULT_DIMS), list(DEFAULT_DROPOUTS))
    assert (args.calibration, args.table_pulls, args.neighbours, args.encoder) == ("global", None, True,
                                                                                     DEFAULT_ENCODER)
    assert (args.lr, args.weight_decay, args.max_epochs, args.seed) == (DEFAULTS.lr, DEFAULTS.weight_decay,
                                                                        DEFAULTS.max_epochs, DEFAULTS.seed)
    widest = parser.parse_args(["--data", "d", "--out", "r", "--seed", str((1 << 63) - 1), "--split-seed", "0"])
    assert (widest.seed, widest.split_seed) == ((1 << 63) - 1, 0)
    assert _help_of(parser, "--threads").endswith("1..256; default: the cores this process may use (its CPU "
                                                  "affinity and its container's CPU limit)")
    assert _help_of(parser, "--holdout").endswith("in [0, 1) (default: 0)")
    assert _help_of(parser, "--split-seed").endswith("--holdout's part) (default: 0)")
    assert _help_of(parser, "--val-fraction").endswith("on a large set) (default: 0.1)")
    # Options whose help says the default already, flags and options whose absence means "not given": no suffix.
    assert _help_of(parser, "--table-pulls").endswith("keeps the distilled table; default 0.1)")
    assert _help_of(parser, "--folds").count("default") == 1
    for flag in ("--no-neighbours", "--label", "--help", "--question-column"):
        assert "(default:" not in _help_of(parser, flag), flag


def test_a_presets_folder_is_shown_as_typed_and_other_paths_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeirt_lite_training.options import fit_parser

    monkeypatch.chdir(tmp_path)
    parser = fit_parser("p", preset={"data": Path.cwd() / "data" / "bank", "out": Path("/elsewhere/router")})
    assert _help_of(parser, "--data").endswith("(default: data/bank)")
    assert _help_of(parser, "--out").endswith("(default: /elsewhere/router)")
    assert parser.parse_args([]).data == tmp_path / "data" / "bank"  # a preset's value is the default
    assert parser.parse_args(["--data", "x"]).data == Path("x")  # and the command line wins


def test_the_column_options_say_which_apply_to_long_tables_only() -> None:
    from jeirt_lite_training.options import fit_parser

    parser = fit_parser("jeirt-lite train")
    assert "(long tables)" in _help_of(parser, "--llm-column") and "(long tables)" in _help_of(parser, "--correct-column")
    assert "(long tables)" not in _help_of(parser, "--question-column") + _help_of(parser, "--text-column")


def test_folds_reach_their_bound_and_table_pulls_may_be_none(capsys: pytest.CaptureFixture[str]) -> None:
    from jeirt_lite_training.options import MAX_FOLDS, fit_parser

    parser = fit_parser("fit")
    base = ["--data", "d", "--out", "r"]
    assert MAX_FOLDS == 100 and parser.parse_args([*base, "--folds", "100"]).folds == 100
    assert main(["train", *base, "--folds", "101"]) == 2
    assert "argument --folds: must be at most 100, got 101 (or auto)" in capsys.readouterr().err
    assert parser.parse_args([*base, "--table-pulls", ""]).table_pulls == []  # '': the distilled table as it is
    assert parser.parse_args([*base, "--table-pulls", "0.1,0.2"]).table_pulls == [0.1, 0.2]


def test_help_shows_an_empty_default_of_table_pulls_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    import jeirt_lite_training.options as options

    monkeypatch.setattr(options, "DEFAULT_TABLE_PULLS", ())  # a recipe that keeps the distilled table
    assert _help_of(options.fit_parser("fit"), "--table-pulls").endswith("keeps the distilled table; default '')")


def test_the_training_module_commands_need_data_and_fit_may_go_without_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from jeirt_lite_training.__main__ import _parser
    from jeirt_lite_training.options import fit_parser

    parser = _parser()
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["fit"])
    assert stopped.value.code == 2
    assert "the following arguments are required: --data" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["sweep", "--data", "d"])  # a laboratory command now: python -m experiments.sweep
    assert "invalid choice: 'sweep' (choose from 'fit', 'embed')" in capsys.readouterr().err
    assert parser.parse_args(["fit", "--data", "d"]).out is None  # train and evaluate only
    fit = parser._subparsers._group_actions[0].choices["fit"]  # type: ignore[union-attr]
    assert _help_of(fit, "--out").endswith("must not exist; its parent folder must); omit to train and evaluate only")
    assert "omit to train" not in _help_of(fit_parser("jeirt-lite train"), "--out")  # train writes a router


@pytest.mark.parametrize(("val", "holdout"), [("0.6", "0.5"), ("0.5", "0.5")])
def test_held_out_parts_that_leave_nothing_to_train_on_are_named_by_their_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, val: str, holdout: str
) -> None:
    pytest.importorskip("torch")
    data = tmp_path / "missing"  # refused before the data is read
    code = main(["train", "--data", str(data), "--out", str(tmp_path / "r"), "--val-fraction", val, "--holdout", holdout])
    assert code == 2  # options that cannot run together
    assert capsys.readouterr().err == (
        f"jeirt-lite: error: --val-fraction {val} and --holdout {holdout} leave no questions to train on: their sum "
        "must be below 1\n"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("folds", 0, "--folds must be >= 1 or auto, got 0"),
        ("dims", [], "--dims and --dropouts need at least one value each"),
        ("dropouts", [], "--dims and --dropouts need at least one value each"),
        ("table_pulls", [1.0], r"--table-pulls must each be in \[0, 1\), got \[1.0\]"),
        ("table_pulls", [-0.1], r"--table-pulls must each be in \[0, 1\), got \[-0.1\]"),
        ("table_pulls", [0.1, 1.5], r"--table-pulls must each be in \[0, 1\), got \[0.1, 1.5\]"),
        ("encoder", "all-MiniLM-L6-v2", "--table-pulls fine-tunes the static encoder's table: it needs --encoder static"),
        ("ema_epochs", float("nan"), "--ema-epochs must be >= 0"),
        ("ema_epochs", -0.5, "--ema-epochs must be >= 0"),
    ],
)
def test_fit_options_recheck_a_namespace_built_in_code(field: str, value: object, message: str) -> None:
    # fit_options is public: a Namespace built in code, not through the parser (whose bounds say the same), is checked.
    from jeirt_lite_training.__main__ import fit_options
    from jeirt_lite_training.options import fit_parser

    args = fit_parser("fit").parse_args(["--data", "d", "--out", "r", "--encoder", "static", "--table-pulls", "0.1"])
    assert fit_options(args)["table_pulls"] == [0.1] and fit_options(args)["folds"] is None
    setattr(args, field, value)
    with pytest.raises(ValueError, match=message):  # a DataError, or an option error for the table pulls
        fit_options(args)
    zero = fit_parser("fit").parse_args(["--data", "d", "--out", "r", "--folds", "1", "--table-pulls", "0",
                                         "--ema-epochs", "0", "--calibration", "none", "--encoder", "static"])
    assert {k: fit_options(zero)[k] for k in ("folds", "table_pulls", "ema_epochs", "calibration")} == {
        "folds": 1, "table_pulls": [0.0], "ema_epochs": 0.0, "calibration": None}
    zero.folds, zero.table_pulls = 5, [0.0, 0.5, 0.99]
    assert (fit_options(zero)["folds"], fit_options(zero)["table_pulls"]) == (5, [0.0, 0.5, 0.99])


def test_the_column_options_become_columns_only_when_one_is_given() -> None:
    from jeirt_lite_training.__main__ import table_columns
    from jeirt_lite_training.data import Columns
    from jeirt_lite_training.options import fit_parser

    parser = fit_parser("fit")
    assert table_columns(parser.parse_args(["--data", "d", "--out", "r"])) is None
    given = table_columns(parser.parse_args(["--data", "d", "--out", "r", "--text-column", "prompt"]))
    assert given == Columns(text="prompt")


def test_a_held_out_tenth_and_a_test_part_that_leave_nothing_to_train_on_are_refused(tmp_path: Path) -> None:
    from jeirt_lite_training.__main__ import prepare_from_options
    from jeirt_lite_training.data import DataError
    from jeirt_lite_training.options import fit_parser

    def prepared(val_fraction: str, holdout: str) -> None:
        prepare_from_options(fit_parser("fit").parse_args(
            ["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "r"), "--val-fraction", val_fraction,
             "--holdout", holdout]))

    with pytest.raises(JeirtError, match=r"^--val-fraction 0.5 and --holdout 0.5 leave no questions to train on"):
        prepared("0.5", "0.5")
    with pytest.raises(JeirtError, match="--val-fraction 0.7 and --holdout 0.4 leave no questions"):
        prepared("0.7", "0.4")
    for val_fraction, holdout in (("0.4", "0.5"), ("0.6", "0.1")):
        with pytest.raises(DataError) as below_one:  # past this check: the missing folder is what is refused
            prepared(val_fraction, holdout)
        assert "leave no questions" not in str(below_one.value) and "missing" in str(below_one.value)


@pytest.mark.parametrize(
    ("test", "calibrated", "votes", "written"),
    [(False, True, False, False), (True, True, False, True), (True, True, True, True), (True, False, False, True)],
)
def test_fits_summary_prints_what_the_run_measured_and_wrote(
    tmp_path: Path, test: bool, calibrated: bool, votes: bool, written: bool
) -> None:
    from types import SimpleNamespace

    from jeirt_lite_training.__main__ import fit_summary

    def metrics(auc: float) -> dict[str, float]:
        return {"auc": auc, "log_loss": 0.5, "accuracy": 0.7, "ece": 0.01}

    folder = tmp_path / "router"
    folder.mkdir()
    (folder / "table").write_bytes(b"x" * 1_500_000)
    predictor = SimpleNamespace(config=SimpleNamespace(dim=64, dropout=0.3), schedule=[1e-3] * 7, train_seconds=12.4)
    result = SimpleNamespace(
        predictor=predictor, val=metrics(0.71), test=metrics(0.72) if test else {}, floor_test=metrics(0.6),
        floor_benchmark_test=metrics(0.65) if votes else {},  # several benchmarks or one: both ways
        votes=object() if votes else None, router_path=folder if written else None, parity=2.5e-7 if written else None,
        extra={"selection": {"refit_on": {"questions": 900}}, "heldout": {"per_llm_accuracy_baseline": metrics(0.55)},
               "calibration": {"kind": "global"} if calibrated else None, "test_uncalibrated": metrics(0.73)},
    )
    lines = fit_summary(result).splitlines()  # type: ignore[arg-type]
    assert lines[:4] == [
        "",
        "JE-IRT d=64 dropout=0.3 (chosen on held-out data), trained on 900 questions for 7 epochs in 12s",
        "  held out                 AUC 0.710  log-loss 0.500  accuracy 0.700  ECE 0.010",
        "  held out, per-LLM floor  AUC 0.550  log-loss 0.500  accuracy 0.700  ECE 0.010",
    ]
    want = []
    if test:
        want.append("  test (untouched)         AUC 0.720  log-loss 0.500  accuracy 0.700  ECE 0.010")
        if calibrated and not votes:  # with votes the map is part of the blend: no router without it to report
            want.append("  test, before calibration AUC 0.730  log-loss 0.500  accuracy 0.700  ECE 0.010")
        want.append("  test, per-LLM floor      AUC 0.600  log-loss 0.500  accuracy 0.700  ECE 0.010")
        if votes:
            want.append("  test, benchmark floor    AUC 0.650  log-loss 0.500  accuracy 0.700  ECE 0.010")
    if written:
        want.append(f"  router: {folder} (1.5 MB), ONNX parity max abs diff 2.50e-07")
    assert lines[4:] == want


@pytest.mark.parametrize("given, cores, expected", [(None, 3, 3), (None, 1, 1), (2, 5, 2)])
def test_train_threads_default_to_the_cores_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch, given: int | None, cores: int, expected: int
) -> None:
    # The runtime's commands size their pools by the cores they may use (affinity, a container's CPU limit); train's
    # torch threads follow the same rule where --threads is not given, and --threads wins where it is.
    import jeirt_lite._router_tables as router_tables
    import torch
    from jeirt_lite_training.__main__ import _set_threads

    monkeypatch.setattr(router_tables, "usable_cores", lambda: cores)
    before = torch.get_num_threads()
    try:
        _set_threads(argparse.Namespace(threads=given))
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(before)
