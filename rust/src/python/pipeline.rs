//! Background encoding for `score`'s pipeline (python/jeirt_lite/batch.py): `embed_start` copies a chunk of
//! texts and hands it to the rayon pool at once; `EmbedJob.wait` blocks, the GIL released, for its vectors.
//!
//! The caller lends the encoder no Python thread: a Python worker thread needs the GIL to start and to
//! finish every chunk, and waits for it behind the thread that parses the input, which leaves the pool idle
//! between chunks. Here the pool goes from one queued chunk to the next while the caller parses, scores and
//! writes others.
//!
//! A chunk is queued as independent pieces of [`TEXTS_PER_CHUNK`] texts, each `spawn`ed on its own, rather
//! than as one job that splits itself with a parallel iterator: a worker waiting inside such a job for the
//! other worker's last piece takes the next queued job and runs it nested on its stack, so the first chunk's
//! vectors came back only after the later chunks' were done, and the pool then idled while the caller caught
//! up. Spawned pieces never wait for each other, and the pool's queue is first in, first out, so chunks finish
//! in the order they were started.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::encoder::TEXTS_PER_CHUNK;
use crate::python::convert::JeirtError;
use crate::python::static_encoder::StaticEncoder;
use crate::SimdLevel;

/// One piece's first text and its vectors (or why it failed).
type PieceOutcome = (usize, Result<Vec<f32>, String>);

/// The texts of one chunk in one buffer (`ends[i]`: where text i ends), shared by its pieces.
struct ChunkTexts {
    buffer: String,
    ends: Vec<usize>,
}

impl ChunkTexts {
    fn slices(&self, rows: Range<usize>) -> Vec<&str> {
        rows.map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            self.buffer.get(start..self.ends[i]).unwrap_or("")
        })
        .collect()
    }
}

/// One chunk of texts being encoded on the rayon pool; `wait` returns its question vectors.
#[pyclass(frozen, module = "jeirt_lite._core")]
pub struct EmbedJob {
    rows: usize,
    dim: usize,
    outcome: Mutex<Option<Receiver<PieceOutcome>>>,
}

#[pymethods]
impl EmbedJob {
    /// Number of texts in the job.
    #[getter]
    fn rows(&self) -> usize {
        self.rows
    }

    /// The question vectors, float32 `(rows, dim)`, once encoded (blocks until then, the GIL released).
    fn wait<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let receiver = self
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| JeirtError::new_err("this job's vectors were already collected"))?;
        let (rows, dim) = (self.rows, self.dim);
        let values = py
            .detach(move || collect_pieces(&receiver, rows, dim))
            .map_err(JeirtError::new_err)?;
        let array = Array2::from_shape_vec((rows, dim), values)
            .map_err(|e| JeirtError::new_err(format!("internal shape error: {e}")))?;
        Ok(array.into_pyarray(py))
    }
}

/// Every piece's vectors in their place; the error of the first failed piece, in text order.
fn collect_pieces(
    receiver: &Receiver<PieceOutcome>,
    rows: usize,
    dim: usize,
) -> Result<Vec<f32>, String> {
    let mut values = vec![0.0f32; rows * dim];
    let mut first_error: Option<(usize, String)> = None;
    for _ in 0..rows.div_ceil(TEXTS_PER_CHUNK) {
        let (first, outcome) = receiver
            .recv()
            .map_err(|_| "the encoding job ended without a result".to_string())?;
        match outcome {
            Ok(piece) => {
                let place = values.get_mut(first * dim..first * dim + piece.len());
                place
                    .ok_or("internal error: a piece of the wrong size")?
                    .copy_from_slice(&piece);
            }
            Err(message) => {
                if first_error.as_ref().is_none_or(|(at, _)| first < *at) {
                    first_error = Some((first, message));
                }
            }
        }
    }
    match first_error {
        Some((_, message)) => Err(message),
        None => Ok(values),
    }
}

/// Start encoding `texts` on the pool of `threads` workers (0: every core) and return at once.
///
/// The texts are copied into one buffer first, so the job holds no Python object.
#[pyfunction]
fn embed_start(
    encoder: &Bound<'_, StaticEncoder>,
    texts: Vec<PyBackedStr>,
    threads: usize,
) -> PyResult<EmbedJob> {
    let inner: Arc<crate::StaticEncoder> = Arc::clone(&encoder.get().inner);
    let mut buffer = String::with_capacity(texts.iter().map(|text| text.len()).sum());
    let mut ends = Vec::with_capacity(texts.len());
    for text in &texts {
        buffer.push_str(text);
        ends.push(buffer.len());
    }
    drop(texts);
    let rows = ends.len();
    let chunk = Arc::new(ChunkTexts { buffer, ends });
    let pool = crate::pool::pool(crate::resolve_threads(threads))
        .map_err(|e| JeirtError::new_err(e.to_string()))?;
    let (sender, receiver) = channel();
    let level = SimdLevel::detect();
    for first in (0..rows).step_by(TEXTS_PER_CHUNK) {
        let (inner, chunk, sender) = (Arc::clone(&inner), Arc::clone(&chunk), sender.clone());
        pool.spawn(move || {
            let piece = first..rows.min(first + TEXTS_PER_CHUNK);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                inner
                    .embed(&chunk.slices(piece), 1, level)
                    .map_err(|e| e.to_string())
            }))
            .unwrap_or_else(|_| {
                Err("the static encoder panicked (a bug: please report it)".to_string())
            });
            // The caller may have given up on the job (an error elsewhere): then nobody reads the outcome.
            let _ = sender.send((first, outcome));
        });
    }
    Ok(EmbedJob {
        rows,
        dim: inner.dim(),
        outcome: Mutex::new(Some(receiver)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EmbedJob>()?;
    m.add_function(wrap_pyfunction!(embed_start, m)?)?;
    Ok(())
}
