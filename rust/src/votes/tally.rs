//! The votes of one query from its ranked neighbours, branch-free over blocks of LLMs.

use crate::simd::SimdLevel;

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
