//! The fast tokenizer on a small hand-made vocabulary; tests/test_static_path.py checks it against Hugging
//! Face `tokenizers` on every public question and on Unicode edge cases.

use super::{BertTokenizer, NormalizerOptions, TokenizerScratch, TokenizerSpec};

const CLS: u32 = 1;
const SEP: u32 = 2;
const UNK: u32 = 3;
const MASK: u32 = 4;

const WORDS: [&str; 20] = [
    "[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "the", "cat", "sat", "un", "##aff", "##able",
    "##s", "!", ",", "cafe", "中", "$", "k", "##at", "c",
];

fn tokenizer(max_length: usize, max_chars: usize) -> BertTokenizer {
    tokenizer_of(&WORDS, max_length, max_chars)
}

/// A tokenizer over `words` (ids in order), every normaliser option on, `[MASK]` and `[SEP]` added tokens.
fn tokenizer_of(words: &[&str], max_length: usize, max_chars: usize) -> BertTokenizer {
    let vocab = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), i as u32))
        .collect();
    let spec = TokenizerSpec {
        vocab,
        unk_id: UNK,
        continuation_prefix: "##".into(),
        max_input_chars_per_word: max_chars,
        added_tokens: vec![("[MASK]".into(), MASK), ("[SEP]".into(), SEP)],
        normalizer: NormalizerOptions {
            clean_text: true,
            handle_chinese_chars: true,
            strip_accents: true,
            lowercase: true,
        },
        cls_id: CLS,
        sep_id: SEP,
        max_length,
    };
    BertTokenizer::new(&spec).expect("valid test vocabulary")
}

fn ids(tok: &BertTokenizer, text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    tok.encode_into(text, &mut out, &mut TokenizerScratch::default());
    out
}

#[test]
fn words_pieces_and_punctuation() {
    let tok = tokenizer(64, 100);
    assert_eq!(ids(&tok, "The cat sat!"), vec![CLS, 5, 6, 7, 12, SEP]);
    assert_eq!(
        ids(&tok, "unaffable cats,"),
        vec![CLS, 8, 9, 10, 6, 11, 13, SEP]
    );
    // no piece matches the remainder "x": the whole word is one unknown token
    assert_eq!(ids(&tok, "catx the"), vec![CLS, UNK, 5, SEP]);
    // '$' is ASCII punctuation for BERT although Unicode calls it a symbol
    assert_eq!(ids(&tok, "$cat"), vec![CLS, 16, 6, SEP]);
}

#[test]
fn unicode_normalisation() {
    let tok = tokenizer(64, 100);
    // accents stripped (precomposed and combining), control characters dropped, odd spaces are spaces
    assert_eq!(
        ids(&tok, "Caf\u{e9} CAFE\u{301}\u{0}\u{200b}"),
        vec![CLS, 14, 14, SEP]
    );
    assert_eq!(
        ids(&tok, "the\u{a0}cat\u{3000}sat"),
        vec![CLS, 5, 6, 7, SEP]
    );
    // CJK ideographs become words of their own; the Kelvin sign decomposes to K and is lowercased
    assert_eq!(ids(&tok, "cat中sat \u{212a}"), vec![CLS, 6, 15, 7, 17, SEP]);
    // a combining mark after an ASCII letter
    assert_eq!(ids(&tok, "ca\u{301}t"), vec![CLS, 6, SEP]);
}

#[test]
fn added_tokens_are_matched_in_the_raw_text() {
    let tok = tokenizer(64, 100);
    assert_eq!(
        ids(&tok, "the[MASK]cat [SEP]"),
        vec![CLS, 5, MASK, 6, SEP, SEP]
    );
    // lowercase "[mask]" is not the added token: brackets are punctuation, "mask" is unknown
    assert_eq!(ids(&tok, "[mask]"), vec![CLS, UNK, UNK, UNK, SEP]);
}

#[test]
fn long_words_and_truncation() {
    let tok = tokenizer(5, 4);
    assert_eq!(ids(&tok, "unaffables"), vec![CLS, UNK, SEP]);
    assert_eq!(ids(&tok, "cats"), vec![CLS, 6, 11, SEP]);
    // five tokens in all, [CLS] and [SEP] included; a word cut by the limit keeps its first pieces
    assert_eq!(ids(&tok, "the cat sat the cat"), vec![CLS, 5, 6, 7, SEP]);
    let tok = tokenizer(4, 100);
    assert_eq!(ids(&tok, "the unaffable"), vec![CLS, 5, 8, SEP]);
}

#[test]
fn empty_and_blank_texts() {
    let tok = tokenizer(8, 100);
    assert_eq!(ids(&tok, ""), vec![CLS, SEP]);
    assert_eq!(ids(&tok, " \t\u{1}\n"), vec![CLS, SEP]);
}

#[test]
fn punctuation_beyond_ascii_is_a_word_of_its_own() {
    let tok = tokenizer(64, 100);
    // '¿' and the fullwidth comma are Unicode punctuation: each ends the word before it and is a word (unknown here)
    assert_eq!(ids(&tok, "cat\u{bf}sat"), vec![CLS, 6, UNK, 7, SEP]);
    assert_eq!(
        ids(&tok, "caf\u{e9}\u{ff0c}cat"),
        vec![CLS, 14, UNK, 6, SEP]
    );
}

#[test]
fn the_word_length_limit_counts_characters_not_bytes() {
    // '中' is one character of three bytes: within a limit of two characters
    let tok = tokenizer(64, 2);
    assert_eq!(ids(&tok, "中"), vec![CLS, 15, SEP]);
    assert_eq!(ids(&tok, "cat"), vec![CLS, UNK, SEP]);
}

#[test]
fn without_continuation_pieces_a_word_of_several_pieces_is_unknown() {
    // as in `tokenizers`: after the first piece only "##" pieces may follow, and this vocabulary has none
    let tok = tokenizer_of(
        &["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "cat", "s"],
        64,
        100,
    );
    assert_eq!(ids(&tok, "cat s cats"), vec![CLS, 5, 6, UNK, SEP]);
}
