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

/// Checks the table (at least one LLM; every row finite, its norm within float32) and packs it into panels of
/// `width`.
pub(crate) fn pack_llms(llms: MatrixView<'_>, width: usize) -> Result<PackedLlms, KernelError> {
    let (count, d) = (llms.rows(), llms.cols());
    if d == 0 || width == 0 {
        return Err(KernelError::EmptyDimension);
    }
    if count == 0 {
        return Err(KernelError::NoLlms);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` LLMs of dimension `d`, LLM j's component t = 100 j + t + 1 (never 0, so padding stands out).
    fn table(count: usize, d: usize) -> Vec<f32> {
        (0..count * d)
            .map(|i| (100 * (i / d) + i % d + 1) as f32)
            .collect()
    }

    fn packed(count: usize, d: usize, width: usize) -> PackedLlms {
        let m = table(count, d);
        pack_llms(MatrixView::new("llms", &m, count, d).unwrap(), width).unwrap()
    }

    #[test]
    fn panels_hold_their_llms_transposed_and_zero_padded() {
        // (K, W): full panels; a last panel more than half full; at most half full (packed half as wide);
        // one LLM; an odd width, never halved.
        for (count, width, half_last) in [
            (8, 4, false),
            (7, 4, false),
            (5, 4, true),
            (6, 4, true),
            (1, 4, true),
            (4, 3, false),
            (112, 32, true),
            (120, 32, false),
        ] {
            let d = 3;
            let packed = packed(count, d, width);
            let panels = count.div_ceil(width);
            assert_eq!(
                (packed.panels, packed.half_last, packed.width, packed.d),
                (panels, half_last, width, d)
            );
            let mut total = 0;
            for p in 0..panels {
                let lanes = packed.panel_width(p);
                assert_eq!(
                    lanes,
                    if half_last && p + 1 == panels {
                        width / 2
                    } else {
                        width
                    }
                );
                let panel = packed.panel(p);
                assert_eq!(panel.len(), d * lanes, "K {count} W {width} panel {p}");
                for t in 0..d {
                    for lane in 0..lanes {
                        let j = p * width + lane;
                        let want = if j < count {
                            (100 * j + t + 1) as f32
                        } else {
                            0.0
                        };
                        assert_eq!(
                            panel[t * lanes + lane],
                            want,
                            "K {count} W {width} panel {p} t {t} lane {lane}"
                        );
                    }
                }
                total += panel.len();
            }
            assert_eq!(packed.data.len(), total);
            assert!(packed.panel(panels).is_empty());
        }
    }

    #[test]
    fn the_largest_norm_is_kept_and_bad_rows_are_refused_by_index() {
        let m = [3.0, 4.0, 0.0, 0.0, 6.0, 8.0];
        let packed = pack_llms(MatrixView::new("llms", &m, 3, 2).unwrap(), 4).unwrap();
        assert_eq!(packed.max_norm, 10.0);
        let nan = [1.0, 2.0, 3.0, f32::NAN];
        assert_eq!(
            pack_llms(MatrixView::new("llms", &nan, 2, 2).unwrap(), 4).err(),
            Some(KernelError::NonFiniteLlm { row: 1 })
        );
        let huge = [1.0, 1.0, f32::MAX, f32::MAX]; // each entry finite, the norm past float32's range
        assert_eq!(
            pack_llms(MatrixView::new("llms", &huge, 2, 2).unwrap(), 4).err(),
            Some(KernelError::LlmNormOverflow { row: 1 })
        );
        let largest = [f32::MAX, 0.0]; // a norm of exactly float32's largest value still fits
        assert!(pack_llms(MatrixView::new("llms", &largest, 1, 2).unwrap(), 4).is_ok());
        assert_eq!(
            pack_llms(MatrixView::new("llms", &[], 0, 2).unwrap(), 4).err(),
            Some(KernelError::NoLlms)
        );
        for (d, width) in [(0, 4), (2, 0)] {
            let empty: Vec<f32> = vec![0.0; 2 * d];
            assert_eq!(
                pack_llms(MatrixView::new("llms", &empty, 2, d).unwrap(), width).err(),
                Some(KernelError::EmptyDimension)
            );
        }
    }
}
