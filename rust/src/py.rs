//! PyO3 bindings: the `jeirt_lite._core` extension module. All Python-facing code lives here.
//!
//! Arrays arrive as C-contiguous float32 `PyReadonlyArray2` and are read in place (no copy); the GIL is
//! released for the computation; results are Rust vectors handed to NumPy without copying.

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{Calibration, Config, KernelError, MatrixView, Precision};

create_exception!(
    _core,
    JeirtError,
    PyValueError,
    "Bad input to a jeirt-lite kernel (shapes, NaN/inf rows, k, threads); a ValueError."
);

pub(crate) fn to_py(error: KernelError) -> PyErr {
    JeirtError::new_err(error.to_string())
}

/// Borrows a C-contiguous float32 array as a matrix view, naming `name` in errors.
pub(crate) fn view<'a>(
    array: &'a PyReadonlyArray2<'_, f32>,
    name: &'static str,
) -> PyResult<MatrixView<'a>> {
    // `as_slice` also accepts Fortran order, which would be read transposed: insist on C order.
    let slice = Some(array)
        .filter(|a| a.is_c_contiguous())
        .and_then(|a| a.as_slice().ok())
        .ok_or_else(|| {
            JeirtError::new_err(format!("{name} must be a C-contiguous float32 array"))
        })?;
    let shape = array.shape();
    let (rows, cols) = match shape {
        [rows, cols] => (*rows, *cols),
        _ => return Err(JeirtError::new_err(format!("{name} must be 2-D"))),
    };
    MatrixView::new(name, slice, rows, cols).map_err(to_py)
}

/// Borrows an optional contiguous float32 1-D array (a per-LLM parameter), naming `name` in errors.
pub(crate) fn vector<'a>(
    array: &'a Option<PyReadonlyArray1<'_, f32>>,
    name: &'static str,
) -> PyResult<Option<&'a [f32]>> {
    match array {
        None => Ok(None),
        Some(a) => a
            .as_slice()
            .map(Some)
            .map_err(|_| JeirtError::new_err(format!("{name} must be a contiguous float32 array"))),
    }
}

/// The optional per-LLM calibration (`scale`, `bias` on the logit) and (question, LLM) logit `offsets` every
/// kernel takes.
pub(crate) fn calibration<'a>(
    scale: &'a Option<PyReadonlyArray1<'_, f32>>,
    bias: &'a Option<PyReadonlyArray1<'_, f32>>,
    offsets: &'a Option<PyReadonlyArray2<'_, f32>>,
) -> PyResult<Calibration<'a>> {
    Ok(Calibration {
        scale: vector(scale, "scale")?,
        bias: vector(bias, "bias")?,
        offsets: offsets.as_ref().map(|o| view(o, "offsets")).transpose()?,
    })
}

pub(crate) fn config(threads: i64) -> PyResult<Config> {
    let threads = usize::try_from(threads)
        .map_err(|_| JeirtError::new_err(format!("threads must be >= 0, got {threads}")))?;
    Ok(Config::new(threads))
}

pub(crate) fn matrix<T: numpy::Element>(
    py: Python<'_>,
    data: Vec<T>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    let array = Array2::from_shape_vec((rows, cols), data)
        .map_err(|e| JeirtError::new_err(format!("internal shape error: {e}")))?;
    Ok(array.into_pyarray(py))
}

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

/// `k` as a count of LLMs; a negative value gets the message of the kernels' own range check (which refuses 0
/// and k > K).
pub(crate) fn k_arg(k: i64, llm_rows: usize) -> PyResult<usize> {
    usize::try_from(k)
        .map_err(|_| JeirtError::new_err(format!("k must be in 1..=K (K = {llm_rows}), got {k}")))
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("JeirtError", m.py().get_type::<JeirtError>())?;
    m.add_function(wrap_pyfunction!(probabilities, m)?)?;
    m.add_function(wrap_pyfunction!(top_k, m)?)?;
    m.add_function(wrap_pyfunction!(mean_probability, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_class::<crate::py_static::StaticEncoder>()?;
    crate::py_bf16::register(m)?;
    crate::py_pipeline::register(m)?;
    crate::py_csv::register(m)?;
    Ok(())
}
