"""One JE-IRT router end to end, the same way for every encoder kind: train on a prepared dataset
(jeirt_lite_training.prepared), evaluate, write the router (jeirt_lite_training.router_writer).

`choose_refit_and_export` is what `python -m jeirt_lite_training fit` does (see jeirt_lite_training.choose); `fit_and_export` trains one
fixed setting on the training part (the published experiments and build_variants use it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._runtime import all_metrics, counted, refuse_existing, stderr_is_terminal
from .calibration import apply_calibration, fit_calibration, store_calibration
from .choose import DEFAULT_DIMS, DEFAULT_DROPOUTS, Selection, choose, refit, selection_record
from .config import AUTO_FOLDS, AUTO_FOLDS_MAX_CELLS
from .coverage import benchmark_floor_p
from .fit import llm_accuracies
from .model import JeirtPredictor
from .prepared import Prepared, check_validation_part
from .router_writer import export_trained, training_summary
from .splits import make_folds
from .staging import staged_router
from .types import Dataset, Responses

if TYPE_CHECKING:
    from ._runtime import NeighbourVotes
    from .static_finetune import TableChoice


def evaluate(predictor: Any, prep: Prepared, part: str) -> dict[str, float]:
    cells: Responses = getattr(prep, part)
    p = predictor.predict_proba(prep.embeddings, cells.question, cells.llm)
    return all_metrics(cells.correct, p)


def per_llm_accuracy_floor(prep: Prepared, part: str) -> dict[str, float]:
    """The floor to beat: P(correct) = the LLM's smoothed training accuracy, whatever the question."""
    cells: Responses = getattr(prep, part)
    acc = llm_accuracies(prep.train, prep.data.n_llms)
    return all_metrics(cells.correct, acc[cells.llm])


@dataclass
class FitResult:
    predictor: JeirtPredictor
    val: dict[str, float]
    test: dict[str, float]
    floor_test: dict[str, float]
    floor_benchmark_test: dict[str, float] = field(default_factory=dict)  # each LLM's accuracy per benchmark
    router_path: Path | None = None
    parity: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    selection: Selection | None = None  # choose_refit_and_export: the held-out runs the settings were chosen on
    embeddings: np.ndarray | None = None  # what `predictor` reads (a fine-tuned static table changes them)
    votes: NeighbourVotes | None = None  # choose_refit_and_export: the router's neighbour votes, if kept

    def logits(self, question: np.ndarray, llm: np.ndarray, votes: bool = True) -> np.ndarray:
        """The written router's logit for each cell before calibration: the geometry plus the neighbour vote
        (votes=False: the geometry alone)."""
        assert self.embeddings is not None
        logits = self.predictor.predict_logits(self.embeddings, question, llm)
        if self.votes is None or not votes:
            return logits
        asked, rows = np.unique(question, return_inverse=True)
        offsets = self.votes.offsets(self.embeddings[asked], self.votes.llms, len(asked))
        return np.asarray(logits + offsets[rows, llm], dtype=np.float64)


def fit_and_export(
    prep: Prepared,
    out_dir: Path | None,
    *,
    label: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    **hyper: Any,
) -> FitResult:
    """One fixed setting trained on the training part, early-stopped on validation, scored on the test part (an
    existing `out_dir` without `overwrite` refused first)."""
    if out_dir is not None:
        refuse_existing(out_dir, overwrite)
    predictor = JeirtPredictor(**hyper).fit(
        prep.embeddings, prep.train, prep.val, prep.data.n_llms, progress=progress
    )
    result = FitResult(
        predictor=predictor,
        val=evaluate(predictor, prep, "val"),
        test=evaluate(predictor, prep, "test") if len(prep.test) else {},
        floor_test=per_llm_accuracy_floor(prep, "test") if len(prep.test) else {},
    )
    if out_dir is not None:
        metrics = {"test": result.test, "val": result.val, "test_per_llm_accuracy_baseline": result.floor_test}
        with staged_router(out_dir, overwrite=overwrite) as staged:
            _, result.parity = export_trained(
                prep, predictor, staged, metrics=metrics, training=training_summary(prep, predictor),
                reference_parts=(prep.split.train, prep.split.val), learned_from=prep.split.train, label=label,
            )
        result.router_path = Path(out_dir)
    return result


def choose_refit_and_export(
    prep: Prepared,
    out_dir: Path | None,
    *,
    folds: int | None = None,
    dims: Sequence[int] = DEFAULT_DIMS,
    dropouts: Sequence[float] = DEFAULT_DROPOUTS,
    calibration: str | None = "global",
    costs: Callable[[list[str]], dict[str, float]] | None = None,
    label: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    log: Callable[[str], None] = print,
    table_pulls: Sequence[float] = (),
    neighbours: bool = True,
    **hyper: Any,
) -> FitResult:
    """Choose the settings on held-out parts of the non-test questions, refit on all of them (jeirt_lite_training.choose),
    fit the calibration (`calibration`: its kind, or None) on the chosen setting's held-out predictions, write the
    router with it and with `costs(llm names)` when given. Every router this project ships or `fit` writes, of
    any encoder kind, is made here. An existing `out_dir` without `overwrite` is refused before anything is trained.

    table_pulls (static encoder only): candidate pulls for fine-tuning the token table end to end, chosen on the
    same held-out parts against the frozen table (jeirt_lite_training.static_finetune); empty: the distilled table stays.

    neighbours: weigh the training questions' answers into the router as neighbour votes, kept only when the
    held-out parts say they help (jeirt_lite_training.neighbour_blend); False: the joint geometry alone.

    folds: K > 1 chooses by K-fold cross-validation over the training and validation questions, 1 on the validation
    part; None (fit's default): `auto_folds` of their answers."""
    if out_dir is not None:
        refuse_existing(out_dir, overwrite)
    pool = np.sort(np.concatenate([prep.split.train, prep.split.val]))
    folds, parts = _choice_parts(prep, pool, folds, log)
    log(f"choosing d x dropout on {f'{folds} folds' if folds > 1 else 'a held-out part'} ...")
    selection = choose(prep.embeddings, parts, prep.data.n_llms, dims=dims, dropouts=dropouts, log=log, **hyper)
    all_cells = cells_of(prep.data, pool)
    answered = np.unique(all_cells.question)  # the pool's questions with answers (the others' texts teach a static table)
    frozen = prep.embeddings  # what the held-out runs read (the router's table below changes prep's)
    prep, predictor, table_choice = _refit(prep, pool, parts, selection, all_cells, len(answered), table_pulls, log,
                                           progress)
    heldout = selection.heldout_metrics()
    result = FitResult(predictor=predictor, val=heldout.get("jeirt", {}), test={}, floor_test={},
                       selection=selection, embeddings=prep.embeddings)
    heldout_logits, vote_record = _neighbour_votes(prep, frozen, parts, all_cells, selection, result, neighbours,
                                                   calibration is not None, log)
    fitted = heldout_calibration(selection, heldout_logits, prep.data.n_llms, calibration)
    raw_test = _score_test_part(prep, all_cells, result, fitted)
    record = selection_record(selection, folds=folds, n_questions=len(answered), n_cells=len(all_cells))
    record.update(_table_and_votes_record(prep, table_choice, vote_record))
    result.extra = {"selection": record, "heldout": heldout, "calibration": fitted, "test_uncalibrated": raw_test}
    if out_dir is not None:
        _write_router(out_dir, prep, result, record, fitted, costs, answered, label, overwrite)
    return result


def _choice_parts(
    prep: Prepared, pool: np.ndarray, folds: int | None, log: Callable[[str], None]
) -> tuple[int, list[tuple[Responses, Responses]]]:
    """The folds (None: `auto_fold_parts`) and the (training, held-out) parts the settings are chosen on: the
    validation part for 1, else the folds of `pool`. A validation part without answers is refused (a Prepared not made
    by `prepare`)."""
    check_validation_part(prep.data, prep.split, prep.split_seed)  # the alignment threshold reads it too
    if folds is None:
        n_cells = len(prep.train) + len(prep.val)
        folds, parts = auto_fold_parts(prep.data, pool, n_cells, seed=prep.split_seed)
        if folds < auto_folds(n_cells):  # what the error of `--folds K` would have advised
            how = f"{folds} folds" if folds > 1 else "a held-out part"
            log(f"--folds auto: choosing on {how}, not {auto_folds(n_cells)} folds, which would leave a fold without an "
                f"answered question ({_too_few(prep.data, pool)})")
        if folds > 1:
            return folds, parts
    if folds == 1:
        return folds, [(prep.train, prep.val)]
    return folds, fold_parts(prep.data, pool, folds, seed=prep.split_seed)


def _refit(
    prep: Prepared, pool: np.ndarray, parts: Sequence[tuple[Responses, Responses]], selection: Selection,
    all_cells: Responses, n_answered: int, table_pulls: Sequence[float], log: Callable[[str], None], progress: bool,
) -> tuple[Prepared, JeirtPredictor, TableChoice | None]:
    """The chosen setting refitted on every answer of `pool`, on the router's own table: fine-tuned end to end when
    the held-out parts chose one of `table_pulls` (a static encoder only), else as distilled. Returns the prep the
    router reads, the predictor and the table's choice (None when no pull was tried)."""
    table_choice = None
    if prep.static is not None and len(table_pulls):
        from .static_finetune import choose_table_pull
        table_choice = choose_table_pull(prep, parts, selection, table_pulls, log=log)
    prep = _table_for_router(prep, pool, log)
    if table_choice is not None and table_choice.pull is not None:
        from .static_finetune import refit_fine_tuned

        prep, predictor = refit_fine_tuned(prep, all_cells, selection, table_choice, log=log, progress=progress)
    else:
        log(f"refitting d={selection.hyper['dim']} dropout={selection.hyper['dropout']} on all {n_answered} "
            f"questions for {counted(len(selection.schedule), 'epoch')} ...")
        predictor = refit(prep.embeddings, all_cells, prep.data.n_llms, selection, progress=progress)
    return prep, predictor, table_choice


def _score_test_part(
    prep: Prepared, all_cells: Responses, result: FitResult, fitted: dict[str, Any] | None
) -> dict[str, float]:
    """The written router on the test part: result.test (calibrated by `fitted` when there is one) and the floors
    to beat (each LLM's accuracy, and per benchmark where the data has benchmarks); returns the metrics before the
    calibration ({} without a test part)."""
    if not len(prep.test):
        return {}
    acc = llm_accuracies(all_cells, prep.data.n_llms)
    logits = result.logits(prep.test.question, prep.test.llm)
    raw_test: dict[str, float] = all_metrics(prep.test.correct, 1.0 / (1.0 + np.exp(-logits)))
    result.test = raw_test if fitted is None else all_metrics(
        prep.test.correct, apply_calibration(logits, prep.test.llm, fitted))
    result.floor_test = all_metrics(prep.test.correct, acc[prep.test.llm])
    by_benchmark = benchmark_floor_p(prep.data, all_cells, prep.test)
    if by_benchmark is not None:
        result.floor_benchmark_test = all_metrics(prep.test.correct, by_benchmark)
    return raw_test


def _table_and_votes_record(
    prep: Prepared, table_choice: TableChoice | None, vote_record: dict[str, Any]
) -> dict[str, Any]:
    """The selection record's entries past the settings: the static table's choice and the texts it was fitted to,
    and the neighbour votes."""
    record: dict[str, Any] = {}
    if table_choice is not None:
        record["static_table"] = table_choice.record()
    if prep.table_fitted_to is not None:
        record["static_table_texts"] = {"choices": len(prep.split.train), "router": len(prep.table_fitted_to)}
    record["neighbours"] = vote_record
    return record


def _write_router(
    out_dir: Path, prep: Prepared, result: FitResult, record: dict[str, Any], fitted: dict[str, Any] | None,
    costs: Callable[[list[str]], dict[str, float]] | None, answered: np.ndarray, label: str | None, overwrite: bool,
) -> None:
    """The router into `out_dir`, staged then moved into place: the refitted predictor with the selection record in
    its training summary, its metrics, and its calibration, costs and neighbour votes when it has any."""
    training = training_summary(prep, result.predictor)
    training["selection"] = record
    with staged_router(out_dir, overwrite=overwrite) as staged:
        _, result.parity = export_trained(
            prep, result.predictor, staged, metrics=_metrics_record(prep, result, fitted is not None),
            training=training, reference_parts=(prep.split.train, prep.split.val), learned_from=answered, label=label,
        )
        if fitted is not None or costs is not None or result.votes is not None:
            store_calibration(staged, fitted, costs(list(prep.data.llm_names)) if costs else None,
                              neighbours=result.votes)
    result.router_path = Path(out_dir)


def auto_folds(n_cells: int) -> int:
    """`--folds auto`: AUTO_FOLDS folds for at most AUTO_FOLDS_MAX_CELLS answers to learn from, else 1."""
    return AUTO_FOLDS if n_cells <= AUTO_FOLDS_MAX_CELLS else 1


def auto_fold_parts(
    data: Dataset, pool: np.ndarray, n_cells: int, seed: int
) -> tuple[int, list[tuple[Responses, Responses]]]:
    """`--folds auto`: `auto_folds` of the `n_cells` answers learned from, or, where the questions of `pool` are too
    few to give each of that many folds an answered one, the most folds that are not; 1 (no parts: the validation part
    is chosen on) where no two are. The folds and their parts (`fold_parts`)."""
    for k in range(auto_folds(n_cells), 1, -1):
        parts = _parts_of_folds(data, pool, k, seed)
        if _empty_fold(parts) is None:
            return k, parts
    return 1, []


def fold_parts(data: Dataset, pool: np.ndarray, k: int, seed: int) -> list[tuple[Responses, Responses]]:
    """The (train, validation) cells of each of k folds of the questions `pool` (splits.make_folds: grouped by text,
    stratified by subject), each fold held out once; a fold without an answered question is refused (`--folds k`)."""
    parts = _parts_of_folds(data, pool, k, seed)
    empty = _empty_fold(parts)
    if empty is not None:  # folds are dealt within each subject, so one is empty long before k reaches the questions
        raise ValueError(f"--folds {k} leaves fold {empty + 1} without an answered question ({_too_few(data, pool)}); "
                         "give fewer folds")
    return parts


def _parts_of_folds(data: Dataset, pool: np.ndarray, k: int, seed: int) -> list[tuple[Responses, Responses]]:
    questions = make_folds(data, pool, k, seed=seed)
    return [(cells_of(data, np.concatenate(questions[:j] + questions[j + 1 :])), cells_of(data, questions[j]))
            for j in range(k)]


def _empty_fold(parts: Sequence[tuple[Responses, Responses]]) -> int | None:
    return next((j for j, (_, held_out) in enumerate(parts) if len(held_out.question) == 0), None)


def _too_few(data: Dataset, pool: np.ndarray) -> str:
    return f"{len(pool)} questions, dealt within each of their subjects ({len(set(np.asarray(data.subjects)[pool]))})"


def _table_for_router(prep: Prepared, pool: np.ndarray, log: Callable[[str], None]) -> Prepared:
    """prep with its sentence-fitted table fitted again to the texts of `pool` (training and validation) when it read
    fewer: the choices read the training texts' table, as unseen text; the router reads them all, as every answer."""
    if prep.table_fitted_to is None or len(prep.table_fitted_to) == len(pool):
        return prep
    from .static_router import static_embeddings

    log(f"fitting the static table again, to the {len(pool)} training and validation texts ...")
    static, emb = static_embeddings(prep.data, pool, prep.max_length, prep.teacher, fit_sentences=True,
                                    log=log if stderr_is_terminal() else _quiet, fit_on=pool)  # epochs: progress
    return replace(prep, static=static, embeddings=emb, table_fitted_to=pool)


def _neighbour_votes(
    prep: Prepared, frozen: np.ndarray, parts: Sequence[tuple[Responses, Responses]], all_cells: Responses,
    selection: Selection, result: FitResult, wanted: bool, calibrated: bool, log: Callable[[str], None],
) -> tuple[np.ndarray, dict[str, Any]]:
    """Choose the neighbour votes on the held-out parts (jeirt_lite_training.neighbour_blend); when kept, set result.votes
    (every question learned from, with the router's own features). Returns the held-out logits the calibration is
    fitted on (with the votes when kept) and the record for router.json, which says why when there are none."""
    from .neighbour_blend import MAX_STORED_QUESTIONS, choose_neighbour_votes, neighbour_votes

    assert selection.heldout is not None and selection.heldout_logits is not None
    if not wanted:
        return selection.heldout_logits, {"kept": False, "why": "--no-neighbours"}
    if not calibrated:
        # The votes' weight is fitted beside the logit's own coefficient (a·logit + c·vote, weight c/a), which only
        # the calibration applies: without it they would be 1/a times too strong (28x on a small run).
        log("neighbour votes: left out (--calibration none: their weight needs the calibration)")
        return selection.heldout_logits, {"kept": False, "why": "--calibration none: the votes' weight is fitted "
                                          "beside the logit's scale, which only the calibration applies"}
    n_questions = len(np.unique(all_cells.question))
    if n_questions > MAX_STORED_QUESTIONS:
        log(f"neighbour votes: left out ({n_questions} questions, more than {MAX_STORED_QUESTIONS} to store)")
        return selection.heldout_logits, {"kept": False, "why": f"{n_questions} questions learned from, more than "
                                          f"the {MAX_STORED_QUESTIONS} a router stores for votes"}
    features = selection.heldout_embeddings or frozen
    choice = choose_neighbour_votes(features, parts, prep.data.n_llms, selection.heldout, selection.heldout_logits)
    log(choice.describe())
    if not choice.kept:
        return selection.heldout_logits, choice.record()
    assert result.embeddings is not None
    result.votes = neighbour_votes(result.embeddings, all_cells, prep.data.llm_names, choice)
    return selection.heldout_logits + choice.weight * choice.heldout_vote_logits, choice.record()


def heldout_calibration(
    selection: Selection, logits: np.ndarray, n_llms: int, kind: str | None
) -> dict[str, Any] | None:
    """The calibration fitted on the chosen setting's held-out `logits` (cells its runs did not train on)."""
    if kind is None:
        return None
    assert selection.heldout is not None
    return fit_calibration(logits, selection.heldout.correct, selection.heldout.llm, n_llms, kind)


def _metrics_record(prep: Prepared, result: FitResult, calibrated: bool) -> dict[str, Any]:
    """router.json's metrics, with a sentence on how each was obtained."""
    how = (
        "heldout: the chosen setting's validation predictions (out of fold with --folds > 1), from runs that did "
        "not train on those questions, before calibration; the setting was chosen on them, so slightly "
        "optimistic. "
        + ("The calibration was fitted on the same held-out predictions. " if calibrated else "No calibration. ")
        + (("The neighbour votes (training.selection.neighbours) were chosen on them too and are not in heldout"
            + ("; test has them. " if len(prep.test) else ". ")) if result.votes is not None else "")
        + (f"test: the written router{' (calibrated)' if calibrated else ''} on {len(prep.split.test)} questions "
           "kept out of everything (--holdout); test_uncalibrated: the same without the calibration"
           + (" (the calibration was fitted on logit + weight * vote, so without it the votes are not scaled as "
              "chosen: not a model to use)." if result.votes is not None else ".")
           if len(prep.test) else "No test part (--holdout 0): every question was learned from.")
    )
    heldout = result.extra["heldout"]
    return {
        "how": how,
        "heldout": heldout.get("jeirt"),
        "heldout_per_llm_accuracy_baseline": heldout.get("per_llm_accuracy_baseline"),
        "test": result.test or None,
        "test_uncalibrated": result.extra["test_uncalibrated"] or None,
        "test_per_llm_accuracy_baseline": result.floor_test or None,
        **({"test_per_llm_benchmark_accuracy_baseline": result.floor_benchmark_test}
           if result.floor_benchmark_test else {}),
    }


def cells_of(data: Dataset, questions: np.ndarray) -> Responses:
    return data.responses.subset(np.isin(data.responses.question, questions))


def _quiet(_: str) -> None:
    pass
