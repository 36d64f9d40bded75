//! The bf16 pass itself, same tiling as the float32 engine (`engine`): panels of 32 LLMs (packed by `pack`),
//! tiles of 12 rows, logits `dot * a - b` handed to a [`TileSink`] as tiles finish; centred with `centre`'s
//! per-call state where `probabilities` asks for it.

use std::arch::x86_64::*;
use std::ops::Range;

use crate::error::KernelError;
use crate::kernels::bf16::centre::Centring;
use crate::kernels::bf16::pack::{to_bf16, PackedBf16, BF16_WIDTH};
use crate::kernels::engine::{
    prepare_row, unscaled_row, Prefetch, RowScale, TileLogits, TileSink, MAX_ROWS, MAX_WIDTH,
    TILES_PER_BLOCK,
};
use crate::matrix::MatrixView;
use crate::simd::Avx512;

/// Rows per register tile (24 accumulators, two panel vectors, one broadcast).
const ROWS: usize = 12;

/// Whether this CPU runs the bf16 pass (not when `JEIRT_SIMD` caps the level below AVX-512).
pub(crate) fn supported() -> bool {
    crate::SimdLevel::detect() == crate::SimdLevel::Avx512
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bf16")
}

/// `ROWS` question rows (bf16 pairs, `pairs` per row) against one panel of `V` vectors of 16 LLMs.
#[inline(always)]
unsafe fn micro_kernel<const V: usize>(
    q: &[u32],
    pairs: usize,
    panel: &[u16],
    scales: &[RowScale; ROWS],
    centred: Option<TileCentring<'_>>,
    out: &mut TileLogits,
) {
    if q.len() < ROWS * pairs || panel.len() < pairs * 32 * V {
        return;
    }
    if centred.is_some_and(|(_, (u_dot_m, beta))| u_dot_m.len() < 16 * V || beta.len() < 16 * V) {
        return;
    }
    let (qp, mp) = (q.as_ptr(), panel.as_ptr());
    let mut acc = [[_mm512_setzero_ps(); V]; ROWS];
    for t in 0..pairs {
        let m: [__m512bh; V] = std::array::from_fn(|v| {
            std::mem::transmute(_mm512_loadu_si512(mp.add((t * V + v) * 32) as *const _))
        });
        for (r, acc_row) in acc.iter_mut().enumerate() {
            let qv: __m512bh =
                std::mem::transmute(_mm512_set1_epi32(*qp.add(r * pairs + t) as i32));
            for (a, &mv) in acc_row.iter_mut().zip(&m) {
                *a = _mm512_dpbf16_ps(*a, qv, mv);
            }
        }
    }
    if let Some((rows, (u_dot_m, beta))) = centred {
        // q.m = alpha (u.m) + (r.nu) beta + r.s: the two exact parts added to the bf16 product r.s.
        for (r, acc_row) in acc.iter_mut().enumerate() {
            let (alpha, r_dot_nu) = (
                _mm512_set1_ps(rows.alpha[r]),
                _mm512_set1_ps(rows.r_dot_nu[r]),
            );
            for (v, dot) in acc_row.iter_mut().enumerate() {
                let c = _mm512_loadu_ps(u_dot_m.as_ptr().add(16 * v));
                let b = _mm512_loadu_ps(beta.as_ptr().add(16 * v));
                *dot = _mm512_fmadd_ps(r_dot_nu, b, _mm512_fmadd_ps(alpha, c, *dot));
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let (a, b) = (_mm512_set1_ps(scales[r].a), _mm512_set1_ps(scales[r].b));
        let dst = out.v[r].as_mut_ptr();
        for (v, &dot) in acc_row.iter().enumerate() {
            _mm512_storeu_ps(dst.add(16 * v), _mm512_fmsub_ps(dot, a, b));
        }
    }
}

/// A tile's [`RowCentring`] and its panel's `(u.m, beta)` (see `Centring::panel`).
type TileCentring<'a> = (&'a RowCentring, (&'a [f32], &'a [f32]));

/// What the centred pass keeps per row of a tile: `alpha` and `r.nu` (see `centre`; 0 for rows it does
/// not centre).
#[derive(Clone, Copy, Default)]
pub(crate) struct RowCentring {
    alpha: [f32; ROWS],
    r_dot_nu: [f32; ROWS],
}

/// Converts the whole multiples of 32 components of `src` to bf16 pairs in `dst`, 32 at a time (round to
/// nearest even, as [`to_bf16`]); returns how many components it converted and their sum of squares, summed in
/// float32 on the way (for the norm that scales the bf16 logits; NaN/inf propagate).
#[inline(always)]
unsafe fn convert_row(src: &[f32], dst: &mut [u32]) -> (usize, f32) {
    let whole = src.len() / 32 * 32;
    if dst.len() * 2 < whole {
        return (0, 0.0);
    }
    let mut squares = [_mm512_setzero_ps(); 2];
    for c in (0..whole).step_by(32) {
        let lo = _mm512_loadu_ps(src.as_ptr().add(c));
        let hi = _mm512_loadu_ps(src.as_ptr().add(c + 16));
        squares[0] = _mm512_fmadd_ps(lo, lo, squares[0]);
        squares[1] = _mm512_fmadd_ps(hi, hi, squares[1]);
        let pairs: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
        _mm512_storeu_si512(dst.as_mut_ptr().add(c / 2) as *mut _, pairs);
    }
    (
        whole,
        _mm512_reduce_add_ps(_mm512_add_ps(squares[0], squares[1])),
    )
}

/// Float32 sums of squares trusted as a norm: far from overflow above and from underflow below.
const SQUARES_RANGE: std::ops::RangeInclusive<f32> = 1e-20..=1e20;

/// Fills slot `dst` of the block with question row `row` (`src`) in bf16 pairs and returns its scale and,
/// with `centring`, its `(alpha, r.nu)` (zero for a row that is not centred).
#[inline(always)]
unsafe fn fill_row(
    src: &[f32],
    row: usize,
    dst: &mut [u32],
    max_norm: f64,
    centring: Option<&Centring<'_>>,
) -> Result<(RowScale, f32, f32), KernelError> {
    // The norm only scales the logits, so float32 squares summed during the conversion serve, when the row was
    // converted whole and its sum is in range; otherwise the validated float64 norm and its rescaling, as in
    // the float32 pass. Such rows are not centred (alpha = 0), but the centred pass's table holds the LLMs'
    // residuals, so they still need `q.nu` (of the row as rounded and scaled).
    let (done, squares, alpha, r_dot_nu) = match centring {
        Some(c) => {
            let (squares, alpha, r_dot_nu) = c.convert_row(src, dst);
            (src.len(), squares, alpha, r_dot_nu)
        }
        None => {
            let (done, squares) = convert_row(src, dst);
            (done, squares, 0.0, 0.0)
        }
    };
    let fast = (done == src.len() && SQUARES_RANGE.contains(&squares))
        .then(|| unscaled_row(f64::from(squares).sqrt(), max_norm))
        .flatten();
    if let Some(scale) = fast {
        return Ok((scale, alpha, r_dot_nu));
    }
    let scale = prepare_row::<Avx512>(src, row, max_norm)?;
    let s = scale.scale.unwrap_or(1.0);
    let skip = if scale.scale.is_some() || centring.is_some() {
        0
    } else {
        done / 2
    };
    for (slot, pair) in dst.iter_mut().zip(src.chunks(2)).skip(skip) {
        let lo = to_bf16((f64::from(pair[0]) * s) as f32);
        let hi = pair
            .get(1)
            .map_or(0, |&x| to_bf16((f64::from(x) * s) as f32));
        *slot = u32::from(lo) | (u32::from(hi) << 16);
    }
    let q_dot_nu = centring.map_or(0.0, |c| {
        let nu = c.llms.nu.iter().map(|&x| f64::from(x));
        src.iter()
            .zip(nu)
            .map(|(&x, n)| f64::from(x) * s * n)
            .sum::<f64>() as f32
    });
    Ok((scale, 0.0, q_dot_nu))
}

/// The bf16 pass over question rows `rows` (global indices), tiles handed to `sink`; with `centring`, the
/// centred pass of `centre` (then `llms` is its table of residuals).
#[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx2,fma")]
unsafe fn run(
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedBf16,
    centring: Option<&Centring<'_>>,
    sink: &mut impl TileSink,
) -> Result<(), KernelError> {
    const { assert!(ROWS <= MAX_ROWS && BF16_WIDTH <= MAX_WIDTH) };
    let pairs = llms.pairs;
    let block_rows = ROWS * TILES_PER_BLOCK;
    let mut block = vec![0u32; block_rows * pairs];
    let mut scales = [[RowScale::default(); ROWS]; TILES_PER_BLOCK];
    let mut centred = [RowCentring::default(); TILES_PER_BLOCK];
    let mut logits = TileLogits {
        v: [[0.0; MAX_WIDTH]; MAX_ROWS],
    };
    let mut block_start = rows.start;
    while block_start < rows.end {
        let block_end = (block_start + block_rows).min(rows.end);
        // Every slot of a real row is written below; only the rows past a partial block's end are cleared
        // (they are computed and never read).
        block
            .get_mut((block_end - block_start) * pairs..)
            .unwrap_or(&mut [])
            .fill(0);
        for (i, row) in (block_start..block_end).enumerate() {
            let dst = block.get_mut(i * pairs..(i + 1) * pairs).unwrap_or(&mut []);
            let (scale, alpha, r_dot_nu) =
                fill_row(questions.row(row), row, dst, llms.max_norm, centring)?;
            let (tile, r) = (i / ROWS, i % ROWS);
            scales[tile][r] = scale;
            centred[tile].alpha[r] = alpha;
            centred[tile].r_dot_nu[r] = r_dot_nu;
        }
        let tiles = (block_end - block_start).div_ceil(ROWS);
        // Past `rows` too: the next call (a later range of the same table) starts there.
        let next_block = block_end..block_end + block_rows;
        let mut prefetch = Prefetch::new(questions, next_block, llms.panels * tiles);
        for p in 0..llms.panels {
            let panel = llms.panel(p);
            let panel_centring = centring.map(|c| c.panel(p));
            for (tile, tile_scales) in scales.iter().enumerate().take(tiles) {
                let first = tile * ROWS;
                let q = block
                    .get(first * pairs..(first + ROWS) * pairs)
                    .unwrap_or(&[]);
                let tile_centring = panel_centring.map(|c| (&centred[tile], c));
                if llms.vectors(p) == 1 {
                    // The second vector's lanes keep stale values: sinks never read columns at or
                    // beyond K, and only the last panel can be a half one.
                    micro_kernel::<1>(q, pairs, panel, tile_scales, tile_centring, &mut logits);
                } else {
                    micro_kernel::<2>(q, pairs, panel, tile_scales, tile_centring, &mut logits);
                }
                let valid = (block_end - block_start - first).min(ROWS);
                sink.consume::<Avx512>(block_start + first - rows.start, valid, p, &logits);
                prefetch.step::<Avx512>();
            }
        }
        block_start = block_end;
    }
    sink.finish::<Avx512>();
    Ok(())
}

/// Runs the bf16 pass over `rows` (centred with `centring`, see `centre`); an error if this CPU lacks
/// AVX-512 BF16.
pub(crate) fn run_rows_bf16(
    questions: MatrixView<'_>,
    rows: Range<usize>,
    llms: &PackedBf16,
    centring: Option<&Centring<'_>>,
    sink: &mut impl TileSink,
) -> Result<(), KernelError> {
    if !supported() {
        return Err(KernelError::UnsupportedSimd("avx512bf16"));
    }
    if questions.cols().div_ceil(2) != llms.pairs {
        return Err(KernelError::DimensionMismatch {
            questions: questions.cols(),
            llms: llms.pairs * 2,
        });
    }
    let rows = rows.start.min(questions.rows())..rows.end.min(questions.rows());
    // SAFETY: the CPU has AVX-512F and BF16 (checked above); every slice the micro-kernel reads is checked
    // for length before use.
    unsafe { run(questions, rows, llms, centring, sink) }
}

#[cfg(test)]
mod tests {
    use super::run_rows_bf16;
    use crate::kernels::bf16::pack::pack_bf16;
    use crate::kernels::engine::Tiles;
    use crate::{KernelError, MatrixView, Precision};

    #[test]
    #[ignore = "needs AVX-512 BF16 (vdpbf16ps): run `cargo test --release -- --ignored` on such a CPU (make test does)"]
    fn questions_of_another_width_are_refused_naming_both() {
        assert!(
            Precision::Bf16.is_supported(),
            "this CPU has no AVX-512 BF16"
        );
        let llms = vec![0.25f32; 3 * 6];
        let packed = pack_bf16(MatrixView::new("llms", &llms, 3, 6).unwrap()).unwrap();
        let same = vec![0.5f32; 2 * 6];
        let mut tiles = Tiles(0);
        let view = MatrixView::new("q", &same, 2, 6).unwrap();
        run_rows_bf16(view, 0..2, &packed, None, &mut tiles).unwrap();
        assert!(tiles.0 > 0);
        let wide = vec![0.5f32; 2 * 8];
        let refused = run_rows_bf16(
            MatrixView::new("q", &wide, 2, 8).unwrap(),
            0..2,
            &packed,
            None,
            &mut Tiles(0),
        );
        assert!(
            matches!(
                refused,
                Err(KernelError::DimensionMismatch {
                    questions: 8,
                    llms: 6
                })
            ),
            "{refused:?}"
        );
    }
}
