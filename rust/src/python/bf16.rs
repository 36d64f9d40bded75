//! PyO3 bindings of the reduced-precision scoring pass (`top_k_bf16`, `bf16_supported`; `probabilities` in kernels.rs
//! takes `bfloat16=True`) and of the multiply-add peak the benchmarks compare the kernels with.

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::python::convert::{calibration, config, k_arg, matrix, to_py, view};
use crate::Precision;

/// `top_k` (no penalty) with the bf16 shortlist and exact rescoring; the float32 kernel where the CPU lacks
/// AVX-512 BF16 or the table does not fit bfloat16.
#[pyfunction]
#[pyo3(signature = (questions, llms, k, threads, scale=None, bias=None))]
#[allow(clippy::type_complexity)]
fn top_k_bf16<'py>(
    py: Python<'py>,
    questions: PyReadonlyArray2<'py, f32>,
    llms: PyReadonlyArray2<'py, f32>,
    k: i64,
    threads: i64,
    scale: Option<PyReadonlyArray1<'py, f32>>,
    bias: Option<PyReadonlyArray1<'py, f32>>,
) -> PyResult<(Bound<'py, PyArray2<u32>>, Bound<'py, PyArray2<f32>>)> {
    let (q, m, cfg) = (
        view(&questions, "questions")?,
        view(&llms, "llms")?,
        config(threads)?,
    );
    let k = k_arg(k, m.rows())?;
    let cal = calibration(&scale, &bias, &None)?;
    let (indices, values) = py
        .detach(|| crate::top_k_with_precision(q, m, k, &cal, None, &cfg, Precision::Bf16))
        .map_err(to_py)?;
    Ok((
        matrix(py, indices, q.rows(), k)?,
        matrix(py, values, q.rows(), k)?,
    ))
}

/// Whether this CPU has AVX-512 BF16 (the reduced-precision pass).
#[pyfunction]
fn bf16_supported() -> bool {
    Precision::Bf16.is_supported()
}

/// One core's measured multiply-add peak in GFLOP/s: `(float32 FMA at the detected SIMD level, bfloat16
/// vdpbf16ps or None)`, each timed for about `seconds` with the GIL released.
#[pyfunction]
fn multiply_add_peak(py: Python<'_>, seconds: f64) -> (f64, Option<f64>) {
    py.detach(|| {
        (
            crate::fma_peak_gflops(crate::SimdLevel::detect(), seconds),
            crate::bf16_peak_gflops(seconds),
        )
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(top_k_bf16, m)?)?;
    m.add_function(wrap_pyfunction!(bf16_supported, m)?)?;
    m.add_function(wrap_pyfunction!(multiply_add_peak, m)?)?;
    Ok(())
}
