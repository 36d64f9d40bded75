//! What crosses the boundary: NumPy arrays borrowed as the kernels' views (C-contiguous, read in place, no
//! copy), Rust vectors handed to NumPy without copying, the common arguments (`threads`, `k`, calibration)
//! checked, and kernel errors raised as `JeirtError`. Every binding module takes these from here.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{Calibration, Config, KernelError, MatrixView};

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

/// `k` as a count of LLMs; a negative value gets the message of the kernels' own range check (which refuses 0
/// and k > K).
pub(crate) fn k_arg(k: i64, llm_rows: usize) -> PyResult<usize> {
    usize::try_from(k)
        .map_err(|_| JeirtError::new_err(format!("k must be in 1..=K (K = {llm_rows}), got {k}")))
}

/// A C-contiguous array's values, naming `name` and the element type in the error.
pub(crate) fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    Some(array)
        .filter(|a| a.is_c_contiguous())
        .and_then(|a| a.as_slice().ok())
        .ok_or_else(|| {
            let element = std::any::type_name::<T>();
            JeirtError::new_err(format!("{name} must be a C-contiguous {element} array"))
        })
}
