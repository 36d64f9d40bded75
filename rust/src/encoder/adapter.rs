//! The routers' two-layer MLP adapter, `relu(x W1^T + b1) W2^T + b2`, on tiles of rows.
//!
//! Weights are stored transposed (`in x out`) and zero-padded to a multiple of [`COLUMN_BLOCK`] outputs, so a
//! register tile of [`TILE_ROWS`] rows x four SIMD vectors of outputs is filled by broadcasting one input
//! component and multiply-adding it into the tile: each weight is read once per tile of rows.

use crate::simd::{Portable, Simd, SimdLevel};

/// Rows per register tile.
const TILE_ROWS: usize = 4;
/// Output columns per register tile at the widest level (4 vectors of 16 lanes); a multiple of the others'.
const COLUMN_BLOCK: usize = 64;

/// A dense layer, transposed and padded: `out = x W^T + b` for `x` of `inputs` columns.
#[derive(Debug, Clone)]
struct Layer {
    /// `inputs x padded_outputs`.
    weight_t: Vec<f32>,
    /// `padded_outputs`, zeros past the real outputs.
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
    padded_outputs: usize,
}

impl Layer {
    /// From PyTorch's `outputs x inputs` layout; `inputs_padded` rows of the transposed weight (extra rows
    /// zero) so it can read a previous layer's padded output.
    fn new(
        name: &str,
        weight: &[f32],
        bias: &[f32],
        inputs: usize,
        inputs_padded: usize,
    ) -> Result<Self, String> {
        let outputs = bias.len();
        if outputs == 0 || inputs == 0 || weight.len() != outputs * inputs {
            return Err(format!(
                "adapter {name}: weight has {} values, bias {outputs}, expected {outputs} x {inputs}",
                weight.len()
            ));
        }
        if weight.iter().chain(bias).any(|v| !v.is_finite()) {
            return Err(format!("adapter {name}: holds NaN or inf"));
        }
        let padded_outputs = outputs.div_ceil(COLUMN_BLOCK) * COLUMN_BLOCK;
        let mut weight_t = vec![0.0f32; inputs_padded * padded_outputs];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            for (i, &w) in row.iter().enumerate() {
                weight_t[i * padded_outputs + o] = w;
            }
        }
        let mut padded_bias = vec![0.0f32; padded_outputs];
        padded_bias[..outputs].copy_from_slice(bias);
        Ok(Self {
            weight_t,
            bias: padded_bias,
            inputs: inputs_padded,
            outputs,
            padded_outputs,
        })
    }
}

/// The two layers.
#[derive(Debug, Clone)]
pub struct Adapter {
    first: Layer,
    second: Layer,
    in_dim: usize,
}

/// Buffers of one worker: a tile of inputs, hidden activations and outputs.
#[derive(Debug)]
pub struct AdapterScratch {
    input: Vec<f32>,
    hidden: Vec<f32>,
    output: Vec<f32>,
}

impl Adapter {
    /// `w1`: `hidden x in_dim`, `w2`: `out x hidden` (PyTorch layout).
    pub fn new(
        in_dim: usize,
        w1: &[f32],
        b1: &[f32],
        w2: &[f32],
        b2: &[f32],
    ) -> Result<Self, String> {
        let first = Layer::new("layer 1", w1, b1, in_dim, in_dim)?;
        let second = Layer::new("layer 2", w2, b2, first.outputs, first.padded_outputs)?;
        Ok(Self {
            first,
            second,
            in_dim,
        })
    }

    pub fn out_dim(&self) -> usize {
        self.second.outputs
    }

    pub fn scratch(&self, _rows: usize) -> AdapterScratch {
        AdapterScratch {
            input: vec![0.0; TILE_ROWS * self.in_dim],
            hidden: vec![0.0; TILE_ROWS * self.first.padded_outputs],
            output: vec![0.0; TILE_ROWS * self.second.padded_outputs],
        }
    }

    /// `rows` rows of `x` (row stride `stride` >= in_dim) through both layers into `out` (`rows x out_dim`).
    pub fn forward(
        &self,
        x: &[f32],
        stride: usize,
        rows: usize,
        out: &mut [f32],
        scratch: &mut AdapterScratch,
        level: SimdLevel,
    ) {
        let (n_in, n_out) = (self.in_dim, self.out_dim());
        for tile_start in (0..rows).step_by(TILE_ROWS) {
            let valid = (rows - tile_start).min(TILE_ROWS);
            scratch.input.fill(0.0);
            for r in 0..valid {
                let src = x
                    .get((tile_start + r) * stride..)
                    .and_then(|s| s.get(..n_in));
                if let (Some(src), Some(dst)) =
                    (src, scratch.input.get_mut(r * n_in..(r + 1) * n_in))
                {
                    dst.copy_from_slice(src);
                }
            }
            // SAFETY: callers check that `level` is supported; the scratch buffers hold TILE_ROWS rows of
            // each layer's (padded) width, which is what the tile reads and writes.
            unsafe {
                tile_dispatch(
                    level,
                    &self.first,
                    &scratch.input,
                    &mut scratch.hidden,
                    true,
                );
                tile_dispatch(
                    level,
                    &self.second,
                    &scratch.hidden,
                    &mut scratch.output,
                    false,
                );
            }
            for r in 0..valid {
                let src = scratch
                    .output
                    .get(r * self.second.padded_outputs..)
                    .and_then(|s| s.get(..n_out));
                let dst = out.get_mut((tile_start + r) * n_out..(tile_start + r + 1) * n_out);
                if let (Some(src), Some(dst)) = (src, dst) {
                    dst.copy_from_slice(src);
                }
            }
        }
    }
}

/// # Safety
/// `level` must be supported; `x` holds `TILE_ROWS x layer.inputs`, `out` `TILE_ROWS x layer.padded_outputs`.
unsafe fn tile_dispatch(level: SimdLevel, layer: &Layer, x: &[f32], out: &mut [f32], relu: bool) {
    match level {
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 => tile_avx512(layer, x, out, relu),
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2Fma => tile_avx2(layer, x, out, relu),
        _ => tile_generic::<Portable>(layer, x, out, relu),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tile_avx512(layer: &Layer, x: &[f32], out: &mut [f32], relu: bool) {
    tile_generic::<crate::simd::Avx512>(layer, x, out, relu)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(layer: &Layer, x: &[f32], out: &mut [f32], relu: bool) {
    tile_generic::<crate::simd::Avx2Fma>(layer, x, out, relu)
}

/// One tile of `TILE_ROWS` rows through `layer`, four vectors of outputs at a time.
#[inline(always)]
unsafe fn tile_generic<S: Simd>(layer: &Layer, x: &[f32], out: &mut [f32], relu: bool) {
    const V: usize = 4;
    let (k, n, l) = (layer.inputs, layer.padded_outputs, S::LANES);
    if x.len() < TILE_ROWS * k || out.len() < TILE_ROWS * n || layer.weight_t.len() < k * n {
        return;
    }
    let (xp, wp, bp, op) = (
        x.as_ptr(),
        layer.weight_t.as_ptr(),
        layer.bias.as_ptr(),
        out.as_mut_ptr(),
    );
    for col in (0..n).step_by(V * l) {
        let bias: [S::V; V] = std::array::from_fn(|v| S::load(bp.add(col + v * l)));
        let mut acc = [bias; TILE_ROWS];
        for t in 0..k {
            let w: [S::V; V] = std::array::from_fn(|v| S::load(wp.add(t * n + col + v * l)));
            for (r, acc_row) in acc.iter_mut().enumerate() {
                let xv = S::splat(*xp.add(r * k + t));
                for (a, &wv) in acc_row.iter_mut().zip(&w) {
                    *a = S::mul_add(xv, wv, *a);
                }
            }
        }
        let zero = S::splat(0.0);
        for (r, acc_row) in acc.iter().enumerate() {
            for (v, &a) in acc_row.iter().enumerate() {
                let value = if relu { S::max(a, zero) } else { a };
                S::store(op.add(r * n + col + v * l), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values in [-1, 1) from a fixed linear congruential sequence.
    fn values(seed: u64, len: usize) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// `relu(x W1^T + b1) W2^T + b2` in f64, one row at a time, from PyTorch's layout.
    fn reference(x: &[f32], w1: &[f32], b1: &[f32], w2: &[f32], b2: &[f32]) -> Vec<f64> {
        let (hidden, inputs) = (b1.len(), x.len());
        let h: Vec<f64> = (0..hidden)
            .map(|o| {
                let sum: f64 = (0..inputs)
                    .map(|i| f64::from(w1[o * inputs + i]) * f64::from(x[i]))
                    .sum();
                (sum + f64::from(b1[o])).max(0.0)
            })
            .collect();
        (0..b2.len())
            .map(|o| {
                let sum: f64 = (0..hidden)
                    .map(|i| f64::from(w2[o * hidden + i]) * h[i])
                    .sum();
                sum + f64::from(b2[o])
            })
            .collect()
    }

    #[test]
    fn forward_is_the_two_layers_with_relu_on_every_level_row_count_and_stride() {
        // Widths that are not multiples of a tile's columns, row counts around the tile's rows.
        let (in_dim, hidden, out_dim) = (7, 70, 5);
        let (w1, b1) = (values(1, hidden * in_dim), values(2, hidden));
        let (w2, b2) = (values(3, out_dim * hidden), values(4, out_dim));
        let adapter = Adapter::new(in_dim, &w1, &b1, &w2, &b2).expect("valid adapter");
        assert_eq!(adapter.out_dim(), out_dim);
        let mut negative_hidden = 0;
        for level in SimdLevel::supported() {
            for rows in [1, 3, 4, 5, 9] {
                for stride in [in_dim, in_dim + 3] {
                    let x = values(5 + rows as u64, rows * stride);
                    let mut out = vec![f32::NAN; rows * out_dim];
                    let mut scratch = adapter.scratch(rows);
                    adapter.forward(&x, stride, rows, &mut out, &mut scratch, level);
                    for r in 0..rows {
                        let row = &x[r * stride..r * stride + in_dim];
                        negative_hidden += (0..hidden)
                            .filter(|&o| {
                                (0..in_dim)
                                    .map(|i| w1[o * in_dim + i] * row[i])
                                    .sum::<f32>()
                                    + b1[o]
                                    < 0.0
                            })
                            .count();
                        let want = reference(row, &w1, &b1, &w2, &b2);
                        for (o, &w) in want.iter().enumerate() {
                            let got = f64::from(out[r * out_dim + o]);
                            assert!(
                                (got - w).abs() <= 1e-5 * (1.0 + w.abs()),
                                "{level:?}, {rows} rows, stride {stride}: row {r} output {o}: {got} vs {w}"
                            );
                        }
                    }
                }
            }
        }
        assert!(negative_hidden > 0, "the ReLU must have something to cut");
    }

    #[test]
    fn weights_of_the_wrong_size_or_not_finite_are_refused_by_layer() {
        let (w1, b1, w2, b2) = (values(1, 6), values(2, 3), values(3, 6), values(4, 2));
        assert!(Adapter::new(2, &w1, &b1, &w2, &b2).is_ok());
        let wrong = Adapter::new(3, &w1, &b1, &w2, &b2).expect_err("w1 is 3 x 2, not 3 x 3");
        assert_eq!(
            wrong,
            "adapter layer 1: weight has 6 values, bias 3, expected 3 x 3"
        );
        let short = Adapter::new(2, &w1, &b1, &w2[..5], &b2).expect_err("w2 is short");
        assert_eq!(
            short,
            "adapter layer 2: weight has 5 values, bias 2, expected 2 x 3"
        );
        assert!(
            Adapter::new(2, &[], &[], &w2, &b2).is_err(),
            "no hidden units"
        );
        assert!(Adapter::new(0, &[], &b1, &w2, &b2).is_err(), "no inputs");
        let mut nan = b2.clone();
        nan[1] = f32::NAN;
        assert_eq!(
            Adapter::new(2, &w1, &b1, &w2, &nan).expect_err("NaN bias"),
            "adapter layer 2: holds NaN or inf"
        );
        let mut inf = w1.clone();
        inf[0] = f32::INFINITY;
        assert_eq!(
            Adapter::new(2, &inf, &b1, &w2, &b2).expect_err("inf weight"),
            "adapter layer 1: holds NaN or inf"
        );
    }
}
