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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_has_its_shape_and_rows_and_refuses_a_buffer_of_another_size() {
        let data: Vec<f32> = (0..6).map(|x| x as f32).collect();
        let view = MatrixView::new("q", &data, 2, 3).unwrap();
        assert_eq!((view.rows(), view.cols(), view.data().len()), (2, 3, 6));
        assert_eq!(view.row(0), &[0.0, 1.0, 2.0]);
        assert_eq!(view.row(1), &[3.0, 4.0, 5.0]);
        assert!(view.row(2).is_empty() && view.row(usize::MAX).is_empty());
        let tall = MatrixView::new("q", &data, 6, 1).unwrap();
        assert_eq!((tall.rows(), tall.cols(), tall.row(5)), (6, 1, &[5.0][..]));
        for (rows, cols) in [(2, 2), (3, 3), (usize::MAX, 2), (0, 6)] {
            assert!(matches!(
                MatrixView::new("q", &data, rows, cols),
                Err(KernelError::BufferSize { name: "q", len: 6, rows: r, cols: c }) if r == rows && c == cols
            ));
        }
        let empty = MatrixView::new("m", &[], 0, 4).unwrap();
        assert_eq!((empty.rows(), empty.cols()), (0, 4));
    }
}
