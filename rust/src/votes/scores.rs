//! The first pass for tables whose projected keys are small enough to stream once per group of queries (a short
//! space: a few components per key): every key's similarity with each query of the group is written to a
//! buffer, then each query's best `keep` are picked with a threshold drawn from a sample of its similarities.
//!
//! It gives exactly what `scan::coarse_scan` and its shortlists give (the best `keep` keys by the same
//! similarity, ties to the lower index) at a fraction of the cost where `keep` is a sizeable share of the keys:
//! there, most of the shortlists' time goes to offering keys one by one before their threshold has risen.

use crate::simd::{Portable, Simd, SimdLevel};
use crate::votes::dot::{pack, unpack};
use crate::votes::scan::{GROUP, TILE};

/// Every `SAMPLE_STRIDE`-th similarity of a query is its sample.
const SAMPLE_STRIDE: usize = 8;
/// The threshold is the sample's `SAMPLE_MARGIN * keep / SAMPLE_STRIDE`-th best: about `SAMPLE_MARGIN * keep`
/// keys pass it, and fewer than `keep` (then every key is a candidate) only when the sample is far off.
const SAMPLE_MARGIN: usize = 2;

/// Buffers of one worker for this pass.
#[derive(Default)]
pub(crate) struct ScoreScratch {
    scores: Vec<f32>,
    sample: Vec<f32>,
    candidates: Vec<u64>,
}

/// Buffers and output of one group of queries.
struct Group<'a> {
    scores: &'a mut [f32],
    padded: usize,
    n: usize,
    keep: usize,
    sample: &'a mut Vec<f32>,
    candidates: &'a mut Vec<u64>,
    wanted: &'a mut [Vec<u32>],
}

/// For each query of `queries` (`rows` projected rows of `dims`, zero rows past `rows` up to a whole group), the
/// indices of its best `keep` keys by similarity with the projected keys in `tiles` (`n` keys, [`TILE`] per
/// tile), into `wanted`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn shortlists_by_scores(
    level: SimdLevel,
    tiles: &[f32],
    n: usize,
    dims: usize,
    queries: &[f32],
    rows: usize,
    keep: usize,
    wanted: &mut [Vec<u32>],
    scratch: &mut ScoreScratch,
) {
    let padded = n.div_ceil(TILE) * TILE;
    scratch.scores.resize(GROUP * padded, 0.0);
    let groups = queries.chunks(GROUP * dims).zip(wanted.chunks_mut(GROUP));
    for (group, wanted) in groups.take(rows.div_ceil(GROUP)) {
        let mut out = Group {
            scores: &mut scratch.scores,
            padded,
            n,
            keep,
            sample: &mut scratch.sample,
            candidates: &mut scratch.candidates,
            wanted,
        };
        // SAFETY: each arm runs only at a level this CPU supports (`VoteTable::sums` checks it); `group` holds
        // GROUP rows of `dims` and the buffer GROUP rows of `padded`.
        unsafe {
            match level {
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx512 => group_avx512(tiles, dims, group, &mut out),
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx2Fma => group_avx2(tiles, dims, group, &mut out),
                _ => group_generic::<Portable>(tiles, dims, group, &mut out),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn group_avx512(t: &[f32], dims: usize, q: &[f32], out: &mut Group<'_>) {
    group_generic::<crate::simd::Avx512>(t, dims, q, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn group_avx2(t: &[f32], dims: usize, q: &[f32], out: &mut Group<'_>) {
    group_generic::<crate::simd::Avx2Fma>(t, dims, q, out)
}

/// The similarities of the group's queries with every key (per tile, one multiply-add chain per query and key
/// lane over the components in order, as `scan::coarse_scan` computes them: the same bits), then each query's
/// best keys.
#[inline(always)]
unsafe fn group_generic<S: Simd>(tiles: &[f32], dims: usize, queries: &[f32], out: &mut Group<'_>) {
    // The caller pads the queries and sizes the buffer to whole groups; the reads below rely on it.
    assert!(queries.len() >= GROUP * dims && out.scores.len() >= GROUP * out.padded);
    let qp = queries.as_ptr();
    let rows = out.wanted.len().min(GROUP);
    let padded = out.padded;
    for (t, tile) in tiles.chunks_exact(dims * TILE).enumerate() {
        let tp = tile.as_ptr();
        for lane0 in (0..TILE).step_by(S::LANES) {
            // All GROUP chains, padding rows included: a fixed count the compiler unrolls into registers.
            let mut acc = [S::splat(0.0); GROUP];
            for d in 0..dims {
                let k = S::load(tp.add(d * TILE + lane0));
                for (r, chain) in acc.iter_mut().enumerate() {
                    *chain = S::mul_add(S::splat(*qp.add(r * dims + d)), k, *chain);
                }
            }
            for (r, chain) in acc.iter().enumerate() {
                S::store(
                    out.scores.as_mut_ptr().add(r * padded + t * TILE + lane0),
                    *chain,
                );
            }
        }
    }
    for r in 0..rows {
        let scores = &out.scores[r * padded..r * padded + out.n];
        best_keys::<S>(
            scores,
            out.keep,
            out.sample,
            out.candidates,
            &mut out.wanted[r],
        );
    }
}

/// The indices of the best `keep` of `scores` (higher first, ties to the lower index).
#[inline(always)]
unsafe fn best_keys<S: Simd>(
    scores: &[f32],
    keep: usize,
    sample: &mut Vec<f32>,
    candidates: &mut Vec<u64>,
    out: &mut Vec<u32>,
) {
    out.clear();
    if scores.len() <= keep {
        out.extend(0..scores.len() as u32);
        return;
    }
    sample.clear();
    sample.extend(scores.iter().step_by(SAMPLE_STRIDE));
    let rank = (SAMPLE_MARGIN * keep / SAMPLE_STRIDE).clamp(1, sample.len());
    let (_, &mut threshold, _) = sample.select_nth_unstable_by(rank - 1, |a, b| b.total_cmp(a));
    collect_at_least::<S>(scores, threshold, candidates);
    if candidates.len() < keep {
        // The sample was far off: every key is a candidate.
        collect_at_least::<S>(scores, f32::NEG_INFINITY, candidates);
    }
    // Every key of the best `keep` is at or above the threshold (at least `keep` keys are), so it is here.
    candidates.select_nth_unstable(keep - 1);
    // In no particular order: the exact pass groups every query's keys by key itself.
    out.extend(candidates[..keep].iter().map(|&p| unpack(p).1));
}

/// Every key whose (finite) score is at or above `threshold`, packed with its index: a vector compare per
/// [`Simd::LANES`] scores, most of which pass none.
#[inline(always)]
unsafe fn collect_at_least<S: Simd>(scores: &[f32], threshold: f32, candidates: &mut Vec<u64>) {
    candidates.clear();
    let limit = S::splat(threshold);
    let whole = scores.len() / S::LANES * S::LANES;
    for start in (0..whole).step_by(S::LANES) {
        // `threshold > v` is false exactly where `v >= threshold`.
        let mut mask = !S::gt_mask(limit, S::load(scores.as_ptr().add(start))) & lane_bits::<S>();
        while mask != 0 {
            let i = start + mask.trailing_zeros() as usize;
            candidates.push(pack(scores[i], i as u32));
            mask &= mask - 1;
        }
    }
    for (i, &v) in scores.iter().enumerate().skip(whole) {
        if v >= threshold {
            candidates.push(pack(v, i as u32));
        }
    }
}

fn lane_bits<S: Simd>() -> u32 {
    if S::LANES >= 32 {
        u32::MAX
    } else {
        (1u32 << S::LANES) - 1
    }
}
