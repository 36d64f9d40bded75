//! Background encoding for `score`'s pipeline (python/jeirt_lite/_pipeline.py): `embed_start` copies a chunk of
//! texts and hands it to the rayon pool at once; `EmbedJob.wait_all` blocks, the GIL released, for its vectors
//! (with the encoder's features and the neighbour votes' sums, when asked for). A router that votes
//! gets its votes in the same piece of work as its vectors: the features never leave Rust, and the search runs
//! on the pool beside the encoding, not on the thread that reads and writes.
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

use numpy::PyArray2;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::encoder::TEXTS_PER_CHUNK;
use crate::python::convert::{matrix, JeirtError};
use crate::python::static_encoder::StaticEncoder;
use crate::python::votes::{settings, VoteTable};
use crate::{SimdLevel, VoteSettings};

/// What one piece of texts gives: vectors, and features and vote sums when asked for (else empty).
struct Piece {
    parts: [Vec<f32>; 4],
}

/// One piece's first text and its outputs (or why it failed).
type PieceOutcome = (usize, Result<Piece, String>);

/// The outputs of a job: vectors `(rows, dim)`, features `(rows, p)`, vote sums and weights `(rows, K)` each.
type Outputs<'py> = (
    Bound<'py, PyArray2<f32>>,
    Option<Bound<'py, PyArray2<f32>>>,
    Option<Bound<'py, PyArray2<f32>>>,
    Option<Bound<'py, PyArray2<f32>>>,
);

/// The neighbour votes a job computes for each piece, from its features.
struct VoteRequest {
    table: Arc<crate::VoteTable>,
    settings: VoteSettings,
}

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

/// One chunk of texts being encoded on the rayon pool; `wait_all` returns its outputs.
#[pyclass(frozen, module = "jeirt_lite._core")]
pub struct EmbedJob {
    rows: usize,
    /// Values per row of each output (0: not computed).
    widths: [usize; 4],
    outcome: Mutex<Option<Receiver<PieceOutcome>>>,
}

#[pymethods]
impl EmbedJob {
    /// `(vectors, features, vote sums, vote weights)`, the last three None where not asked for, once encoded
    /// (blocks until then, the GIL released); once only.
    fn wait_all<'py>(&self, py: Python<'py>) -> PyResult<Outputs<'py>> {
        let receiver = self
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| JeirtError::new_err("this job's vectors were already collected"))?;
        let (rows, widths) = (self.rows, self.widths);
        let [vectors, features, sums, counts] = py
            .detach(move || collect_pieces(&receiver, rows, widths))
            .map_err(JeirtError::new_err)?;
        let optional = |values: Vec<f32>, width: usize| {
            (width > 0)
                .then(|| matrix(py, values, rows, width))
                .transpose()
        };
        Ok((
            matrix(py, vectors, rows, widths[0])?,
            optional(features, widths[1])?,
            optional(sums, widths[2])?,
            optional(counts, widths[3])?,
        ))
    }
}

/// Every piece's outputs in their place; the error of the first failed piece, in text order.
fn collect_pieces(
    receiver: &Receiver<PieceOutcome>,
    rows: usize,
    widths: [usize; 4],
) -> Result<[Vec<f32>; 4], String> {
    let mut values = widths.map(|width| vec![0.0f32; rows * width]);
    let mut first_error: Option<(usize, String)> = None;
    for _ in 0..rows.div_ceil(TEXTS_PER_CHUNK) {
        let (first, outcome) = receiver
            .recv()
            .map_err(|_| "the encoding job ended without a result".to_string())?;
        match outcome {
            Ok(piece) => {
                for ((out, part), width) in values.iter_mut().zip(&piece.parts).zip(widths) {
                    out.get_mut(first * width..first * width + part.len())
                        .ok_or("internal error: a piece of the wrong size")?
                        .copy_from_slice(part);
                }
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

/// One piece: its vectors, and its features and votes when asked for.
fn encode_piece(
    encoder: &crate::StaticEncoder,
    texts: &[&str],
    features: bool,
    votes: Option<&VoteRequest>,
    level: SimdLevel,
) -> Result<Piece, String> {
    let error = |e: crate::KernelError| e.to_string();
    if !features && votes.is_none() {
        let vectors = encoder.embed(texts, 1, level).map_err(error)?;
        return Ok(Piece {
            parts: [vectors, Vec::new(), Vec::new(), Vec::new()],
        });
    }
    let (vectors, rows) = encoder
        .embed_with_features(texts, 1, level)
        .map_err(error)?;
    let (sums, counts) = match votes {
        Some(request) => request
            .table
            .sums(&rows, &request.settings, 1, level)
            .map_err(error)?,
        None => (Vec::new(), Vec::new()),
    };
    let rows = if features { rows } else { Vec::new() };
    Ok(Piece {
        parts: [vectors, rows, sums, counts],
    })
}

/// Start encoding `texts` on the pool of `threads` workers (0: every core) and return at once.
///
/// The texts are copied into one buffer first, so the job holds no Python object.
/// With `features`, the job also gives the encoder's features; with `votes` (a `VoteTable` and its `k`,
/// `temperature`, `candidates`), each row's vote sums (`VoteTable.sums`), computed in the same piece of work.
#[pyfunction]
#[pyo3(signature = (encoder, texts, threads, features=false, votes=None, k=1, temperature=None, candidates=0))]
#[allow(clippy::too_many_arguments)]
fn embed_start(
    encoder: &Bound<'_, StaticEncoder>,
    texts: Vec<PyBackedStr>,
    threads: usize,
    features: bool,
    votes: Option<PyRef<'_, VoteTable>>,
    k: usize,
    temperature: Option<f32>,
    candidates: usize,
) -> PyResult<EmbedJob> {
    let request = match votes {
        Some(table) => Some(Arc::new(VoteRequest {
            table: Arc::clone(&table.inner),
            settings: settings(k, temperature, candidates)?,
        })),
        None => None,
    };
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
        let request = request.clone();
        pool.spawn(move || {
            let piece = first..rows.min(first + TEXTS_PER_CHUNK);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let texts = chunk.slices(piece);
                encode_piece(&inner, &texts, features, request.as_deref(), level)
            }))
            .unwrap_or_else(|_| {
                Err("the static encoder panicked (a bug: please report it)".to_string())
            });
            // The caller may have given up on the job (an error elsewhere): then nobody reads the outcome.
            let _ = sender.send((first, outcome));
        });
    }
    let llms = request.as_ref().map_or(0, |r| r.table.llms());
    let feature_width = if features { inner.embedding_dim() } else { 0 };
    Ok(EmbedJob {
        rows,
        widths: [inner.dim(), feature_width, llms, llms],
        outcome: Mutex::new(Some(receiver)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EmbedJob>()?;
    m.add_function(wrap_pyfunction!(embed_start, m)?)?;
    Ok(())
}
