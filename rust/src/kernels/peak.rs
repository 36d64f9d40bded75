//! The measured multiply-add peak of one core, for benchmarks to report each kernel's share of it: a
//! register-only loop of independent FMAs (float32, at the detected SIMD level) or `vdpbf16ps` (bfloat16).

use std::time::Instant;

use crate::simd::{Portable, Simd, SimdLevel};

/// Independent accumulators: enough to cover the FMA latency on every current core.
const CHAINS: usize = 12;

#[inline(always)]
unsafe fn fma_loop<S: Simd>(iterations: u64) -> f32 {
    let (a, b) = (S::splat(0.999_999), S::splat(1e-7));
    let mut acc = [S::splat(1.0); CHAINS];
    for _ in 0..iterations {
        for x in acc.iter_mut() {
            *x = S::mul_add(*x, a, b);
        }
    }
    let mut out = [0.0f32; 16];
    let mut total = 0.0;
    for x in acc {
        S::store(out.as_mut_ptr(), x);
        total += out[0];
    }
    total
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn fma_avx512(iterations: u64) -> f32 {
    fma_loop::<crate::simd::Avx512>(iterations)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_avx2(iterations: u64) -> f32 {
    fma_loop::<crate::simd::Avx2Fma>(iterations)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn dpbf16_loop(iterations: u64) -> f32 {
    use std::arch::x86_64::*;
    let a: __m512bh = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5), _mm512_set1_ps(0.25));
    let mut acc = [_mm512_set1_ps(1.0); CHAINS];
    for _ in 0..iterations {
        for x in acc.iter_mut() {
            *x = _mm512_dpbf16_ps(*x, a, a);
        }
    }
    acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
}

/// Runs `body(iterations)` long enough (about `seconds`) and returns GFLOP/s given `flops` per iteration.
fn measure(seconds: f64, flops_per_iteration: f64, body: impl Fn(u64) -> f32) -> f64 {
    let mut iterations = 1u64 << 16;
    loop {
        let start = Instant::now();
        std::hint::black_box(body(iterations));
        let elapsed = start.elapsed().as_secs_f64();
        if elapsed >= seconds || iterations >= 1 << 40 {
            return iterations as f64 * flops_per_iteration / elapsed / 1e9;
        }
        iterations *= 2;
    }
}

/// One core's float32 FMA peak in GFLOP/s (2 flops per multiply-add) at `level`.
pub fn fma_peak_gflops(level: SimdLevel, seconds: f64) -> f64 {
    let per_iteration = |lanes: usize| (CHAINS * lanes * 2) as f64;
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only called for a level this CPU reports (SimdLevel::detect / is_supported).
        SimdLevel::Avx512 if level.is_supported() => {
            measure(seconds, per_iteration(16), |n| unsafe { fma_avx512(n) })
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        SimdLevel::Avx2Fma if level.is_supported() => {
            measure(seconds, per_iteration(8), |n| unsafe { fma_avx2(n) })
        }
        // SAFETY: the portable path runs everywhere.
        _ => measure(seconds, per_iteration(8), |n| unsafe {
            fma_loop::<Portable>(n)
        }),
    }
}

/// One core's bfloat16 multiply-add peak (`vdpbf16ps`, 2 flops per product) in GFLOP/s, or `None`.
pub fn bf16_peak_gflops(seconds: f64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if crate::Precision::Bf16.is_supported() {
        // SAFETY: the CPU has AVX-512F and BF16 (checked).
        return Some(measure(seconds, (CHAINS * 32 * 2) as f64, |n| unsafe {
            dpbf16_loop(n)
        }));
    }
    let _ = seconds;
    None
}
