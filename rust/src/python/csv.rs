//! PyO3 binding of the strict CSV/TSV parser (`crate::io::csv_records`): `jeirt_lite._core.CsvParser`, driven by
//! python/jeirt_lite/_io/records.py `CsvRecords`. Blocks are parsed with the GIL released; `take` turns up to
//! a chunk of records into the columns, line numbers and problems of one `RowBatch`. `format_score_rows` is
//! the other direction: `score`'s output rows (`crate::io::score_rows`), for python/jeirt_lite/_io/writers.py.

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyString};

use crate::io::csv_records::{CsvParser as Parser, Item};
use crate::io::score_rows::{format_score_rows as format_rows, ScoreRows};
use crate::python::convert::{contiguous, JeirtError};

/// Columns (one list per wanted column, `None` for a bad row), each row's last line, the bad rows' problems,
/// and the malformed record that ends the file (its index, `csv.Error`'s text, the line it starts on).
type Batch = (
    Vec<Vec<Py<PyAny>>>,
    Vec<u64>,
    Vec<(usize, String)>,
    Option<(usize, String, u64)>,
);

/// A streaming strict CSV parser: `feed` blocks, `finish` at the end, then `header` once and `take` chunks.
#[pyclass(module = "jeirt_lite._core")]
pub struct CsvParser {
    inner: Parser,
    /// The line the next record starts on (what a malformed record's message names).
    start: u64,
}

#[pymethods]
impl CsvParser {
    /// `max_record_bytes`: a longer record is the error that ends the file (see `crate::io::csv_records`).
    #[new]
    fn new(delimiter: &str, max_record_bytes: u64) -> PyResult<Self> {
        match delimiter.as_bytes() {
            [byte] if !matches!(byte, b'"' | b'\r' | b'\n') => Ok(Self {
                inner: Parser::new(*byte, max_record_bytes),
                start: 1,
            }),
            _ => Err(JeirtError::new_err(format!(
                "the delimiter must be one ASCII character other than a quote or a line end, got {delimiter:?}"
            ))),
        }
    }

    /// Parse a block of the file (after any byte-order mark), the GIL released.
    fn feed(&mut self, py: Python<'_>, block: &Bound<'_, PyBytes>) {
        let data = block.as_bytes();
        let inner = &mut self.inner;
        py.detach(|| inner.feed(data));
    }

    /// The end of the file.
    fn finish(&mut self) {
        self.inner.finish();
    }

    /// Records (and the error ending the file) parsed and not yet taken; blank lines are not counted.
    #[getter]
    fn records_ready(&self) -> usize {
        self.inner.records_ready()
    }

    /// Whether anything at all (a blank line too) is parsed and not yet taken.
    #[getter]
    fn has_item(&self) -> bool {
        self.inner.has_item()
    }

    /// Whether the end of the file was seen or an error ended it.
    #[getter]
    fn done(&self) -> bool {
        self.inner.done()
    }

    /// The first item as the header: `(fields as bytes, None)`, `(None, error text)`, or `(None, None)` for an
    /// empty file. A blank first line is a header with no fields, as `csv.reader` gives it.
    #[allow(clippy::type_complexity)]
    fn header<'py>(
        &mut self,
        py: Python<'py>,
    ) -> (Option<Vec<Bound<'py, PyBytes>>>, Option<String>) {
        match self.inner.pop() {
            None => (None, None),
            Some(Item::Error { message, .. }) => (None, Some(message)),
            Some(item) => {
                self.start = item.line() + 1;
                let fields = item
                    .fields()
                    .into_iter()
                    .map(|field| PyBytes::new(py, field))
                    .collect();
                (Some(fields), None)
            }
        }
    }

    /// Up to `max_rows` rows of `width` fields, the `wanted` field indices of each as `str`.
    fn take(&mut self, py: Python<'_>, max_rows: usize, width: usize, wanted: Vec<usize>) -> Batch {
        let mut columns: Vec<Vec<Py<PyAny>>> = wanted.iter().map(|_| Vec::new()).collect();
        let (mut lines, mut problems, mut fatal) = (Vec::new(), Vec::new(), None);
        while lines.len() < max_rows {
            let Some(item) = self.inner.pop() else { break };
            let row = lines.len();
            let texts = match &item {
                Item::Blank { line } => {
                    self.start = line + 1;
                    continue;
                }
                Item::Error { message, line } => {
                    fatal = Some((row, message.clone(), self.start));
                    lines.push(*line);
                    push_none(py, &mut columns);
                    break;
                }
                Item::Record { line, .. } => {
                    lines.push(*line);
                    self.start = line + 1;
                    record_texts(&item.fields(), width)
                }
            };
            match texts {
                Ok(texts) => {
                    for (column, &index) in columns.iter_mut().zip(&wanted) {
                        let text = texts.get(index).copied().unwrap_or("");
                        column.push(PyString::new(py, text).into_any().unbind());
                    }
                }
                Err(problem) => {
                    problems.push((row, problem));
                    push_none(py, &mut columns);
                }
            }
        }
        (columns, lines, problems, fatal)
    }
}

fn push_none(py: Python<'_>, columns: &mut [Vec<Py<PyAny>>]) {
    for column in columns {
        column.push(py.None());
    }
}

/// The fields as text, or why the row is bad (as the earlier Python reader worded it).
fn record_texts<'a>(fields: &[&'a [u8]], width: usize) -> Result<Vec<&'a str>, String> {
    if fields.len() != width {
        return Err(format!(
            "has {} fields, the header has {width}",
            fields.len()
        ));
    }
    fields
        .iter()
        .map(|field| std::str::from_utf8(field))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "holds bytes that are not valid UTF-8".to_string())
}

/// `score`'s CSV/TSV rows of one chunk, as the bytes `csv.writer` would write (see `crate::io::score_rows`),
/// formatted with the GIL released.
#[pyfunction]
#[pyo3(signature = (ids, names, indices, probabilities, difficulty, all_probabilities, delimiter, fallback=None))]
#[allow(clippy::too_many_arguments)]
fn format_score_rows<'py>(
    py: Python<'py>,
    ids: Vec<PyBackedStr>,
    names: Vec<PyBackedStr>,
    indices: PyReadonlyArray2<'py, u32>,
    probabilities: PyReadonlyArray2<'py, f32>,
    difficulty: PyReadonlyArray1<'py, f32>,
    all_probabilities: Option<PyReadonlyArray2<'py, f32>>,
    delimiter: &str,
    fallback: Option<PyReadonlyArray1<'py, bool>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let [delimiter] = *delimiter.as_bytes() else {
        return Err(JeirtError::new_err(format!(
            "the delimiter must be one ASCII character, got {delimiter:?}"
        )));
    };
    let ids: Vec<&str> = ids.iter().map(|id| &**id).collect();
    let names: Vec<&str> = names.iter().map(|name| &**name).collect();
    let scores = ScoreRows {
        ids: &ids,
        indices: contiguous(&indices, "indices")?,
        probabilities: contiguous(&probabilities, "probabilities")?,
        difficulty: contiguous(&difficulty, "difficulty")?,
        all_probabilities: match &all_probabilities {
            Some(array) => contiguous(array, "all_probabilities")?,
            None => &[],
        },
        fallback: match &fallback {
            Some(array) => contiguous(array, "fallback")?,
            None => &[],
        },
    };
    let rows = py
        .detach(|| format_rows(&scores, &names, delimiter))
        .map_err(JeirtError::new_err)?;
    Ok(PyBytes::new(py, &rows))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CsvParser>()?;
    m.add_function(wrap_pyfunction!(format_score_rows, m)?)?;
    Ok(())
}
