//! The exact similarity of the neighbour votes, `a · b`, bit for bit the same at every SIMD level: four chains
//! of 16 lanes over blocks of 64 components (each lane a fused multiply-add chain), a fixed reduction tree, then
//! the tail. AVX-512 holds a chain in one register, AVX2 in two, the portable code in an array; the arithmetic
//! is the same, so a router votes the same on every CPU (rust/src/votes/tests.rs checks it). Also the packing
//! of a `(similarity, key)` pair into one integer that sorts best first.

use crate::simd::SimdLevel;

/// Components per block of the four chains.
const BLOCK: usize = 64;

/// `a · b` at `level` (which the caller has checked this CPU supports).
#[inline(always)]
pub(crate) fn dot(level: SimdLevel, a: &[f32], b: &[f32]) -> f32 {
    let len = a.len().min(b.len());
    // SAFETY: `level` is supported (checked by `VoteTable::sums`); both slices hold `len` values.
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => dot_avx512(a.as_ptr(), b.as_ptr(), len),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => dot_avx2(a.as_ptr(), b.as_ptr(), len),
            _ => dot_portable(&a[..len], &b[..len]),
        }
    }
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let full = a.len() / BLOCK * BLOCK;
    let mut acc = [[0.0f32; 16]; 4];
    for (ca, cb) in a[..full]
        .chunks_exact(BLOCK)
        .zip(b[..full].chunks_exact(BLOCK))
    {
        for (c, chain) in acc.iter_mut().enumerate() {
            for l in 0..16 {
                chain[l] = ca[16 * c + l].mul_add(cb[16 * c + l], chain[l]);
            }
        }
    }
    let s16: [f32; 16] = std::array::from_fn(|l| (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]));
    let s8: [f32; 8] = std::array::from_fn(|l| s16[l] + s16[l + 8]);
    finish(
        std::array::from_fn(|l| s8[l] + s8[l + 4]),
        &a[full..],
        &b[full..],
    )
}

/// The last steps, shared by every level: `((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail`.
#[inline(always)]
fn finish(s4: [f32; 4], a: &[f32], b: &[f32]) -> f32 {
    let mut tail = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        tail = x.mul_add(*y, tail);
    }
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn dot_avx512(a: *const f32, b: *const f32, len: usize) -> f32 {
    use std::arch::x86_64::*;
    let full = len / BLOCK * BLOCK;
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    while i < full {
        for (c, chain) in acc.iter_mut().enumerate() {
            let at = i + 16 * c;
            *chain = _mm512_fmadd_ps(
                _mm512_loadu_ps(a.add(at)),
                _mm512_loadu_ps(b.add(at)),
                *chain,
            );
        }
        i += BLOCK;
    }
    let s16 = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    let lo = _mm512_castps512_ps256(s16);
    let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s16), 1));
    finish(
        s4_of(_mm256_add_ps(lo, hi)),
        tail(a, full, len),
        tail(b, full, len),
    )
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: *const f32, b: *const f32, len: usize) -> f32 {
    use std::arch::x86_64::*;
    let full = len / BLOCK * BLOCK;
    // Chain c is lanes 0..8 in acc[2c] and 8..16 in acc[2c + 1].
    let mut acc = [_mm256_setzero_ps(); 8];
    let mut i = 0;
    while i < full {
        for (r, half) in acc.iter_mut().enumerate() {
            let at = i + 8 * r;
            *half = _mm256_fmadd_ps(
                _mm256_loadu_ps(a.add(at)),
                _mm256_loadu_ps(b.add(at)),
                *half,
            );
        }
        i += BLOCK;
    }
    let lo = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[4], acc[6]));
    let hi = _mm256_add_ps(_mm256_add_ps(acc[1], acc[3]), _mm256_add_ps(acc[5], acc[7]));
    finish(
        s4_of(_mm256_add_ps(lo, hi)),
        tail(a, full, len),
        tail(b, full, len),
    )
}

/// `s4[l] = s8[l] + s8[l + 4]` of the eight lanes `s8`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn s4_of(s8: std::arch::x86_64::__m256) -> [f32; 4] {
    use std::arch::x86_64::*;
    let s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    let mut out = [0.0f32; 4];
    _mm_storeu_ps(out.as_mut_ptr(), s4);
    out
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tail<'a>(p: *const f32, full: usize, len: usize) -> &'a [f32] {
    std::slice::from_raw_parts(p.add(full), len - full)
}

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
