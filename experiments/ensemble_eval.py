"""Does an ensemble of JE-IRT routers, or one router distilled from it, predict better than one router?

    python -m experiments.ensemble_eval --data data/mmlu_pro --members 4 --out docs/results/ensemble_runs.jsonl

On the split of `build_default_router --holdout 0.2` (split seed 0: 10% validation, 20% test), at the setting that
build's choose step picks there (static table fine-tuned end to end with pull 0.1, d 256, dropout 0.3; every other
setting fit's default): K members that differ only in their seed, each with its own fine-tuned table, trained on
the training part and early-stopped on the validation part; their logit-averaged ensemble (and that of the first k
members, k < K); then students of the members' shape (seed 0, a table of their own) trained on the training cells
with soft targets a·P_ensemble + (1 − a)·answer for each a of --alphas, early-stopped on the validation answers.
The ensemble's P on the training cells is in-sample (its members learned from those cells): what a recipe that
refits on everything would have.

One JSON line per router to --out: validation and test AUC, accuracy, log-loss and within-question AUC
(experiments.routing_metrics). Decisions read the validation part only (the members were early-stopped on it too, the
same for all); the test part is only reported. Each router's logits on every (question, LLM) pair are cached under
--cache, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .static_finetune_eval import _floats

PARTS = ("val", "test")


def logit_grid(predictor: Any, embeddings: np.ndarray) -> np.ndarray:
    """(n_questions, n_llms) float64 JE-IRT logits of every pair."""
    q = predictor.question_vectors(embeddings).astype(np.float64)
    m = predictor.llm_vectors.astype(np.float64)
    norm = np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-8)
    return np.asarray(q @ m.T / norm - norm)


def ensemble_logits(grids: list[np.ndarray]) -> np.ndarray:
    """The logit average of K routers' grids."""
    return np.asarray(np.mean(grids, axis=0))


def scores(prep: Any, grid: np.ndarray) -> dict[str, dict[str, float]]:
    from jeirt_lite._metrics import all_metrics

    from .routing_metrics import within_question_auc

    out = {}
    for part in PARTS:
        cells = getattr(prep, part)
        p = 1.0 / (1.0 + np.exp(-grid[cells.question, cells.llm]))
        m = all_metrics(cells.correct, p)
        out[part] = {key: round(m[key], 5) for key in ("auc", "accuracy", "log_loss")}
        out[part]["within_question_auc"] = round(within_question_auc(cells.question, cells.correct, p), 5)
    return out


def fine_tuned(
    start: np.ndarray, bags: Any, hyper: dict[str, Any], cells: Any, val: Any, n_llms: int, tokenizer: Any,
    texts: list[str], *, pull: float, soft: bool = False,
) -> tuple[np.ndarray, Any]:
    """The table `start` fine-tuned end to end with a fresh adapter on `cells`, early-stopped on `val`
    (jeirt_lite_training.static_finetune.train_table): its logit grid over `texts`, and the predictor."""
    from jeirt_lite_training.static_encoder import embed_texts
    from jeirt_lite_training.static_finetune import rounded, train_table

    predictor, table = train_table(start, bags, hyper, cells, val, n_llms, pull=pull, soft_targets=soft)
    return logit_grid(predictor, embed_texts(rounded(table), tokenizer, texts)), predictor


def run_record(predictor: Any) -> dict[str, Any]:
    """Where an early-stopped run stopped, for its JSON line."""
    return {"best_epoch": predictor.best_epoch, "best_val_loss": round(predictor.best_val_loss, 5)}


def emit_line(out: Path, row: dict[str, Any]) -> None:
    """Print one result row and append it to `out` as a JSON line."""
    line = json.dumps(row)
    print(line, flush=True)
    with out.open("a") as f:
        f.write(line + "\n")


def soft_targets(train: Any, teacher: np.ndarray, alpha: float) -> Any:
    """The training cells with answers replaced by alpha·P_teacher + (1 − alpha)·answer."""
    from jeirt_lite_training.types import Responses

    p = 1.0 / (1.0 + np.exp(-teacher[train.question, train.llm]))
    target = alpha * p + (1.0 - alpha) * train.correct.astype(np.float64)
    return Responses(train.question, train.llm, target.astype(np.float32))


def _trained(cache: Path, name: str, train: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """A router's grid and record from the cache, or trained by `train()` (-> grid, record) and cached."""
    path = cache / f"{name}.npz"
    if path.exists():
        saved = np.load(path)
        return saved["grid"], json.loads(str(saved["record"]))
    t0 = time.perf_counter()
    grid, record = train()
    record["seconds"] = round(time.perf_counter() - t0)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, grid=grid, record=json.dumps(record))
    return grid, record


def one_split_parser(description: str, out: str, cache: str | None) -> argparse.ArgumentParser:
    """The options of the one-split static-router experiments (this one, transformer_student_eval,
    static_sentences_eval): the data and split, the adapter's setting, the pull when the table is fine-tuned
    (`cache`: where fine-tuned runs are kept; None: neither), where the JSON lines go, torch threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", default="data/mmlu_pro")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--dropout", type=float, default=0.3)
    if cache is not None:
        parser.add_argument("--pull", type=float, default=0.1)
        parser.add_argument("--cache", type=Path, default=Path(cache))
    parser.add_argument("--out", type=Path, default=Path(out))
    parser.add_argument("--threads", type=int, default=1)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = one_split_parser(__doc__.split("\n")[0], "docs/results/ensemble_runs.jsonl", ".scratch/ensemble")
    parser.add_argument("--members", type=int, default=4, help="K: members, seeds 0..K-1")
    parser.add_argument("--alphas", type=_floats, default=[1.0, 0.5],
                        help="students' weight of the ensemble's P against the answer (comma list; none: no student)")
    args = parser.parse_args(argv)
    import torch
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.prepared import STATIC, prepare
    from jeirt_lite_training.static_finetune import TABLE_LR_SCALE, rounded, token_bags

    torch.set_num_threads(args.threads)
    prep = prepare(args.data, split_seed=args.split_seed, encoder=STATIC, test_fraction=0.2, progress=False,
                   fit_sentences=False)  # the distilled table, as the published runs
    tokenizer = load_tokenizer(DEFAULT_ENCODER, prep.max_length)
    bags, start = token_bags(prep.data.texts, tokenizer), rounded(prep.static.table)
    head = {"data": prep.data.name, "split_seed": args.split_seed, "dim": args.dim, "dropout": args.dropout,
            "pull": args.pull, "table_lr_scale": TABLE_LR_SCALE}
    cache = args.cache / f"{prep.data.name}_s{args.split_seed}_d{args.dim}_p{args.dropout}_pull{args.pull}"

    def run(seed: int, train_cells: Any, soft: bool) -> tuple[np.ndarray, dict[str, Any]]:
        hyper = {"dim": args.dim, "dropout": args.dropout, "seed": seed}
        grid, predictor = fine_tuned(start, bags, hyper, train_cells, prep.val, prep.data.n_llms, tokenizer,
                                     prep.data.texts, pull=args.pull, soft=soft)
        return grid, {**run_record(predictor), "epochs": len(predictor.schedule)}

    def emit(row: dict[str, Any]) -> None:
        emit_line(args.out, {**head, **row})

    grids = []
    for seed in range(args.members):
        grid, record = _trained(cache, f"member{seed}", lambda s=seed: run(s, prep.train, False))
        grids.append(grid)
        emit({"router": "member", "seed": seed, **record, **scores(prep, grid)})
    single = [scores(prep, g)["val"]["log_loss"] for g in grids]
    for k in range(2, args.members + 1):
        emit({"router": "ensemble", "members": k, "seeds": list(range(k)),
              "single_val_log_loss_mean": round(float(np.mean(single[:k])), 5),
              **scores(prep, ensemble_logits(grids[:k]))})
    teacher = ensemble_logits(grids)
    gain = float(np.mean(single)) - scores(prep, teacher)["val"]["log_loss"]
    for alpha in args.alphas:
        grid, record = _trained(cache, f"student_k{args.members}_a{alpha}",
                                lambda a=alpha: run(0, soft_targets(prep.train, teacher, a), True))
        got = scores(prep, grid)
        emit({"router": "student", "seed": 0, "teacher_members": args.members, "alpha": alpha, **record, **got,
              "share_of_ensemble_gain": round((float(np.mean(single)) - got["val"]["log_loss"]) / gain, 3)
              if gain > 0 else None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
