//! A borrowed, row-major float32 matrix: what crosses from NumPy without copying.

use crate::error::KernelError;

/// Row-major `rows x cols` view of a flat slice.
#[derive(Debug, Clone, Copy)]
pub struct MatrixView<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
}

impl<'a> MatrixView<'a> {
    /// Wraps `data` as a `rows x cols` matrix; `name` is used in the error if the sizes disagree.
    pub fn new(
        name: &'static str,
        data: &'a [f32],
        rows: usize,
        cols: usize,
    ) -> Result<Self, KernelError> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(KernelError::BufferSize {
                name,
                len: data.len(),
                rows,
                cols,
            });
        }
        Ok(Self { data, rows, cols })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn data(&self) -> &'a [f32] {
        self.data
    }

    /// Row `i`, or an empty slice past the end (never panics).
    pub fn row(&self, i: usize) -> &'a [f32] {
        let start = i.saturating_mul(self.cols);
        self.data
            .get(start..start.saturating_add(self.cols))
            .unwrap_or(&[])
    }
}
