//! The static encoder's pooled features against a plain reference (mean of the token rows, L2-normalised),
//! and `embed_with_features` against `embed`; tests/test_static_path.py checks both against the ONNX graph.

use super::{StaticEncoder, TEXTS_PER_CHUNK};
use crate::encoder::text::{NormalizerOptions, TokenizerSpec};
use crate::SimdLevel;

const WORDS: [&str; 10] = [
    "[PAD]", "[CLS]", "[SEP]", "[UNK]", "the", "cat", "sat", "un", "##aff", "##able",
];
const EMBEDDING_DIM: usize = 5; // not a multiple of the pooling block: the padding must not leak out
const HIDDEN: usize = 7;
const OUT: usize = 3;

/// Deterministic, varied values (no RNG crate needed).
fn values(count: usize, seed: u32) -> Vec<f32> {
    (0..count)
        .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

fn encoder() -> (StaticEncoder, Vec<f32>) {
    let spec = TokenizerSpec {
        vocab: WORDS
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i as u32))
            .collect(),
        unk_id: 3,
        continuation_prefix: "##".into(),
        max_input_chars_per_word: 100,
        added_tokens: vec![],
        normalizer: NormalizerOptions {
            clean_text: true,
            handle_chinese_chars: true,
            strip_accents: true,
            lowercase: true,
        },
        cls_id: 1,
        sep_id: 2,
        max_length: 16,
    };
    let table = values(WORDS.len() * EMBEDDING_DIM, 7);
    let encoder = StaticEncoder::new(
        &spec,
        &table,
        EMBEDDING_DIM,
        &values(HIDDEN * EMBEDDING_DIM, 11),
        &values(HIDDEN, 13),
        &values(OUT * HIDDEN, 17),
        &values(OUT, 19),
    )
    .expect("valid test encoder");
    (encoder, table)
}

fn reference_features(encoder: &StaticEncoder, table: &[f32], text: &str) -> Vec<f32> {
    let ids = encoder.token_ids(text);
    let mut mean = [0.0f64; EMBEDDING_DIM];
    for &id in &ids {
        for (m, v) in mean
            .iter_mut()
            .zip(&table[id as usize * EMBEDDING_DIM..][..EMBEDDING_DIM])
        {
            *m += f64::from(*v) / ids.len() as f64;
        }
    }
    let norm = mean.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    mean.iter().map(|x| (x / norm) as f32).collect()
}

fn texts(count: usize) -> Vec<String> {
    let words = ["the", "cat", "sat", "unaffable", "dog", "un", "cats"];
    (0..count)
        .map(|i| {
            (0..1 + i % 9)
                .map(|j| words[(i * 3 + j * 5) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn features_are_the_normalised_mean_and_vectors_are_unchanged() {
    let (encoder, table) = encoder();
    // More than one chunk, and a last chunk that is not full, on one and on several workers.
    let texts = texts(2 * TEXTS_PER_CHUNK + 5);
    for level in [SimdLevel::Portable, SimdLevel::detect()] {
        for threads in [1, 3] {
            let plain = encoder.embed(&texts, threads, level).expect("embed");
            let (vectors, features) = encoder
                .embed_with_features(&texts, threads, level)
                .expect("embed_with_features");
            assert_eq!(vectors, plain, "{level:?}, {threads} threads");
            assert_eq!(features.len(), texts.len() * EMBEDDING_DIM);
            for (text, row) in texts.iter().zip(features.chunks_exact(EMBEDDING_DIM)) {
                let expected = reference_features(&encoder, &table, text);
                for (got, want) in row.iter().zip(&expected) {
                    assert!(
                        (got - want).abs() < 1e-5,
                        "{text:?}: {row:?} vs {expected:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn no_texts_give_empty_outputs() {
    let (encoder, _) = encoder();
    let none: [&str; 0] = [];
    let (vectors, features) = encoder
        .embed_with_features(&none, 2, SimdLevel::Portable)
        .expect("empty input");
    assert!(vectors.is_empty() && features.is_empty());
}
