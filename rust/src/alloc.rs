//! Output allocation: zeroed lazily by the OS (no serial memset; pages are faulted in by the worker threads
//! as they write), and reporting failure instead of aborting the process.
//!
//! Measured here: asking for transparent huge pages (madvise) made the 1 GB-4 GB outputs of
//! `probabilities` slower on this VM (compaction and 2 MiB zeroing in the fault path), so it is not done.

use std::alloc::{alloc_zeroed, Layout};

use crate::error::KernelError;

/// Types whose all-zero bit pattern is a valid value.
///
/// # Safety
/// Implement only for such types.
pub(crate) unsafe trait ZeroIsValid: Copy {}
// SAFETY: 0u32 and 0.0f32 are all-zero bit patterns.
unsafe impl ZeroIsValid for u32 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for f32 {}

/// A zero-filled `rows * cols` vector, or [`KernelError::OutputTooLarge`].
pub(crate) fn zeroed<T: ZeroIsValid>(rows: usize, cols: usize) -> Result<Vec<T>, KernelError> {
    let too_large = || KernelError::OutputTooLarge { rows, cols };
    let len = rows.checked_mul(cols).ok_or_else(too_large)?;
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::array::<T>(len).map_err(|_| too_large())?;
    // SAFETY: the layout has non-zero size (len > 0, T not zero-sized).
    let ptr = unsafe { alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return Err(too_large());
    }
    // SAFETY: allocated by the global allocator with the layout of `[T; len]`, and all-zero is a valid T.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}
