"""The Rust tokenizer against Hugging Face `tokenizers` under every BertNormalizer setting it accepts, not only the
shipped router's (all on, accents stripped as lowercase says): a router trained from a cased or accent-keeping
vocabulary takes the same fast path. The shipped vocabulary with its normalizer changed; edge cases and random
Unicode."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Optional

import pytest
from jeirt_lite._static_path import StaticEncoder
from static_encoder_files import DIM, reference_token_ids, tensor_file, tokenizer_file
from unicode_texts import EDGE_TEXTS, random_texts

MAX_LENGTH = 512
# Besides the shared cases: cased words, accents that only lowercasing would strip, CJK beside Latin, controls
# inside words.
TEXTS = EDGE_TEXTS + [
    "The Cat SAT on ÉCOLE and École, İstanbul ΣΊΣΥΦΟΣ",
    "naïve CAFÉ Ångström x\u0301y",
    "ab中文cd 漢字test 한국어word",
    "in\u0001side\u007fword tab\tin\rline\x0bvt",
] + random_texts(300, seed=1)
SETTINGS = list(itertools.product([True, False], [True, False], [None, True, False], [True, False]))


@pytest.mark.parametrize(("clean_text", "chinese", "strip_accents", "lowercase"), SETTINGS,
                         ids=[f"clean{int(a)}-chinese{int(b)}-strip{c}-lower{int(d)}" for a, b, c, d in SETTINGS])
def test_token_ids_equal_tokenizers_under_every_normalizer_setting(
    tmp_path: Path, clean_text: bool, chinese: bool, strip_accents: Optional[bool], lowercase: bool
) -> None:
    normalizer = {"type": "BertNormalizer", "clean_text": clean_text, "handle_chinese_chars": chinese,
                  "strip_accents": strip_accents, "lowercase": lowercase}
    tokenizer_path = tokenizer_file(tmp_path, normalizer=normalizer)
    expected = reference_token_ids(tokenizer_path, MAX_LENGTH, TEXTS)
    fast = StaticEncoder(tokenizer_path, tensor_file(tmp_path), MAX_LENGTH, DIM, 1)
    for text, want, got in zip(TEXTS, expected, fast.token_ids(TEXTS)):
        assert got == want, f"{text!r}: tokenizers {want[:20]}..., fast path {got[:20]}..."
