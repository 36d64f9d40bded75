//! The LLM table in bfloat16 for the bf16 pass (`pass`): panel `p` holds, for each pair of components
//! `(2t, 2t + 1)`, two vectors of 16 lanes, lane `l` of vector `v` holding LLM `p*32 + v*16 + l`'s two
//! components as one bf16 pair: exactly what `vdpbf16ps` multiplies against a broadcast question pair.

use crate::matrix::MatrixView;
use crate::simd::norm::sum_squares_f64;

/// LLMs per panel.
pub(crate) const BF16_WIDTH: usize = 32;
/// Components above this would round to infinity in bfloat16.
const LARGEST_COMPONENT: f32 = 1e38;

/// Round to nearest even (finite inputs).
#[inline(always)]
pub(crate) fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) as u16
}

/// The LLM table packed as bf16 pairs, panels of [`BF16_WIDTH`] LLMs (zero-padded). As in the float32
/// packing (`kernels::pack`), a last panel that would be at most half full holds one vector of 16 LLMs instead of two.
pub(crate) struct PackedBf16 {
    data: Vec<u16>,
    pub(crate) pairs: usize,
    pub(crate) panels: usize,
    half_last: bool,
    pub(crate) max_norm: f64,
}

impl PackedBf16 {
    /// Vectors of 16 LLMs in panel `p` (2, or 1 for a half last panel).
    pub(crate) fn vectors(&self, p: usize) -> usize {
        if self.half_last && p + 1 == self.panels {
            1
        } else {
            2
        }
    }

    pub(crate) fn panel(&self, p: usize) -> &[u16] {
        let start = p * self.pairs * 2 * BF16_WIDTH;
        let size = self.pairs * 32 * self.vectors(p);
        self.data.get(start..start + size).unwrap_or(&[])
    }
}

/// Packs a validated LLM table; `None` when a component is too large for bfloat16 (use float32).
pub(crate) fn pack_bf16(llms: MatrixView<'_>) -> Option<PackedBf16> {
    let (count, d) = (llms.rows(), llms.cols());
    if llms
        .data()
        .iter()
        .any(|v| !v.is_finite() || v.abs() > LARGEST_COMPONENT)
    {
        return None;
    }
    let pairs = d.div_ceil(2);
    let panels = count.div_ceil(BF16_WIDTH);
    let rest = count % BF16_WIDTH;
    let half_last = rest != 0 && rest <= BF16_WIDTH / 2;
    let mut data = vec![0u16; panels * pairs * 2 * BF16_WIDTH];
    let mut max_norm = 0.0f64;
    for j in 0..count {
        let row = llms.row(j);
        max_norm = max_norm.max(sum_squares_f64(row).sqrt());
        let (p, lane) = (j / BF16_WIDTH, j % BF16_WIDTH);
        let (v, l) = (lane / 16, lane % 16);
        let vectors = if half_last && p + 1 == panels { 1 } else { 2 };
        for (t, &x) in row.iter().enumerate() {
            let index = p * pairs * 2 * BF16_WIDTH + ((t / 2) * vectors + v) * 32 + l * 2 + t % 2;
            if let Some(slot) = data.get_mut(index) {
                *slot = to_bf16(x);
            }
        }
    }
    if max_norm > f64::from(f32::MAX) {
        return None;
    }
    Some(PackedBf16 {
        data,
        pairs,
        panels,
        half_last,
        max_norm,
    })
}
