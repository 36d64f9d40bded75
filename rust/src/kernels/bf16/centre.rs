//! Centring for `probabilities` in bfloat16: the common direction of the question rows and that of the LLM
//! rows are taken out before rounding, and their part of each dot product is added back exactly.
//!
//! Rounding a component to bfloat16 moves it by up to 2^-9 of its size, so the error of a bf16 dot product
//! scales with the size of what is rounded. Real question embeddings share one large common direction (most of
//! each row's norm), and so do the LLM vectors. With `u` the mean direction of (a sample of) the question rows
//! and `nu` that of the LLM rows:
//!
//! - `q = alpha u + r` with `alpha = q.u / u.u`, and `m = beta nu + s` with `beta = m.nu / nu.nu`;
//! - `q.m = alpha (u.m) + beta (r.nu) + r.s`: `u.m` is one number per LLM (float64, from the exact table),
//!   `r.nu` one per question row (float32, while the row is converted), and only the residuals `r` and `s`
//!   are rounded to bfloat16 for the product the bf16 pass computes.
//!
//! The identity holds for any `u` and `nu`, so the result is right whatever the data; how much the error
//! shrinks depends on how much of the rows the common directions carry (docs/research/throughput.md has the
//! measured errors). `u` comes from the rows of the call: a row's result can move by a fraction of that error with
//! the other rows it is scored with.

use std::arch::x86_64::*;

use crate::kernels::bf16::pack::{pack_bf16, to_bf16, PackedBf16, BF16_WIDTH};
use crate::matrix::MatrixView;
use crate::simd::norm::sum_squares_f64;

/// Question rows sampled (evenly spaced) for their mean direction.
const SAMPLE_ROWS: usize = 512;
/// Below this squared length of a mean direction the rows share none worth taking out.
const MIN_DIRECTION_SQUARES: f64 = 1e-6;

/// The mean unit direction of `rows` (a row of norm 0 or not finite is skipped), in float64; zero when none
/// counts or they cancel out.
fn mean_direction<'a>(rows: impl Iterator<Item = &'a [f32]>, d: usize) -> Vec<f64> {
    let mut sum = vec![0.0f64; d];
    let mut count = 0usize;
    for row in rows {
        let norm = sum_squares_f64(row).sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            continue;
        }
        for (s, &x) in sum.iter_mut().zip(row) {
            *s += f64::from(x) / norm;
        }
        count += 1;
    }
    if count > 0 {
        sum.iter_mut().for_each(|s| *s /= count as f64);
    }
    if sum.iter().map(|s| s * s).sum::<f64>() < MIN_DIRECTION_SQUARES {
        sum.fill(0.0);
    }
    sum
}

/// `x.y` in float64.
fn dot(x: &[f32], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(&a, &b)| f64::from(a) * b).sum()
}

/// The LLM table split along its common direction `nu`, residuals packed for the bf16 pass.
pub(crate) struct CentredLlms {
    /// The residuals `s`; `max_norm` is that of the original rows (it guards the dot products' range).
    pub(crate) packed: PackedBf16,
    /// `nu` (float32, the direction the question residuals are dotted with).
    pub(crate) nu: Vec<f32>,
    /// `beta` per LLM, zero-padded to whole panels.
    beta: Vec<f32>,
}

/// Splits and packs a validated LLM table; `None` where [`pack_bf16`] refuses it (use float32).
pub(crate) fn centre_llms(llms: MatrixView<'_>) -> Option<CentredLlms> {
    let (count, d) = (llms.rows(), llms.cols());
    let original = pack_bf16(llms)?;
    let nu64 = mean_direction((0..count).map(|j| llms.row(j)), d);
    let nu: Vec<f32> = nu64.iter().map(|&x| x as f32).collect();
    let nu_squares: f64 = nu.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    let mut beta = vec![0.0f32; original.panels * BF16_WIDTH];
    let mut residuals = Vec::with_capacity(count * d);
    for j in 0..count {
        let row = llms.row(j);
        let b = if nu_squares > 0.0 {
            (dot(row, &nu64) / nu_squares) as f32
        } else {
            0.0
        };
        if let Some(slot) = beta.get_mut(j) {
            *slot = b;
        }
        residuals.extend(row.iter().zip(&nu).map(|(&x, &n)| (-b).mul_add(n, x)));
    }
    let view = MatrixView::new("llm residuals", &residuals, count, d).ok()?;
    let mut packed = pack_bf16(view)?;
    packed.max_norm = original.max_norm;
    Some(CentredLlms { packed, nu, beta })
}

/// The question side of one call: `u`, `1 / u.u` and `u.m` per LLM.
pub(crate) struct Centring<'a> {
    pub(crate) llms: &'a CentredLlms,
    u: Vec<f32>,
    /// `1 / u.u`, or 0 where the questions share no direction (then `alpha` is 0).
    inv_u_squares: f32,
    /// `u.m` per LLM (from the exact table), zero-padded to whole panels.
    u_dot_m: Vec<f32>,
    /// `u.nu` (of the float32 vectors).
    u_dot_nu: f32,
}

impl<'a> Centring<'a> {
    /// `u` from up to [`SAMPLE_ROWS`] evenly spaced rows of `questions`.
    pub(crate) fn new(
        questions: MatrixView<'_>,
        llms: &'a CentredLlms,
        table: MatrixView<'_>,
    ) -> Self {
        let n = questions.rows();
        let sample = n.min(SAMPLE_ROWS);
        let rows = (0..sample).map(|i| questions.row(i * n / sample));
        let u: Vec<f32> = mean_direction(rows, questions.cols())
            .iter()
            .map(|&x| x as f32)
            .collect();
        // The float32 `u` that the rows' residuals are taken along, so that the identity is exact.
        let u64: Vec<f64> = u.iter().map(|&x| f64::from(x)).collect();
        let squares: f64 = u.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
        let mut u_dot_m = vec![0.0f32; llms.beta.len()];
        for (j, slot) in u_dot_m.iter_mut().enumerate().take(table.rows()) {
            *slot = dot(table.row(j), &u64) as f32;
        }
        let u_dot_nu = u
            .iter()
            .zip(&llms.nu)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum::<f64>() as f32;
        Self {
            llms,
            u,
            u_dot_nu,
            inv_u_squares: if squares > 0.0 {
                (1.0 / squares) as f32
            } else {
                0.0
            },
            u_dot_m,
        }
    }

    /// `(u.m, beta)` of the [`BF16_WIDTH`] LLMs of panel `p`.
    pub(crate) fn panel(&self, p: usize) -> (&[f32], &[f32]) {
        let lanes = p * BF16_WIDTH..(p + 1) * BF16_WIDTH;
        (
            self.u_dot_m.get(lanes.clone()).unwrap_or(&[]),
            self.llms.beta.get(lanes).unwrap_or(&[]),
        )
    }

    /// Converts question row `src` to its residual `r = q - alpha u` in bf16 pairs (`dst`, `ceil(d / 2)`
    /// slots); returns `(sum(q^2) in float32, alpha, r.nu)`. NaN/inf propagate into the sum of squares.
    ///
    /// # Safety
    /// Only called from inside the bf16 pass (AVX-512F and BF16).
    #[inline(always)]
    pub(crate) unsafe fn convert_row(&self, src: &[f32], dst: &mut [u32]) -> (f32, f32, f32) {
        let (u, nu) = (self.u.as_slice(), self.llms.nu.as_slice());
        let d = src.len();
        if u.len() != d || nu.len() != d || dst.len() * 2 < d {
            return (f32::NAN, 0.0, 0.0);
        }
        let whole = d / 32 * 32;
        let (ps, pu, pn) = (src.as_ptr(), u.as_ptr(), nu.as_ptr());
        let mut sums = [_mm512_setzero_ps(); 3];
        for c in (0..d / 16 * 16).step_by(16) {
            let x = _mm512_loadu_ps(ps.add(c));
            sums[0] = _mm512_fmadd_ps(x, x, sums[0]);
            sums[1] = _mm512_fmadd_ps(x, _mm512_loadu_ps(pu.add(c)), sums[1]);
            sums[2] = _mm512_fmadd_ps(x, _mm512_loadu_ps(pn.add(c)), sums[2]);
        }
        let [mut squares, mut q_dot_u, mut q_dot_nu] = sums.map(|v| _mm512_reduce_add_ps(v));
        for t in d / 16 * 16..d {
            squares += src[t] * src[t];
            q_dot_u += src[t] * u[t];
            q_dot_nu += src[t] * nu[t];
        }
        let alpha = q_dot_u * self.inv_u_squares;
        // r.nu = q.nu - alpha u.nu, without a second pass over nu.
        let r_dot_nu = (-alpha).mul_add(self.u_dot_nu, q_dot_nu);
        let minus_alpha = _mm512_set1_ps(-alpha);
        for c in (0..whole).step_by(32) {
            let lo = _mm512_fmadd_ps(
                minus_alpha,
                _mm512_loadu_ps(pu.add(c)),
                _mm512_loadu_ps(ps.add(c)),
            );
            let hi = _mm512_fmadd_ps(
                minus_alpha,
                _mm512_loadu_ps(pu.add(c + 16)),
                _mm512_loadu_ps(ps.add(c + 16)),
            );
            let pairs: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(dst.as_mut_ptr().add(c / 2) as *mut _, pairs);
        }
        let residual = |t: usize| src.get(t).map(|&x| (-alpha).mul_add(u[t], x));
        for (i, slot) in dst.iter_mut().enumerate().skip(whole / 2) {
            let bits = |r: Option<f32>| u32::from(r.map_or(0, to_bf16));
            *slot = bits(residual(2 * i)) | (bits(residual(2 * i + 1)) << 16);
        }
        (squares, alpha, r_dot_nu)
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        probabilities_with_precision, Calibration, Config, MatrixView, Precision, SimdLevel,
    };

    /// Deterministic values in [-0.5, 0.5).
    fn noise(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 10007)
            .map(|x| x as f32 / 10007.0 - 0.5)
            .collect()
    }

    /// Rows sharing one large common direction plus a smaller part of their own, as real embeddings do.
    fn embedding_like(rows: usize, d: usize, common: f32, seed: u32) -> Vec<f32> {
        let direction = noise(d, seed ^ 0x5555);
        let own = noise(rows * d, seed);
        own.iter()
            .enumerate()
            .map(|(i, &x)| common * direction[i % d] + x)
            .collect()
    }

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// P in float64 from the given tables (as rounded by the caller), with the exact norms of `q`.
    fn reference(q: &[f32], m: &[f32], d: usize, round: fn(f32) -> f32) -> Vec<f64> {
        let mut out = Vec::new();
        for row in q.chunks(d) {
            let norm = row
                .iter()
                .map(|&x| f64::from(x).powi(2))
                .sum::<f64>()
                .sqrt();
            for llm in m.chunks(d) {
                let dot: f64 = row
                    .iter()
                    .zip(llm)
                    .map(|(&a, &b)| f64::from(round(a)) * f64::from(round(b)))
                    .sum();
                out.push(sigmoid(dot / norm - norm));
            }
        }
        out
    }

    fn bf16_value(x: f32) -> f32 {
        f32::from_bits(u32::from(crate::kernels::bf16::pack::to_bf16(x)) << 16)
    }

    #[test]
    fn the_mean_direction_averages_unit_rows_and_skips_empty_ones() {
        use super::mean_direction;
        let rows: [&[f32]; 4] = [&[3.0, 4.0], &[0.0, 2.0], &[0.0, 0.0], &[f32::NAN, 1.0]];
        let u = mean_direction(rows.into_iter(), 2);
        // (0.6, 0.8) and (0, 1), each of norm 1; the zero and the NaN row count for nothing.
        assert!(
            (u[0] - 0.3).abs() < 1e-12 && (u[1] - 0.9).abs() < 1e-12,
            "{u:?}"
        );
        let one: [&[f32]; 1] = [&[0.0, -5.0]];
        assert_eq!(mean_direction(one.into_iter(), 2), vec![0.0, -1.0]);
        // Rows that cancel, or none at all, share no direction: zero, not a tiny one to divide by.
        let opposed: [&[f32]; 2] = [&[1.0, 1.0], &[-1.0, -1.000_001]];
        assert_eq!(mean_direction(opposed.into_iter(), 2), vec![0.0, 0.0]);
        assert_eq!(mean_direction(std::iter::empty(), 3), vec![0.0; 3]);
        // Rows 0.004 radians from opposite: a mean of squared length about 4e-6, above the 1e-6 cut, is kept.
        let faint: [&[f32]; 2] = [&[1.0, 0.0], &[-0.999_992, 0.004]];
        let u = mean_direction(faint.into_iter(), 2);
        assert!((u[1] - 0.002).abs() < 1e-6, "{u:?}");
    }

    #[test]
    fn each_llm_is_split_along_the_tables_mean_direction() {
        use super::{centre_llms, mean_direction};
        let (count, d) = (5, 8);
        let table = embedding_like(count, d, 3.0, 7);
        let view = MatrixView::new("llms", &table, count, d).unwrap();
        let centred = centre_llms(view).expect("a finite table is packed");
        let nu = mean_direction((0..count).map(|j| view.row(j)), d);
        let nu_squares: f64 = centred.nu.iter().map(|&x| f64::from(x).powi(2)).sum();
        for (a, b) in centred.nu.iter().zip(&nu) {
            assert!((f64::from(*a) - b).abs() < 1e-7);
        }
        // beta = m.nu / nu.nu: the residual m - beta nu keeps no part along nu, so only it is rounded.
        for j in 0..count {
            let want = view
                .row(j)
                .iter()
                .zip(&nu)
                .map(|(&x, &n)| f64::from(x) * n)
                .sum::<f64>()
                / nu_squares;
            assert!(
                (f64::from(centred.beta[j]) - want).abs() < 1e-5 * want.abs(),
                "{j}"
            );
            assert!(want.abs() > 1.0); // the rows share a large common direction
        }
        assert!(centred.beta[count..].iter().all(|&b| b == 0.0)); // padding of the last panel

        // LLM vectors that cancel share no direction: nothing is taken out (not a division by zero).
        let opposed = [1.0f32, 2.0, -1.0, -2.0];
        let centred = centre_llms(MatrixView::new("llms", &opposed, 2, 2).unwrap()).unwrap();
        assert!(centred.nu.iter().chain(&centred.beta).all(|&x| x == 0.0));
    }

    fn worst(a: &[f32], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| (f64::from(x) - y).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn centring_beats_plain_rounding_on_rows_with_a_common_direction() {
        assert!(
            Precision::Bf16.is_supported(),
            "this CPU has no AVX-512 BF16"
        );
        for (n, d, k) in [(300, 64, 40), (97, 45, 33), (50, 3, 5)] {
            let (q, m) = (embedding_like(n, d, 3.0, 3), embedding_like(k, d, 2.0, 7));
            let exact = reference(&q, &m, d, |x| x);
            let plain = worst(
                &reference(&q, &m, d, bf16_value)
                    .iter()
                    .map(|&p| p as f32)
                    .collect::<Vec<_>>(),
                &exact,
            );
            let (qv, mv) = (
                MatrixView::new("q", &q, n, d).expect("shape"),
                MatrixView::new("m", &m, k, d).expect("shape"),
            );
            let none = Calibration::none();
            let centred = |threads| {
                probabilities_with_precision(qv, mv, &none, &Config::new(threads), Precision::Bf16)
                    .expect("bf16")
            };
            let one = centred(1);
            assert_eq!(one, centred(2), "thread count changed the result");
            let error = worst(&one, &exact);
            assert!(
                error > 0.0 && error * 2.0 < plain,
                "d {d}: centred {error} against plain {plain}"
            );
        }
    }

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn rows_left_uncentred_still_get_their_probabilities() {
        assert!(
            SimdLevel::detect() == SimdLevel::Avx512 && Precision::Bf16.is_supported(),
            "this CPU has no AVX-512 BF16"
        );
        let (n, d, k) = (60, 37, 9);
        let mut q = embedding_like(n, d, 0.6, 11);
        let m = embedding_like(k, d, 0.4, 13);
        q[..d].fill(0.0); // zero row: P = 0.5
        q[d..2 * d].iter_mut().for_each(|x| *x *= 1e-30); // tiny and huge norms: rescaled, not centred
        q[2 * d..3 * d].iter_mut().for_each(|x| *x *= 1e25);
        let (qv, mv) = (
            MatrixView::new("q", &q, n, d).expect("shape"),
            MatrixView::new("m", &m, k, d).expect("shape"),
        );
        let config = Config::new(2);
        let exact = crate::probabilities(qv, mv, &config).expect("float32");
        let got =
            probabilities_with_precision(qv, mv, &Calibration::none(), &config, Precision::Bf16)
                .expect("bf16");
        assert!(got[..k].iter().all(|&p| p == 0.5));
        for (i, (a, b)) in got.iter().zip(&exact).enumerate() {
            assert!((a - b).abs() <= 2e-3, "entry {i}: {a} against {b}");
        }
    }
}
