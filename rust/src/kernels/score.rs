//! `probabilities`: the full N x K matrix of P(correct), sigmoid applied in SIMD lanes as tiles finish.

use crate::alloc::zeroed;
use crate::error::KernelError;
use crate::kernels::adjust::{calibrate, check_offsets, Calibration, PaddedCalibration};
use crate::kernels::engine::{
    check_shapes, panel_width, row_chunks, run_rows, TileLogits, TileSink,
};
use crate::kernels::pack::pack_llms;
use crate::kernels::sigmoid::sigmoid_v;
use crate::matrix::MatrixView;
use crate::pool::run_chunks;
use crate::simd::Simd;
use crate::Config;

/// Writes sigmoid(logit) into a chunk of the row-major `rows x K` output.
struct ProbabilitySink<'a> {
    out: &'a mut [f32],
    llms: usize,
    calibration: Option<&'a PaddedCalibration>,
}

impl TileSink for ProbabilitySink<'_> {
    #[inline(always)]
    unsafe fn consume<S: Simd>(
        &mut self,
        first_row: usize,
        valid: usize,
        panel: usize,
        logits: &TileLogits,
    ) {
        let (l, k) = (S::LANES, self.llms);
        for (r, row_logits) in logits.v.iter().enumerate().take(valid) {
            let row_start = (first_row + r) * k;
            for v in 0..2 {
                let col = panel * 2 * l + v * l;
                if col >= k {
                    break;
                }
                let x = S::load(row_logits.as_ptr().add(v * l));
                let p = sigmoid_v::<S>(calibrate::<S>(self.calibration, x, col));
                let n = (k - col).min(l);
                let Some(dst) = self.out.get_mut(row_start + col..row_start + col + n) else {
                    continue;
                };
                if n == l {
                    S::store(dst.as_mut_ptr(), p);
                } else {
                    let mut tmp = [0.0f32; 16];
                    S::store(tmp.as_mut_ptr(), p);
                    dst.copy_from_slice(&tmp[..n]);
                }
            }
        }
    }
}

/// P(correct) for every question x LLM pair: `sigmoid(q.m/|q| - |q|)`, row-major `N x K`.
///
/// A zero question vector gets logit 0 (P = 0.5). Errors: shapes (`d` mismatch, `d = 0`, `K = 0`), NaN or
/// inf in either table, a question norm that overflows float32 (the lowest bad row is named).
pub fn probabilities(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    config: &Config,
) -> Result<Vec<f32>, KernelError> {
    probabilities_calibrated(questions, llms, &Calibration::none(), config)
}

/// [`probabilities`] with a per-LLM calibration: `sigmoid(scale[j] * logit + bias[j])`.
///
/// Errors: those of [`probabilities`], and a calibration array that is not of length K, holds NaN/inf, or
/// has a scale <= 0.
pub fn probabilities_calibrated(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    calibration: &Calibration<'_>,
    config: &Config,
) -> Result<Vec<f32>, KernelError> {
    check_shapes(questions, llms)?;
    check_offsets(calibration.offsets, questions.rows(), llms.rows())?;
    let packed = pack_llms(llms, panel_width(config.simd))?;
    let cal = PaddedCalibration::new(calibration, llms.rows(), packed.panels * packed.width)?;
    let (n, k, d) = (questions.rows(), llms.rows(), llms.cols());
    let mut out: Vec<f32> = zeroed(n, k)?;
    let items = row_chunks(&mut out, k);
    let work = n
        .saturating_mul(packed.panels * packed.width)
        .saturating_mul(d);
    run_chunks(config.threads, work, items, |first_row, chunk| {
        let rows = first_row..first_row + chunk.len() / k;
        let mut sink = ProbabilitySink {
            out: chunk,
            llms: k,
            calibration: cal.as_ref(),
        };
        run_rows(
            config.simd,
            questions,
            rows,
            &packed,
            calibration.offsets,
            &mut sink,
        )
    })?;
    Ok(out)
}

/// [`probabilities_calibrated`] with the logits from the bf16 pass (`bf16::pass`) where `precision` is `Bf16`,
/// the CPU has it and the table fits bfloat16; otherwise (and with offsets) the float32 kernel. Unlike `top_k`
/// nothing is rescored: the common directions of both tables are taken out before the rounding and added back
/// exactly (`bf16::centre`), and what is left carries the bfloat16 rounding of the residuals, within 1e-3 of
/// float32's on the shipped router over real questions (tests/test_kernels_bf16.py).
pub fn probabilities_with_precision(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    calibration: &Calibration<'_>,
    config: &Config,
    precision: crate::Precision,
) -> Result<Vec<f32>, KernelError> {
    #[cfg(target_arch = "x86_64")]
    if precision == crate::Precision::Bf16
        && precision.is_supported()
        && calibration.offsets.is_none()
    {
        check_shapes(questions, llms)?;
        // `None` for a table with NaN/inf or too large for bfloat16: the float32 path reports or handles it.
        if let Some(centred) = crate::kernels::bf16::centre::centre_llms(llms) {
            return probabilities_bf16(questions, llms, &centred, calibration, config);
        }
    }
    let _ = precision;
    probabilities_calibrated(questions, llms, calibration, config)
}

#[cfg(target_arch = "x86_64")]
fn probabilities_bf16(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    centred: &crate::kernels::bf16::centre::CentredLlms,
    calibration: &Calibration<'_>,
    config: &Config,
) -> Result<Vec<f32>, KernelError> {
    use crate::kernels::bf16::pack::BF16_WIDTH;
    use crate::kernels::bf16::pass::run_rows_bf16;
    let (n, k, d) = (questions.rows(), llms.rows(), llms.cols());
    let packed = &centred.packed;
    let centring = crate::kernels::bf16::centre::Centring::new(questions, centred, llms);
    let cal = PaddedCalibration::new(calibration, k, packed.panels * BF16_WIDTH)?;
    let mut out: Vec<f32> = zeroed(n, k)?;
    let items = row_chunks(&mut out, k);
    let work = n
        .saturating_mul(packed.panels * BF16_WIDTH)
        .saturating_mul(d)
        / 2;
    run_chunks(config.threads, work, items, |first_row, chunk| {
        let rows = first_row..first_row + chunk.len() / k;
        let mut sink = ProbabilitySink {
            out: chunk,
            llms: k,
            calibration: cal.as_ref(),
        };
        run_rows_bf16(questions, rows, packed, Some(&centring), &mut sink)
    })?;
    Ok(out)
}
