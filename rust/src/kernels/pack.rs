//! The LLM table, validated and packed once per call into panels for the micro-kernel.
//!
//! Panel `p` holds LLMs `p*W .. p*W+W` transposed: for each component `t`, `W` consecutive floats (one per
//! LLM). The micro-kernel then loads a whole row of a panel as SIMD vectors and broadcasts one question
//! component against it, so each LLM's dot product is accumulated in its own lane, in the same order
//! (t = 0, 1, ..., d-1) whatever its position in the panel: identical LLM rows give identical logits.
//!
//! When the last panel would be at most half full it is packed half as wide (one SIMD vector), so that no
//! work is spent on more than half a vector of padding (K = 112 with 32-wide panels: 3.5 panels, not 4).

use crate::error::KernelError;
use crate::matrix::MatrixView;
use crate::simd::norm::sum_squares_f64;

/// Packed, zero-padded LLM table.
pub(crate) struct PackedLlms {
    /// `d * width` floats per panel (the last one `d * width / 2` when [`Self::half_last`]).
    pub data: Vec<f32>,
    pub d: usize,
    /// LLMs per panel (W).
    pub width: usize,
    pub panels: usize,
    /// The last panel is half as wide (one SIMD vector).
    pub half_last: bool,
    /// Largest LLM norm, used to decide which question rows need rescaling to keep dot products finite.
    pub max_norm: f64,
}

impl PackedLlms {
    /// LLMs in panel `p` (its packed row stride).
    pub fn panel_width(&self, p: usize) -> usize {
        if self.half_last && p + 1 == self.panels {
            self.width / 2
        } else {
            self.width
        }
    }

    /// The `d * panel_width(p)` floats of panel `p`.
    pub fn panel(&self, p: usize) -> &[f32] {
        let start = p * self.d * self.width;
        self.data
            .get(start..start + self.d * self.panel_width(p))
            .unwrap_or(&[])
    }
}

/// Checks every LLM row (finite, norm fits float32) and packs the table into panels of `width`.
pub(crate) fn pack_llms(llms: MatrixView<'_>, width: usize) -> Result<PackedLlms, KernelError> {
    let (count, d) = (llms.rows(), llms.cols());
    if d == 0 || width == 0 {
        return Err(KernelError::EmptyDimension);
    }
    let mut max_norm = 0.0f64;
    for j in 0..count {
        let row = llms.row(j);
        let norm = sum_squares_f64(row).sqrt();
        if !norm.is_finite() {
            return Err(KernelError::NonFiniteLlm { row: j });
        }
        if norm > f64::from(f32::MAX) {
            return Err(KernelError::LlmNormOverflow { row: j });
        }
        max_norm = max_norm.max(norm);
    }
    let panels = count.div_ceil(width);
    let rest = count % width;
    let half_last = width.is_multiple_of(2) && rest != 0 && rest <= width / 2;
    let last_width = if half_last { width / 2 } else { width };
    let mut data = vec![0.0f32; (panels - 1) * d * width + d * last_width];
    for (j, row) in llms.data().chunks_exact(d).enumerate() {
        let (p, lane) = (j / width, j % width);
        let stride = if p + 1 == panels { last_width } else { width };
        let base = p * d * width + lane;
        for (t, &value) in row.iter().enumerate() {
            if let Some(slot) = data.get_mut(base + t * stride) {
                *slot = value;
            }
        }
    }
    Ok(PackedLlms {
        data,
        d,
        width,
        panels,
        half_last,
        max_norm,
    })
}
