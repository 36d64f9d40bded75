//! Bindings of the float32 kernels (`probabilities`, `top_k`, `mean_probability`) and of what the library
//! reports about its build (`build_profile`, `simd_level`). The GIL is released for the computation.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::python::convert::{calibration, config, k_arg, matrix, to_py, vector, view};
use crate::Precision;

/// P(correct) for every question x LLM pair, float32 (N, K). With `bfloat16`, logits from the bf16 pass where
/// `probabilities_with_precision` can take it (AVX-512 BF16, no offsets), the float32 kernel otherwise.
#[pyfunction]
#[pyo3(signature = (questions, llms, threads, scale=None, bias=None, offsets=None, bfloat16=false))]
#[allow(clippy::too_many_arguments)]
fn probabilities<'py>(
    py: Python<'py>,
    questions: PyReadonlyArray2<'py, f32>,
    llms: PyReadonlyArray2<'py, f32>,
    threads: i64,
    scale: Option<PyReadonlyArray1<'py, f32>>,
    bias: Option<PyReadonlyArray1<'py, f32>>,
    offsets: Option<PyReadonlyArray2<'py, f32>>,
    bfloat16: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (q, m, cfg) = (
        view(&questions, "questions")?,
        view(&llms, "llms")?,
        config(threads)?,
    );
    let cal = calibration(&scale, &bias, &offsets)?;
    let precision = if bfloat16 {
        Precision::Bf16
    } else {
        Precision::Float32
    };
    let out = py
        .detach(|| crate::probabilities_with_precision(q, m, &cal, &cfg, precision))
        .map_err(to_py)?;
    matrix(py, out, q.rows(), m.rows())
}

/// The k most likely-correct LLMs per question: (uint32 (N, k) indices, float32 (N, k) probabilities).
#[pyfunction]
#[pyo3(signature = (questions, llms, k, threads, scale=None, bias=None, penalty=None, offsets=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn top_k<'py>(
    py: Python<'py>,
    questions: PyReadonlyArray2<'py, f32>,
    llms: PyReadonlyArray2<'py, f32>,
    k: i64,
    threads: i64,
    scale: Option<PyReadonlyArray1<'py, f32>>,
    bias: Option<PyReadonlyArray1<'py, f32>>,
    penalty: Option<PyReadonlyArray1<'py, f32>>,
    offsets: Option<PyReadonlyArray2<'py, f32>>,
) -> PyResult<(Bound<'py, PyArray2<u32>>, Bound<'py, PyArray2<f32>>)> {
    let (q, m, cfg) = (
        view(&questions, "questions")?,
        view(&llms, "llms")?,
        config(threads)?,
    );
    let k = k_arg(k, m.rows())?;
    let cal = calibration(&scale, &bias, &offsets)?;
    let pen = vector(&penalty, "penalty")?;
    let (indices, values) = py
        .detach(|| crate::top_k_adjusted(q, m, k, &cal, pen, &cfg))
        .map_err(to_py)?;
    Ok((
        matrix(py, indices, q.rows(), k)?,
        matrix(py, values, q.rows(), k)?,
    ))
}

/// Mean P(correct) per LLM over the questions, float32 (K,).
#[pyfunction]
#[pyo3(signature = (questions, llms, threads, scale=None, bias=None, offsets=None))]
fn mean_probability<'py>(
    py: Python<'py>,
    questions: PyReadonlyArray2<'py, f32>,
    llms: PyReadonlyArray2<'py, f32>,
    threads: i64,
    scale: Option<PyReadonlyArray1<'py, f32>>,
    bias: Option<PyReadonlyArray1<'py, f32>>,
    offsets: Option<PyReadonlyArray2<'py, f32>>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let (q, m, cfg) = (
        view(&questions, "questions")?,
        view(&llms, "llms")?,
        config(threads)?,
    );
    let cal = calibration(&scale, &bias, &offsets)?;
    let out = py
        .detach(|| crate::mean_probability_calibrated(q, m, &cal, &cfg))
        .map_err(to_py)?;
    Ok(out.into_pyarray(py))
}

/// "release" or "debug".
#[pyfunction]
fn build_profile() -> &'static str {
    crate::build_profile()
}

/// The SIMD code path the kernels use on this CPU.
#[pyfunction]
fn simd_level() -> &'static str {
    crate::simd_level()
}

/// The cores this process may run on: its CPU affinity and its cgroup's CPU quota (a container's CPU limit), what
/// the thread pools take for `threads = 0`.
#[pyfunction]
fn available_cores() -> usize {
    crate::resolve_threads(0)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(probabilities, m)?)?;
    m.add_function(wrap_pyfunction!(top_k, m)?)?;
    m.add_function(wrap_pyfunction!(mean_probability, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(available_cores, m)?)?;
    Ok(())
}
