"""The data side of a fit: a dataset loaded, split (the test part untouched) and embedded by the chosen encoder (a
cached frozen transformer, or a static token table distilled from it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._runtime import counted
from .config import FIT_SENTENCES, STATIC
from .data import Columns, DataError, LoadReport, load_dataset_with_report
from .data_rows import named_llms
from .embeddings import embed_dataset
from .encoders import DEFAULT_ENCODER, DEFAULT_MAX_LENGTH
from .split_advice import val_fraction_advice
from .splits import make_split
from .types import Dataset, Responses, Split


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
    load_report: LoadReport | None = None  # what loading the data merged or dropped (prepare only)


def _quiet(_: str) -> None:
    pass


def _check_every_llm_learnable(data: Dataset, train: Responses, val: Responses) -> None:
    """An LLM whose every answer fell among the held-out questions has nothing to be learned from."""
    seen = np.bincount(np.concatenate([train.llm, val.llm]), minlength=data.n_llms) > 0
    only_held_out = ~seen & (np.bincount(data.responses.llm, minlength=data.n_llms) > 0)
    if only_held_out.any():
        names = named_llms([data.llm_names[i] for i in np.flatnonzero(only_held_out)])
        raise DataError(f"{data.name}: every answer of {int(only_held_out.sum())} LLM(s) ({names}) is among the held-out "
                        "questions, which training never reads: give it more answers, or hold out fewer questions")


def check_validation_part(data: Dataset, split: Split, seed: int) -> None:
    """The validation part must hold answers: the settings are chosen on held-out questions and the alignment
    threshold is read from it. Said before the (long) embedding, in the words that help: a larger --val-fraction
    cannot give one question a validation part, and with small subjects a fraction may empty the training part
    instead (`val_fraction_advice` says which work, if any; `seed` drew the split)."""
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    if len(val):
        return
    learned = len(np.unique(train.question))
    questions = f"{counted(learned, 'question')} with answers to learn from"
    if learned < 2:
        raise DataError(f"{data.name}: {questions}: training holds questions out to choose its settings on, so it "
                        "needs at least 2 answered questions (with different texts); give more"
                        f"{', or a smaller --holdout' if len(test) else ''}")
    subjects = len(set(np.asarray(data.subjects)[np.unique(train.question)].tolist()))
    advice = val_fraction_advice(data, seed, split.test_fraction or 0.0)
    raise DataError(f"the validation part holds no answers ({questions}, dealt within each of their subjects "
                    f"({subjects})): too few questions to choose on; {advice}")


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
    loaded: Callable[[LoadReport, Dataset], None] | None = None,
) -> Prepared:
    """Load, split (test = the untouched part), embed. encoder STATIC distils the token table from `teacher` over
    the default transformer's vocabulary, its token frequencies read from the texts of the training and validation
    parts (never the test part); or (fit_sentences) fits it to the teacher's sentence embeddings of the training
    part's texts, its token frequencies read from those alone (static_sentences); and reads up to STATIC_MAX_LENGTH
    tokens (`max_length` applies to transformers). `loaded` is told what loading read, and given the data, before
    the (long) embedding."""
    data, report = load_dataset_with_report(data_dir, columns=columns)
    if loaded is not None:
        loaded(report, data)
    split = make_split(data, seed=split_seed, val_fraction=val_fraction, test_fraction=test_fraction)
    if len(split.train) == 0:  # each subject's questions are dealt out, so this comes before the fractions' sum is 1
        raise ValueError(f"val_fraction {val_fraction:g} (--val-fraction) and test_fraction {test_fraction:g} "
                         f"(--holdout) leave no question to train on: each of the {len(set(data.subjects))} subjects' "
                         f"questions ({data.n_questions} in all) is dealt to them first; "
                         f"{val_fraction_advice(data, split_seed, test_fraction)}")
    check_validation_part(data, split, split_seed)
    prep = prepare_split(data, split, split_seed=split_seed, encoder=encoder, max_length=max_length,
                         progress=progress, source=str(data_dir), teacher=teacher, fit_sentences=fit_sentences)
    prep.load_report = report
    return prep


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
    train, val, test = (split.responses(data, part) for part in ("train", "val", "test"))
    _check_every_llm_learnable(data, train, val)
    static, fitted_to = None, None
    if encoder == STATIC:
        from .static_router import STATIC_MAX_LENGTH, fits_sentences, static_embeddings

        max_length, encoder = STATIC_MAX_LENGTH, DEFAULT_ENCODER  # the tokenizer's model; static.source: the teacher
        # A table fitted to sentence embeddings reads the training texts alone: fitted to the validation texts as
        # well, it encodes them better than unseen ones and the held-out part over-rates it (docs/research/encoders.md).
        learn_from = np.concatenate([split.train, split.val])
        if fits_sentences(teacher, fit_sentences) and len(split.train) < 2:
            # Two to fit the table and one held out: with fewer, no --val-fraction helps.
            smaller = ", or a smaller --val-fraction" if len(learn_from) >= 3 else " (at least 3)"
            raise DataError(f"{data.name}: --encoder static fits its table to the training part's texts and needs at "
                            f"least 2, got {len(split.train)}; give more questions{smaller}")
        static, emb = static_embeddings(data, learn_from, max_length, teacher, fit_sentences=fit_sentences,
                                         log=print if progress else _quiet, fit_on=split.train)
        fitted_to = split.train if fits_sentences(teacher, fit_sentences) else None
    else:
        emb = embed_dataset(data, encoder=encoder, max_length=max_length, progress=progress)
    return Prepared(
        data=data,
        split=split,
        split_seed=split_seed,
        train=train,
        val=val,
        test=test,
        embeddings=emb,
        encoder=encoder,
        max_length=max_length,
        source=source,
        static=static,
        table_fitted_to=fitted_to,
        teacher=teacher,
    )

