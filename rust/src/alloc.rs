//! Output allocation: zeroed lazily by the OS (no serial memset; pages are faulted in by the worker threads
//! as they write), and reporting failure instead of aborting the process.
//!
//! Outputs of 4-256 MiB are advised onto transparent huge pages (one fault per 2 MiB instead of 512); larger
//! ones are not: for the 1 GB-4 GB outputs of `probabilities` compaction in the fault path made them slower.

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

/// Outputs from this size up to [`HUGE_OUTPUT_MAX`] are advised onto huge pages, as NumPy does for its own
/// large arrays (docs/research/throughput.md has the measurements).
const HUGE_OUTPUT: usize = 4 << 20;
/// Above this the kernel's compaction for huge pages made the time erratic (sometimes slower than small
/// pages) on the project's VM, as measured earlier for 1-4 GB outputs.
const HUGE_OUTPUT_MAX: usize = 256 << 20;

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
    if (HUGE_OUTPUT..=HUGE_OUTPUT_MAX).contains(&layout.size()) {
        advise_huge_pages(ptr as *mut u8, layout.size());
    }
    // SAFETY: allocated by the global allocator with the layout of `[T; len]`, and all-zero is a valid T.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Asks Linux to back the whole pages of `[ptr, ptr + bytes)` with transparent huge pages (before they are
/// first written): one fault per 2 MiB instead of 512. Advice only: a failure changes nothing.
#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    const PAGE: usize = 4096;
    let start = (ptr as usize).div_ceil(PAGE) * PAGE;
    let end = (ptr as usize + bytes) / PAGE * PAGE;
    if end > start {
        // SAFETY: the range lies inside one live allocation of ours; madvise only changes how it is backed.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _bytes: usize) {}
