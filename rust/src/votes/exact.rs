//! The exact similarities of a block of queries with the keys each wants, key-major (each key row read once
//! per block). The dot product is `votes::dot`'s: the same bits at every SIMD level.

use crate::simd::SimdLevel;
use crate::votes::dot::{dot, pack};
use crate::votes::scan::Shortlist;
use crate::votes::scores::ScoreScratch;

/// Buffers one worker reuses from block to block (fresh large allocations cost page faults).
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) lists: Vec<Shortlist>,
    pub(crate) projected: Vec<f32>,
    pub(crate) wanted: Vec<Vec<u32>>,
    pub(crate) ranked: Vec<Vec<u64>>,
    pub(crate) scores: ScoreScratch,
    start: Vec<u32>,
    cursor: Vec<u32>,
    who: Vec<(u32, u32)>,
}

/// Per query of `queries` (rows of `cols`), the exact similarity with each key it wants (`scratch.wanted[m]`,
/// indices in any order; every key when `coarse` is false), packed with the key ([`pack`]) in the list's order, into
/// `scratch.ranked`. Key-major: each key row is read once for the whole block of queries, so the table streams
/// from memory once per block, not once per query.
pub(crate) fn exact_block(
    level: SimdLevel,
    keys: &[f32],
    cols: usize,
    queries: &[f32],
    coarse: bool,
    scratch: &mut Scratch,
) {
    // SAFETY: each arm runs only at a level this CPU supports (`VoteTable::sums` checks it).
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => exact_avx512(keys, cols, queries, coarse, scratch),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => exact_avx2(keys, cols, queries, coarse, scratch),
            _ => exact_generic(SimdLevel::Portable, keys, cols, queries, coarse, scratch),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn exact_avx512(
    keys: &[f32],
    cols: usize,
    queries: &[f32],
    coarse: bool,
    scratch: &mut Scratch,
) {
    exact_generic(SimdLevel::Avx512, keys, cols, queries, coarse, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exact_avx2(
    keys: &[f32],
    cols: usize,
    queries: &[f32],
    coarse: bool,
    scratch: &mut Scratch,
) {
    exact_generic(SimdLevel::Avx2Fma, keys, cols, queries, coarse, scratch)
}

#[inline(always)]
fn exact_generic(
    level: SimdLevel,
    keys: &[f32],
    cols: usize,
    queries: &[f32],
    coarse: bool,
    scratch: &mut Scratch,
) {
    let n = keys.len() / cols;
    let rows: Vec<&[f32]> = queries.chunks_exact(cols).collect();
    let out = &mut scratch.ranked;
    out.resize_with(rows.len(), Vec::new);
    out.iter_mut().for_each(Vec::clear);
    if !coarse {
        for (i, key) in keys.chunks_exact(cols).enumerate() {
            for (q, list) in rows.iter().zip(out.iter_mut()) {
                list.push(pack(dot(level, q, key), i as u32));
            }
        }
        return;
    }
    let lists = &scratch.wanted[..rows.len()];
    // Who wants each key: (query, place in its list), grouped by key (a counting sort).
    let (start, cursor, who) = (&mut scratch.start, &mut scratch.cursor, &mut scratch.who);
    start.clear();
    start.resize(n + 1, 0);
    for &i in lists.iter().flatten() {
        start[i as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    cursor.clear();
    cursor.extend_from_slice(start);
    who.clear();
    who.resize(start[n] as usize, (0, 0));
    for (m, list) in lists.iter().enumerate() {
        for (slot, &i) in list.iter().enumerate() {
            who[cursor[i as usize] as usize] = (m as u32, slot as u32);
            cursor[i as usize] += 1;
        }
    }
    for (list, wanted) in out.iter_mut().zip(lists) {
        list.resize(wanted.len(), 0);
    }
    for (i, key) in keys.chunks_exact(cols).enumerate() {
        for &(m, slot) in &who[start[i] as usize..start[i + 1] as usize] {
            out[m as usize][slot as usize] = pack(dot(level, rows[m as usize], key), i as u32);
        }
    }
}
