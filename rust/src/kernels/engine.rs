//! The fused pass shared by all kernels: for a chunk of question rows, compute norms (validating each
//! row), then logits `q.m/|q| - |q|` tile by tile with a register-blocked micro-kernel, and hand each tile
//! of logits to a [`TileSink`] (sigmoid + store, running top-k, or per-LLM sums) while it is hot.
//!
//! Loop order: block of `R * TILES_PER_BLOCK` rows (stays in L2) -> LLM panel (stays in L1) -> tile of
//! `R` rows x one panel (accumulators stay in registers).

use std::ops::Range;

use crate::error::KernelError;
use crate::kernels::pack::PackedLlms;
use crate::matrix::MatrixView;
use crate::simd::{Portable, Simd, SimdLevel};

/// Largest tile height any level uses.
pub(crate) const MAX_ROWS: usize = 16;
/// Largest panel width any level uses (two vectors of 16 lanes).
pub(crate) const MAX_WIDTH: usize = 32;
/// Tiles per block of rows.
pub(crate) const TILES_PER_BLOCK: usize = 4;
/// Rows per unit of parallel work. Fixed (not derived from the thread count) so that the summation order
/// of `mean_probability` does not depend on how many threads run. A multiple of every level's block size.
pub(crate) const CHUNK_ROWS: usize = 960;

/// The items [`crate::pool::run_chunks`] spreads over threads for an output of `width` values per question row:
/// its `CHUNK_ROWS`-row slices, each with the first row it holds.
pub(crate) fn row_chunks<T>(out: &mut [T], width: usize) -> Vec<(usize, &mut [T])> {
    out.chunks_mut(CHUNK_ROWS * width)
        .enumerate()
        .map(|(c, chunk)| (c * CHUNK_ROWS, chunk))
        .collect()
}

/// Logits of one tile: `rows x panel width`, row-major.
#[repr(C, align(64))]
pub(crate) struct TileLogits {
    pub v: [[f32; MAX_WIDTH]; MAX_ROWS],
}

/// Consumes tiles of logits as the fused pass produces them.
pub(crate) trait TileSink {
    /// `first_row`: chunk-local index of the tile's first row; `valid`: how many of its rows are real
    /// (the rest is padding); `panel`: which LLM panel (LLMs `panel * width ..`).
    ///
    /// # Safety
    /// Only called from inside the `#[target_feature]` function of level `S`.
    unsafe fn consume<S: Simd>(
        &mut self,
        first_row: usize,
        valid: usize,
        panel: usize,
        logits: &TileLogits,
    );

    /// Called once after the last tile of the chunk, still inside the SIMD context.
    ///
    /// # Safety
    /// Only called from inside the `#[target_feature]` function of level `S`.
    unsafe fn finish<S: Simd>(&mut self) {}
}

/// Panel width (LLMs per panel) the micro-kernel of `level` expects: two SIMD vectors.
pub(crate) fn panel_width(level: SimdLevel) -> usize {
    match level {
        SimdLevel::Avx512 => 32,
        SimdLevel::Avx2Fma | SimdLevel::Portable => 16,
    }
}

/// Checks the shapes every kernel shares.
pub(crate) fn check_shapes(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
) -> Result<(), KernelError> {
    if questions.cols() != llms.cols() {
        return Err(KernelError::DimensionMismatch {
            questions: questions.cols(),
            llms: llms.cols(),
        });
    }
    if llms.cols() == 0 {
        return Err(KernelError::EmptyDimension);
    }
    if llms.rows() == 0 {
        return Err(KernelError::NoLlms);
    }
    Ok(())
}

/// How one question row enters the micro-kernel: `logit = dot(row * scale, m) * a - b`.
#[derive(Clone, Copy, Default)]
pub(crate) struct RowScale {
    pub(crate) a: f32,
    pub(crate) b: f32,
    /// `Some(s)`: the row is copied multiplied by the power of two `s` first (tiny or huge norms), so the
    /// float32 dot products neither underflow nor overflow.
    pub(crate) scale: Option<f64>,
}

/// Below/above these norms (or when `|q| * max|m|` could overflow) a row is rescaled by a power of two.
const SMALL_NORM: f64 = 1.0 / (1u64 << 40) as f64;
const LARGE_NORM: f64 = (1u64 << 40) as f64;
const LARGE_DOT: f64 = 1e30;

/// The scale of a row of norm `norm` that needs no rescaling (`None` when it does, or is zero or not finite).
#[inline(always)]
pub(crate) fn unscaled_row(norm: f64, max_llm_norm: f64) -> Option<RowScale> {
    ((SMALL_NORM..=LARGE_NORM).contains(&norm) && norm * max_llm_norm <= LARGE_DOT).then(|| {
        RowScale {
            a: (1.0 / norm) as f32,
            b: norm as f32,
            scale: None,
        }
    })
}

/// Norm of question row `index`, validated; the zero vector gets logit 0 (`a = b = 0`).
///
/// # Safety
/// Only called from inside the `#[target_feature]` function of level `S`.
#[inline(always)]
pub(crate) unsafe fn prepare_row<S: Simd>(
    row: &[f32],
    index: usize,
    max_llm_norm: f64,
) -> Result<RowScale, KernelError> {
    let norm = S::sum_squares_f64(row).sqrt();
    if !norm.is_finite() {
        return Err(KernelError::NonFiniteQuestion { row: index });
    }
    if norm > f64::from(f32::MAX) {
        return Err(KernelError::QuestionNormOverflow { row: index });
    }
    if norm == 0.0 {
        return Ok(RowScale::default());
    }
    if let Some(scale) = unscaled_row(norm, max_llm_norm) {
        return Ok(scale);
    }
    // s = 2^-floor(log2 |q|): the scaled row has norm in [1, 2), and scaling by a power of two is exact.
    let s = (-norm.log2().floor()).exp2();
    Ok(RowScale {
        a: (1.0 / (norm * s)) as f32,
        b: norm as f32,
        scale: Some(s),
    })
}

/// Prefetches the question rows of the next block into L2, a slice per tile of this block: the first read of
/// a row (its norm) otherwise waits on memory while the cores' multiply-adds idle.
pub(crate) struct Prefetch {
    base: *const f32,
    next: usize,
    end: usize,
    /// Floats per step (whole cache lines).
    step: usize,
}

/// Floats per 64-byte cache line.
const LINE: usize = 16;

impl Prefetch {
    /// Prefetches rows `rows` of `questions` in `steps` calls of [`Self::step`].
    pub(crate) fn new(questions: MatrixView<'_>, rows: Range<usize>, steps: usize) -> Self {
        let d = questions.cols();
        let rows = rows.start.min(questions.rows())..rows.end.min(questions.rows());
        let (next, end) = (rows.start * d, rows.end * d);
        let lines = (end - next).div_ceil(LINE);
        Self {
            base: questions.data().as_ptr(),
            next,
            end,
            step: lines.div_ceil(steps.max(1)) * LINE,
        }
    }

    /// The next slice of prefetches.
    ///
    /// # Safety
    /// Only called from inside the `#[target_feature]` function of level `S`.
    #[inline(always)]
    pub(crate) unsafe fn step<S: Simd>(&mut self) {
        let stop = (self.next + self.step).min(self.end);
        while self.next < stop {
            // In bounds: `next < end <= questions.data().len()`.
            S::prefetch(self.base.add(self.next));
            self.next += LINE;
        }
    }
}

/// `R` rows x `V * S::LANES` LLMs (`V` = 1 or 2 vectors): broadcast one question component, FMA it into the
/// `V` vectors of the panel row. Each LLM's dot product stays in its own lane, accumulated in the same
/// order whatever `V` or its lane; the epilogue applies `dot * a - b`.
#[inline(always)]
unsafe fn micro_kernel<S: Simd, const R: usize, const V: usize>(
    q: *const f32,
    d: usize,
    panel: *const f32,
    scales: &[RowScale; R],
    out: &mut TileLogits,
) {
    let l = S::LANES;
    let zero = S::splat(0.0);
    let mut acc = [[zero; V]; R];
    for t in 0..d {
        let m: [S::V; V] = std::array::from_fn(|v| S::load(panel.add((t * V + v) * l)));
        for (r, acc_row) in acc.iter_mut().enumerate() {
            let qv = S::splat(*q.add(r * d + t));
            for (a, &mv) in acc_row.iter_mut().zip(&m) {
                *a = S::mul_add(qv, mv, *a);
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let a = S::splat(scales[r].a);
        let b = S::splat(scales[r].b);
        let dst = out.v[r].as_mut_ptr();
        for (v, &dot) in acc_row.iter().enumerate() {
            S::store(dst.add(v * l), S::mul_sub(dot, a, b));
        }
    }
}

/// One tile of a block: where its rows are read from and how to scale them.
struct Tile<const R: usize> {
    /// Offset of its first row in the question data (in place) or, with `in_scratch`, in the scratch.
    offset: usize,
    in_scratch: bool,
    first_row: usize,
    valid: usize,
    scales: [RowScale; R],
}

/// Adds the (question, LLM) offsets of a tile's `valid` rows (global row `first`) and panel columns `cols`.
#[inline(always)]
fn add_offsets(
    logits: &mut TileLogits,
    offsets: MatrixView<'_>,
    first: usize,
    valid: usize,
    cols: Range<usize>,
) {
    let cols = cols.start..cols.end.min(offsets.cols());
    for (r, tile_row) in logits.v.iter_mut().enumerate().take(valid) {
        let row = offsets.row(first + r);
        let (Some(src), Some(dst)) = (row.get(cols.clone()), tile_row.get_mut(..cols.len())) else {
            continue;
        };
        for (x, &o) in dst.iter_mut().zip(src) {
            *x += o;
        }
    }
}

/// The fused pass over question rows `rows` (global indices) for level `S` with tiles of `R` rows.
#[inline(always)]
unsafe fn run_generic<S: Simd, const R: usize, T: TileSink>(
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedLlms,
    offsets: Option<MatrixView<'_>>,
    sink: &mut T,
) -> Result<(), KernelError> {
    debug_assert!(R <= MAX_ROWS && 2 * S::LANES == llms.width);
    let d = questions.cols();
    let block_rows = R * TILES_PER_BLOCK;
    // Tiles that cannot be read in place (padding rows, rescaled rows) are copied here.
    let mut scratch = vec![0.0f32; block_rows * d];
    let mut logits = TileLogits {
        v: [[0.0; MAX_WIDTH]; MAX_ROWS],
    };
    let mut tiles: Vec<Tile<R>> = Vec::with_capacity(TILES_PER_BLOCK);
    let mut block_start = rows.start;
    while block_start < rows.end {
        let block_end = (block_start + block_rows).min(rows.end);
        tiles.clear();
        for (tile_index, tile_start) in (block_start..block_end).step_by(R).enumerate() {
            let valid = (block_end - tile_start).min(R);
            let mut scales = [RowScale::default(); R];
            for (r, scale) in scales.iter_mut().enumerate().take(valid) {
                *scale =
                    prepare_row::<S>(questions.row(tile_start + r), tile_start + r, llms.max_norm)?;
            }
            let in_place = valid == R && scales.iter().all(|s| s.scale.is_none());
            let offset = if in_place {
                tile_start * d
            } else {
                let offset = tile_index * R * d;
                let dst = scratch.get_mut(offset..offset + R * d).unwrap_or(&mut []);
                dst.fill(0.0);
                for (r, dst_row) in dst.chunks_exact_mut(d).enumerate().take(valid) {
                    let src = questions.row(tile_start + r);
                    match scales[r].scale {
                        None => dst_row.copy_from_slice(src),
                        Some(s) => {
                            for (y, &x) in dst_row.iter_mut().zip(src) {
                                *y = (f64::from(x) * s) as f32;
                            }
                        }
                    }
                }
                offset
            };
            tiles.push(Tile {
                offset,
                in_scratch: !in_place,
                first_row: tile_start - rows.start,
                valid,
                scales,
            });
        }
        // Pointers are taken only now, after the scratch writes, from the whole buffers.
        let (scratch_ptr, data_ptr) = (scratch.as_ptr(), questions.data().as_ptr());
        // Past `rows` too: the next call (a later range of the same table) starts there.
        let next_block = block_end..block_end + block_rows;
        let mut prefetch = Prefetch::new(questions, next_block, llms.panels * tiles.len());
        for p in 0..llms.panels {
            let panel = llms.panel(p).as_ptr();
            let half = llms.panel_width(p) == S::LANES;
            for tile in &tiles {
                let base = if tile.in_scratch {
                    scratch_ptr
                } else {
                    data_ptr
                };
                let q = base.add(tile.offset);
                if half {
                    // The second vector's lanes keep the previous tile's values: the sinks never read
                    // columns at or beyond K, and only the last panel can be a half one.
                    micro_kernel::<S, R, 1>(q, d, panel, &tile.scales, &mut logits);
                } else {
                    micro_kernel::<S, R, 2>(q, d, panel, &tile.scales, &mut logits);
                }
                if let Some(off) = offsets {
                    let first = rows.start + tile.first_row;
                    add_offsets(
                        &mut logits,
                        off,
                        first,
                        tile.valid,
                        p * llms.width..(p + 1) * llms.width,
                    );
                }
                sink.consume::<S>(tile.first_row, tile.valid, p, &logits);
                prefetch.step::<S>();
            }
        }
        block_start = block_end;
    }
    sink.finish::<S>();
    Ok(())
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512<T: TileSink>(
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedLlms,
    offsets: Option<MatrixView<'_>>,
    sink: &mut T,
) -> Result<(), KernelError> {
    run_generic::<crate::simd::Avx512, 12, T>(questions, rows, llms, offsets, sink)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<T: TileSink>(
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedLlms,
    offsets: Option<MatrixView<'_>>,
    sink: &mut T,
) -> Result<(), KernelError> {
    run_generic::<crate::simd::Avx2Fma, 6, T>(questions, rows, llms, offsets, sink)
}

/// Runs the fused pass over `rows` with the code path of `level`; `offsets` (N x K, checked by the caller with
/// `adjust::check_offsets`) are added to the logits before the sink sees them.
///
/// `llms` must have been packed with [`panel_width`]`(level)`, and `level` must be supported by this CPU
/// (both are checked; a mismatch is reported, never executed).
pub(crate) fn run_rows<T: TileSink>(
    level: SimdLevel,
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedLlms,
    offsets: Option<MatrixView<'_>>,
    sink: &mut T,
) -> Result<(), KernelError> {
    if !level.is_supported() {
        return Err(KernelError::UnsupportedSimd(level.name()));
    }
    if llms.width != panel_width(level) || llms.d != questions.cols() {
        return Err(KernelError::DimensionMismatch {
            questions: questions.cols(),
            llms: llms.d,
        });
    }
    let rows = rows.start.min(questions.rows())..rows.end.min(questions.rows());
    // SAFETY: the CPU supports `level` (checked above); the packed table matches its panel width and d,
    // and every row pointer handed to the micro-kernel covers `R * d` floats (in place or in scratch).
    unsafe {
        match level {
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => run_avx512(questions, rows, llms, offsets, sink),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2Fma => run_avx2(questions, rows, llms, offsets, sink),
            _ => run_generic::<Portable, 4, T>(questions, rows, llms, offsets, sink),
        }
    }
}

/// A sink that counts the tiles it is given: tests of the passes' refusals (a refused call runs none).
#[cfg(test)]
pub(crate) struct Tiles(pub(crate) usize);

#[cfg(test)]
impl TileSink for Tiles {
    unsafe fn consume<S: Simd>(&mut self, _: usize, _: usize, _: usize, _: &TileLogits) {
        self.0 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{panel_width, run_rows, unscaled_row, Tiles, LARGE_DOT, LARGE_NORM, SMALL_NORM};
    use crate::kernels::pack::pack_llms;
    use crate::{KernelError, MatrixView, SimdLevel};

    #[test]
    fn a_table_packed_for_another_level_or_width_is_refused_not_run() {
        let questions = vec![0.5f32; 3 * 4];
        let llms = vec![0.25f32; 5 * 4];
        let view = MatrixView::new("questions", &questions, 3, 4).unwrap();
        let llm_view = MatrixView::new("llms", &llms, 5, 4).unwrap();
        for level in SimdLevel::supported() {
            let packed = pack_llms(llm_view, panel_width(level)).unwrap();
            let mut tiles = Tiles(0);
            run_rows(level, view, 0..3, &packed, None, &mut tiles).unwrap();
            assert!(tiles.0 > 0);
            let other = pack_llms(llm_view, panel_width(level) * 2).unwrap(); // same d, wrong panel width
            let refused = run_rows(level, view, 0..3, &other, None, &mut Tiles(0));
            assert!(
                matches!(refused, Err(KernelError::DimensionMismatch { .. })),
                "{level:?}"
            );
            let wide = vec![0.5f32; 3 * 5];
            let wider = MatrixView::new("questions", &wide, 3, 5).unwrap(); // right width, other d
            let refused = run_rows(level, wider, 0..3, &packed, None, &mut Tiles(0));
            assert!(matches!(
                refused,
                Err(KernelError::DimensionMismatch {
                    questions: 5,
                    llms: 4
                })
            ));
        }
    }

    #[test]
    fn ordinary_rows_are_scored_in_place() {
        let row = unscaled_row(4.0, 3.0).expect("an ordinary norm needs no rescaled copy");
        assert_eq!((row.a, row.b, row.scale), (0.25, 4.0, None));
        for norm in [SMALL_NORM, 1e-9, 1.0, 1e9, LARGE_NORM] {
            assert!(unscaled_row(norm, 1.0).is_some(), "{norm}");
        }
        assert!(unscaled_row(1e10, LARGE_DOT / 1e10).is_some()); // |q|·max|m| at the bound still fits
    }

    #[test]
    fn tiny_huge_or_overflowing_rows_take_the_rescaled_copy() {
        assert_eq!(SMALL_NORM, 2f64.powi(-40));
        assert_eq!(LARGE_NORM, 2f64.powi(40));
        for norm in [
            SMALL_NORM / 2.0,
            1e-20,
            LARGE_NORM * 2.0,
            0.0,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert!(unscaled_row(norm, 1.0).is_none(), "{norm}");
        }
        assert!(unscaled_row(1e10, LARGE_DOT / 1e10 * 1.5).is_none()); // the dot products could overflow f32
        assert!(unscaled_row(2.0, 1e30).is_none());
    }
}
