//! PyO3 binding of the static encoder: `jeirt_lite._core.StaticEncoder` (built once per router from its
//! tokenizer.json settings and static_encoder.safetensors, see python/jeirt_lite._static_path.py).
//!
//! Texts cross as `PyBackedStr` (the Python string's own UTF-8 buffer, kept alive, no copy), so the GIL is
//! released for tokenising, pooling and the adapter.

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use std::sync::Arc;

use crate::encoder::text::{NormalizerOptions, TokenizerSpec};
use crate::python::convert::{contiguous, JeirtError};
use crate::SimdLevel;

/// A static router's text -> question vector pipeline, in Rust.
#[pyclass(frozen, module = "jeirt_lite._core")]
pub struct StaticEncoder {
    // Shared with background jobs (`pipeline`), which outlive the call that starts them.
    pub(crate) inner: Arc<crate::StaticEncoder>,
}

#[pymethods]
impl StaticEncoder {
    #[new]
    #[pyo3(signature = (vocab, unk_id, continuation_prefix, max_input_chars_per_word, added_tokens,
        clean_text, handle_chinese_chars, strip_accents, lowercase, cls_id, sep_id, max_length,
        table, w1, b1, w2, b2))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        vocab: Vec<(String, u32)>,
        unk_id: u32,
        continuation_prefix: String,
        max_input_chars_per_word: usize,
        added_tokens: Vec<(String, u32)>,
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: bool,
        lowercase: bool,
        cls_id: u32,
        sep_id: u32,
        max_length: usize,
        table: PyReadonlyArray2<'_, f32>,
        w1: PyReadonlyArray2<'_, f32>,
        b1: PyReadonlyArray1<'_, f32>,
        w2: PyReadonlyArray2<'_, f32>,
        b2: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Self> {
        let spec = TokenizerSpec {
            vocab,
            unk_id,
            continuation_prefix,
            max_input_chars_per_word,
            added_tokens,
            normalizer: NormalizerOptions {
                clean_text,
                handle_chinese_chars,
                strip_accents,
                lowercase,
            },
            cls_id,
            sep_id,
            max_length,
        };
        let embedding_dim = table.shape().get(1).copied().unwrap_or(0);
        let inner = crate::StaticEncoder::new(
            &spec,
            contiguous(&table, "table")?,
            embedding_dim,
            contiguous(&w1, "w1")?,
            contiguous(&b1, "b1")?,
            contiguous(&w2, "w2")?,
            contiguous(&b2, "b2")?,
        )
        .map_err(JeirtError::new_err)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Token ids of each text as `(ids uint32, offsets int64 (N + 1,))`:
    /// text i is `ids[offsets[i]:offsets[i+1]]`.
    fn token_ids<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
    ) -> (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i64>>) {
        let (ids, offsets) = py.detach(|| {
            let mut ids = Vec::new();
            let mut offsets = Vec::with_capacity(texts.len() + 1);
            offsets.push(0i64);
            for text in &texts {
                ids.extend(self.inner.token_ids(text));
                offsets.push(ids.len() as i64);
            }
            (ids, offsets)
        });
        (ids.into_pyarray(py), offsets.into_pyarray(py))
    }

    /// Question vectors, float32 `(N, dim)`, on `threads` workers (0: every core).
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let n = texts.len();
        let out = py
            .detach(|| self.inner.embed(&texts, threads, SimdLevel::detect()))
            .map_err(|e| JeirtError::new_err(e.to_string()))?;
        let array = Array2::from_shape_vec((n, self.inner.dim()), out)
            .map_err(|e| JeirtError::new_err(format!("internal shape error: {e}")))?;
        Ok(array.into_pyarray(py))
    }

    /// Question vectors `(N, dim)` and the encoder's features `(N, embedding_dim)` (the adapter's input: the
    /// L2-normalised mean of the token rows), both float32, on `threads` workers (0: every core).
    #[allow(clippy::type_complexity)]
    fn embed_with_features<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<f32>>)> {
        let n = texts.len();
        let (vectors, features) = py
            .detach(|| {
                self.inner
                    .embed_with_features(&texts, threads, SimdLevel::detect())
            })
            .map_err(|e| JeirtError::new_err(e.to_string()))?;
        let shape_error = |e: numpy::ndarray::ShapeError| {
            JeirtError::new_err(format!("internal shape error: {e}"))
        };
        let vectors =
            Array2::from_shape_vec((n, self.inner.dim()), vectors).map_err(shape_error)?;
        let features = Array2::from_shape_vec((n, self.inner.embedding_dim()), features)
            .map_err(shape_error)?;
        Ok((vectors.into_pyarray(py), features.into_pyarray(py)))
    }
}
