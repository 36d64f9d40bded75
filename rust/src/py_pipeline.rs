//! Background encoding for `score`'s pipeline (python/jeirt_lite/batch.py): `embed_start` copies a chunk of
//! texts and hands it to the rayon pool at once; `EmbedJob.wait` blocks, the GIL released, for its vectors.
//!
//! The caller lends the encoder no Python thread: a Python worker thread needs the GIL to start and to
//! finish every chunk, and waits for it behind the thread that parses the input, which leaves the pool idle
//! between chunks. Here the pool goes from one queued chunk to the next while the caller parses, scores and
//! writes others.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::py::JeirtError;
use crate::py_static::StaticEncoder;
use crate::SimdLevel;

type Outcome = Result<Vec<f32>, String>;

/// One chunk of texts being encoded on the rayon pool; `wait` returns its question vectors.
#[pyclass(frozen, module = "jeirt_lite._core")]
pub struct EmbedJob {
    rows: usize,
    dim: usize,
    outcome: Mutex<Option<Receiver<Outcome>>>,
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
        let values = match py.detach(move || receiver.recv()) {
            Ok(Ok(values)) => values,
            Ok(Err(message)) => return Err(JeirtError::new_err(message)),
            Err(_) => {
                return Err(JeirtError::new_err(
                    "the encoding job ended without a result",
                ))
            }
        };
        let array = Array2::from_shape_vec((self.rows, self.dim), values)
            .map_err(|e| JeirtError::new_err(format!("internal shape error: {e}")))?;
        Ok(array.into_pyarray(py))
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
    let inner = Arc::clone(&encoder.get().inner);
    let mut buffer = String::with_capacity(texts.iter().map(|text| text.len()).sum());
    let mut ends = Vec::with_capacity(texts.len());
    for text in &texts {
        buffer.push_str(text);
        ends.push(buffer.len());
    }
    drop(texts);
    let threads = crate::resolve_threads(threads);
    let pool = crate::pool::pool(threads).map_err(|e| JeirtError::new_err(e.to_string()))?;
    let (sender, receiver) = channel();
    let (rows, dim) = (ends.len(), inner.dim());
    pool.spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut start = 0;
            let slices: Vec<&str> = ends
                .iter()
                .map(|&end| {
                    let text = buffer.get(start..end).unwrap_or("");
                    start = end;
                    text
                })
                .collect();
            inner
                .embed(&slices, threads, SimdLevel::detect())
                .map_err(|e| e.to_string())
        }))
        .unwrap_or_else(|_| {
            Err("the static encoder panicked (a bug: please report it)".to_string())
        });
        // The caller may have given up on the job (an error elsewhere): then nobody reads the outcome.
        let _ = sender.send(outcome);
    });
    Ok(EmbedJob {
        rows,
        dim,
        outcome: Mutex::new(Some(receiver)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EmbedJob>()?;
    m.add_function(wrap_pyfunction!(embed_start, m)?)?;
    Ok(())
}
