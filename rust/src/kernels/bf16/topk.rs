//! `top_k` with the bf16 pass (`pass`): the bf16 logits rank the LLMs of each question and pick its best k,
//! which are then scored again exactly (float64 dot products) and ordered by the exact logits. The returned
//! probabilities are therefore float32-exact; the set of k differs from float32's only where the k-th and
//! (k+1)-th best LLMs are closer than the bf16 rounding error (about 1e-3 in logit on the shipped router).
//! Keeping a longer shortlist to rescore made the pass slower than float32 (the running top-k insertion
//! dominates), so none is kept; tests/test_kernels_bf16.py measures the agreement on real questions.

use crate::alloc::zeroed;
use crate::error::KernelError;
use crate::kernels::adjust::{Calibration, PaddedCalibration};
use crate::kernels::bf16::pack::{pack_bf16, BF16_WIDTH};
use crate::kernels::bf16::pass::run_rows_bf16;
use crate::kernels::sigmoid::sigmoid_slice;
use crate::kernels::topk::{row_chunk_pairs, TopKSink};
use crate::matrix::MatrixView;
use crate::pool::run_chunks;
use crate::simd::{Avx512, Simd};
use crate::Config;

/// Rows passed through the bf16 pass and then rescored together (a multiple of its blocks of rows).
const RESCORE_ROWS: usize = 192;

/// Indices and probabilities, each row-major `N x k`.
type TopK = (Vec<u32>, Vec<f32>);

/// `sum(a_i * b_i)` in float64: four independent AVX-512 chains (a float32 product is exact in float64).
///
/// # Safety
/// Only called from inside `rescore_avx512` (AVX-512F).
#[inline(always)]
unsafe fn dot_f64(a: &[f32], b: &[f32]) -> f64 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_pd(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (c, s) in acc.iter_mut().enumerate() {
            let x = _mm512_cvtps_pd(_mm256_loadu_ps(pa.add(i + 8 * c)));
            let y = _mm512_cvtps_pd(_mm256_loadu_ps(pb.add(i + 8 * c)));
            *s = _mm512_fmadd_pd(x, y, *s);
        }
        i += 32;
    }
    let sum = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
    let mut total = _mm512_reduce_add_pd(sum);
    while i < n {
        total += f64::from(*pa.add(i)) * f64::from(*pb.add(i));
        i += 1;
    }
    total
}

/// `(sum(a_i^2), sum(a_i * b_i))` in float64, in one pass over `a` (two AVX-512 chains each).
///
/// # Safety
/// Only called from inside `rescore_avx512` (AVX-512F).
#[inline(always)]
unsafe fn squares_and_dot_f64(a: &[f32], b: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let (mut squares, mut dots) = ([_mm512_setzero_pd(); 2], [_mm512_setzero_pd(); 2]);
    let mut i = 0;
    while i + 16 <= n {
        for c in 0..2 {
            let x = _mm512_cvtps_pd(_mm256_loadu_ps(pa.add(i + 8 * c)));
            let y = _mm512_cvtps_pd(_mm256_loadu_ps(pb.add(i + 8 * c)));
            squares[c] = _mm512_fmadd_pd(x, x, squares[c]);
            dots[c] = _mm512_fmadd_pd(x, y, dots[c]);
        }
        i += 16;
    }
    let mut square = _mm512_reduce_add_pd(_mm512_add_pd(squares[0], squares[1]));
    let mut dot = _mm512_reduce_add_pd(_mm512_add_pd(dots[0], dots[1]));
    while i < n {
        let (x, y) = (f64::from(*pa.add(i)), f64::from(*pb.add(i)));
        square += x * x;
        dot += x * y;
        i += 1;
    }
    (square, dot)
}

/// The model's logit from a dot product and the question's norm (0 for the zero vector).
#[inline(always)]
fn logit_from_dot(dot: f64, norm: f64) -> f64 {
    if norm == 0.0 {
        0.0
    } else {
        dot / norm - norm
    }
}

/// `scale[j] * logit + bias[j]` (identity without a calibration).
#[inline(always)]
fn calibrated(logit: f64, j: usize, calibration: &Calibration<'_>) -> f64 {
    let scale = calibration
        .scale
        .and_then(|s| s.get(j))
        .map_or(1.0, |&v| f64::from(v));
    let bias = calibration
        .bias
        .and_then(|b| b.get(j))
        .map_or(0.0, |&v| f64::from(v));
    scale * logit + bias
}

/// The exact calibrated logit of question `q` (norm `norm`) for LLM `j`.
///
/// # Safety
/// Only called from inside `rescore_avx512` (AVX-512F).
#[inline(always)]
unsafe fn exact_logit(
    q: &[f32],
    norm: f64,
    llms: MatrixView<'_>,
    j: usize,
    calibration: &Calibration<'_>,
) -> f64 {
    calibrated(
        logit_from_dot(dot_f64(q, llms.row(j)), norm),
        j,
        calibration,
    )
}

/// [`rescore`] compiled for AVX-512 (the float64 dot products and the sigmoids vectorise).
///
/// # Safety
/// The CPU must have AVX-512F (every CPU with AVX-512 BF16 does).
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn rescore_avx512(
    questions: MatrixView<'_>,
    first_row: usize,
    shortlist: &[u32],
    width: usize,
    llms: MatrixView<'_>,
    calibration: &Calibration<'_>,
    indices: &mut [u32],
    values: &mut [f32],
) {
    rescore(
        questions,
        first_row,
        shortlist,
        width,
        llms,
        calibration,
        indices,
        values,
    )
}

/// Ranks each row's shortlist exactly and writes its best `k` into `indices` / `values`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rescore(
    questions: MatrixView<'_>,
    first_row: usize,
    shortlist: &[u32],
    width: usize,
    llms: MatrixView<'_>,
    calibration: &Calibration<'_>,
    indices: &mut [u32],
    values: &mut [f32],
) {
    let k = values.len() / (shortlist.len() / width).max(1);
    if width == 1 && k == 1 {
        // Nothing to rank: the row's norm and its one dot product in a single pass over the row.
        for (r, ((&j, slot), value)) in shortlist
            .iter()
            .zip(indices.iter_mut())
            .zip(values.iter_mut())
            .enumerate()
        {
            let j = j as usize;
            let (squares, dot) = squares_and_dot_f64(questions.row(first_row + r), llms.row(j));
            *slot = j as u32;
            *value = calibrated(logit_from_dot(dot, squares.sqrt()), j, calibration) as f32;
        }
        sigmoid_slice::<Avx512>(values);
        return;
    }
    let mut scored: Vec<(f64, u32)> = Vec::with_capacity(width);
    for (r, candidates) in shortlist.chunks_exact(width).enumerate() {
        let q = questions.row(first_row + r);
        let norm = Avx512::sum_squares_f64(q).sqrt();
        scored.clear();
        scored.extend(
            candidates
                .iter()
                .map(|&j| (exact_logit(q, norm, llms, j as usize, calibration), j)),
        );
        // Best first; equal logits broken by the lower index, as in the float32 kernel.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let (Some(idx), Some(val)) = (
            indices.get_mut(r * k..(r + 1) * k),
            values.get_mut(r * k..(r + 1) * k),
        ) else {
            continue;
        };
        for ((slot, value), &(logit, j)) in idx.iter_mut().zip(val.iter_mut()).zip(&scored) {
            *slot = j;
            *value = logit as f32;
        }
    }
    sigmoid_slice::<Avx512>(values);
}

/// [`crate::top_k_adjusted`] without a penalty, on the bf16 pass; `None` when the table does not fit bfloat16.
/// Shapes, `k` and the calibration must already be checked by the caller.
pub(crate) fn top_k_bf16(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    k: usize,
    calibration: &Calibration<'_>,
    config: &Config,
) -> Result<Option<TopK>, KernelError> {
    let Some(packed) = pack_bf16(llms) else {
        return Ok(None);
    };
    let count = llms.rows();
    let width = k;
    let cal = PaddedCalibration::new(calibration, count, packed.panels * BF16_WIDTH)?;
    let (n, d) = (questions.rows(), questions.cols());
    let mut indices: Vec<u32> = zeroed(n, k)?;
    let mut values: Vec<f32> = zeroed(n, k)?;
    let items = row_chunk_pairs(&mut indices, &mut values, k);
    let work = n
        .saturating_mul(packed.panels * BF16_WIDTH)
        .saturating_mul(d)
        / 2;
    run_chunks(config.threads, work, items, |first_row, (idx, val)| {
        let rows = val.len() / k;
        let mut short_idx = vec![0u32; rows * width];
        let mut short_val = vec![0.0f32; rows * width];
        // A few blocks at a time, so that the rows are rescored while they are still in cache.
        for start in (0..rows).step_by(RESCORE_ROWS) {
            let end = (start + RESCORE_ROWS).min(rows);
            let (Some(short_i), Some(short_v), Some(out_i), Some(out_v)) = (
                short_idx.get_mut(start * width..end * width),
                short_val.get_mut(start * width..end * width),
                idx.get_mut(start * k..end * k),
                val.get_mut(start * k..end * k),
            ) else {
                continue;
            };
            let mut sink = TopKSink::new(width, count, short_i, short_v, cal.as_ref(), None);
            let global = first_row + start..first_row + end;
            run_rows_bf16(questions, global.clone(), &packed, None, &mut sink)?;
            // SAFETY: the bf16 pass above ran, so this CPU has AVX-512F.
            unsafe {
                rescore_avx512(
                    questions,
                    global.start,
                    short_i,
                    width,
                    llms,
                    calibration,
                    out_i,
                    out_v,
                )
            };
        }
        Ok(())
    })?;
    Ok(Some((indices, values)))
}

#[cfg(test)]
mod tests {
    use crate::{
        probabilities_calibrated, probabilities_with_precision, top_k, top_k_with_precision,
        Calibration, Config, MatrixView, Precision,
    };

    fn assert_bf16_cpu() {
        assert!(
            Precision::Bf16.is_supported(),
            "this CPU has no AVX-512 BF16"
        );
    }

    /// `len` values spread over [-half_width, half_width] in steps of half_width / 1000, a hash of (index, seed).
    fn spread(len: usize, seed: u32, half_width: f32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let step = ((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001;
                (step as f32 / 1000.0 - 1.0) * half_width
            })
            .collect()
    }

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn bf16_top1_reports_the_exact_calibrated_probability_of_its_choice() {
        assert_bf16_cpu();
        let (n, d, k_llms) = (500, 33, 45);
        let values = |len: usize, seed: u32| spread(len, seed, 1.0);
        let (mut q, m) = (values(n * d, 13), values(k_llms * d, 17));
        q[..d].fill(0.0); // a zero row
        let scale: Vec<f32> = values(k_llms, 19).iter().map(|x| 1.5 + x).collect();
        let bias = values(k_llms, 23);
        let cal = Calibration {
            scale: Some(&scale),
            bias: Some(&bias),
            offsets: None,
        };
        let (q, m) = (
            MatrixView::new("q", &q, n, d).expect("shape"),
            MatrixView::new("m", &m, k_llms, d).expect("shape"),
        );
        let config = Config::new(2);
        let exact = probabilities_calibrated(q, m, &cal, &config).expect("float32");
        let (idx, val) =
            top_k_with_precision(q, m, 1, &cal, None, &config, Precision::Bf16).expect("bf16");
        let (idx32, _) = crate::top_k_adjusted(q, m, 1, &cal, None, &config).expect("float32");
        assert_eq!(idx[0], idx32[0]); // the zero row: logit 0, so the largest bias wins in both
        for (row, (&j, &p)) in idx.iter().zip(&val).enumerate() {
            let want = exact[row * k_llms + j as usize];
            assert!((p - want).abs() <= 1e-6, "row {row}: {p} vs {want}");
        }
        let same = idx.iter().zip(&idx32).filter(|(a, b)| a == b).count();
        assert!(same as f64 >= 0.98 * n as f64, "{same} of {n}");
        // Where bfloat16 picks another LLM than float32, only by a near tie: every row's choice is within the
        // rounding's reach of the best (a row left with a default candidate, or another row's, is not).
        let worst = shortfall(&exact, k_llms, &val, 1);
        assert!(worst < 2e-3, "a choice {worst} below its row's best");
        // More rows than one chunk and one rescoring block, k = 3: each block's shortlist lands in its own rows.
        let rows = crate::kernels::engine::CHUNK_ROWS + 300;
        let (mut q, m) = (values(rows * d, 29), values(k_llms * d, 17));
        q[..d].fill(0.0);
        let (q, m) = (
            MatrixView::new("q", &q, rows, d).expect("shape"),
            MatrixView::new("m", &m, k_llms, d).expect("shape"),
        );
        let exact = probabilities_calibrated(q, m, &cal, &config).expect("float32");
        let (idx, val) =
            top_k_with_precision(q, m, 3, &cal, None, &config, Precision::Bf16).expect("bf16");
        let worst = shortfall(&exact, k_llms, &val, 3);
        assert!(worst < 2e-3, "a first choice {worst} below its row's best");
        for (row, (js, ps)) in idx.chunks(3).zip(val.chunks(3)).enumerate() {
            for (&j, &p) in js.iter().zip(ps) {
                assert!(
                    (p - exact[row * k_llms + j as usize]).abs() <= 1e-6,
                    "row {row}"
                );
            }
        }
    }

    /// The most by which a row's first choice (of `k` per row in `val`) falls below the row's best exact P.
    fn shortfall(exact: &[f32], k_llms: usize, val: &[f32], k: usize) -> f32 {
        val.chunks(k)
            .zip(exact.chunks(k_llms))
            .map(|(chosen, row)| row.iter().fold(0.0f32, |a, &b| a.max(b)) - chosen[0])
            .fold(0.0f32, f32::max)
    }

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn bf16_probabilities_stay_near_float32_and_offsets_fall_back() {
        assert_bf16_cpu();
        // Three chunks of rows, the last one partial: each chunk's rows land in its own slice of the output.
        let (n, d, k_llms) = (2 * crate::kernels::engine::CHUNK_ROWS + 150, 40, 45);
        let values = |len: usize, seed: u32| spread(len, seed, 0.25);
        let (q, m, offsets) = (
            values(n * d, 3),
            values(k_llms * d, 5),
            values(n * k_llms, 9),
        );
        let (q, m) = (
            MatrixView::new("q", &q, n, d).expect("shape"),
            MatrixView::new("m", &m, k_llms, d).expect("shape"),
        );
        let config = Config::new(2);
        let none = Calibration::none();
        let exact = probabilities_calibrated(q, m, &none, &config).expect("float32");
        let bf16 =
            probabilities_with_precision(q, m, &none, &config, Precision::Bf16).expect("bf16");
        let worst = exact
            .iter()
            .zip(&bf16)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // Components below 1/4 and d = 40: the bfloat16 rounding moves a logit by well under 1e-2.
        assert!(worst > 0.0 && worst < 2e-3, "max difference {worst}");
        let with_offsets = Calibration {
            offsets: Some(MatrixView::new("o", &offsets, n, k_llms).expect("shape")),
            ..Calibration::none()
        };
        let exact = probabilities_calibrated(q, m, &with_offsets, &config).expect("float32");
        let fallback = probabilities_with_precision(q, m, &with_offsets, &config, Precision::Bf16)
            .expect("falls back");
        assert_eq!(exact, fallback);
    }

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn bf16_ranking_with_exact_values_matches_float32() {
        assert_bf16_cpu();
        let (n, d, k_llms) = (200, 37, 45);
        let values = |len: usize, seed: u32| spread(len, seed, 1.0);
        let (q, m) = (values(n * d, 7), values(k_llms * d, 11));
        let (q, m) = (
            MatrixView::new("q", &q, n, d).expect("shape"),
            MatrixView::new("m", &m, k_llms, d).expect("shape"),
        );
        let config = Config::new(2);
        let (i32_idx, _) = top_k(q, m, k_llms, &config).expect("float32");
        let (bf_idx, _) = top_k_with_precision(
            q,
            m,
            k_llms,
            &Calibration::none(),
            None,
            &config,
            Precision::Bf16,
        )
        .expect("bf16");
        // k = K: every LLM is rescored exactly, so the full order is float32's up to float64 rounding.
        let same = i32_idx.iter().zip(&bf_idx).filter(|(a, b)| a == b).count();
        assert!(same as f64 >= 0.99 * i32_idx.len() as f64);
    }
}
