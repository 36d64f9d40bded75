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

#[cfg(test)]
mod tests {
    //! The software rounding runs on every CPU (packing happens before any bf16 instruction), so it is tested on
    //! every CPU; the tests of the bf16 pass itself need AVX-512 BF16 and are `#[ignore]`d with that reason.
    use super::{pack_bf16, to_bf16, BF16_WIDTH, LARGEST_COMPONENT};
    use crate::matrix::MatrixView;

    /// Round to nearest, ties to even, written the long way.
    fn reference(x: f32) -> u16 {
        let bits = x.to_bits();
        let (upper, rest) = (bits >> 16, bits & 0xFFFF);
        let up = rest > 0x8000 || (rest == 0x8000 && upper & 1 == 1);
        (upper + u32::from(up)) as u16
    }

    fn bits(b: u32) -> f32 {
        f32::from_bits(b)
    }

    #[test]
    fn exact_ties_round_to_even() {
        // 1 + 2^-8 is halfway between bf16 1.0 (even mantissa) and the next value: it goes down to 1.0.
        assert_eq!(to_bf16(bits(0x3F80_8000)), 0x3F80);
        // 1 + 3 * 2^-8 is halfway between 0x3F81 (odd) and 0x3F82 (even): it goes up.
        assert_eq!(to_bf16(bits(0x3F81_8000)), 0x3F82);
        assert_eq!(to_bf16(bits(0xBF80_8000)), 0xBF80);
        assert_eq!(to_bf16(bits(0xBF81_8000)), 0xBF82);
        // A tie that carries into the exponent, and the smallest subnormal tie.
        assert_eq!(to_bf16(bits(0x3FFF_8000)), 0x4000);
        assert_eq!(to_bf16(bits(0x0000_8000)), 0x0000);
        assert_eq!(to_bf16(bits(0x0001_8000)), 0x0002);
    }

    #[test]
    fn off_a_tie_rounds_to_nearest_and_exact_values_stay() {
        assert_eq!(to_bf16(bits(0x3F80_8001)), 0x3F81);
        assert_eq!(to_bf16(bits(0x3F80_7FFF)), 0x3F80);
        assert_eq!(to_bf16(1.0), 0x3F80);
        assert_eq!(to_bf16(-2.5), 0xC020);
        assert_eq!(to_bf16(0.0), 0x0000);
        assert_eq!(to_bf16(-0.0), 0x8000);
    }

    #[test]
    fn every_tie_and_many_finite_values_match_the_long_form() {
        let packable = |x: f32| x.is_finite() && x.abs() <= super::LARGEST_COMPONENT;
        let mut checked = 0usize;
        for upper in 0..=0xFFFFu32 {
            for rest in [0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF] {
                let x = bits(upper << 16 | rest);
                if packable(x) {
                    assert_eq!(to_bf16(x), reference(x), "{x:e} ({:#010x})", x.to_bits());
                    checked += 1;
                }
            }
        }
        let mut state = 0x9E37_79B9u32;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let x = bits(state);
            if packable(x) {
                assert_eq!(to_bf16(x), reference(x), "{x:e} ({state:#010x})");
                checked += 1;
            }
        }
        assert!(checked > 400_000, "only {checked} values checked");
    }

    #[test]
    fn a_table_with_a_component_bfloat16_cannot_hold_is_left_to_float32() {
        let packs = |x: f32| pack_bf16(MatrixView::new("llms", &[0.5, x], 1, 2).unwrap()).is_some();
        assert!(packs(LARGEST_COMPONENT) && packs(-LARGEST_COMPONENT) && packs(0.0));
        for x in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            2e38,
            -2e38,
            f32::MAX,
        ] {
            assert!(!packs(x), "{x}");
        }
    }

    #[test]
    fn a_table_whose_norm_float32_cannot_hold_is_left_to_float32() {
        // Every component within bfloat16's range, the row's norm (3e38, then 4e38) within float32's, then beyond.
        let packs = |d: usize| {
            let row = vec![LARGEST_COMPONENT; d];
            pack_bf16(MatrixView::new("llms", &row, 1, d).unwrap()).is_some()
        };
        assert!(packs(9) && !packs(16));
    }

    #[test]
    fn the_last_panel_is_halved_only_when_at_most_half_full() {
        for (count, halved) in [
            (1, true),
            (16, true),
            (17, false),
            (32, false),
            (33, true),
            (48, true),
            (49, false),
        ] {
            let m = vec![0.25f32; count * 3];
            let packed = pack_bf16(MatrixView::new("llms", &m, count, 3).unwrap()).unwrap();
            let last = count.div_ceil(BF16_WIDTH) - 1;
            assert_eq!(
                packed.vectors(last),
                if halved { 1 } else { 2 },
                "K {count}"
            );
            assert!(last == 0 || packed.vectors(0) == 2);
        }
    }
}
