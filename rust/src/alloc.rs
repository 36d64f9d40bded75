//! Output allocation that reports failure instead of aborting the process.

use crate::error::KernelError;

/// A zero-filled `rows * cols` vector, or [`KernelError::OutputTooLarge`].
pub(crate) fn zeroed<T: Copy + Default>(rows: usize, cols: usize) -> Result<Vec<T>, KernelError> {
    let too_large = KernelError::OutputTooLarge { rows, cols };
    let len = rows.checked_mul(cols).ok_or(too_large.clone())?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_large)?;
    v.resize(len, T::default());
    Ok(v)
}
