//! Output allocation: zeroed lazily by the OS, on transparent huge pages where available, and reporting
//! failure instead of aborting the process.
//!
//! Writing a fresh N x K output (4 GB at N = 1M, K = 1000) costs one page fault per 4 KiB page touched;
//! with 2 MiB pages that cost mostly disappears (NumPy does the same madvise for its large arrays). The
//! pages are faulted in by the worker threads as they write, not by a serial memset.

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
    advise_huge_pages(ptr as usize, layout.size());
    // SAFETY: allocated by the global allocator with the layout of `[T; len]`, and all-zero is a valid T.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Asks Linux to back the 2 MiB-aligned part of `[addr, addr + size)` with huge pages (a hint: failure is
/// harmless and ignored).
#[cfg(target_os = "linux")]
fn advise_huge_pages(addr: usize, size: usize) {
    const HUGE: usize = 2 << 20;
    if size < 4 * HUGE {
        return;
    }
    let start = (addr + HUGE - 1) & !(HUGE - 1);
    let end = (addr + size) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside our own live allocation; MADV_HUGEPAGE changes no contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_addr: usize, _size: usize) {}
