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
