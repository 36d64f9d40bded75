//! The neighbour votes' coarse pass: every key's short (projected) row streamed past a group of queries, each
//! query keeping its best `candidates` keys in a bounded buffer. It only shortlists, so its rounding does not
//! matter beyond which keys it keeps; the exact similarities are `votes::exact`'s.

use crate::simd::{Portable, Simd, SimdLevel};
use crate::votes::dot::{pack, unpack};

/// Keys per tile of the coarse pass (one AVX-512 vector, two AVX2 vectors).
pub(crate) const TILE: usize = 16;
/// Queries scored together against each tile: every projected key is read once per group. AVX-512 holds the
/// eight in eight registers (eight independent multiply-add chains); AVX2 takes them four at a time (two
/// registers each), so both keep eight chains in flight.
pub(crate) const GROUP: usize = 8;

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
