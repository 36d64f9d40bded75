//! Rayon thread pools, cached per thread count, with a fork guard; and the chunked parallel driver.
//!
//! A forked child inherits the cache but not the pool's threads: waiting on them would deadlock. So each
//! cache remembers the pid that built it and is discarded (leaked, never joined) when the pid changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rayon::ThreadPool;

use crate::error::KernelError;

/// More threads than this is surely a mistake (and would exhaust the process).
const MAX_THREADS: usize = 1024;

/// Below this many multiply-adds a call runs on the calling thread: waking a pool costs more.
const PARALLEL_WORK: usize = 1 << 21;

struct PoolCache {
    pid: u32,
    pools: HashMap<usize, Arc<ThreadPool>>,
}

static POOLS: Mutex<Option<PoolCache>> = Mutex::new(None);

/// `threads`, with 0 meaning every available core.
pub fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        threads
    }
}

/// Refuses more than [`MAX_THREADS`] threads.
fn check_thread_count(threads: usize) -> Result<(), KernelError> {
    if threads > MAX_THREADS {
        return Err(KernelError::InvalidThreads(format!(
            "{threads} threads requested, at most {MAX_THREADS} allowed"
        )));
    }
    Ok(())
}

/// The cached pool of `threads` workers for this process, built on first use.
pub(crate) fn pool(threads: usize) -> Result<Arc<ThreadPool>, KernelError> {
    check_thread_count(threads)?;
    // A panic while holding the lock cannot leave the map inconsistent, so a poisoned lock is usable.
    let mut guard = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if guard.as_ref().is_some_and(|cache| cache.pid != pid) {
        // Forked: the parent's worker threads do not exist here. Dropping the pools would try to talk to
        // them, so leak them instead.
        if let Some(stale) = guard.take() {
            std::mem::forget(stale);
        }
    }
    let cache = guard.get_or_insert_with(|| PoolCache {
        pid,
        pools: HashMap::new(),
    });
    if let Some(pool) = cache.pools.get(&threads) {
        return Ok(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("jeirt-kernel-{i}"))
        .build()
        .map_err(|e| KernelError::InvalidThreads(e.to_string()))?;
    let pool = Arc::new(pool);
    cache.pools.insert(threads, Arc::clone(&pool));
    Ok(pool)
}

/// The question row an error is about, if any (used to report the lowest bad row).
fn error_row(error: &KernelError) -> usize {
    match error {
        KernelError::NonFiniteQuestion { row } | KernelError::QuestionNormOverflow { row } => *row,
        _ => 0,
    }
}

/// Runs `work(first_row, item)` for every `(first_row, item)`, in parallel on the pool of `threads` when
/// `work_size` (multiply-adds) is large enough, and returns the results in input order.
///
/// Items must be in increasing `first_row` order. On errors, the one of the lowest row is returned; items
/// that start after an already-found bad row are skipped.
pub(crate) fn run_chunks<I, R, F>(
    threads: usize,
    work_size: usize,
    items: Vec<(usize, I)>,
    work: F,
) -> Result<Vec<R>, KernelError>
where
    I: Send,
    R: Send,
    F: Fn(usize, I) -> Result<R, KernelError> + Sync + Send,
{
    let lowest_bad = AtomicUsize::new(usize::MAX);
    let guarded = |(first_row, item): (usize, I)| -> Option<Result<R, KernelError>> {
        if first_row > lowest_bad.load(Ordering::Relaxed) {
            return None;
        }
        let result = work(first_row, item);
        if let Err(e) = &result {
            lowest_bad.fetch_min(error_row(e), Ordering::Relaxed);
        }
        Some(result)
    };
    let threads = resolve_threads(threads);
    let results: Vec<Option<Result<R, KernelError>>> =
        if threads <= 1 || items.len() <= 1 || work_size < PARALLEL_WORK {
            items.into_iter().map(guarded).collect()
        } else {
            pool(threads)?.install(|| items.into_par_iter().map(guarded).collect())
        };
    // Chunks run in row order within themselves, so the first error in chunk order is the lowest row.
    let mut out = Vec::with_capacity(results.len());
    for result in results.into_iter().flatten() {
        out.push(result?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_threads_means_every_core_and_other_counts_are_kept() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(resolve_threads(0), cores);
        for threads in [1, 2, 5, MAX_THREADS] {
            assert_eq!(resolve_threads(threads), threads);
        }
    }

    #[test]
    fn more_than_the_most_threads_is_refused_by_name() {
        assert!(check_thread_count(MAX_THREADS).is_ok());
        assert_eq!(
            check_thread_count(MAX_THREADS + 1),
            Err(KernelError::InvalidThreads(
                "1025 threads requested, at most 1024 allowed".to_string()
            ))
        );
        assert!(matches!(
            pool(MAX_THREADS + 1),
            Err(KernelError::InvalidThreads(_))
        ));
    }

    #[test]
    fn a_pool_is_built_once_per_thread_count_and_again_after_a_fork() {
        let first = pool(3).unwrap();
        assert_eq!(first.current_num_threads(), 3);
        assert!(Arc::ptr_eq(&first, &pool(3).unwrap()));
        assert!(!Arc::ptr_eq(&first, &pool(2).unwrap()));
        // A cache that another process built (as a forked child inherits it) is left behind, not reused.
        POOLS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .unwrap()
            .pid = std::process::id() + 1;
        let rebuilt = pool(3).unwrap();
        assert!(!Arc::ptr_eq(&first, &rebuilt));
        assert!(Arc::ptr_eq(&rebuilt, &pool(3).unwrap()));
        let cache = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(cache.as_ref().unwrap().pid, std::process::id());
    }

    #[test]
    fn chunks_come_back_in_order_and_the_lowest_bad_row_is_the_error() {
        let items: Vec<(usize, usize)> = (0..40).map(|i| (i * 10, i)).collect();
        for (threads, work) in [(1, 0), (4, 0), (4, PARALLEL_WORK)] {
            let squares =
                run_chunks(threads, work, items.clone(), |row, i| Ok(row + i * i)).unwrap();
            assert_eq!(squares, (0..40).map(|i| i * 10 + i * i).collect::<Vec<_>>());
            let bad = run_chunks(threads, work, items.clone(), |row, i| {
                if i == 7 || i == 30 {
                    Err(KernelError::NonFiniteQuestion { row: row + 3 })
                } else {
                    Ok(i)
                }
            });
            assert_eq!(bad, Err(KernelError::NonFiniteQuestion { row: 73 }));
        }
        // On one thread the chunks after the bad row's are skipped: none of them can hold a lower row.
        let calls = AtomicUsize::new(0);
        let bad = run_chunks(1, 0, items, |row, i| {
            calls.fetch_add(1, Ordering::Relaxed);
            if i == 7 {
                Err(KernelError::QuestionNormOverflow { row: row + 9 })
            } else {
                Ok(i)
            }
        });
        assert_eq!(bad, Err(KernelError::QuestionNormOverflow { row: 79 }));
        assert_eq!(calls.load(Ordering::Relaxed), 8);
    }
}
