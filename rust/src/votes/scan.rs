//! The neighbour votes' search: the coarse pass that streams every key's short (projected) row past a group of
//! queries and keeps, per query, the best `candidates` keys in a bounded buffer, and the exact similarities of
//! a block of queries with the keys they want (`votes::dot`, the same bits at every SIMD level). The coarse pass
//! only shortlists, so its rounding does not matter beyond which keys it keeps.

use crate::simd::{Portable, Simd, SimdLevel};
use crate::votes::dot::dot;

/// Keys per tile of the coarse pass (one AVX-512 vector, two AVX2 vectors).
pub(crate) const TILE: usize = 16;
/// Queries scored together against each tile: every projected key is read once per group. AVX-512 holds the
/// eight in eight registers (eight independent multiply-add chains); AVX2 takes them four at a time (two
/// registers each), so both keep eight chains in flight.
pub(crate) const GROUP: usize = 8;

/// `(similarity, key index)` packed into one integer that sorts best first in increasing order: higher
/// similarity, then the lower index (so ties are resolved the same way whatever the order the keys were met
/// in). Integer comparisons make the selections several times cheaper than comparing pairs of floats.
#[inline(always)]
pub(crate) fn pack(value: f32, index: u32) -> u64 {
    let bits = value.to_bits();
    let ordered = if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    !((u64::from(ordered) << 32) | u64::from(!index))
}

/// The `(similarity, key index)` of [`pack`].
#[inline(always)]
pub(crate) fn unpack(packed: u64) -> (f32, u32) {
    let x = !packed;
    let ordered = (x >> 32) as u32;
    let bits = if ordered & 0x8000_0000 != 0 {
        ordered & 0x7fff_ffff
    } else {
        !ordered
    };
    (f32::from_bits(bits), !(x as u32))
}

/// Buffers one worker reuses from block to block (fresh large allocations cost page faults).
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) lists: Vec<Shortlist>,
    pub(crate) projected: Vec<f32>,
    pub(crate) wanted: Vec<Vec<u32>>,
    pub(crate) ranked: Vec<Vec<u64>>,
    start: Vec<u32>,
    cursor: Vec<u32>,
    who: Vec<(u32, u32)>,
}

/// Per query of `queries` (rows of `cols`), the exact similarity with each key it wants (`scratch.wanted[m]`,
/// sorted indices; every key when `coarse` is false), packed with the key ([`pack`]) in key order, into
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

/// The best `keep` keys of one query by coarse similarity, kept in a buffer of at most `2 keep` entries: an
/// entry enters only above the current threshold, and a full buffer is cut back to its best `keep`.
pub(crate) struct Shortlist {
    entries: Vec<u64>,
    threshold: f32,
    keep: usize,
}

impl Shortlist {
    pub(crate) fn new(keep: usize) -> Self {
        Self {
            entries: Vec::new(),
            threshold: f32::NEG_INFINITY,
            keep: keep.max(1),
        }
    }

    /// Empty again, for another query (the buffer is kept).
    pub(crate) fn reset(&mut self, keep: usize) {
        self.entries.clear();
        self.threshold = f32::NEG_INFINITY;
        self.keep = keep.max(1);
    }

    /// Keys come in increasing index order, so one equal to the threshold ranks after the kept one it ties
    /// with: only a strictly greater value can enter.
    #[inline(always)]
    fn offer(&mut self, value: f32, index: u32) {
        if value > self.threshold {
            self.entries.push(pack(value, index));
            if self.entries.len() >= 2 * self.keep {
                self.cut();
            }
        }
    }

    fn cut(&mut self) {
        if self.entries.len() > self.keep {
            self.entries.select_nth_unstable(self.keep - 1);
            self.entries.truncate(self.keep);
            // Everything kept is at or above this, so a key below it can no longer be among the best.
            self.threshold = unpack(self.entries[self.keep - 1]).0;
        }
    }

    /// The indices of the best `keep` keys (by coarse similarity, then index), sorted by index so the exact
    /// pass reads the key table in order.
    pub(crate) fn finish(&mut self, indices: &mut Vec<u32>) {
        self.cut();
        indices.clear();
        indices.extend(self.entries.iter().map(|&p| unpack(p).1));
        indices.sort_unstable();
    }
}

/// Projected keys in tiles: tile `t` holds keys `t*TILE..` as `dims x TILE` values (key-minor), zero past `n`.
pub(crate) fn tile_keys(projected: &[f32], n: usize, dims: usize) -> Vec<f32> {
    let tiles = n.div_ceil(TILE);
    let mut out = vec![0.0f32; tiles * dims * TILE];
    for (i, row) in projected.chunks_exact(dims.max(1)).take(n).enumerate() {
        let (t, l) = (i / TILE, i % TILE);
        for (d, &v) in row.iter().enumerate() {
            out[(t * dims + d) * TILE + l] = v;
        }
    }
    out
}

/// Offer the coarse similarity of every key of `tiles` (tiles of [`TILE`] keys, the first being key
/// `first_key`; keys from `n` on are padding) with each of the [`GROUP`] projected queries `queries` (rows of
/// `dims`, zero rows past `lists.len()`) to that query's shortlist.
pub(crate) fn coarse_scan(
    level: SimdLevel,
    tiles: &[f32],
    first_key: usize,
    n: usize,
    dims: usize,
    queries: &[f32],
    lists: &mut [Shortlist],
) {
    if dims == 0 || queries.len() < GROUP * dims {
        return;
    }
    // SAFETY: as in `exact_block`; the pointers stay inside `tiles` and `queries` (checked above).
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => coarse_avx512(tiles, first_key, n, dims, queries, lists),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => {
                for (q, l) in queries.chunks(HALF * dims).zip(lists.chunks_mut(HALF)) {
                    coarse_avx2(tiles, first_key, n, dims, q, l);
                }
            }
            _ => {
                for (q, l) in queries.chunks(HALF * dims).zip(lists.chunks_mut(HALF)) {
                    coarse_generic::<Portable, HALF>(tiles, first_key, n, dims, q, l);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn coarse_avx512(
    t: &[f32],
    first: usize,
    n: usize,
    dims: usize,
    q: &[f32],
    lists: &mut [Shortlist],
) {
    coarse_generic::<crate::simd::Avx512, GROUP>(t, first, n, dims, q, lists)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn coarse_avx2(
    t: &[f32],
    first: usize,
    n: usize,
    dims: usize,
    q: &[f32],
    lists: &mut [Shortlist],
) {
    coarse_generic::<crate::simd::Avx2Fma, HALF>(t, first, n, dims, q, lists)
}

/// Queries per pass at the levels with two vectors per tile row.
const HALF: usize = GROUP / 2;

/// A register tile of `G` queries x `TILE` keys (one or two vectors per query), filled by broadcasting each
/// query component against one row of the key tile; then one compare per vector against the threshold.
#[inline(always)]
unsafe fn coarse_generic<S: Simd, const G: usize>(
    tiles: &[f32],
    first_key: usize,
    n: usize,
    dims: usize,
    queries: &[f32],
    lists: &mut [Shortlist],
) {
    let per = TILE / S::LANES; // vectors per key tile row: 1 or 2
    let rows = lists.len().min(G);
    if queries.len() < G * dims {
        return;
    }
    let qp = queries.as_ptr();
    for (t, tile) in tiles.chunks_exact(dims * TILE).enumerate() {
        let tp = tile.as_ptr();
        let mut acc = [[S::splat(0.0); 2]; G];
        for d in 0..dims {
            let row = tp.add(d * TILE);
            let k0 = S::load(row);
            let k1 = if per == 2 {
                S::load(row.add(S::LANES))
            } else {
                k0
            };
            for (r, chain) in acc.iter_mut().enumerate() {
                let qv = S::splat(*qp.add(r * dims + d));
                chain[0] = S::mul_add(qv, k0, chain[0]);
                if per == 2 {
                    chain[1] = S::mul_add(qv, k1, chain[1]);
                }
            }
        }
        let key0 = first_key + t * TILE;
        let valid = TILE.min(n.saturating_sub(key0));
        let lanes_mask = if valid >= 32 {
            u32::MAX
        } else {
            (1u32 << valid) - 1
        };
        for (list, chain) in lists.iter_mut().zip(&acc).take(rows) {
            let threshold = S::splat(list.threshold);
            let mut mask = S::gt_mask(chain[0], threshold);
            if per == 2 {
                mask |= S::gt_mask(chain[1], threshold) << S::LANES;
            }
            mask &= lanes_mask;
            if mask == 0 {
                continue;
            }
            let mut values = [0.0f32; TILE];
            S::store(values.as_mut_ptr(), chain[0]);
            if per == 2 {
                S::store(values.as_mut_ptr().add(S::LANES), chain[1]);
            }
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                list.offer(values[l], (key0 + l) as u32);
                mask &= mask - 1;
            }
        }
    }
}

/// `rows · projection` for `rows` (each `cols` wide) and `projection` `cols x dims`, into `out`.
pub(crate) fn project_rows(
    level: SimdLevel,
    rows: &[f32],
    projection: &[f32],
    cols: usize,
    dims: usize,
    out: &mut [f32],
) {
    // SAFETY: as in `exact_many`.
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => project_avx512(rows, projection, cols, dims, out),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => project_avx2(rows, projection, cols, dims, out),
            _ => project_generic(rows, projection, cols, dims, out),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn project_avx512(
    rows: &[f32],
    projection: &[f32],
    cols: usize,
    dims: usize,
    out: &mut [f32],
) {
    project_generic(rows, projection, cols, dims, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn project_avx2(
    rows: &[f32],
    projection: &[f32],
    cols: usize,
    dims: usize,
    out: &mut [f32],
) {
    project_generic(rows, projection, cols, dims, out)
}

#[inline(always)]
fn project_generic(rows: &[f32], projection: &[f32], cols: usize, dims: usize, out: &mut [f32]) {
    if dims == 0 || cols == 0 {
        return;
    }
    for (row, o) in rows.chunks_exact(cols).zip(out.chunks_exact_mut(dims)) {
        o.fill(0.0);
        for (&x, p) in row.iter().zip(projection.chunks_exact(dims)) {
            for (v, &w) in o.iter_mut().zip(p) {
                *v += x * w;
            }
        }
    }
}

/// LLMs tallied together (the answers table is padded to a multiple of this).
pub(crate) const TALLY_LANES: usize = 16;

/// The votes of one query: over its neighbours `weighted` (weight, key), nearest first, each LLM adds the weight
/// of each of its first `k` answered ones to `counts`, and to `sums` where it answered right. `answers` holds
/// `padded` columns per key (a multiple of [`TALLY_LANES`]); `sums` and `counts` the real LLMs only.
pub(crate) fn tally(
    level: SimdLevel,
    answers: &[i8],
    padded: usize,
    weighted: &[(f32, u32)],
    k: u32,
    sums: &mut [f32],
    counts: &mut [f32],
) {
    // SAFETY: as in `exact_block`.
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => tally_avx512(answers, padded, weighted, k, sums, counts),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => tally_avx2(answers, padded, weighted, k, sums, counts),
            _ => tally_generic(answers, padded, weighted, k, sums, counts),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tally_avx512(
    a: &[i8],
    padded: usize,
    w: &[(f32, u32)],
    k: u32,
    s: &mut [f32],
    c: &mut [f32],
) {
    tally_generic(a, padded, w, k, s, c)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tally_avx2(
    a: &[i8],
    padded: usize,
    w: &[(f32, u32)],
    k: u32,
    s: &mut [f32],
    c: &mut [f32],
) {
    tally_generic(a, padded, w, k, s, c)
}

/// Branch-free over a block of [`TALLY_LANES`] LLMs held in registers (adding 0.0 leaves a sum's bits as they
/// were, so this is the plain loop's arithmetic).
#[inline(always)]
fn tally_generic(
    answers: &[i8],
    padded: usize,
    weighted: &[(f32, u32)],
    k: u32,
    sums: &mut [f32],
    counts: &mut [f32],
) {
    const L: usize = TALLY_LANES;
    for first in (0..sums.len().min(counts.len())).step_by(L) {
        let (mut seen, mut s, mut c) = ([0u32; L], [0.0f32; L], [0.0f32; L]);
        for &(weight, key) in weighted {
            let start = key as usize * padded + first;
            let Some(row) = answers.get(start..start + L) else {
                continue;
            };
            for l in 0..L {
                let take = row[l] != -1 && seen[l] < k;
                seen[l] += u32::from(take);
                let w = if take { weight } else { 0.0 };
                c[l] += w;
                s[l] += if row[l] == 1 { w } else { 0.0 };
            }
        }
        let width = L.min(sums.len() - first);
        sums[first..first + width].copy_from_slice(&s[..width]);
        counts[first..first + width].copy_from_slice(&c[..width]);
    }
}
