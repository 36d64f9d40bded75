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
    if is_advised(layout.size()) {
        advise_huge_pages(ptr as *mut u8, layout.size());
    }
    // SAFETY: allocated by the global allocator with the layout of `[T; len]`, and all-zero is a valid T.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Whether an output of `bytes` is advised onto huge pages.
fn is_advised(bytes: usize) -> bool {
    (HUGE_OUTPUT..=HUGE_OUTPUT_MAX).contains(&bytes)
}

/// The whole 4 KiB pages inside `[addr, addr + bytes)`, as `(start, length)`; None when there is none.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn whole_pages(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    const PAGE: usize = 4096;
    let start = addr.div_ceil(PAGE) * PAGE;
    let end = (addr + bytes) / PAGE * PAGE;
    (end > start).then(|| (start, end - start))
}

/// Asks Linux to back the whole pages of `[ptr, ptr + bytes)` with transparent huge pages (before they are
/// first written): one fault per 2 MiB instead of 512. Advice only: a failure changes nothing.
#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    if let Some((start, length)) = whole_pages(ptr as usize, bytes) {
        // SAFETY: the range lies inside one live allocation of ours; madvise only changes how it is backed.
        unsafe { libc::madvise(start as *mut libc::c_void, length, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_zeroed_to_their_length_and_empty_or_too_large_ones_are_handled() {
        for (rows, cols) in [(3, 4), (1, 1), (1024, 1025)] {
            let out: Vec<f32> = zeroed(rows, cols).unwrap();
            assert_eq!(out.len(), rows * cols);
            assert!(out.iter().all(|&x| x.to_bits() == 0));
            let ids: Vec<u32> = zeroed(rows, cols).unwrap();
            assert!(ids.len() == rows * cols && ids.iter().all(|&i| i == 0));
        }
        for (rows, cols) in [(0, 5), (5, 0), (0, 0)] {
            assert!(zeroed::<f32>(rows, cols).unwrap().is_empty());
        }
        for (rows, cols) in [(usize::MAX, 2), (usize::MAX / 2, 1)] {
            assert!(matches!(
                zeroed::<f32>(rows, cols),
                Err(KernelError::OutputTooLarge { rows: r, cols: c }) if r == rows && c == cols
            ));
        }
    }

    #[test]
    fn only_outputs_of_4_to_256_mib_are_advised_onto_huge_pages() {
        const MIB: usize = 1 << 20;
        for (bytes, advised) in [
            (4 * MIB - 1, false),
            (4 * MIB, true),
            (100 * MIB, true),
            (256 * MIB, true),
            (256 * MIB + 1, false),
            (0, false),
        ] {
            assert_eq!(is_advised(bytes), advised, "{bytes} bytes");
        }
    }

    #[test]
    fn the_advised_range_is_the_whole_pages_inside_the_allocation() {
        const PAGE: usize = 4096;
        for addr in [PAGE, 3 * PAGE + 16, 7 * PAGE - 1, 5 * PAGE + 1] {
            for bytes in [0, 1, PAGE - 1, PAGE, PAGE + 1, 3 * PAGE, 10 * PAGE + 7] {
                let first = addr.div_ceil(PAGE) * PAGE;
                let pages = (addr + bytes).saturating_sub(first) / PAGE;
                match whole_pages(addr, bytes) {
                    Some((start, length)) => {
                        assert!(
                            start >= addr && start + length <= addr + bytes,
                            "{addr} {bytes}"
                        );
                        assert_eq!((start % PAGE, length % PAGE), (0, 0));
                        assert_eq!((start, length / PAGE), (first, pages), "{addr} {bytes}");
                    }
                    None => assert_eq!(pages, 0, "{addr} {bytes}"),
                }
            }
        }
        assert_eq!(whole_pages(PAGE, 2 * PAGE), Some((PAGE, 2 * PAGE)));
        assert_eq!(whole_pages(PAGE + 1, 2 * PAGE), Some((2 * PAGE, PAGE)));
        assert_eq!(whole_pages(PAGE + 1, PAGE), None);
    }
}
