//! Sum of squares in float64, written so LLVM vectorises it inside the SIMD-enabled callers.

/// `sum(x_i^2)` accumulated in float64 (never overflows or underflows for float32 inputs; NaN/inf propagate).
#[inline(always)]
pub(crate) fn sum_squares_f64(row: &[f32]) -> f64 {
    // Eight independent accumulators: lane-wise adds need no reassociation, so this vectorises.
    let mut acc = [0.0f64; 8];
    let mut chunks = row.chunks_exact(8);
    for chunk in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            let x = f64::from(x);
            *a += x * x;
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        let x = f64::from(x);
        *a += x * x;
    }
    acc.iter().sum()
}
