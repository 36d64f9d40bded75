//! PyO3 binding of the neighbour vote kernel (`votes`): `jeirt_lite._core.VoteTable`, built once per router
//! from its stored questions (python/jeirt_lite/_neighbours.py), and its `sums`, the GIL released.

use std::sync::Arc;

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::python::convert::{contiguous, matrix, to_py, JeirtError};
use crate::SimdLevel;
use crate::VoteSettings;

/// Per query and LLM: the weighted sums of answers and the sums of weights.
type SumsAndCounts<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<f32>>);

/// A router's stored questions, ready to vote (see rust/src/votes/mod.rs).
#[pyclass(frozen, module = "jeirt_lite._core")]
pub struct VoteTable {
    // Shared with background jobs, which outlive the call that starts them.
    pub(crate) inner: Arc<crate::VoteTable>,
}

fn shape2(shape: &[usize], name: &str) -> PyResult<(usize, usize)> {
    match shape {
        [rows, cols] => Ok((*rows, *cols)),
        _ => Err(JeirtError::new_err(format!("{name} must be 2-D"))),
    }
}

/// The settings of one call, checked.
pub(crate) fn settings(
    k: usize,
    temperature: Option<f32>,
    candidates: usize,
) -> PyResult<VoteSettings> {
    if temperature.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(JeirtError::new_err(
            "temperature must be None or a finite number > 0",
        ));
    }
    Ok(VoteSettings {
        k,
        temperature,
        candidates,
    })
}

#[pymethods]
impl VoteTable {
    /// `keys` (n, p) float32 unit rows, `answers` (n, K) int8 (1, 0, -1 not asked), `projection` (p, dims)
    /// float32 (dims may be 0: every key scored exactly). With `centre` (f,) and `query_map` (f, p), both
    /// float32, queries of f features are mapped to the keys' space first: `(q / |q| - centre) · query_map`.
    #[new]
    #[pyo3(signature = (keys, answers, projection, centre=None, query_map=None))]
    fn new(
        keys: PyReadonlyArray2<'_, f32>,
        answers: PyReadonlyArray2<'_, i8>,
        projection: PyReadonlyArray2<'_, f32>,
        centre: Option<PyReadonlyArray1<'_, f32>>,
        query_map: Option<PyReadonlyArray2<'_, f32>>,
    ) -> PyResult<Self> {
        let (n, cols) = shape2(keys.shape(), "keys")?;
        let (rows, _) = shape2(answers.shape(), "answers")?;
        let (p, dims) = shape2(projection.shape(), "projection")?;
        if rows != n || p != cols {
            return Err(JeirtError::new_err(format!(
                "keys ({n}, {cols}), answers ({rows}, ...) and projection ({p}, {dims}) do not agree"
            )));
        }
        let table = crate::VoteTable::new(
            contiguous(&keys, "keys")?.to_vec(),
            contiguous(&answers, "answers")?.to_vec(),
            n,
            cols,
            contiguous(&projection, "projection")?.to_vec(),
            dims,
        )
        .map_err(to_py)?;
        let table = match (centre, query_map) {
            (None, None) => table,
            (Some(centre), Some(map)) => {
                let (f, p) = shape2(map.shape(), "query_map")?;
                if p != cols || centre.len() != f {
                    return Err(JeirtError::new_err(format!(
                        "centre ({},) and query_map ({f}, {p}) do not agree with keys ({n}, {cols})",
                        centre.len()
                    )));
                }
                let centre = centre
                    .as_slice()
                    .map_err(|_| JeirtError::new_err("centre must be contiguous"))?
                    .to_vec();
                let map = contiguous(&map, "query_map")?.to_vec();
                table.with_query_map(centre, map).map_err(to_py)?
            }
            _ => {
                return Err(JeirtError::new_err(
                    "centre and query_map come together (both or neither)",
                ))
            }
        };
        Ok(Self {
            inner: Arc::new(table),
        })
    }

    /// Per query and LLM: (weighted sum of answers, sum of weights), each (rows, K) float32, over the first
    /// `k` answered of the `2k` nearest keys; `candidates` keys kept per query by the coarse pass.
    #[pyo3(signature = (queries, k, temperature, candidates, threads))]
    fn sums<'py>(
        &self,
        py: Python<'py>,
        queries: PyReadonlyArray2<'_, f32>,
        k: usize,
        temperature: Option<f32>,
        candidates: usize,
        threads: usize,
    ) -> PyResult<SumsAndCounts<'py>> {
        let (rows, _) = shape2(queries.shape(), "queries")?;
        // Copied before the GIL is released: another thread could write to a borrowed array meanwhile.
        let values = contiguous(&queries, "queries")?.to_vec();
        let settings = settings(k, temperature, candidates)?;
        let inner = Arc::clone(&self.inner);
        let (sums, counts) = py
            .detach(move || inner.sums(&values, &settings, threads, SimdLevel::detect()))
            .map_err(to_py)?;
        let llms = self.inner.llms();
        Ok((
            matrix(py, sums, rows, llms)?,
            matrix(py, counts, rows, llms)?,
        ))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VoteTable>()?;
    Ok(())
}
