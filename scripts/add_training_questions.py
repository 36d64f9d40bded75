"""Give a router refitted on every question of its data the record of them it lacks: training_questions.npy.

    python -m scripts.add_training_questions python/jeirt_lite/default_router --data data/mmlu_pro

Routers written by `fit` (jeirt_lite_training.pipeline) carry the record already; this back-fills older folders without
retraining. It is only right for a router that learned from every question of `--data`: router.json must say so
(`training.split.n_test_questions` 0 and `training.selection.refit_on.questions` equal to the data's question count),
and the data must be the one it names; otherwise it refuses. The record is computed by the same function `fit` uses
(`jeirt_lite._training_questions.training_question_set`); the folder is rewritten atomically by `Router.save`, and
every other file is checked to be byte-identical afterwards (llms.safetensors: the same table, only its binding
metadata changes with router.json). Idempotent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np


def learned_from_everything(training: Any, n_questions: int, data_name: str) -> str | None:
    """Why the router cannot be said to have learned from all `n_questions` of `data_name`, or None if it can."""
    if not isinstance(training, dict):
        return "router.json has no training record"
    if training.get("dataset") != data_name:
        return f"it was trained on {training.get('dataset')!r}, not {data_name!r}"
    if (training.get("split") or {}).get("n_test_questions") != 0:
        return "its training kept a test part out; only a router refitted on every question can be back-filled"
    refit = ((training.get("selection") or {}).get("refit_on") or {}).get("questions")
    if refit != n_questions:
        return f"router.json says it was refitted on {refit} questions, the data has {n_questions}"
    return None


def add_training_questions(router_dir: Path, data_dir: Path) -> Path:
    from dataclasses import replace

    from jeirt_lite import Router
    from jeirt_lite._training_questions import training_question_set
    from jeirt_lite.artifact import load_artifact, sha256_of
    from jeirt_lite_training.data import load_dataset

    data = load_dataset(data_dir)
    artifact = load_artifact(router_dir)
    why = learned_from_everything(artifact.manifest.to_json().get("training"), data.n_questions, data.name)
    if why is not None:
        raise SystemExit(f"{router_dir}: cannot back-fill its training questions: {why}")
    record = training_question_set(data.texts)
    before = {role: sha256_of(router_dir / entry.path) for role, entry in artifact.manifest.files.items()}
    table = np.array(artifact.llm_vectors)
    router = Router(replace(artifact, training_questions=record), threads=1)
    path = Path(router.save(router_dir, overwrite=True))
    after = load_artifact(path)
    for role, digest in before.items():
        if role not in ("llms", "training_questions") and after.manifest.files[role].sha256 != digest:
            raise SystemExit(f"{path}: its {role} file changed; it must not")
    if not np.array_equal(after.llm_vectors, table):
        raise SystemExit(f"{path}: its LLM table changed; it must not")
    assert after.training_questions is not None and np.array_equal(after.training_questions, record)
    print(f"{path}: {record.size} distinct training question texts recorded ({data.n_questions} questions)")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("router", type=Path)
    parser.add_argument("--data", type=Path, required=True, help="the data the router was refitted on")
    args = parser.parse_args(argv)
    add_training_questions(args.router, args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
