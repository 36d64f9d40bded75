"""`python -m jeirt_lite_training fit` as rows of experiments.compare: fit's own parser and defaults (jeirt_lite_training.__main__), fit's
own checks and choose-then-refit code (`fit_options`, jeirt_lite_training.pipeline.choose_refit_and_export), run on the
comparison's split. Nothing of fit's recipe is restated here, so a change to fit's defaults reaches the comparison.

`FitRun` on split seed S is what `python -m jeirt_lite_training fit --data DIR --holdout 0.2 --split-seed S --seed S` does:
settings and schedule chosen on the validation part, the model refitted on training + validation, the calibration
fitted on the held-out predictions, then scored on the test part it never saw. Its test predictions come from the
router's own encoder (frozen transformer, or a static table, fine-tuned or not), whatever embeddings the comparison
gives the baselines.

`FitHeldOutRun` is the same run without the refit: the chosen setting as it was trained on the training part only
(early-stopped on validation, no calibration): the "tuned" row, at no extra cost.

`FitVoteSpaceRun` is the same router with the votes of one search space, the short one or the features, whatever
fit's rule picks (the vote-space ablation; the choice and the refit come before the votes, so again at no extra
training cost; both spaces are tuned once per fit run, `FitRun.vote_spaces`).

`FitWithoutVotesRun` is the same router without its neighbour votes: what `fit --no-neighbours` writes on the same
split (the choice and the refit come before the votes and do not depend on them; the calibration is refitted on the
held-out logits without them), a paired ablation at no extra cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jeirt_lite_training.types import Dataset, Responses

FIT_NAME = "JE-IRT fit"
WITHOUT_VOTES_SUFFIX = "without neighbour votes"
HELDOUT_NAME = "JE-IRT tuned (fit's choice, training part only)"
VOTE_SPACES = {"short": "votes on the short space", "features": "votes on the features"}


def fit_arguments(split_seed: int, test_fraction: float, threads: int, extra: Sequence[str] = ()) -> Any:
    """fit's parsed options for one comparison split: its defaults, then `extra` (e.g. --encoder static), then the
    split (the comparison's test part becomes fit's --holdout) and the seeds."""
    from jeirt_lite_training.__main__ import fit_parser

    parser = fit_parser("python -m jeirt_lite_training fit", preset={"data": None, "out": None})
    return parser.parse_args([*extra, "--holdout", str(test_fraction), "--split-seed", str(split_seed),
                              "--seed", str(split_seed), "--threads", str(threads)])


def fit_folds(data: Dataset, split_seed: int, test_fraction: float) -> Callable[[Responses, Responses], list[Any]]:
    """For a baseline's choice: the folds `fit --folds auto` chooses on for this comparison split (the same questions
    in the same folds: fit's rule and fit's make_folds over the split's training and validation questions), as
    (train, validation) cell pairs; none where fit chooses on its one validation part."""
    from jeirt_lite_training.pipeline import auto_fold_parts, cells_of
    from jeirt_lite_training.splits import make_split

    def folds_of(train: Responses, val: Responses) -> list[Any]:
        split = make_split(data, seed=split_seed, test_fraction=test_fraction)
        pool = np.sort(np.concatenate([split.train, split.val]))
        if len(cells_of(data, pool)) != len(train) + len(val):
            raise ValueError("the cells given are not this split's training and validation cells")
        return auto_fold_parts(data, pool, len(train) + len(val), seed=split_seed)[1]

    return folds_of


class FitRun:
    """A Predictor for experiments.compare that runs fit (see the module's docstring)."""

    def __init__(self, data: Dataset, split_seed: int, *, test_fraction: float, threads: int,
                 extra: Sequence[str] = (), log: Callable[[str], None] = lambda _: None) -> None:
        self.data, self.split_seed, self.test_fraction = data, split_seed, test_fraction
        self.threads, self.extra, self.log = threads, tuple(extra), log
        self.name = " ".join([FIT_NAME, *self.extra])
        self.result: Any = None
        self.prep: Any = None
        self.selection: dict[str, Any] = {}
        self.calibration: dict[str, Any] | None = None
        self.config: Any = None
        self.options: dict[str, Any] = {}
        self.fitted_on: tuple[Responses, Responses] | None = None
        self._vote_spaces: tuple[Any, Any, dict[str, Any]] | None = None

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> FitRun:
        """Run fit on the split, unless it has already run on these very cells (its held-out row asked first)."""
        from jeirt_lite_training.__main__ import fit_options
        from jeirt_lite_training.pipeline import choose_refit_and_export
        from jeirt_lite_training.prepared import prepare_split
        from jeirt_lite_training.splits import make_split

        if self.fitted_on is not None and self.fitted_on[0] is train and self.fitted_on[1] is val:
            return self

        args = fit_arguments(self.split_seed, self.test_fraction, self.threads, self.extra)
        options = fit_options(args)
        split = make_split(self.data, seed=args.split_seed, val_fraction=args.val_fraction,
                           test_fraction=args.holdout)
        prep = prepare_split(self.data, split, split_seed=args.split_seed, encoder=args.encoder,
                             max_length=args.max_length, progress=False, source=self.data.name)
        _check_same_questions(prep, train, val, n_llms)
        self.prep, self.options = prep, options
        self.result = choose_refit_and_export(prep, None, log=self.log, progress=False, **options)
        self.selection = self.result.extra["selection"]
        self.calibration = self.result.extra["calibration"]
        self.config = self.result.predictor.config
        self.fitted_on = (train, val)
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        if self.result is None:
            raise RuntimeError("fit first")
        return _calibrated(self.result.logits(question, llm), llm, self.calibration)

    def vote_spaces(self) -> tuple[Any, Any, dict[str, Any]]:
        """(the short spaces' vote, the features' vote, the record of their paired difference), each tuned, weighed
        and put to the keep rule on the held-out part exactly as fit does before it picks a space; computed once."""
        if self._vote_spaces is None:
            from jeirt_lite_training.neighbour_blend import space_difference, vote_candidates

            if self.result is None:
                raise RuntimeError("fit first")
            if self.selection.get("folds", 1) != 1:  # as fit resolved it (`--folds auto` follows the data's size)
                raise ValueError("the vote-space rows restate fit's single held-out part; run them without --folds")
            selection = self.result.selection
            features = selection.heldout_embeddings or self.prep.embeddings  # what fit's held-out votes compare
            short, full = vote_candidates(features, [(self.prep.train, self.prep.val)], self.data.n_llms,
                                          selection.heldout, selection.heldout_logits)
            difference, error = space_difference(short, full, selection.heldout, selection.heldout_logits)
            self._vote_spaces = (short, full, {"short": short.outcome(), "features": full.outcome(),
                                               "difference": difference, "standard_error": error})
        return self._vote_spaces


class FitHeldOutRun:
    """The chosen setting's held-out run of a FitRun (trained on the training part, early-stopped on validation,
    the frozen encoder; no refit, no calibration). Fits the FitRun first if it has not run on these cells."""

    name = HELDOUT_NAME

    def __init__(self, run: FitRun) -> None:
        self.run = run
        self.config: Any = None

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> FitHeldOutRun:
        self.run.fit(embeddings, train, val, n_llms)
        if self.run.selection.get("folds", 1) != 1:
            raise ValueError(f"the held-out row is the run of fit's one held-out part, but fit chose on "
                             f"{self.run.selection['folds']} folds here (--folds auto on a small set): run the "
                             "comparison with --fit-args '--folds 1'")
        self.config = self.run.result.selection.predictors[0].config
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        if self.run.result is None:
            raise RuntimeError("fit first")
        held_out = self.run.result.selection.predictors[0]
        return np.asarray(held_out.predict_proba(self.run.prep.embeddings, question, llm))


class FitWithoutVotesRun:
    """A FitRun's router without its neighbour votes (see the module's docstring). Fits the FitRun first if it has
    not run on these cells."""

    def __init__(self, run: FitRun) -> None:
        self.run = run
        self.name = f"{run.name}, {WITHOUT_VOTES_SUFFIX}"
        self.config: Any = None
        self.calibration: dict[str, Any] | None = None

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> FitWithoutVotesRun:
        from jeirt_lite_training.pipeline import heldout_calibration

        self.run.fit(embeddings, train, val, n_llms)
        self.config = self.run.config
        selection = self.run.result.selection
        self.calibration = heldout_calibration(selection, selection.heldout_logits, n_llms,
                                               self.run.options["calibration"])
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        if self.run.result is None:
            raise RuntimeError("fit first")
        return _calibrated(self.run.result.logits(question, llm, votes=False), llm, self.calibration)


class FitVoteSpaceRun:
    """A FitRun's router with the neighbour votes of one search space (`space`: "short", the best of the short
    spaces; "features", the features themselves), each tuned, weighed and kept or dropped on the held-out parts
    exactly as fit does before it picks a space (neighbour_blend.vote_candidates); fit's own row is the one its rule
    picks. Fits the FitRun first if it has not run on these cells. Its record (`space_choice`) holds both spaces'
    cross-fitted held-out log-loss and the standard error of their paired difference over held-out questions."""

    def __init__(self, run: FitRun, space: str) -> None:
        if space not in VOTE_SPACES:
            raise ValueError(f"space must be one of {', '.join(VOTE_SPACES)}, got {space!r}")
        self.run, self.space = run, space
        self.name = f"{run.name} ({VOTE_SPACES[space]})"
        self.config: Any = None
        self.calibration: dict[str, Any] | None = None
        self.candidates: dict[str, Any] = {}
        self.result: Any = None

    def fit(self, embeddings: np.ndarray, train: Responses, val: Responses, n_llms: int) -> FitVoteSpaceRun:
        from dataclasses import replace

        from jeirt_lite_training.neighbour_blend import neighbour_votes
        from jeirt_lite_training.pipeline import cells_of, heldout_calibration

        run = self.run.fit(embeddings, train, val, n_llms)
        prep, selection = run.prep, run.result.selection
        short, full, space_choice = run.vote_spaces()
        self.candidates = {"space_choice": space_choice}
        choice = short if self.space == "short" else full
        heldout, votes = selection.heldout_logits, None
        if choice.kept:
            pool = np.concatenate([prep.split.train, prep.split.val])
            votes = neighbour_votes(run.result.embeddings, cells_of(prep.data, pool), prep.data.llm_names, choice)
            heldout = heldout + choice.weight * choice.heldout_vote_logits
        self.candidates["votes"] = choice.record()
        self.result = replace(run.result, votes=votes)
        self.config = run.config
        self.calibration = heldout_calibration(selection, heldout, n_llms, run.options["calibration"])
        return self

    def predict_proba(self, embeddings: np.ndarray, question: np.ndarray, llm: np.ndarray) -> np.ndarray:
        if self.result is None:
            raise RuntimeError("fit first")
        return _calibrated(self.result.logits(question, llm), llm, self.calibration)


def _calibrated(logits: np.ndarray, llm: np.ndarray, calibration: dict[str, Any] | None) -> np.ndarray:
    from jeirt_lite_training.calibration import apply_calibration

    if calibration is None:
        return np.asarray(1.0 / (1.0 + np.exp(-logits)))
    return np.asarray(apply_calibration(logits, llm, calibration))


def _check_same_questions(prep: Any, train: Responses, val: Responses, n_llms: int) -> None:
    """fit must learn from exactly the comparison's training + validation questions (and so never from its test
    part): otherwise its row would not be comparable, or worse, would have seen test questions."""
    ours = np.unique(np.concatenate([prep.train.question, prep.val.question]))
    theirs = np.unique(np.concatenate([train.question, val.question]))
    if prep.data.n_llms != n_llms or not np.array_equal(ours, theirs):
        raise ValueError("fit's split differs from the comparison's: the fit rows need the same test part "
                         "(fit's --holdout and --val-fraction against the comparison's split)")
