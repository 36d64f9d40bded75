//! The static encoder in Rust: texts -> token ids ([`text`]) -> mean of the token rows of a table ->
//! L2 normalisation -> two-layer MLP adapter (`relu(x W1^T + b1) W2^T + b2`) -> question vectors.
//!
//! This is the computation of the static routers' ONNX graph (training/static_encoder.py), without padding,
//! Python lists or a session call. Texts are processed in chunks of [`TEXTS_PER_CHUNK`], in parallel on the
//! rayon pool; each chunk's pooled rows go through the adapter together, so its weights are read from cache
//! once per tile of rows, not once per text.

pub(crate) mod adapter;
pub mod text;

use rayon::prelude::*;

use crate::error::KernelError;
use crate::pool::{pool, resolve_threads};
use crate::simd::{Portable, Simd, SimdLevel};
use adapter::{Adapter, AdapterScratch};
use text::{BertTokenizer, TokenizerScratch, TokenizerSpec};

/// Texts per unit of parallel work.
pub const TEXTS_PER_CHUNK: usize = 64;
/// Table rows are padded to a multiple of this many floats (the pooling loop's register block).
pub(crate) const POOL_BLOCK: usize = 128;
/// Below this the pooled vector is not divided by its norm (the graph's `Max(norm, 1e-12)`).
const NORM_EPS: f32 = 1e-12;

/// Tokenizer, token table and adapter of a static router.
pub struct StaticEncoder {
    tokenizer: BertTokenizer,
    /// `vocab_rows x padded_dim`, zero-padded.
    table: Vec<f32>,
    vocab_rows: usize,
    embedding_dim: usize,
    padded_dim: usize,
    adapter: Adapter,
}

/// One unit of parallel work: its rows of question vectors, of features (when asked) and its texts.
type Chunk<'a, T> = ((&'a mut [f32], Option<&'a mut [f32]>), &'a [T]);

/// Buffers of one worker.
struct Scratch {
    ids: Vec<u32>,
    tokens: TokenizerScratch,
    pooled: Vec<f32>,
    adapter: AdapterScratch,
}

impl StaticEncoder {
    /// Checks every id against the table and every weight for finiteness.
    ///
    /// `table` is `vocab_rows x embedding_dim`; `w1` is `hidden x embedding_dim`, `w2` is `out x hidden`
    /// (PyTorch's `Linear` layout).
    pub fn new(
        spec: &TokenizerSpec,
        table: &[f32],
        embedding_dim: usize,
        w1: &[f32],
        b1: &[f32],
        w2: &[f32],
        b2: &[f32],
    ) -> Result<Self, String> {
        if embedding_dim == 0 || table.is_empty() || !table.len().is_multiple_of(embedding_dim) {
            return Err(format!(
                "the token table ({} values) is not a whole number of rows of {embedding_dim}",
                table.len()
            ));
        }
        if let Some(i) = table.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "the token table holds NaN or inf (row {})",
                i / embedding_dim
            ));
        }
        let vocab_rows = table.len() / embedding_dim;
        let ids = spec
            .vocab
            .iter()
            .map(|(_, id)| *id)
            .chain(spec.added_tokens.iter().map(|(_, id)| *id))
            .chain([spec.unk_id, spec.cls_id, spec.sep_id]);
        for id in ids {
            if id as usize >= vocab_rows {
                return Err(format!(
                    "token id {id} has no row in the token table ({vocab_rows} rows)"
                ));
            }
        }
        let tokenizer = BertTokenizer::new(spec)?;
        let adapter = Adapter::new(embedding_dim, w1, b1, w2, b2)?;
        let padded_dim = embedding_dim.div_ceil(POOL_BLOCK) * POOL_BLOCK;
        let mut padded = vec![0.0f32; vocab_rows * padded_dim];
        for (dst, src) in padded
            .chunks_exact_mut(padded_dim)
            .zip(table.chunks_exact(embedding_dim))
        {
            dst[..embedding_dim].copy_from_slice(src);
        }
        Ok(Self {
            tokenizer,
            table: padded,
            vocab_rows,
            embedding_dim,
            padded_dim,
            adapter,
        })
    }

    /// Dimension of the question vectors.
    pub fn dim(&self) -> usize {
        self.adapter.out_dim()
    }

    /// Dimension of the token table.
    pub fn embedding_dim(&self) -> usize {
        self.embedding_dim
    }

    /// Rows of the token table.
    pub fn vocab_rows(&self) -> usize {
        self.vocab_rows
    }

    fn scratch(&self) -> Scratch {
        Scratch {
            ids: Vec::with_capacity(512),
            tokens: TokenizerScratch::default(),
            pooled: vec![0.0; TEXTS_PER_CHUNK * self.padded_dim],
            adapter: self.adapter.scratch(TEXTS_PER_CHUNK),
        }
    }

    /// The token ids of `text`, as `tokenizers` would give them (special tokens and truncation included).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.tokenizer
            .encode_into(text, &mut ids, &mut TokenizerScratch::default());
        ids
    }

    /// Question vectors of `texts`, row-major `N x dim`, on `threads` workers (0: every core).
    pub fn embed<T: AsRef<str> + Sync>(
        &self,
        texts: &[T],
        threads: usize,
        level: SimdLevel,
    ) -> Result<Vec<f32>, KernelError> {
        self.embed_into(texts, threads, level, false)
            .map(|(vectors, _)| vectors)
    }

    /// Question vectors (`N x dim`) and the encoder's features (`N x embedding_dim`: the adapter's input, the
    /// L2-normalised mean of the token rows, which the ONNX graph exposes as its `features` output and
    /// onboarding corrections read), from one pass over the texts.
    pub fn embed_with_features<T: AsRef<str> + Sync>(
        &self,
        texts: &[T],
        threads: usize,
        level: SimdLevel,
    ) -> Result<(Vec<f32>, Vec<f32>), KernelError> {
        self.embed_into(texts, threads, level, true)
    }

    fn embed_into<T: AsRef<str> + Sync>(
        &self,
        texts: &[T],
        threads: usize,
        level: SimdLevel,
        with_features: bool,
    ) -> Result<(Vec<f32>, Vec<f32>), KernelError> {
        if !level.is_supported() {
            return Err(KernelError::UnsupportedSimd(level.name()));
        }
        let d = self.dim();
        let e = if with_features { self.embedding_dim } else { 0 };
        let mut out = crate::alloc::zeroed::<f32>(texts.len(), d)?;
        let mut features = crate::alloc::zeroed::<f32>(texts.len(), e)?;
        // One (possibly absent) feature block per chunk of texts; `chunks_mut(0)` would panic.
        let feature_chunks: Vec<Option<&mut [f32]>> = if e > 0 {
            features.chunks_mut(TEXTS_PER_CHUNK * e).map(Some).collect()
        } else {
            (0..texts.len().div_ceil(TEXTS_PER_CHUNK))
                .map(|_| None)
                .collect()
        };
        let work = |((chunk_out, chunk_features), chunk_texts): Chunk<'_, T>,
                    scratch: &mut Scratch| {
            self.embed_chunk(chunk_texts, chunk_out, chunk_features, scratch, level)
        };
        let chunks = out
            .chunks_mut(TEXTS_PER_CHUNK * d)
            .zip(feature_chunks)
            .zip(texts.chunks(TEXTS_PER_CHUNK));
        let threads = resolve_threads(threads);
        if threads <= 1 || texts.len() <= TEXTS_PER_CHUNK {
            let mut scratch = self.scratch();
            chunks.for_each(|chunk| work(chunk, &mut scratch));
        } else {
            let items: Vec<_> = chunks.collect();
            pool(threads)?.install(|| {
                items
                    .into_par_iter()
                    .for_each_init(|| self.scratch(), |scratch, chunk| work(chunk, scratch))
            });
        }
        Ok((out, features))
    }

    /// One chunk of at most [`TEXTS_PER_CHUNK`] texts into `out` (`texts.len() x dim`) and, when given,
    /// their pooled rows into `features` (`texts.len() x embedding_dim`).
    fn embed_chunk<T: AsRef<str>>(
        &self,
        texts: &[T],
        out: &mut [f32],
        features: Option<&mut [f32]>,
        scratch: &mut Scratch,
        level: SimdLevel,
    ) {
        let p = self.padded_dim;
        for (text, row) in texts.iter().zip(scratch.pooled.chunks_exact_mut(p)) {
            self.tokenizer
                .encode_into(text.as_ref(), &mut scratch.ids, &mut scratch.tokens);
            // SAFETY: `level` was checked to be supported by this CPU in `embed_into`.
            unsafe { pool_dispatch(level, &self.table, p, &scratch.ids, row) };
        }
        let pooled = scratch.pooled.get(..texts.len() * p).unwrap_or(&[]);
        if let Some(features) = features {
            for (dst, src) in features
                .chunks_exact_mut(self.embedding_dim)
                .zip(pooled.chunks_exact(p))
            {
                dst.copy_from_slice(&src[..self.embedding_dim]);
            }
        }
        self.adapter
            .forward(pooled, p, texts.len(), out, &mut scratch.adapter, level);
    }
}

/// Mean of the table rows of `ids`, L2-normalised, into `out` (`padded_dim` floats).
///
/// # Safety
/// `level` must be supported by this CPU.
unsafe fn pool_dispatch(
    level: SimdLevel,
    table: &[f32],
    padded_dim: usize,
    ids: &[u32],
    out: &mut [f32],
) {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => pool_avx512(table, padded_dim, ids, out),
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2Fma => pool_avx2(table, padded_dim, ids, out),
        _ => pool_generic::<Portable>(table, padded_dim, ids, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn pool_avx512(table: &[f32], padded_dim: usize, ids: &[u32], out: &mut [f32]) {
    pool_generic::<crate::simd::Avx512>(table, padded_dim, ids, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pool_avx2(table: &[f32], padded_dim: usize, ids: &[u32], out: &mut [f32]) {
    pool_generic::<crate::simd::Avx2Fma>(table, padded_dim, ids, out)
}

/// Sums blocks of [`POOL_BLOCK`] columns in registers over all tokens, then scales by 1 / count / norm.
#[inline(always)]
unsafe fn pool_generic<S: Simd>(table: &[f32], padded_dim: usize, ids: &[u32], out: &mut [f32]) {
    const MAX_VECTORS: usize = POOL_BLOCK / 8;
    let vectors = POOL_BLOCK / S::LANES;
    debug_assert!(vectors <= MAX_VECTORS && out.len() >= padded_dim);
    let rows = table.len() / padded_dim;
    for block in (0..padded_dim).step_by(POOL_BLOCK) {
        let mut acc = [S::splat(0.0); MAX_VECTORS];
        for &id in ids {
            if (id as usize) < rows {
                let row = table.as_ptr().add(id as usize * padded_dim + block);
                for (v, a) in acc.iter_mut().enumerate().take(vectors) {
                    *a = S::add(*a, S::load(row.add(v * S::LANES)));
                }
            }
        }
        let dst = out.as_mut_ptr().add(block);
        for (v, a) in acc.iter().enumerate().take(vectors) {
            S::store(dst.add(v * S::LANES), *a);
        }
    }
    let count = ids.len().max(1) as f32;
    let mut squares = 0.0f32;
    for x in out.iter_mut().take(padded_dim) {
        *x /= count;
        squares += *x * *x;
    }
    let scale = 1.0 / squares.sqrt().max(NORM_EPS);
    for x in out.iter_mut().take(padded_dim) {
        *x *= scale;
    }
}

#[cfg(test)]
mod tests;
