//! Neighbour votes (python/jeirt_lite/_neighbours.py) in one pass per query, no Python in the loop.
//!
//! For a query (a unit feature row) and each LLM: over the first `k` of the `2k` most similar stored questions
//! (cosine, best first, ties to the lower index) that the LLM answered, the sum of weights and the weighted sum
//! of its answers, weight 1 or `exp((s - s_max) / temperature)`. The NumPy search of _neighbours.py is the
//! reference; this computes the same sums.
//!
//! The exact similarity of a query with all `n` keys costs `n p` multiply-adds. With a projection (the keys'
//! top principal directions, computed by the caller from the keys), a coarse pass first scores every key on
//! `dims` components only and keeps the best `candidates` per query; only those are scored exactly, and the
//! votes read the exact ranking. Where the shortlist holds the true `2k` nearest, the result is the exact one
//! bit for bit; with `candidates >= n` (or no projection) every key is scored exactly.
//!
//! A table may also hold a query map ([`VoteTable::with_query_map`]): the keys then live in a short space (the
//! centred features' top principal directions, chosen when the router was fitted), and each query is mapped
//! there, `(q / |q| - centre) · map`, before the search. The cost of the search is `n` times the short width.
//!
//! Small projected tables (a short space's keys) take another first pass (`scores`): every key's similarity
//! into a buffer per group of queries, then each query's best keys above a threshold drawn from a sample of its
//! similarities. It keeps exactly the keys the shortlists would, at a fraction of their cost when the list is a
//! sizeable share of the keys.

mod dot;
mod exact;
mod scan;
mod scores;
mod tally;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::error::KernelError;
use crate::simd::SimdLevel;
use dot::unpack;
use exact::{exact_block, Scratch};
use scan::{coarse_scan, project_rows, tile_keys, Shortlist, GROUP, TILE};
use scores::shortlists_by_scores;
use tally::{tally, TALLY_LANES};

/// Queries per parallel work item (each with its own scratch buffers).
const BLOCK: usize = 64;
/// Projected keys scanned by all queries of a block before the next ones: about half a core's L2 cache.
const SUPER_TILE_BYTES: usize = 256 * 1024;
/// Projected keys up to this size take the first pass that scores every key into a buffer per group of queries
/// (`votes::scores`); larger ones stream in super-tiles past whole blocks of queries, offering to shortlists.
const SCORES_PASS_BYTES: usize = 2 * 1024 * 1024;
/// Marks an unasked question in the answers table (1 right, 0 wrong).
pub const NOT_ASKED: i8 = -1;

/// The stored questions of a router: unit feature rows, the LLMs' answers, and their projected rows.
#[derive(Debug, Clone)]
pub struct VoteTable {
    keys: Vec<f32>,
    /// `n x padded_llms`: each row padded with [`NOT_ASKED`] to whole tally lanes.
    answers: Vec<i8>,
    padded_llms: usize,
    projection: Vec<f32>,
    tiles: Vec<f32>,
    n: usize,
    cols: usize,
    llms: usize,
    dims: usize,
    query_map: Option<QueryMap>,
    /// Whether the first pass scores every key into a buffer ([`SCORES_PASS_BYTES`]).
    scores_pass: bool,
}

/// Queries of `input_cols` features mapped to the keys' `cols`: `(q / |q| - centre) · map`.
#[derive(Debug, Clone)]
struct QueryMap {
    centre: Vec<f32>,
    /// `input_cols x cols`, row-major.
    map: Vec<f32>,
    input_cols: usize,
}

/// What one call votes with.
#[derive(Debug, Clone, Copy)]
pub struct VoteSettings {
    /// Answers per LLM (its first `k` answered neighbours among the `2k` nearest).
    pub k: usize,
    /// `None`: every answer weighs 1.
    pub temperature: Option<f32>,
    /// Keys kept per query by the coarse pass; `>= n` (or a table without projection) scores every key exactly.
    pub candidates: usize,
}

fn size_error(name: &'static str, len: usize, rows: usize, cols: usize) -> KernelError {
    KernelError::BufferSize {
        name,
        len,
        rows,
        cols,
    }
}

impl VoteTable {
    /// `keys` `n x cols` (unit rows), `answers` `n x llms` (1, 0 or [`NOT_ASKED`]), `projection` `cols x dims`
    /// (empty with `dims = 0`: no coarse pass).
    pub fn new(
        keys: Vec<f32>,
        answers: Vec<i8>,
        n: usize,
        cols: usize,
        projection: Vec<f32>,
        dims: usize,
    ) -> Result<Self, KernelError> {
        if cols == 0 {
            return Err(KernelError::EmptyDimension);
        }
        if keys.len() != n * cols {
            return Err(size_error("keys", keys.len(), n, cols));
        }
        if n == 0 || answers.is_empty() || !answers.len().is_multiple_of(n) {
            return Err(size_error("answers", answers.len(), n, 0));
        }
        if projection.len() != cols * dims {
            return Err(size_error("projection", projection.len(), cols, dims));
        }
        if let Some(row) = keys
            .chunks_exact(cols)
            .position(|r| r.iter().any(|v| !v.is_finite()))
        {
            return Err(KernelError::NonFiniteQuestion { row });
        }
        let llms = answers.len() / n;
        let mut projected = vec![0.0f32; n * dims];
        project_rows(
            SimdLevel::detect(),
            &keys,
            &projection,
            cols,
            dims,
            &mut projected,
        );
        let tiles = tile_keys(&projected, n, dims);
        let padded_llms = llms.div_ceil(TALLY_LANES) * TALLY_LANES;
        let mut padded = vec![NOT_ASKED; n * padded_llms];
        for (row, out) in answers
            .chunks_exact(llms)
            .zip(padded.chunks_exact_mut(padded_llms))
        {
            out[..llms].copy_from_slice(row);
        }
        let answers = padded;
        Ok(Self {
            keys,
            answers,
            padded_llms,
            projection,
            tiles,
            n,
            cols,
            llms,
            dims,
            query_map: None,
            scores_pass: 4 * n * dims <= SCORES_PASS_BYTES,
        })
    }

    /// Queries of `input_cols` features are mapped to the keys' space before the search: `(q / |q| - centre) · map`,
    /// `centre` `input_cols`, `map` `input_cols x cols` (row-major), both finite.
    pub fn with_query_map(mut self, centre: Vec<f32>, map: Vec<f32>) -> Result<Self, KernelError> {
        let input_cols = centre.len();
        if input_cols == 0 {
            return Err(KernelError::EmptyDimension);
        }
        if map.len() != input_cols * self.cols {
            return Err(size_error("map", map.len(), input_cols, self.cols));
        }
        if centre.iter().chain(&map).any(|v| !v.is_finite()) {
            return Err(KernelError::NonFiniteQuestion { row: 0 });
        }
        self.query_map = Some(QueryMap {
            centre,
            map,
            input_cols,
        });
        Ok(self)
    }

    /// Width of the queries `sums` takes: the features before the query map, or the keys' width.
    pub fn query_cols(&self) -> usize {
        self.query_map.as_ref().map_or(self.cols, |m| m.input_cols)
    }

    /// Stored questions.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the table holds no question (never: `new` refuses that).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// LLM columns of the answers table.
    pub fn llms(&self) -> usize {
        self.llms
    }

    /// Feature width.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Per query and LLM, the weighted sum of answers and the sum of weights (each `rows x llms`), for
    /// `queries` `rows x cols` (scaled to unit length here; a zero row stays zero), on `threads` workers (0: every core; 1: the calling thread).
    pub fn sums(
        &self,
        queries: &[f32],
        settings: &VoteSettings,
        threads: usize,
        level: SimdLevel,
    ) -> Result<(Vec<f32>, Vec<f32>), KernelError> {
        let query_cols = self.query_cols();
        if !queries.len().is_multiple_of(query_cols) {
            return Err(size_error(
                "queries",
                queries.len(),
                queries.len() / query_cols,
                query_cols,
            ));
        }
        if settings.k == 0 {
            return Err(KernelError::InvalidK { k: 0, llms: self.n });
        }
        if !level.is_supported() {
            return Err(KernelError::UnsupportedSimd(level.name()));
        }
        if let Some(row) = queries
            .chunks_exact(query_cols)
            .position(|r| r.iter().any(|v| !v.is_finite()))
        {
            return Err(KernelError::NonFiniteQuestion { row });
        }
        let rows = queries.len() / query_cols;
        let queries = match &self.query_map {
            Some(m) => unit_rows(
                &m.apply(&unit_rows(queries, m.input_cols), self.cols),
                self.cols,
            ),
            None => unit_rows(queries, self.cols),
        };
        let queries = &queries[..];
        let mut sums = vec![0.0f32; rows * self.llms];
        let mut counts = vec![0.0f32; rows * self.llms];
        let step = BLOCK * self.llms;
        let work = |scratch: &mut Scratch, (b, (s, c)): (usize, (&mut [f32], &mut [f32]))| {
            let first = b * BLOCK;
            let block = &queries[first * self.cols..(first + s.len() / self.llms) * self.cols];
            self.block(block, settings, level, s, c, scratch);
        };
        let threads = crate::resolve_threads(threads);
        if threads <= 1 || rows <= BLOCK {
            let mut scratch = Scratch::default();
            let blocks = sums
                .chunks_mut(step)
                .zip(counts.chunks_mut(step))
                .enumerate();
            blocks.for_each(|item| work(&mut scratch, item));
        } else {
            crate::pool::pool(threads)?.install(|| {
                sums.par_chunks_mut(step)
                    .zip(counts.par_chunks_mut(step))
                    .enumerate()
                    .for_each_init(Scratch::default, work)
            });
        }
        Ok((sums, counts))
    }

    /// One block of queries: shortlists (when the coarse pass applies), exact ranking and votes.
    fn block(
        &self,
        queries: &[f32],
        settings: &VoteSettings,
        level: SimdLevel,
        sums: &mut [f32],
        counts: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let window = self.n.min(2 * settings.k);
        let coarse = self.dims > 0 && settings.candidates < self.n;
        if coarse && self.scores_pass {
            self.shortlists_by_scores(queries, settings.candidates.max(window), level, scratch);
        } else if coarse {
            self.shortlists(queries, settings.candidates.max(window), level, scratch);
        }
        exact_block(level, &self.keys, self.cols, queries, coarse, scratch);
        for (m, ranked) in scratch.ranked.iter_mut().enumerate() {
            let row = m * self.llms..(m + 1) * self.llms;
            self.vote(
                level,
                ranked,
                window,
                settings,
                &mut sums[row.clone()],
                &mut counts[row],
            );
        }
    }

    /// Each query's best `keep` keys by coarse similarity (sorted indices, into `scratch.wanted`). The keys
    /// stream in super-tiles that stay in the L2 cache while every group of queries of the block passes over them.
    fn shortlists(&self, queries: &[f32], keep: usize, level: SimdLevel, scratch: &mut Scratch) {
        let rows = queries.len() / self.cols;
        let groups = rows.div_ceil(GROUP) * GROUP;
        scratch.lists.resize_with(groups, || Shortlist::new(keep));
        scratch.lists.iter_mut().for_each(|list| list.reset(keep));
        scratch.wanted.resize_with(rows, Vec::new);
        // Zero rows pad the last group to GROUP queries.
        let projected = &mut scratch.projected;
        projected.clear();
        projected.resize(groups * self.dims, 0.0);
        let out = &mut projected[..rows * self.dims];
        project_rows(level, queries, &self.projection, self.cols, self.dims, out);
        let tile_values = self.dims * TILE;
        let super_tiles = (SUPER_TILE_BYTES / (4 * tile_values)).max(1);
        for (s, tiles) in self.tiles.chunks(super_tiles * tile_values).enumerate() {
            let first_key = s * super_tiles * TILE;
            let groups = projected
                .chunks(GROUP * self.dims)
                .zip(scratch.lists.chunks_mut(GROUP));
            for (group, lists) in groups {
                coarse_scan(level, tiles, first_key, self.n, self.dims, group, lists);
            }
        }
        let lists = scratch.lists.iter_mut().zip(scratch.wanted.iter_mut());
        lists.take(rows).for_each(|(list, out)| list.finish(out));
    }

    /// What `shortlists` gives, by the buffered first pass of `votes::scores`.
    fn shortlists_by_scores(
        &self,
        queries: &[f32],
        keep: usize,
        level: SimdLevel,
        scratch: &mut Scratch,
    ) {
        let rows = queries.len() / self.cols;
        scratch.wanted.resize_with(rows, Vec::new);
        let projected = &mut scratch.projected;
        projected.clear();
        projected.resize(rows.div_ceil(GROUP) * GROUP * self.dims, 0.0);
        let out = &mut projected[..rows * self.dims];
        project_rows(level, queries, &self.projection, self.cols, self.dims, out);
        shortlists_by_scores(
            level,
            &self.tiles,
            self.n,
            self.dims,
            projected,
            rows,
            keep,
            &mut scratch.wanted[..rows],
            &mut scratch.scores,
        );
    }

    /// The votes of one query from its `(similarity, key)` list: its best `window`, nearest first.
    fn vote(
        &self,
        level: SimdLevel,
        ranked: &mut Vec<u64>,
        window: usize,
        settings: &VoteSettings,
        sums: &mut [f32],
        counts: &mut [f32],
    ) {
        let window = window.min(ranked.len());
        if window == 0 {
            return;
        }
        if ranked.len() > window {
            ranked.select_nth_unstable(window - 1);
            ranked.truncate(window);
        }
        ranked.sort_unstable();
        let top = unpack(ranked[0]).0;
        let weighted: Vec<(f32, u32)> = ranked
            .iter()
            .map(|&packed| {
                let (sim, key) = unpack(packed);
                (
                    settings
                        .temperature
                        .map_or(1.0, |t| ((sim - top) / t).exp()),
                    key,
                )
            })
            .collect();
        let k = u32::try_from(settings.k).unwrap_or(u32::MAX);
        tally(
            level,
            &self.answers,
            self.padded_llms,
            &weighted,
            k,
            sums,
            counts,
        );
    }
}

impl QueryMap {
    /// `(q - centre) · map` for each row of `queries` (the sums in float64: the map is applied once per query,
    /// and its rounding then matches NumPy's float32 product closely).
    fn apply(&self, queries: &[f32], cols: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; queries.len() / self.input_cols * cols];
        let mut acc = vec![0.0f64; cols];
        for (q, o) in queries
            .chunks_exact(self.input_cols)
            .zip(out.chunks_exact_mut(cols))
        {
            acc.fill(0.0);
            for ((&v, &c), row) in q.iter().zip(&self.centre).zip(self.map.chunks_exact(cols)) {
                let x = f64::from(v - c);
                for (a, &w) in acc.iter_mut().zip(row) {
                    *a += x * f64::from(w);
                }
            }
            for (v, &a) in o.iter_mut().zip(&acc) {
                *v = a as f32;
            }
        }
        out
    }
}

/// Rows scaled to length 1 (the norm summed in float64, as NumPy's float32 `norm` is close to); zero rows stay.
fn unit_rows(rows: &[f32], cols: usize) -> Vec<f32> {
    let mut out = rows.to_vec();
    for row in out.chunks_exact_mut(cols) {
        let norm = row
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            .sqrt() as f32;
        if norm > 0.0 {
            row.iter_mut().for_each(|v| *v /= norm);
        }
    }
    out
}
