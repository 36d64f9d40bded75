//! Numerically stable logistic sigmoid, scalar and vectorised.
//!
//! Both use `e = exp(-|x|)`, which never overflows, then `x >= 0 ? 1/(1+e) : e/(1+e)`.

use crate::simd::Simd;

/// Scalar stable sigmoid (uses the platform `exp`).
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    let e = (-x.abs()).exp();
    if x >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    }
}

/// `ln(2^-126)`: below this `exp` leaves the normal float32 range; we clamp there (result ~1.2e-38).
const EXP_MIN_ARG: f32 = -87.336_55;

/// `exp(x)` for `x <= 0` (clamped below at [`EXP_MIN_ARG`]): Cephes' `expf` range reduction and degree-6
/// polynomial, about 1-2 ulp, all in SIMD lanes.
#[inline(always)]
unsafe fn exp_nonpositive<S: Simd>(x: S::V) -> S::V {
    let x = S::max(x, S::splat(EXP_MIN_ARG));
    // x = n ln2 + r with |r| <= ln2/2; ln2 split in two so n*ln2 is exact enough.
    let n = S::round(S::mul(x, S::splat(std::f32::consts::LOG2_E)));
    let r = S::mul_add(n, S::splat(-0.693_359_4), x);
    let r = S::mul_add(n, S::splat(2.121_944_4e-4), r);
    let mut p = S::splat(1.987_569_1e-4);
    p = S::mul_add(p, r, S::splat(1.398_199_9e-3));
    p = S::mul_add(p, r, S::splat(8.333_452e-3));
    p = S::mul_add(p, r, S::splat(4.166_579_6e-2));
    p = S::mul_add(p, r, S::splat(1.666_666_5e-1));
    p = S::mul_add(p, r, S::splat(0.5));
    let r2 = S::mul(r, r);
    let y = S::add(S::mul_add(p, r2, r), S::splat(1.0));
    S::mul(y, S::pow2(n))
}

/// Lane-wise stable sigmoid.
#[inline(always)]
pub(crate) unsafe fn sigmoid_v<S: Simd>(x: S::V) -> S::V {
    let one = S::splat(1.0);
    let e = exp_nonpositive::<S>(S::sub(S::splat(0.0), S::abs(x)));
    let inv = S::div(one, S::add(one, e));
    S::select_nonneg(x, inv, S::mul(e, inv))
}

/// Sigmoid of every value of `values`, in place, with the lanes of `S` (a padded copy for the tail).
#[inline(always)]
pub(crate) unsafe fn sigmoid_slice<S: Simd>(values: &mut [f32]) {
    let mut chunks = values.chunks_exact_mut(S::LANES);
    for chunk in &mut chunks {
        let p = chunk.as_mut_ptr();
        S::store(p, sigmoid_v::<S>(S::load(p)));
    }
    let tail = chunks.into_remainder();
    if !tail.is_empty() {
        let mut pad = [0.0f32; 16];
        pad[..tail.len()].copy_from_slice(tail);
        let p = pad.as_mut_ptr();
        S::store(p, sigmoid_v::<S>(S::load(p)));
        tail.copy_from_slice(&pad[..tail.len()]);
    }
}
