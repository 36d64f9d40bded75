//! Per-LLM adjustments applied inside the fused pass, while a tile of logits is hot:
//!
//! - calibration: `logit' = scale[j] * logit + bias[j]` before the sigmoid (temperature and bias fitted on
//!   validation data; see training/calibration.py);
//! - penalty (top-k only): rank by `P(correct) - penalty[j]` instead of by the logit (cost-aware routing:
//!   `penalty = lambda * cost`).
//!
//! - offsets: `logit' = logit + offset[i][j]`, one value per (question, LLM), added before the calibration
//!   (an onboarded LLM's correction from the encoder's features; see python/jeirt_lite/_corrections.py).
//!
//! The per-LLM arrays are validated once per call and padded to the packed table's width, so the sinks load them
//! as SIMD vectors at the same column as the logits; the offsets are added to each tile by the engine.

use crate::error::KernelError;
use crate::kernels::engine::MAX_WIDTH;
use crate::matrix::MatrixView;
use crate::simd::Simd;

/// Per-LLM temperature and bias on the logit; `None` means 1 (scale) or 0 (bias).
#[derive(Debug, Clone, Copy, Default)]
pub struct Calibration<'a> {
    /// Length K, finite, every entry > 0 (a non-positive scale would flip or erase the ranking).
    pub scale: Option<&'a [f32]>,
    /// Length K, finite.
    pub bias: Option<&'a [f32]>,
    /// N x K (one row per question, one column per LLM), finite: added to the logit before scale and bias.
    pub offsets: Option<MatrixView<'a>>,
}

impl Calibration<'_> {
    /// No calibration: the kernels' plain `sigmoid(q.m/|q| - |q|)`.
    pub fn none() -> Self {
        Self::default()
    }
}

/// Checks that the optional offsets are N x K and finite (the first bad entry is named).
pub(crate) fn check_offsets(
    offsets: Option<MatrixView<'_>>,
    questions: usize,
    llms: usize,
) -> Result<(), KernelError> {
    let Some(off) = offsets else {
        return Ok(());
    };
    if off.rows() != questions || off.cols() != llms {
        return Err(KernelError::OffsetShape {
            rows: off.rows(),
            cols: off.cols(),
            questions,
            llms,
        });
    }
    if let Some(i) = off.data().iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFiniteOffset {
            row: i / llms.max(1),
            col: i % llms.max(1),
        });
    }
    Ok(())
}

/// Checks a per-LLM array and copies it, padded with `fill`, to `padded + MAX_WIDTH` entries (so a SIMD load
/// at any column of the packed table stays in bounds).
fn padded(
    what: &'static str,
    values: &[f32],
    llms: usize,
    padded: usize,
    fill: f32,
    positive: bool,
) -> Result<Vec<f32>, KernelError> {
    if values.len() != llms {
        return Err(KernelError::LlmParameterLength {
            what,
            len: values.len(),
            llms,
        });
    }
    if let Some(row) = values.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::BadLlmParameter {
            what,
            row,
            why: "is NaN or inf",
        });
    }
    if positive {
        if let Some(row) = values.iter().position(|&v| v <= 0.0) {
            return Err(KernelError::BadLlmParameter {
                what,
                row,
                why: "must be > 0",
            });
        }
    }
    let mut out = vec![fill; padded.max(llms) + MAX_WIDTH];
    if let Some(head) = out.get_mut(..llms) {
        head.copy_from_slice(values);
    }
    Ok(out)
}

/// Calibration padded to the packed table: `None` when neither scale nor bias was given.
pub(crate) struct PaddedCalibration {
    scale: Vec<f32>,
    bias: Vec<f32>,
}

impl PaddedCalibration {
    pub(crate) fn new(
        calibration: &Calibration<'_>,
        llms: usize,
        padded_llms: usize,
    ) -> Result<Option<Self>, KernelError> {
        if calibration.scale.is_none() && calibration.bias.is_none() {
            return Ok(None);
        }
        let scale = match calibration.scale {
            Some(s) => padded("calibration scale", s, llms, padded_llms, 1.0, true)?,
            None => vec![1.0; padded_llms.max(llms) + MAX_WIDTH],
        };
        let bias = match calibration.bias {
            Some(b) => padded("calibration bias", b, llms, padded_llms, 0.0, false)?,
            None => vec![0.0; padded_llms.max(llms) + MAX_WIDTH],
        };
        Ok(Some(Self { scale, bias }))
    }

    /// `scale * x + bias` for the `S::LANES` LLMs starting at column `col`.
    ///
    /// # Safety
    /// Only called from inside the `#[target_feature]` function of level `S`.
    #[inline(always)]
    pub(crate) unsafe fn apply<S: Simd>(&self, x: S::V, col: usize) -> S::V {
        match (
            self.scale.get(col..col + S::LANES),
            self.bias.get(col..col + S::LANES),
        ) {
            (Some(s), Some(b)) => S::mul_add(x, S::load(s.as_ptr()), S::load(b.as_ptr())),
            _ => x, // unreachable: the arrays are padded past the last column
        }
    }
}

/// Applies an optional calibration (a no-op without one).
///
/// # Safety
/// Only called from inside the `#[target_feature]` function of level `S`.
#[inline(always)]
pub(crate) unsafe fn calibrate<S: Simd>(
    calibration: Option<&PaddedCalibration>,
    x: S::V,
    col: usize,
) -> S::V {
    match calibration {
        Some(c) => c.apply::<S>(x, col),
        None => x,
    }
}

/// A per-LLM penalty padded to the packed table (finite values, length K).
pub(crate) fn padded_penalty(
    penalty: &[f32],
    llms: usize,
    padded_llms: usize,
) -> Result<Vec<f32>, KernelError> {
    padded("penalty", penalty, llms, padded_llms, 0.0, false)
}
