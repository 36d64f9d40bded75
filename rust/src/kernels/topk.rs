//! `top_k`: the k most likely-correct LLMs per question, without materialising N x K.
//!
//! Each row keeps a sorted list of its k best (logit, index) so far. LLMs arrive in increasing index order,
//! so "strictly greater" admission and insertion after equal logits break ties by lower index. A SIMD
//! compare against the row's current k-th best logit skips almost all candidates once the list is full.
//!
//! With a calibration the ranked logit is the calibrated one. With a per-LLM penalty the ranking key is
//! `P(correct) - penalty[j]` instead (cost-aware routing); the reported values are the probabilities
//! themselves, kept beside the keys (never rebuilt as key + penalty, which loses P when the penalty is large).

use crate::alloc::zeroed;
use crate::error::KernelError;
use crate::kernels::adjust::{
    calibrate, check_offsets, padded_penalty, Calibration, PaddedCalibration,
};
use crate::kernels::engine::{
    check_shapes, panel_width, row_chunks, run_rows, TileLogits, TileSink,
};
use crate::kernels::pack::pack_llms;
use crate::kernels::sigmoid::{sigmoid_slice, sigmoid_v};
use crate::matrix::MatrixView;
use crate::pool::run_chunks;
use crate::simd::Simd;
use crate::Config;

/// One chunk's slices of the index and value outputs.
pub(crate) type ChunkOutput<'a> = (&'a mut [u32], &'a mut [f32]);

/// [`row_chunks`] of the index and value outputs together (`k` entries per question row in each).
pub(crate) fn row_chunk_pairs<'a>(
    indices: &'a mut [u32],
    values: &'a mut [f32],
    k: usize,
) -> Vec<(usize, ChunkOutput<'a>)> {
    let chunks = row_chunks(indices, k)
        .into_iter()
        .zip(row_chunks(values, k));
    chunks
        .map(|((first_row, idx), (_, val))| (first_row, (idx, val)))
        .collect()
}

/// Running top-k for a chunk of rows, kept directly in the output slices (`values` holds logits until
/// [`TileSink::finish`] turns them into probabilities).
pub(crate) struct TopKSink<'a> {
    k: usize,
    llms: usize,
    indices: &'a mut [u32],
    values: &'a mut [f32],
    lens: Vec<usize>,
    calibration: Option<&'a PaddedCalibration>,
    /// Padded per-LLM penalty: when present the key is `sigmoid(logit) - penalty` instead of the logit.
    penalty: Option<&'a [f32]>,
    /// With a penalty: the probability of each kept entry, moved along with `values` (empty otherwise).
    probs: Vec<f32>,
    /// For `k = 1` without a penalty: per chunk row, the best key seen in each SIMD lane (16 floats) and
    /// its LLM index (16 floats); reduced across lanes in `finish` (empty otherwise). A compare and two
    /// blends per vector replace the per-row branches of the general list.
    lane_best: Vec<f32>,
}

/// Floats of [`TopKSink::lane_best`] per row: 16 keys, then 16 indices.
const LANE_BEST: usize = 32;
/// Lane numbers, added to a vector's first column to give its LLM indices.
const LANE_INDEX: [f32; 16] = [
    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
];
/// `LANE_PAD[16 - n..]`: `n` zeros then minus infinity, added to a last vector with `n` real LLMs.
const LANE_PAD: [f32; 32] = {
    let mut pad = [0.0f32; 32];
    let mut i = 16;
    while i < 32 {
        pad[i] = f32::NEG_INFINITY;
        i += 1;
    }
    pad
};
/// LLM indices are carried as float32 lanes in the `k = 1` path: exact below 2^24.
const LANE_INDEX_LIMIT: usize = 1 << 24;

impl<'a> TopKSink<'a> {
    /// A sink for the chunk whose outputs are `indices` / `values` (`rows * k` each).
    pub(crate) fn new(
        k: usize,
        llms: usize,
        indices: &'a mut [u32],
        values: &'a mut [f32],
        calibration: Option<&'a PaddedCalibration>,
        penalty: Option<&'a [f32]>,
    ) -> Self {
        let rows = values.len() / k.max(1);
        let probs = if penalty.is_some() {
            vec![0.0; values.len()]
        } else {
            Vec::new()
        };
        let lane_best = if k == 1 && penalty.is_none() && llms < LANE_INDEX_LIMIT {
            let mut init = [f32::NEG_INFINITY; LANE_BEST];
            init[16..].fill(0.0);
            init.repeat(rows)
        } else {
            Vec::new()
        };
        Self {
            k,
            llms,
            indices,
            values,
            lens: vec![0; rows],
            calibration,
            penalty,
            probs,
            lane_best,
        }
    }

    /// The `k = 1` path of [`TileSink::consume`]: lane-wise best key and index of each row.
    #[inline(always)]
    unsafe fn consume_lanes<S: Simd>(
        &mut self,
        first_row: usize,
        valid: usize,
        panel: usize,
        logits: &TileLogits,
    ) {
        let l = S::LANES;
        for (r, row_logits) in logits.v.iter().enumerate().take(valid) {
            let start = (first_row + r) * LANE_BEST;
            let Some(best) = self.lane_best.get_mut(start..start + LANE_BEST) else {
                continue;
            };
            let (keys, indices) = best.split_at_mut(16);
            let (mut key, mut index) = (S::load(keys.as_ptr()), S::load(indices.as_ptr()));
            for v in 0..2 {
                let col = panel * 2 * l + v * l;
                if col >= self.llms {
                    break;
                }
                let mut x = calibrate::<S>(
                    self.calibration,
                    S::load(row_logits.as_ptr().add(v * l)),
                    col,
                );
                if self.llms - col < l {
                    // Padding LLMs of the last vector must never win.
                    x = S::add(x, S::load(LANE_PAD.as_ptr().add(16 - (self.llms - col))));
                }
                let lane_llm = S::add(S::splat(col as f32), S::load(LANE_INDEX.as_ptr()));
                // Strictly greater: within a lane LLMs arrive in increasing order, so the lower index
                // keeps a tie.
                index = S::select_gt(x, key, lane_llm, index);
                key = S::select_gt(x, key, x, key);
            }
            S::store(keys.as_mut_ptr(), key);
            S::store(indices.as_mut_ptr(), index);
        }
    }

    /// Offers LLM `index` with `logit` to chunk row `row`.
    #[inline(always)]
    fn offer(&mut self, row: usize, logit: f32, index: u32, prob: f32) {
        let k = self.k;
        let (Some(len), Some(values), Some(indices)) = (
            self.lens.get_mut(row),
            self.values.get_mut(row * k..row * k + k),
            self.indices.get_mut(row * k..row * k + k),
        ) else {
            return;
        };
        let mut probs = self.probs.get_mut(row * k..row * k + k);
        let mut pos = if *len == k {
            match values.last() {
                Some(&worst) if logit > worst => k - 1,
                _ => return,
            }
        } else {
            *len += 1;
            *len - 1
        };
        while pos > 0 && values[pos - 1] < logit {
            values[pos] = values[pos - 1];
            indices[pos] = indices[pos - 1];
            if let Some(p) = probs.as_deref_mut() {
                p[pos] = p[pos - 1];
            }
            pos -= 1;
        }
        values[pos] = logit;
        indices[pos] = index;
        if let Some(p) = probs {
            p[pos] = prob;
        }
    }

    /// Reduces each row's lanes to its best (key, lowest index on ties) into `values` / `indices`.
    #[inline(always)]
    unsafe fn reduce_lanes<S: Simd>(&mut self) {
        for (row, best) in self.lane_best.chunks_exact(LANE_BEST).enumerate() {
            let (keys, indices) = best.split_at(16);
            let key = S::load(keys.as_ptr());
            let top = S::max_lane(key);
            // Lanes holding `top`; the real LLMs of a row always give finite keys, padding lanes -inf.
            let mut tied = !S::gt_mask(S::splat(top), key) & ((1u32 << S::LANES) - 1);
            let mut index = f32::INFINITY;
            while tied != 0 {
                let lane = tied.trailing_zeros() as usize;
                tied &= tied - 1;
                index = index.min(indices.get(lane).copied().unwrap_or(f32::INFINITY));
            }
            if let (Some(value), Some(slot), Some(len)) = (
                self.values.get_mut(row),
                self.indices.get_mut(row),
                self.lens.get_mut(row),
            ) {
                *value = top;
                *slot = index as u32;
                *len = 1;
            }
        }
    }
}

impl TileSink for TopKSink<'_> {
    #[inline(always)]
    unsafe fn consume<S: Simd>(
        &mut self,
        first_row: usize,
        valid: usize,
        panel: usize,
        logits: &TileLogits,
    ) {
        if !self.lane_best.is_empty() {
            self.consume_lanes::<S>(first_row, valid, panel, logits);
            return;
        }
        let (l, k) = (S::LANES, self.k);
        for (r, row_logits) in logits.v.iter().enumerate().take(valid) {
            let row = first_row + r;
            for v in 0..2 {
                let col = panel * 2 * l + v * l;
                if col >= self.llms {
                    break;
                }
                let lanes = (self.llms - col).min(l);
                let valid_mask = if lanes >= 32 {
                    u32::MAX
                } else {
                    (1u32 << lanes) - 1
                };
                let mut keys = [0.0f32; 16];
                let mut probs = [0.0f32; 16];
                let key_source = if self.calibration.is_none() && self.penalty.is_none() {
                    row_logits.as_ptr().add(v * l)
                } else {
                    let x = calibrate::<S>(
                        self.calibration,
                        S::load(row_logits.as_ptr().add(v * l)),
                        col,
                    );
                    let x = match self.penalty.and_then(|p| p.get(col..col + l)) {
                        Some(pen) => {
                            let p = sigmoid_v::<S>(x);
                            S::store(probs.as_mut_ptr(), p);
                            S::sub(p, S::load(pen.as_ptr()))
                        }
                        None => x,
                    };
                    S::store(keys.as_mut_ptr(), x);
                    keys.as_ptr()
                };
                let full = self.lens.get(row).is_some_and(|&len| len == k);
                let mut mask = match self.values.get(row * k + k - 1) {
                    Some(&worst) if full => {
                        S::gt_mask(S::load(key_source), S::splat(worst)) & valid_mask
                    }
                    _ => valid_mask,
                };
                while mask != 0 {
                    let lane = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let key = *key_source.add(lane);
                    self.offer(row, key, (col + lane) as u32, probs[lane]);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn finish<S: Simd>(&mut self) {
        if !self.lane_best.is_empty() {
            self.reduce_lanes::<S>();
        }
        match self.penalty {
            // Keys are P - penalty: report the probabilities kept beside them.
            Some(_) => self.values.copy_from_slice(&self.probs),
            None => sigmoid_slice::<S>(self.values),
        }
    }
}

/// The `k` most likely-correct LLMs for every question, best first, ties (equal logits) broken by lower
/// LLM index: `(indices, probabilities)`, each row-major `N x k`.
///
/// Ranking is by logit, which keeps the order where float32 probabilities saturate at 1.0. Errors: those
/// of [`crate::probabilities`], and `k` outside `1..=K`.
pub fn top_k(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    k: usize,
    config: &Config,
) -> Result<(Vec<u32>, Vec<f32>), KernelError> {
    top_k_adjusted(questions, llms, k, &Calibration::none(), None, config)
}

/// [`top_k`] on calibrated probabilities `sigmoid(scale[j] * logit + bias[j])`, optionally ranked by
/// `P - penalty[j]` (best first; equal keys broken by the lower LLM index). The returned values are the
/// (calibrated) probabilities of the chosen LLMs either way.
///
/// Ranking by `P - penalty` happens in float32 probabilities, so LLMs whose P saturates at 1.0 tie.
/// Errors: those of [`top_k`], and calibration or penalty arrays that are not of length K, hold NaN/inf,
/// or (scale) are <= 0.
pub fn top_k_adjusted(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    k: usize,
    calibration: &Calibration<'_>,
    penalty: Option<&[f32]>,
    config: &Config,
) -> Result<(Vec<u32>, Vec<f32>), KernelError> {
    check_shapes(questions, llms)?;
    if k == 0 || k > llms.rows() {
        return Err(KernelError::InvalidK {
            k,
            llms: llms.rows(),
        });
    }
    if u32::try_from(llms.rows()).is_err() {
        return Err(KernelError::OutputTooLarge {
            rows: llms.rows(),
            cols: 1,
        });
    }
    check_offsets(calibration.offsets, questions.rows(), llms.rows())?;
    let packed = pack_llms(llms, panel_width(config.simd))?;
    let padded = packed.panels * packed.width;
    let cal = PaddedCalibration::new(calibration, llms.rows(), padded)?;
    let pen = penalty
        .map(|p| padded_penalty(p, llms.rows(), padded))
        .transpose()?;
    let (n, d) = (questions.rows(), llms.cols());
    let mut indices: Vec<u32> = zeroed(n, k)?;
    let mut values: Vec<f32> = zeroed(n, k)?;
    let items = row_chunk_pairs(&mut indices, &mut values, k);
    let work = n
        .saturating_mul(packed.panels * packed.width)
        .saturating_mul(d);
    run_chunks(config.threads, work, items, |first_row, (idx, val)| {
        let rows = first_row..first_row + val.len() / k;
        let mut sink = TopKSink::new(k, llms.rows(), idx, val, cal.as_ref(), pen.as_deref());
        run_rows(
            config.simd,
            questions,
            rows,
            &packed,
            calibration.offsets,
            &mut sink,
        )
    })?;
    Ok((indices, values))
}
