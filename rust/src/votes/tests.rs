//! The vote kernel against a plain reference of the same math, and its paths against each other.

use crate::simd::SimdLevel;
use crate::votes::{VoteSettings, VoteTable, NOT_ASKED};

/// A small deterministic generator (no dependency): xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32) / (1u64 << 24) as f32
    }
}

fn unit_rows(rng: &mut Rng, rows: usize, cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for _ in 0..rows {
        let row: Vec<f32> = (0..cols).map(|_| rng.next() - 0.5 + 0.3).collect();
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        out.extend(row.iter().map(|v| v / norm));
    }
    out
}

fn answers(rng: &mut Rng, rows: usize, llms: usize) -> Vec<i8> {
    (0..rows * llms)
        .map(|_| match rng.next() {
            x if x < 0.2 => NOT_ASKED,
            x if x < 0.6 => 0,
            _ => 1,
        })
        .collect()
}

/// The NumPy search of _neighbours.py, written plainly (float64 similarities; sums in rank order); per query
/// also whether its ranking is clear of near-ties (two of its first 2k + 1 similarities within 1e-6), where
/// float32 rounding may order two keys either way.
type Reference = (Vec<f32>, Vec<f32>, Vec<bool>);

fn reference(
    keys: &[f32],
    ans: &[i8],
    cols: usize,
    queries: &[f32],
    k: usize,
    t: Option<f32>,
) -> Reference {
    let n = keys.len() / cols;
    let llms = ans.len() / n;
    let (mut sums, mut counts, mut clear) = (Vec::new(), Vec::new(), Vec::new());
    for q in queries.chunks_exact(cols) {
        let mut sims: Vec<(f64, usize)> = keys
            .chunks_exact(cols)
            .enumerate()
            .map(|(i, key)| {
                (
                    key.iter().zip(q).map(|(a, b)| *a as f64 * *b as f64).sum(),
                    i,
                )
            })
            .collect();
        sims.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
        sims.truncate(2 * k + 1);
        clear.push(sims.windows(2).all(|w| w[0].0 - w[1].0 > 1e-6));
        sims.truncate(2 * k);
        let top = sims[0].0;
        let (mut s, mut c) = (vec![0.0f32; llms], vec![0.0f32; llms]);
        for j in 0..llms {
            let mut seen = 0;
            for &(sim, i) in &sims {
                let a = ans[i * llms + j];
                if a == NOT_ASKED || seen == k {
                    continue;
                }
                seen += 1;
                let w = t.map_or(1.0, |t| ((sim - top) as f32 / t).exp());
                c[j] += w;
                if a == 1 {
                    s[j] += w;
                }
            }
        }
        sums.extend(s);
        counts.extend(c);
    }
    (sums, counts, clear)
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

/// A random table and queries; `dims` leading coordinates as the projection (0: none).
fn case(
    seed: u64,
    n: usize,
    cols: usize,
    llms: usize,
    dims: usize,
    m: usize,
) -> (VoteTable, Vec<f32>, Vec<f32>, Vec<i8>) {
    let mut rng = Rng(seed);
    let keys = unit_rows(&mut rng, n, cols);
    let ans = answers(&mut rng, n, llms);
    let mut projection = vec![0.0f32; cols * dims];
    for d in 0..dims {
        projection[d * dims + d] = 1.0;
    }
    let queries = unit_rows(&mut rng, m, cols);
    let table = VoteTable::new(keys.clone(), ans.clone(), n, cols, projection, dims).unwrap();
    (table, queries, keys, ans)
}

#[test]
fn exact_path_matches_the_reference() {
    for (seed, n, cols, llms, k, t) in [
        (1, 300, 40, 5, 7, Some(0.1)),
        (2, 97, 3, 1, 1, None),
        (3, 520, 129, 33, 40, Some(0.05)),
        (4, 10, 8, 4, 20, Some(1.0)),
    ] {
        let (table, queries, keys, ans) = case(seed, n, cols, llms, 0, 150);
        let settings = VoteSettings {
            k,
            temperature: t,
            candidates: 0,
        };
        let (s, c) = table
            .sums(&queries, &settings, 1, SimdLevel::detect())
            .unwrap();
        let (rs, rc, clear) = reference(&keys, &ans, cols, &queries, k, t);
        assert!(
            clear.iter().filter(|&&c| c).count() >= 100,
            "too many near-ties to compare (seed {seed})"
        );
        for (i, _) in clear.iter().enumerate().filter(|(_, &c)| c) {
            let row = i * llms..(i + 1) * llms;
            assert!(
                close(&s[row.clone()], &rs[row.clone()], 1e-4),
                "sums differ (seed {seed}, query {i})"
            );
            assert!(
                close(&c[row.clone()], &rc[row], 1e-4),
                "counts differ (seed {seed}, query {i})"
            );
        }
    }
}

#[test]
fn shortlist_holding_the_neighbours_gives_the_exact_votes_bit_for_bit() {
    // With the whole feature space as the "projection", the coarse ranking is the exact one, so any shortlist of
    // at least 2k keys holds the true neighbours.
    let (n, cols, k) = (700, 24, 30);
    let (table, queries, ..) = case(7, n, cols, 6, cols, 130);
    let exact = VoteSettings {
        k,
        temperature: Some(0.1),
        candidates: n,
    };
    let want = table
        .sums(&queries, &exact, 1, SimdLevel::detect())
        .unwrap();
    for candidates in [2 * k, 2 * k + 1, 97, n - 1] {
        let settings = VoteSettings {
            candidates,
            ..exact
        };
        let got = table
            .sums(&queries, &settings, 1, SimdLevel::detect())
            .unwrap();
        assert_eq!(got, want, "candidates {candidates}");
    }
}

#[test]
fn same_bits_at_every_level_and_thread_count() {
    let (table, queries, ..) = case(11, 900, 64, 9, 16, 333);
    for candidates in [900, 200] {
        let settings = VoteSettings {
            k: 25,
            temperature: Some(0.2),
            candidates,
        };
        let want = table
            .sums(&queries, &settings, 1, SimdLevel::Portable)
            .unwrap();
        for level in [SimdLevel::Avx512, SimdLevel::Avx2Fma, SimdLevel::Portable] {
            if !level.is_supported() {
                continue;
            }
            for threads in [1, 2, 3] {
                let got = table.sums(&queries, &settings, threads, level).unwrap();
                assert_eq!(got, want, "{} at {threads} threads", level.name());
            }
        }
    }
}

#[test]
fn a_small_shortlist_loses_only_far_neighbours() {
    // A weak projection (2 of 32 coordinates) and a short list: the votes may differ, but stay votes.
    let (table, queries, ..) = case(5, 400, 32, 3, 2, 50);
    let settings = VoteSettings {
        k: 10,
        temperature: None,
        candidates: 20,
    };
    let (s, c) = table
        .sums(&queries, &settings, 1, SimdLevel::detect())
        .unwrap();
    assert!(c.iter().all(|&v| (0.0..=10.0).contains(&v)));
    assert!(s.iter().zip(&c).all(|(a, b)| a <= b));
}

#[test]
fn bad_input_is_refused() {
    let (table, mut queries, ..) = case(3, 50, 4, 2, 0, 3);
    let settings = VoteSettings {
        k: 3,
        temperature: None,
        candidates: 0,
    };
    assert!(table
        .sums(&queries[..5], &settings, 1, SimdLevel::Portable)
        .is_err());
    assert!(table
        .sums(
            &queries,
            &VoteSettings { k: 0, ..settings },
            1,
            SimdLevel::Portable
        )
        .is_err());
    queries[6] = f32::NAN;
    assert!(table
        .sums(&queries, &settings, 1, SimdLevel::Portable)
        .is_err());
    assert!(VoteTable::new(vec![0.0; 8], vec![1; 3], 2, 4, Vec::new(), 0).is_err());
    assert!(VoteTable::new(vec![f32::INFINITY; 8], vec![1; 2], 2, 4, Vec::new(), 0).is_err());
}

/// A random centre and map from `input` features to `cols`, and queries of `input` features.
fn query_map_case(
    seed: u64,
    input: usize,
    cols: usize,
    m: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let centre: Vec<f32> = (0..input).map(|_| rng.next() * 0.2).collect();
    let map: Vec<f32> = (0..input * cols).map(|_| rng.next() - 0.5).collect();
    (centre, map, unit_rows(&mut rng, m, input))
}

#[test]
fn a_query_map_searches_the_mapped_queries() {
    let (n, input, cols, k) = (400, 48, 12, 15);
    let (table, _, keys, ans) = case(21, n, cols, 5, cols, 0);
    let (centre, map, queries) = query_map_case(22, input, cols, 90);
    let mapped: Vec<f32> = crate::votes::unit_rows(&queries, input)
        .chunks_exact(input)
        .flat_map(|q| {
            (0..cols).map(|j| {
                q.iter()
                    .zip(&centre)
                    .enumerate()
                    .map(|(i, (&v, &c))| f64::from(v - c) * f64::from(map[i * cols + j]))
                    .sum::<f64>() as f32
            })
        })
        .collect::<Vec<_>>();
    let short = table.with_query_map(centre, map).unwrap();
    assert_eq!(short.query_cols(), input);
    let plain = VoteTable::new(keys, ans, n, cols, Vec::new(), 0).unwrap();
    for candidates in [n, 2 * k] {
        let settings = VoteSettings {
            k,
            temperature: Some(0.1),
            candidates,
        };
        let got = short
            .sums(&queries, &settings, 1, SimdLevel::detect())
            .unwrap();
        let want = plain
            .sums(
                &mapped,
                &VoteSettings {
                    candidates: n,
                    ..settings
                },
                1,
                SimdLevel::detect(),
            )
            .unwrap();
        assert_eq!(got, want, "candidates {candidates}");
    }
}

#[test]
fn a_bad_query_map_or_query_width_is_refused() {
    let (table, ..) = case(23, 60, 6, 2, 6, 0);
    let (centre, map, queries) = query_map_case(24, 10, 6, 4);
    assert!(table
        .clone()
        .with_query_map(centre.clone(), map[1..].to_vec())
        .is_err());
    assert!(table
        .clone()
        .with_query_map(Vec::new(), Vec::new())
        .is_err());
    let mut bad = centre.clone();
    bad[3] = f32::NAN;
    assert!(table.clone().with_query_map(bad, map.clone()).is_err());
    let short = table.with_query_map(centre, map).unwrap();
    let settings = VoteSettings {
        k: 3,
        temperature: None,
        candidates: 60,
    };
    // Queries of the keys' width (6), not the features' (10): refused, not misread.
    assert!(short
        .sums(&queries[..12], &settings, 1, SimdLevel::Portable)
        .is_err());
    assert!(short
        .sums(&queries, &settings, 1, SimdLevel::Portable)
        .is_ok());
}

#[test]
fn both_first_passes_keep_the_same_keys() {
    // The buffered pass (small projected tables) and the shortlists' pass give the same votes, bit for bit, at
    // every level, also for a zero query (every similarity tied) and a shortlist longer than half the keys.
    for (seed, dims, candidates) in [(31, 16, 60), (32, 5, 200), (33, 32, 1000), (34, 24, 1499)] {
        let (mut table, mut queries, ..) = case(seed, 1500, 32, 7, dims, 140);
        queries[..32].fill(0.0);
        let settings = VoteSettings {
            k: 25,
            temperature: Some(0.1),
            candidates,
        };
        for level in [SimdLevel::Avx512, SimdLevel::Avx2Fma, SimdLevel::Portable] {
            if !level.is_supported() {
                continue;
            }
            table.scores_pass = true;
            let buffered = table.sums(&queries, &settings, 1, level).unwrap();
            table.scores_pass = false;
            let offered = table.sums(&queries, &settings, 1, level).unwrap();
            assert_eq!(buffered, offered, "seed {seed} at {}", level.name());
        }
    }
}

#[test]
fn a_query_block_shorter_than_a_group_is_not_scanned() {
    use crate::votes::scan::{coarse_scan, tile_keys, Shortlist, GROUP};
    let dims = 4;
    let keys: Vec<f32> = (0..3 * dims).map(|i| i as f32).collect();
    let tiles = tile_keys(&keys, 3, dims);
    let found = |queries: &[f32], dims: usize, level: SimdLevel| -> usize {
        let mut lists: Vec<Shortlist> = (0..GROUP).map(|_| Shortlist::new(2)).collect();
        coarse_scan(level, &tiles, 0, 3, dims, queries, &mut lists);
        let mut indices = Vec::new();
        lists
            .iter_mut()
            .map(|list| {
                list.finish(&mut indices);
                indices.len()
            })
            .sum()
    };
    for level in [SimdLevel::Avx512, SimdLevel::Avx2Fma, SimdLevel::Portable] {
        if !level.is_supported() {
            continue;
        }
        // A whole group is scanned: each query keeps its best 2 of the 3 keys.
        assert_eq!(found(&vec![1.0; GROUP * dims], dims, level), 2 * GROUP);
        // One value short of a group, or no dimension: nothing is read, nothing kept.
        assert_eq!(found(&vec![1.0; GROUP * dims - 1], dims, level), 0);
        assert_eq!(found(&[1.0; GROUP], dims, level), 0);
        assert_eq!(found(&[], 0, level), 0);
    }
}
