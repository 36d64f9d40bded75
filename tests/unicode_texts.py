"""Texts that break tokenizers: Unicode edge cases and random strings over every plane, shared by the tests that
compare the Rust tokenizer with Hugging Face `tokenizers`."""

from __future__ import annotations

import random

EDGE_TEXTS = [
    "Café naïve résumé ÉCOLE Ångström façade Œuvre straße ŉ ǅ",  # accents, ligatures, titlecase
    "e\u0301 a\u0308\u0323 o\u0323\u0308 \u0301 x\u0334\u0327",  # combining marks, out of canonical order
    "北京大学 東京 서울 日本語のテキスト 中文，标点。",  # CJK ideographs, Hangul, kana, CJK punctuation
    "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️ 🥰 keycap 1️⃣",  # astral plane, ZWJ sequences, variation selectors
    "tab\there\nnew\rline\x0b\x0c\x1c\x1d\x1e\x1f\x7f\x00nul \x85 \u200b\u200d\ufeff\ufffd end",  # controls
    "nbsp\u00a0ideo\u3000thin\u2009line\u2028para\u2029 ogham\u1680",  # Unicode whitespace
    "\u212a Kelvin \u037e greek question \u1fef varia \u2126 ohm \u0130stanbul \u0131 \uff21\uff42 fullwidth",
    "हिन्दी ਪੰਜਾਬੀ தமிழ் ภาษาไทย العربية עברית Ελληνικά Кириллица",  # Mc/Mn marks, RTL scripts
    "private \ue000\uf8ff unassigned \u0378\U000e0001 tags \U000e0041 \U0010fffd end",
    "[MASK] the [CLS][SEP] x[PAD]y [UNK] [mask] [[MASK]] [MAS K]",  # added tokens in the raw text
    "a" * 100 + " " + "b" * 101 + " " + "ab" * 60,  # max_input_chars_per_word: 100 passes, 101 is unknown
    "ж" * 100 + " " + "ж" * 101,  # the same limit counts characters, not the 200 bytes
    "word " * 700,  # truncated at max_seq_length
    "x" * 5000,  # one very long word
    "$100 + 5% = ~€5 <tag> a^b `code` {x|y} @user #hash _under_ ¿¡ «quote» — dash … ellipsis",
    "\u0300 starts with a mark",
    "digits ١٢٣ ½ ² ⅷ ① ∑∫√∞ ≠ ≤",
]


def random_texts(count: int, seed: int) -> list[str]:
    """Strings over the whole Unicode range (ASCII, controls, every plane), surrogates left out."""
    rng = random.Random(seed)
    spans = [
        (0x20, 0x7F, 0.4),
        (0x00, 0x20, 0.1),
        (0x80, 0x3000, 0.2),
        (0x3000, 0x10000, 0.15),
        (0x10000, 0x110000, 0.15),
    ]
    texts = []
    while len(texts) < count:
        chars = []
        for _ in range(rng.randrange(1, 60)):
            low, high, _ = rng.choices(spans, weights=[w for *_, w in spans])[0]
            code = rng.randrange(low, high)
            chars.append(chr(code) if not 0xD800 <= code <= 0xDFFF else "x")
        texts.append("".join(chars))
    return texts
