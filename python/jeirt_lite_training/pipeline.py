"""One JE-IRT router end to end, the same way for every encoder kind: load data, split, embed (a cached frozen
transformer, or a static token table distilled from it), train, evaluate, export.

`choose_refit_and_export` is what `python -m jeirt_lite_training fit` does (see jeirt_lite_training.choose); `fit_and_export` trains one
fixed setting on the training part (the published experiments and build_variants use it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .calibration import apply_calibration, fit_calibration, store_calibration
from .choose import DEFAULT_DIMS, DEFAULT_DROPOUTS, Selection, choose, refit, selection_record
from .config import FIT_SENTENCES
from .config import STATIC as STATIC  # the encoder choice: a distilled token table (static_encoder.py)
from .data import Columns, load_dataset
from .embeddings import embed_dataset
from .encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH, get_spec
from .fit import llm_accuracies
from .metrics import all_metrics
from .model import JeirtPredictor
from .splits import make_folds, make_split
from .types import Dataset, Responses, Split

if TYPE_CHECKING:
    from ._runtime import NeighbourVotes


@dataclass
class Prepared:
    """A dataset with its split, cells per part and frozen embeddings: everything a fit needs."""

    data: Dataset
    split: Split
    split_seed: int
    train: Responses
    val: Responses
    test: Responses
    embeddings: np.ndarray
    encoder: str
    max_length: int
    source: str = ""
    static: Any = None  # jeirt_lite_training.static_encoder.StaticTable when the encoder is the static one
    # A table fitted to the teacher's sentence embeddings: the questions whose texts it read (None: any other table)
    table_fitted_to: np.ndarray | None = None
    teacher: str = DEFAULT_ENCODER


def _quiet(_: str) -> None:
    pass


def prepare(
    data_dir: Path | str,
    *,
    split_seed: int = 0,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    encoder: str = DEFAULT_ENCODER,
    max_length: int = DEFAULT_MAX_LENGTH,
    progress: bool = True,
    teacher: str = DEFAULT_ENCODER,
    columns: Columns | None = None,
    fit_sentences: bool = FIT_SENTENCES,
) -> Prepared:
    """Load, split (test = the untouched part), embed. encoder STATIC distils the token table from `teacher` over
    the default transformer's vocabulary, its token frequencies read from the texts of the training and validation
    parts (never the test part); or (fit_sentences) fits it to the teacher's sentence embeddings of the training
    part's texts, its token frequencies read from those alone (static_sentences); and reads up to STATIC_MAX_LENGTH
    tokens (`max_length` applies to transformers)."""
    data = load_dataset(data_dir, columns=columns)
    split = make_split(data, seed=split_seed, val_fraction=val_fraction, test_fraction=test_fraction)
    return prepare_split(data, split, split_seed=split_seed, encoder=encoder, max_length=max_length,
                         progress=progress, source=str(data_dir), teacher=teacher, fit_sentences=fit_sentences)


def prepare_split(
    data: Dataset,
    split: Split,
    *,
    split_seed: int,
    encoder: str = DEFAULT_ENCODER,
    max_length: int = DEFAULT_MAX_LENGTH,
    progress: bool = True,
    source: str = "",
    teacher: str = DEFAULT_ENCODER,
    fit_sentences: bool = FIT_SENTENCES,
) -> Prepared:
    """`prepare` for a dataset already loaded and split (experiments.compare runs `fit` on its own splits this way)."""
    static, fitted_to = None, None
    if encoder == STATIC:
        from .static_router import STATIC_MAX_LENGTH, fits_sentences, static_embeddings

        max_length, encoder = STATIC_MAX_LENGTH, DEFAULT_ENCODER  # the tokenizer's model; static.source: the teacher
        # A table fitted to sentence embeddings reads the training texts alone: fitted to the validation texts as
        # well, it encodes them better than unseen ones and the held-out part over-rates it (docs/research/encoders.md).
        learn_from = np.concatenate([split.train, split.val])
        static, emb = static_embeddings(data, learn_from, max_length, teacher, fit_sentences=fit_sentences,
                                         log=print if progress else _quiet, fit_on=split.train)
        fitted_to = split.train if fits_sentences(teacher, fit_sentences) else None
    else:
        emb = embed_dataset(data, encoder=encoder, max_length=max_length, progress=progress)
    return Prepared(
        data=data,
        split=split,
        split_seed=split_seed,
        train=split.responses(data, "train"),
        val=split.responses(data, "val"),
        test=split.responses(data, "test"),
        embeddings=emb,
        encoder=encoder,
        max_length=max_length,
        source=source,
        static=static,
        table_fitted_to=fitted_to,
        teacher=teacher,
    )


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


def _display_path(source: str) -> str:
    """Relative to the working folder when the data lies under it (a repository's own data, trained from its root),
    so a router written there does not record a machine's paths; else as given."""
    try:
        return str(Path(source).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(source)


def training_summary(prep: Prepared, predictor: JeirtPredictor) -> dict[str, Any]:
    return {
        "method": "JE-IRT (frozen encoder + 2-layer MLP adapter, LLM vectors; logit = q·m/|q| - |q|)",
        "data": _display_path(prep.source),
        "dataset": prep.data.name,
        "n_questions": prep.data.n_questions,
        "n_llms": prep.data.n_llms,
        "split": {
            "seed": prep.split_seed,
            "n_train_questions": len(prep.split.train),
            "n_val_questions": len(prep.split.val),
            "n_test_questions": len(prep.split.test),
            "n_train_cells": len(prep.train),
            "n_val_cells": len(prep.val),
            "n_test_cells": len(prep.test),
        },
        "hyper_parameters": predictor.config.to_dict(),
        "best_epoch": predictor.best_epoch,
        "best_val_loss": predictor.best_val_loss,
        "train_seconds": round(predictor.train_seconds, 1),
        "encoder_source": get_spec(prep.encoder).source(),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def parity_texts(prep: Prepared, n: int = 4) -> list[str]:
    """Short, middle and long real questions for the export's parity check: from the test part, or from all
    questions when there is none."""
    rows = prep.split.test if len(prep.split.test) else np.arange(prep.data.n_questions)
    by_len = sorted((prep.data.texts[i] for i in rows), key=len)
    mid = len(by_len) // 2
    return by_len[:n] + by_len[mid : mid + n] + by_len[-n:]


def export_trained(
    prep: Prepared,
    predictor: JeirtPredictor,
    out_dir: Path,
    *,
    metrics: dict[str, Any],
    training: dict[str, Any],
    reference_parts: tuple[np.ndarray, np.ndarray],
    learned_from: np.ndarray,
    label: str | None = None,
    overwrite: bool = False,
) -> tuple[Path, float | None]:
    """Write the router folder for whichever encoder `prep` used; returns (path, ONNX parity or None).

    reference_parts: (questions whose vectors are the alignment reference, questions that set its threshold).
    learned_from: the questions whose answers the predictor was trained on (training_questions.npy records their
    texts' hashes; add_llm reads it)."""
    from ._runtime import training_question_set
    from .reference import alignment_reference

    if predictor.config.feature_residual is not None:
        raise ValueError(
            "a model trained with feature_residual cannot be written as a router: a router stores the joint "
            "geometry only (the residual is an evaluation setting; see JeirtConfig.feature_residual)"
        )
    reference, center, alignment = alignment_reference(
        predictor.question_vectors(prep.embeddings[reference_parts[0]]),
        predictor.question_vectors(prep.embeddings[reference_parts[1]]),
    )
    extras = {"reference_directions": reference, "reference_center": center, "alignment": alignment,
              "training_questions": training_question_set(prep.data.texts[i] for i in learned_from)}
    if prep.static is not None:
        from .static_router import export_static_router

        path = export_static_router(
            prep.static, predictor, out_dir, prep.data.llm_names, max_length=prep.max_length, training=training,
            metrics=metrics, label=label, overwrite=overwrite, **extras,
        )
        return path, None
    from .export import export_router

    return export_router(
        predictor, out_dir, prep.data.llm_names, encoder=prep.encoder, max_length=prep.max_length,
        parity_texts=parity_texts(prep), training=training, metrics=metrics, label=label, overwrite=overwrite,
        **extras,
    )


def fit_and_export(
    prep: Prepared,
    out_dir: Path | None,
    *,
    label: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    **hyper: Any,
) -> FitResult:
    """One fixed setting trained on the training part, early-stopped on validation, scored on the test part."""
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
        result.router_path, result.parity = export_trained(
            prep, predictor, out_dir, metrics=metrics, training=training_summary(prep, predictor),
            reference_parts=(prep.split.train, prep.split.val), learned_from=prep.split.train, label=label,
            overwrite=overwrite,
        )
    return result


def choose_refit_and_export(
    prep: Prepared,
    out_dir: Path | None,
    *,
    folds: int = 1,
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
    any encoder kind, is made here.

    table_pulls (static encoder only): candidate pulls for fine-tuning the token table end to end, chosen on the
    same held-out parts against the frozen table (jeirt_lite_training.static_finetune); empty: the distilled table stays.

    neighbours: weigh the training questions' answers into the router as neighbour votes, kept only when the
    held-out parts say they help (jeirt_lite_training.neighbour_blend); False: the joint geometry alone."""
    pool = np.sort(np.concatenate([prep.split.train, prep.split.val]))
    if folds == 1:
        parts = [(prep.train, prep.val)]
    else:
        fold_questions = make_folds(prep.data, pool, folds, seed=prep.split_seed)
        parts = [(cells_of(prep.data, np.concatenate(fold_questions[:j] + fold_questions[j + 1 :])),
                  cells_of(prep.data, fold_questions[j])) for j in range(folds)]
    log(f"choosing d x dropout on {f'{folds} folds' if folds > 1 else 'a held-out part'} ...")
    selection = choose(prep.embeddings, parts, prep.data.n_llms, dims=dims, dropouts=dropouts, log=log, **hyper)
    all_cells = cells_of(prep.data, pool)
    answered = np.unique(all_cells.question)  # the pool's questions with answers (the others' texts teach a static table)
    frozen = prep.embeddings  # what the held-out runs read (the router's table below changes prep's)
    table_choice = None
    if prep.static is not None and len(table_pulls):
        from .static_finetune import choose_table_pull
        table_choice = choose_table_pull(prep, parts, selection, table_pulls, log=log)
    prep = _table_for_router(prep, pool, log)
    if table_choice is not None and table_choice.pull is not None:
        from .static_finetune import refit_fine_tuned

        prep, predictor = refit_fine_tuned(prep, all_cells, selection, table_choice, log=log, progress=progress)
    else:
        log(f"refitting d={selection.hyper['dim']} dropout={selection.hyper['dropout']} on all {len(answered)} "
            f"questions for {len(selection.schedule)} epochs ...")
        predictor = refit(prep.embeddings, all_cells, prep.data.n_llms, selection, progress=progress)
    heldout = selection.heldout_metrics()
    result = FitResult(predictor=predictor, val=heldout.get("jeirt", {}), test={}, floor_test={},
                       selection=selection, embeddings=prep.embeddings)
    heldout_logits, vote_record = _neighbour_votes(prep, frozen, parts, all_cells, selection, result, neighbours, log)
    fitted = heldout_calibration(selection, heldout_logits, prep.data.n_llms, calibration)
    raw_test: dict[str, float] = {}
    if len(prep.test):
        acc = llm_accuracies(all_cells, prep.data.n_llms)
        logits = result.logits(prep.test.question, prep.test.llm)
        raw_test = all_metrics(prep.test.correct, 1.0 / (1.0 + np.exp(-logits)))
        result.test = raw_test if fitted is None else all_metrics(
            prep.test.correct, apply_calibration(logits, prep.test.llm, fitted))
        result.floor_test = all_metrics(prep.test.correct, acc[prep.test.llm])
    record = selection_record(selection, folds=folds, n_questions=len(answered), n_cells=len(all_cells))
    if table_choice is not None:
        record["static_table"] = table_choice.record()
    if prep.table_fitted_to is not None:
        record["static_table_texts"] = {"choices": len(prep.split.train), "router": len(prep.table_fitted_to)}
    if vote_record is not None:
        record["neighbours"] = vote_record
    result.extra = {"selection": record, "heldout": heldout, "calibration": fitted, "test_uncalibrated": raw_test}
    if out_dir is not None:
        training = training_summary(prep, predictor)
        training["selection"] = record
        result.router_path, result.parity = export_trained(
            prep, predictor, out_dir, metrics=_metrics_record(prep, result, fitted is not None), training=training,
            reference_parts=(prep.split.train, prep.split.val), learned_from=answered, label=label,
            overwrite=overwrite,
        )
        if fitted is not None or costs is not None or result.votes is not None:
            store_calibration(result.router_path, fitted, costs(list(prep.data.llm_names)) if costs else None,
                              neighbours=result.votes)
    return result


def _table_for_router(prep: Prepared, pool: np.ndarray, log: Callable[[str], None]) -> Prepared:
    """prep with its sentence-fitted table fitted again to the texts of `pool` (training and validation) when it read
    fewer: the choices read the training texts' table, as unseen text; the router reads them all, as every answer."""
    if prep.table_fitted_to is None or len(prep.table_fitted_to) == len(pool):
        return prep
    from .static_router import static_embeddings

    log(f"fitting the static table again, to the {len(pool)} training and validation texts ...")
    static, emb = static_embeddings(prep.data, pool, prep.max_length, prep.teacher, fit_sentences=True, log=log,
                                    fit_on=pool)
    return replace(prep, static=static, embeddings=emb, table_fitted_to=pool)


def _neighbour_votes(
    prep: Prepared, frozen: np.ndarray, parts: Sequence[tuple[Responses, Responses]], all_cells: Responses,
    selection: Selection, result: FitResult, wanted: bool, log: Callable[[str], None],
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """Choose the neighbour votes on the held-out parts (jeirt_lite_training.neighbour_blend); when kept, set result.votes
    (every question learned from, with the router's own features). Returns the held-out logits the calibration is
    fitted on (with the votes when kept) and the record for router.json."""
    from .neighbour_blend import MAX_STORED_QUESTIONS, choose_neighbour_votes, neighbour_votes

    assert selection.heldout is not None and selection.heldout_logits is not None
    if not wanted:
        return selection.heldout_logits, None
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
           "kept out of everything (--holdout); test_uncalibrated: the same without the calibration."
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
    }


def cells_of(data: Dataset, questions: np.ndarray) -> Responses:
    return data.responses.subset(np.isin(data.responses.question, questions))


def folder_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
