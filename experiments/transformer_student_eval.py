"""Does a static router distilled from a transformer router predict better than one trained on the answers alone?

    python -m experiments.transformer_student_eval --data data/mmlu_pro --split-seed 0 --alphas 1,0.5 \
        --unlabelled data/zeroeval_crux_gsm_math

The static encoder (a token table, what the shipped router runs) costs AUC against the frozen MiniLM transformer
with the same adapter (docs/research/baselines-same-care.md). The teacher here is that transformer router, trained
on the training part and early-stopped on the validation part. The students are static routers of the shipped
recipe's shape (the token table fine-tuned end to end, pull 0.1, d 256, dropout 0.3 by default), trained on soft
targets a·P_teacher + (1 − a)·answer on the training cells; `--unlabelled` adds every question text of other
data folders, their targets the teacher's P for every LLM (texts without answers: what distillation can use that
training cannot). The reference is the same static router trained on the answers (a = 0). Every router is
early-stopped on the validation answers; decisions read the validation part only, the test part is only reported.

One JSON line per router to --out (experiments.ensemble_eval's scores: AUC, accuracy, log-loss and within-question
AUC on the validation and test parts). Grids are cached under --cache, so an interrupted run resumes.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .ensemble_eval import (
    _trained,
    emit_line,
    fine_tuned,
    logit_grid,
    one_split_parser,
    run_record,
    scores,
    soft_targets,
)
from .static_finetune_eval import _floats


def unlabelled_cells(grid: np.ndarray, first: int, n_llms: int) -> Any:
    """Every (question, LLM) pair of the questions first.. of `grid`, the teacher's P as the target."""
    from jeirt_lite_training.types import Responses

    n = grid.shape[0] - first
    question = np.repeat(np.arange(first, first + n, dtype=np.int64), n_llms)
    llm = np.tile(np.arange(n_llms, dtype=np.int64), n)
    p = 1.0 / (1.0 + np.exp(-grid[question, llm]))
    return Responses(question, llm, p.astype(np.float32))


def main(argv: list[str] | None = None) -> int:
    parser = one_split_parser(__doc__.split("\n")[0], "docs/results/transformer_student_runs.jsonl",
                              ".scratch/transformer_student")
    parser.add_argument("--alphas", type=_floats, default=[1.0, 0.5],
                        help="students' weight of the teacher's P against the answer (comma list)")
    parser.add_argument("--unlabelled", action="append", default=[],
                        help="a data folder whose question texts are added with the teacher's P as targets "
                             "(repeatable; its answers are not read); the students with a = the first alpha")
    args = parser.parse_args(argv)
    import torch
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.embeddings import embed_texts as transformer_embed
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.model import JeirtPredictor
    from jeirt_lite_training.prepared import STATIC, prepare
    from jeirt_lite_training.static_finetune import rounded, token_bags
    from jeirt_lite_training.types import Responses

    torch.set_num_threads(args.threads)
    prep = prepare(args.data, split_seed=args.split_seed, encoder=STATIC, test_fraction=0.2, progress=False,
                   fit_sentences=False)  # the distilled table, as the published runs
    extra = [t for folder in args.unlabelled for t in load_dataset(folder).texts]
    texts = list(prep.data.texts) + extra
    n_questions, n_llms = len(prep.data.texts), prep.data.n_llms
    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)
    bags, start = token_bags(texts, tokenizer), rounded(prep.static.table)
    hyper = {"dim": args.dim, "dropout": args.dropout, "seed": args.split_seed}
    head = {"data": prep.data.name, "split_seed": args.split_seed, **hyper, "pull": args.pull}
    cache = args.cache / f"{prep.data.name}_s{args.split_seed}_d{args.dim}_p{args.dropout}_pull{args.pull}"

    def emit(row: dict[str, Any]) -> None:
        emit_line(args.out, {**head, **row})

    def teacher_run() -> tuple[np.ndarray, dict[str, Any]]:
        features = transformer_embed(texts)  # the MiniLM transformer's pooled embeddings (cached)
        teacher = JeirtPredictor(**hyper).fit(features, prep.train, prep.val, n_llms)
        return logit_grid(teacher, features), run_record(teacher)

    def student_run(cells: Any, soft: bool) -> tuple[np.ndarray, dict[str, Any]]:
        grid, predictor = fine_tuned(start, bags, hyper, cells, prep.val, n_llms, tokenizer, texts, pull=args.pull,
                                     soft=soft)
        return grid, run_record(predictor)

    teacher, record = _trained(cache, f"teacher_n{len(texts)}", teacher_run)
    emit({"router": "teacher (MiniLM transformer)", **record, **scores(prep, teacher[:n_questions])})
    grid, record = _trained(cache, "static_answers", lambda: student_run(prep.train, False))
    emit({"router": "static, answers only", **record, **scores(prep, grid[:n_questions])})
    for alpha in args.alphas:
        grid, record = _trained(cache, f"student_a{alpha}",
                                lambda a=alpha: student_run(soft_targets(prep.train, teacher, a), True))
        emit({"router": "static student", "alpha": alpha, **record, **scores(prep, grid[:n_questions])})
    if extra:
        alpha = args.alphas[0]
        cells = Responses.concatenate([soft_targets(prep.train, teacher, alpha),
                                       unlabelled_cells(teacher, n_questions, n_llms)])
        grid, record = _trained(cache, f"student_a{alpha}_unlabelled{len(extra)}",
                                lambda: student_run(cells, True))
        emit({"router": "static student + unlabelled texts", "alpha": alpha, "unlabelled": args.unlabelled,
              "unlabelled_texts": len(extra), **record, **scores(prep, grid[:n_questions])})
    return 0


if __name__ == "__main__":
    sys.exit(main())
