//! A tiny SIMD abstraction so the micro-kernel, sigmoid and top-k scan are written once and compiled
//! three times: AVX-512F, AVX2+FMA and a portable fallback (plain arrays, any target).
//!
//! All methods are `unsafe` and `#[inline(always)]`: they are only sound inside a function compiled with
//! the matching `#[target_feature]`, called after runtime detection (see [`SimdLevel::detect`]). Inlining
//! them into such a function is what lets the intrinsics compile to single instructions.

pub(crate) mod norm;

/// Which code path runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdLevel {
    /// x86-64 AVX-512F (16 float lanes).
    Avx512,
    /// x86-64 AVX2 with FMA (8 float lanes).
    Avx2Fma,
    /// Plain Rust on fixed-size arrays; runs everywhere.
    Portable,
}

/// Environment variable that caps the detected level (`avx2+fma` or `portable`), to run and test the code paths
/// of older CPUs on a newer one; it also turns the bfloat16 pass off below `avx512f`.
pub const SIMD_ENV: &str = "JEIRT_SIMD";

impl SimdLevel {
    /// Every level, widest first.
    const ALL: [Self; 3] = [Self::Avx512, Self::Avx2Fma, Self::Portable];

    /// The best level this CPU supports, capped by [`SIMD_ENV`] where that names a lower one (read once).
    pub fn detect() -> Self {
        static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            Self::capped(Self::detect_cpu(), std::env::var(SIMD_ENV).ok().as_deref())
        })
    }

    /// `best`, or the level `cap` names where that is lower: a cap never raises the level above what the CPU
    /// runs, and a name that is no level's leaves `best`.
    fn capped(best: Self, cap: Option<&str>) -> Self {
        let cap = cap.and_then(|name| {
            Self::ALL
                .into_iter()
                .find(|level| level.name() == name.trim())
        });
        match cap {
            Some(cap) if cap.rank() < best.rank() => cap,
            _ => best,
        }
    }

    /// Wider is higher.
    fn rank(self) -> u8 {
        match self {
            Self::Portable => 0,
            Self::Avx2Fma => 1,
            Self::Avx512 => 2,
        }
    }

    /// The best level this CPU supports.
    fn detect_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                return Self::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Self::Avx2Fma;
            }
        }
        Self::Portable
    }

    /// Whether this CPU can run `self`.
    pub fn is_supported(self) -> bool {
        match self {
            Self::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2Fma => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every level this CPU runs, widest first: tests run each code path the machine has.
    #[cfg(test)]
    pub(crate) fn supported() -> Vec<Self> {
        Self::ALL
            .into_iter()
            .filter(|level| level.is_supported())
            .collect()
    }

    /// Short name, as reported by `simd_level()` in Python.
    pub fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512f",
            Self::Avx2Fma => "avx2+fma",
            Self::Portable => "portable",
        }
    }
}

/// One SIMD register type of `LANES` float32 values and the few operations the kernels need.
pub(crate) trait Simd {
    const LANES: usize;
    type V: Copy;
    unsafe fn splat(x: f32) -> Self::V;
    /// Unaligned load of `LANES` values.
    unsafe fn load(p: *const f32) -> Self::V;
    /// Unaligned store of `LANES` values.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// `a * b + c` (fused where the hardware has FMA).
    unsafe fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a * b - c` (fused where the hardware has FMA).
    unsafe fn mul_sub(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn abs(a: Self::V) -> Self::V;
    /// Round to the nearest integer (ties to even).
    unsafe fn round(a: Self::V) -> Self::V;
    /// `2^n` for integer-valued `n` in `-126..=127`.
    unsafe fn pow2(n: Self::V) -> Self::V;
    /// Lane-wise `x >= 0 ? a : b`.
    unsafe fn select_nonneg(x: Self::V, a: Self::V, b: Self::V) -> Self::V;
    /// Bit i set where lane i of `a` is greater than lane i of `b` (false for NaN).
    unsafe fn gt_mask(a: Self::V, b: Self::V) -> u32;
    /// Lane-wise `a > b ? x : y` (`y` for NaN).
    unsafe fn select_gt(a: Self::V, b: Self::V, x: Self::V, y: Self::V) -> Self::V;
    /// The largest lane (NaN-free input).
    unsafe fn max_lane(a: Self::V) -> f32;
    /// Hints that the cache line holding `p` will be read soon (into L2); nothing where there is no hint.
    #[inline(always)]
    unsafe fn prefetch(p: *const f32) {
        let _ = p;
    }
    /// `sum(x_i^2)` in float64 (see `norm::sum_squares_f64`, which this overrides with independent vector
    /// chains where LLVM's own vectorisation leaves one chain or none).
    #[inline(always)]
    unsafe fn sum_squares_f64(row: &[f32]) -> f64 {
        crate::simd::norm::sum_squares_f64(row)
    }
}

/// Lanes of the portable fallback: 8, the width LLVM can map onto SSE/NEON pairs.
pub(crate) const PORTABLE_LANES: usize = 8;

/// Portable fallback: element-wise loops over an array, which LLVM auto-vectorises where it can.
pub(crate) struct Portable;

impl Simd for Portable {
    const LANES: usize = PORTABLE_LANES;
    type V = [f32; PORTABLE_LANES];
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self::V {
        [x; PORTABLE_LANES]
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self::V {
        std::ptr::read_unaligned(p as *const Self::V)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self::V) {
        std::ptr::write_unaligned(p as *mut Self::V, v)
    }
    #[inline(always)]
    unsafe fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        // Separate multiply and add: `f32::mul_add` without hardware FMA is a slow libm call.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    unsafe fn mul_sub(a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] * b[i] - c[i])
    }
    #[inline(always)]
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] - b[i])
    }
    #[inline(always)]
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] * b[i])
    }
    #[inline(always)]
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i] / b[i])
    }
    #[inline(always)]
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if a[i] > b[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    unsafe fn abs(a: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i].abs())
    }
    #[inline(always)]
    unsafe fn round(a: Self::V) -> Self::V {
        std::array::from_fn(|i| a[i].round_ties_even())
    }
    #[inline(always)]
    unsafe fn pow2(n: Self::V) -> Self::V {
        std::array::from_fn(|i| f32::from_bits((((n[i] as i32) + 127) as u32) << 23))
    }
    #[inline(always)]
    unsafe fn select_nonneg(x: Self::V, a: Self::V, b: Self::V) -> Self::V {
        std::array::from_fn(|i| if x[i] >= 0.0 { a[i] } else { b[i] })
    }
    #[inline(always)]
    unsafe fn gt_mask(a: Self::V, b: Self::V) -> u32 {
        let mut mask = 0u32;
        for i in 0..PORTABLE_LANES {
            mask |= u32::from(a[i] > b[i]) << i;
        }
        mask
    }
    #[inline(always)]
    unsafe fn select_gt(a: Self::V, b: Self::V, x: Self::V, y: Self::V) -> Self::V {
        std::array::from_fn(|i| if a[i] > b[i] { x[i] } else { y[i] })
    }
    #[inline(always)]
    unsafe fn max_lane(a: Self::V) -> f32 {
        a.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x))
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2Fma, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Simd;
    use std::arch::x86_64::*;

    /// AVX2 + FMA: 8 lanes in a `__m256`.
    pub(crate) struct Avx2Fma;

    impl Simd for Avx2Fma {
        const LANES: usize = 8;
        type V = __m256;
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m256 {
            _mm256_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            _mm256_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            _mm256_storeu_ps(p, v)
        }
        #[inline(always)]
        unsafe fn mul_add(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn mul_sub(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmsub_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn add(a: __m256, b: __m256) -> __m256 {
            _mm256_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m256, b: __m256) -> __m256 {
            _mm256_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m256, b: __m256) -> __m256 {
            _mm256_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn div(a: __m256, b: __m256) -> __m256 {
            _mm256_div_ps(a, b)
        }
        #[inline(always)]
        unsafe fn max(a: __m256, b: __m256) -> __m256 {
            _mm256_max_ps(a, b)
        }
        #[inline(always)]
        unsafe fn abs(a: __m256) -> __m256 {
            _mm256_andnot_ps(_mm256_set1_ps(-0.0), a)
        }
        #[inline(always)]
        unsafe fn round(a: __m256) -> __m256 {
            _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a)
        }
        #[inline(always)]
        unsafe fn pow2(n: __m256) -> __m256 {
            let bits = _mm256_slli_epi32::<23>(_mm256_add_epi32(
                _mm256_cvtps_epi32(n),
                _mm256_set1_epi32(127),
            ));
            _mm256_castsi256_ps(bits)
        }
        #[inline(always)]
        unsafe fn select_nonneg(x: __m256, a: __m256, b: __m256) -> __m256 {
            let nonneg = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_setzero_ps());
            _mm256_blendv_ps(b, a, nonneg)
        }
        #[inline(always)]
        unsafe fn gt_mask(a: __m256, b: __m256) -> u32 {
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(a, b)) as u32
        }
        #[inline(always)]
        unsafe fn select_gt(a: __m256, b: __m256, x: __m256, y: __m256) -> __m256 {
            _mm256_blendv_ps(y, x, _mm256_cmp_ps::<_CMP_GT_OQ>(a, b))
        }
        #[inline(always)]
        unsafe fn max_lane(a: __m256) -> f32 {
            let m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            let m = _mm_max_ss(m, _mm_shuffle_ps::<1>(m, m));
            _mm_cvtss_f32(m)
        }
        #[inline(always)]
        unsafe fn prefetch(p: *const f32) {
            _mm_prefetch::<_MM_HINT_T1>(p as *const i8)
        }
        #[inline(always)]
        unsafe fn sum_squares_f64(row: &[f32]) -> f64 {
            let (p, n) = (row.as_ptr(), row.len());
            let mut acc = [_mm256_setzero_pd(); 4];
            let mut i = 0;
            while i + 16 <= n {
                for (c, a) in acc.iter_mut().enumerate() {
                    let x = _mm256_cvtps_pd(_mm_loadu_ps(p.add(i + 4 * c)));
                    *a = _mm256_fmadd_pd(x, x, *a);
                }
                i += 16;
            }
            let sum = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
            let mut lanes = [0.0f64; 4];
            _mm256_storeu_pd(lanes.as_mut_ptr(), sum);
            lanes.iter().sum::<f64>()
                + crate::simd::norm::sum_squares_f64(row.get(i..).unwrap_or(&[]))
        }
    }

    /// AVX-512F: 16 lanes in a `__m512`.
    pub(crate) struct Avx512;

    impl Simd for Avx512 {
        const LANES: usize = 16;
        type V = __m512;
        #[inline(always)]
        unsafe fn splat(x: f32) -> __m512 {
            _mm512_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 {
            _mm512_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) {
            _mm512_storeu_ps(p, v)
        }
        #[inline(always)]
        unsafe fn mul_add(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn mul_sub(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmsub_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn add(a: __m512, b: __m512) -> __m512 {
            _mm512_add_ps(a, b)
        }
        #[inline(always)]
        unsafe fn sub(a: __m512, b: __m512) -> __m512 {
            _mm512_sub_ps(a, b)
        }
        #[inline(always)]
        unsafe fn mul(a: __m512, b: __m512) -> __m512 {
            _mm512_mul_ps(a, b)
        }
        #[inline(always)]
        unsafe fn div(a: __m512, b: __m512) -> __m512 {
            _mm512_div_ps(a, b)
        }
        #[inline(always)]
        unsafe fn max(a: __m512, b: __m512) -> __m512 {
            _mm512_max_ps(a, b)
        }
        #[inline(always)]
        unsafe fn abs(a: __m512) -> __m512 {
            _mm512_abs_ps(a)
        }
        #[inline(always)]
        unsafe fn round(a: __m512) -> __m512 {
            _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a)
        }
        #[inline(always)]
        unsafe fn pow2(n: __m512) -> __m512 {
            let bits = _mm512_slli_epi32::<23>(_mm512_add_epi32(
                _mm512_cvtps_epi32(n),
                _mm512_set1_epi32(127),
            ));
            _mm512_castsi512_ps(bits)
        }
        #[inline(always)]
        unsafe fn select_nonneg(x: __m512, a: __m512, b: __m512) -> __m512 {
            let nonneg = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps());
            _mm512_mask_blend_ps(nonneg, b, a)
        }
        #[inline(always)]
        unsafe fn gt_mask(a: __m512, b: __m512) -> u32 {
            u32::from(_mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b))
        }
        #[inline(always)]
        unsafe fn select_gt(a: __m512, b: __m512, x: __m512, y: __m512) -> __m512 {
            _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b), y, x)
        }
        #[inline(always)]
        unsafe fn max_lane(a: __m512) -> f32 {
            _mm512_reduce_max_ps(a)
        }
        #[inline(always)]
        unsafe fn prefetch(p: *const f32) {
            _mm_prefetch::<_MM_HINT_T1>(p as *const i8)
        }
        #[inline(always)]
        unsafe fn sum_squares_f64(row: &[f32]) -> f64 {
            let (p, n) = (row.as_ptr(), row.len());
            let mut acc = [_mm512_setzero_pd(); 4];
            let mut i = 0;
            while i + 32 <= n {
                for (c, a) in acc.iter_mut().enumerate() {
                    let x = _mm512_cvtps_pd(_mm256_loadu_ps(p.add(i + 8 * c)));
                    *a = _mm512_fmadd_pd(x, x, *a);
                }
                i += 32;
            }
            let sum = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
            _mm512_reduce_add_pd(sum)
                + crate::simd::norm::sum_squares_f64(row.get(i..).unwrap_or(&[]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SimdLevel::{self, Avx2Fma, Avx512, Portable};

    #[test]
    fn a_cap_lowers_the_level_and_never_raises_it() {
        assert_eq!(SimdLevel::capped(Avx512, Some("avx2+fma")), Avx2Fma);
        assert_eq!(SimdLevel::capped(Avx512, Some(" portable\n")), Portable);
        assert_eq!(SimdLevel::capped(Avx2Fma, Some("portable")), Portable);
        // A CPU without AVX-512 must not be sent to its instructions by a cap that names them.
        assert_eq!(SimdLevel::capped(Avx2Fma, Some("avx512f")), Avx2Fma);
        assert_eq!(SimdLevel::capped(Portable, Some("avx2+fma")), Portable);
        assert_eq!(SimdLevel::capped(Avx2Fma, Some("avx2+fma")), Avx2Fma);
    }

    #[test]
    fn no_cap_or_an_unknown_name_leaves_the_best_level() {
        for best in SimdLevel::ALL {
            assert_eq!(SimdLevel::capped(best, None), best);
            assert_eq!(SimdLevel::capped(best, Some("avx2")), best);
            assert_eq!(SimdLevel::capped(best, Some("")), best);
        }
    }

    #[test]
    fn detect_runs_a_level_this_cpu_supports() {
        assert!(SimdLevel::detect().is_supported());
        assert!(SimdLevel::supported().contains(&SimdLevel::detect()));
        assert_eq!(SimdLevel::supported().last(), Some(&Portable));
    }
}
