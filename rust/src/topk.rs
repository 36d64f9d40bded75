//! `top_k`: the k most likely-correct LLMs per question, without materialising N x K.
//!
//! Each row keeps a sorted list of its k best (logit, index) so far. LLMs arrive in increasing index order,
//! so "strictly greater" admission and insertion after equal logits break ties by lower index. A SIMD
//! compare against the row's current k-th best logit skips almost all candidates once the list is full.

use crate::alloc::zeroed;
use crate::engine::{check_shapes, panel_width, run_rows, TileLogits, TileSink, CHUNK_ROWS};
use crate::error::KernelError;
use crate::matrix::MatrixView;
use crate::pack::pack_llms;
use crate::pool::run_chunks;
use crate::sigmoid::sigmoid_slice;
use crate::simd::Simd;
use crate::Config;

/// One chunk's slices of the index and value outputs.
type ChunkOutput<'a> = (&'a mut [u32], &'a mut [f32]);

/// Running top-k for a chunk of rows, kept directly in the output slices (`values` holds logits until
/// [`TileSink::finish`] turns them into probabilities).
struct TopKSink<'a> {
    k: usize,
    llms: usize,
    indices: &'a mut [u32],
    values: &'a mut [f32],
    lens: Vec<usize>,
}

impl TopKSink<'_> {
    /// Offers LLM `index` with `logit` to chunk row `row`.
    #[inline(always)]
    fn offer(&mut self, row: usize, logit: f32, index: u32) {
        let k = self.k;
        let (Some(len), Some(values), Some(indices)) = (
            self.lens.get_mut(row),
            self.values.get_mut(row * k..row * k + k),
            self.indices.get_mut(row * k..row * k + k),
        ) else {
            return;
        };
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
            pos -= 1;
        }
        values[pos] = logit;
        indices[pos] = index;
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
                let full = self.lens.get(row).is_some_and(|&len| len == k);
                let mut mask = match self.values.get(row * k + k - 1) {
                    Some(&worst) if full => {
                        let x = S::load(row_logits.as_ptr().add(v * l));
                        S::gt_mask(x, S::splat(worst)) & valid_mask
                    }
                    _ => valid_mask,
                };
                while mask != 0 {
                    let lane = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let logit = row_logits.get(v * l + lane).copied().unwrap_or(f32::MIN);
                    self.offer(row, logit, (col + lane) as u32);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn finish<S: Simd>(&mut self) {
        sigmoid_slice::<S>(self.values);
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
    let packed = pack_llms(llms, panel_width(config.simd))?;
    let (n, d) = (questions.rows(), llms.cols());
    let mut indices: Vec<u32> = zeroed(n, k)?;
    let mut values: Vec<f32> = zeroed(n, k)?;
    let items: Vec<(usize, ChunkOutput<'_>)> = indices
        .chunks_mut(CHUNK_ROWS * k)
        .zip(values.chunks_mut(CHUNK_ROWS * k))
        .enumerate()
        .map(|(c, chunk)| (c * CHUNK_ROWS, chunk))
        .collect();
    let work = n
        .saturating_mul(packed.panels * packed.width)
        .saturating_mul(d);
    run_chunks(config.threads, work, items, |first_row, (idx, val)| {
        let rows = first_row..first_row + val.len() / k;
        let mut sink = TopKSink {
            k,
            llms: llms.rows(),
            lens: vec![0; rows.len()],
            indices: idx,
            values: val,
        };
        run_rows(config.simd, questions, rows, &packed, &mut sink)
    })?;
    Ok((indices, values))
}
