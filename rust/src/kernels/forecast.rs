//! `mean_probability`: mean P(correct) per LLM over a question bank, without materialising N x K.
//!
//! Sums are kept per chunk in float64 and added in chunk order, so the result does not depend on the
//! number of threads.

use crate::error::KernelError;
use crate::kernels::adjust::{calibrate, check_offsets, Calibration, PaddedCalibration};
use crate::kernels::engine::{
    check_shapes, panel_width, run_rows, TileLogits, TileSink, CHUNK_ROWS,
};
use crate::kernels::pack::pack_llms;
use crate::kernels::sigmoid::sigmoid_v;
use crate::matrix::MatrixView;
use crate::pool::run_chunks;
use crate::simd::Simd;
use crate::Config;

/// Per-LLM sums of P over a chunk (padding LLMs included, ignored at the end).
struct MeanSink<'a> {
    llms: usize,
    sums: Vec<f64>,
    calibration: Option<&'a PaddedCalibration>,
}

impl TileSink for MeanSink<'_> {
    #[inline(always)]
    unsafe fn consume<S: Simd>(
        &mut self,
        _first_row: usize,
        valid: usize,
        panel: usize,
        logits: &TileLogits,
    ) {
        let l = S::LANES;
        for v in 0..2 {
            let col = panel * 2 * l + v * l;
            if col >= self.llms {
                break;
            }
            // The few rows of a tile are summed in float32 first (error ~1e-7 relative), then in float64.
            let mut tile_sum = S::splat(0.0);
            for row_logits in logits.v.iter().take(valid) {
                let x = S::load(row_logits.as_ptr().add(v * l));
                let p = sigmoid_v::<S>(calibrate::<S>(self.calibration, x, col));
                tile_sum = S::add(tile_sum, p);
            }
            let mut tmp = [0.0f32; 16];
            S::store(tmp.as_mut_ptr(), tile_sum);
            if let Some(sums) = self.sums.get_mut(col..col + l) {
                for (s, &t) in sums.iter_mut().zip(&tmp) {
                    *s += f64::from(t);
                }
            }
        }
    }
}

/// Mean over the questions of P(correct) for each LLM (length K), accumulated in float64.
///
/// Errors: those of [`crate::probabilities`], and an empty question bank (N = 0).
pub fn mean_probability(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    config: &Config,
) -> Result<Vec<f32>, KernelError> {
    mean_probability_calibrated(questions, llms, &Calibration::none(), config)
}

/// [`mean_probability`] of the calibrated probabilities `sigmoid(scale[j] * logit + bias[j])`.
pub fn mean_probability_calibrated(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    calibration: &Calibration<'_>,
    config: &Config,
) -> Result<Vec<f32>, KernelError> {
    check_shapes(questions, llms)?;
    let n = questions.rows();
    if n == 0 {
        return Err(KernelError::EmptyQuestionBank);
    }
    check_offsets(calibration.offsets, questions.rows(), llms.rows())?;
    let packed = pack_llms(llms, panel_width(config.simd))?;
    let padded = packed.panels * packed.width;
    let cal = PaddedCalibration::new(calibration, llms.rows(), padded)?;
    let items: Vec<(usize, ())> = (0..n).step_by(CHUNK_ROWS).map(|s| (s, ())).collect();
    let work = n.saturating_mul(padded).saturating_mul(llms.cols());
    let chunk_sums = run_chunks(config.threads, work, items, |first_row, ()| {
        let rows = first_row..(first_row + CHUNK_ROWS).min(n);
        let mut sink = MeanSink {
            llms: llms.rows(),
            sums: vec![0.0; padded],
            calibration: cal.as_ref(),
        };
        run_rows(
            config.simd,
            questions,
            rows,
            &packed,
            calibration.offsets,
            &mut sink,
        )?;
        Ok(sink.sums)
    })?;
    let mut total = vec![0.0f64; padded];
    for sums in &chunk_sums {
        for (t, s) in total.iter_mut().zip(sums) {
            *t += s;
        }
    }
    Ok(total
        .iter()
        .take(llms.rows())
        .map(|&s| (s / n as f64) as f32)
        .collect())
}
