//! Unit tests: every SIMD path against a float64 scalar reference, edge shapes, errors and ties.

use crate::{
    mean_probability, probabilities, top_k, Calibration, Config, KernelError, MatrixView, SimdLevel,
};

/// Deterministic pseudo-random numbers (xorshift64*), so the tests need no extra crate.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `len` values in `[-scale, scale)`.
    fn values(&mut self, len: usize, scale: f64) -> Vec<f32> {
        (0..len)
            .map(|_| ((self.uniform() * 2.0 - 1.0) * scale) as f32)
            .collect()
    }
}

fn config(threads: usize, simd: SimdLevel) -> Config {
    Config { threads, simd }
}

fn view<'a>(data: &'a [f32], rows: usize, cols: usize) -> MatrixView<'a> {
    MatrixView::new("test", data, rows, cols).expect("consistent test shape")
}

/// float64 reference logits, row-major N x K.
fn reference_logits(q: &[f32], m: &[f32], n: usize, k: usize, d: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n * k);
    for i in 0..n {
        let row = &q[i * d..(i + 1) * d];
        let norm = row
            .iter()
            .map(|&x| f64::from(x).powi(2))
            .sum::<f64>()
            .sqrt();
        for j in 0..k {
            let dot: f64 = row
                .iter()
                .zip(&m[j * d..(j + 1) * d])
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            out.push(if norm == 0.0 { 0.0 } else { dot / norm - norm });
        }
    }
    out
}

fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn assert_close(got: f32, want: f64, what: &str) {
    let tol = 1e-6 + 1e-5 * want.abs();
    assert!(
        (f64::from(got) - want).abs() <= tol,
        "{what}: got {got}, want {want}"
    );
}

/// Shapes (N, K, d) that exercise partial tiles, partial panels, d = 1, K = 1 and N = 0.
const SHAPES: [(usize, usize, usize); 10] = [
    (0, 5, 3),
    (1, 1, 1),
    (7, 3, 1),
    (13, 33, 17),
    (25, 16, 8),
    (49, 65, 31),
    (60, 32, 64),
    (97, 112, 256),
    (12, 1, 5),
    (2000, 7, 9),
];

#[test]
fn probabilities_match_reference_on_every_level() {
    let mut rng = Rng(7);
    for level in SimdLevel::supported() {
        for &(n, k, d) in &SHAPES {
            let q = rng.values(n * d, 1.0);
            let m = rng.values(k * d, 1.0);
            let got = probabilities(view(&q, n, d), view(&m, k, d), &config(2, level))
                .expect("valid input");
            let want = reference_logits(&q, &m, n, k, d);
            assert_eq!(got.len(), n * k);
            for (g, w) in got.iter().zip(&want) {
                assert_close(*g, sigmoid64(*w), &format!("{level:?} {n}x{k}x{d}"));
            }
        }
    }
}

#[test]
fn top_k_matches_reference_where_not_tied() {
    let mut rng = Rng(11);
    for level in SimdLevel::supported() {
        for &(n, k_llms, d) in &SHAPES {
            let q = rng.values(n * d, 1.0);
            let m = rng.values(k_llms * d, 1.0);
            let logits = reference_logits(&q, &m, n, k_llms, d);
            for k in [1, 2.min(k_llms), k_llms] {
                let (idx, val) = top_k(view(&q, n, d), view(&m, k_llms, d), k, &config(2, level))
                    .expect("valid input");
                assert_eq!((idx.len(), val.len()), (n * k, n * k));
                for i in 0..n {
                    let row = &logits[i * k_llms..(i + 1) * k_llms];
                    let mut order: Vec<usize> = (0..k_llms).collect();
                    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
                    for r in 0..k {
                        let want = order[r];
                        assert_close(val[i * k + r], sigmoid64(row[want]), "top_k value");
                        let gap_before = r
                            .checked_sub(1)
                            .map_or(f64::INFINITY, |p| row[order[p]] - row[want]);
                        let gap_after = order
                            .get(r + 1)
                            .map_or(f64::INFINITY, |&nx| row[want] - row[nx]);
                        if gap_before > 1e-4 && gap_after > 1e-4 {
                            assert_eq!(idx[i * k + r] as usize, want, "{level:?} row {i} rank {r}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn mean_probability_matches_reference_and_ignores_thread_count() {
    let mut rng = Rng(3);
    for level in SimdLevel::supported() {
        for &(n, k, d) in SHAPES.iter().filter(|s| s.0 > 0) {
            let q = rng.values(n * d, 1.0);
            let m = rng.values(k * d, 1.0);
            let logits = reference_logits(&q, &m, n, k, d);
            let one = mean_probability(view(&q, n, d), view(&m, k, d), &config(1, level))
                .expect("valid input");
            let three = mean_probability(view(&q, n, d), view(&m, k, d), &config(3, level))
                .expect("valid input");
            assert_eq!(one, three, "thread count changed the sums");
            for j in 0..k {
                let want = (0..n).map(|i| sigmoid64(logits[i * k + j])).sum::<f64>() / n as f64;
                assert_close(one[j], want, "mean");
            }
        }
    }
}

#[test]
fn identical_llm_rows_tie_exactly_and_lower_index_wins() {
    let mut rng = Rng(5);
    let (n, d) = (31, 19);
    let base = rng.values(3 * d, 1.0);
    // LLM rows 0..40: row j is a copy of base row j % 3, so every panel position holds copies.
    let k_llms = 40;
    let m: Vec<f32> = (0..k_llms)
        .flat_map(|j| base[(j % 3) * d..(j % 3 + 1) * d].to_vec())
        .collect();
    let q = rng.values(n * d, 1.0);
    for level in SimdLevel::supported() {
        let cfg = config(1, level);
        let p = probabilities(view(&q, n, d), view(&m, k_llms, d), &cfg).expect("valid");
        for i in 0..n {
            for j in 3..k_llms {
                assert_eq!(p[i * k_llms + j].to_bits(), p[i * k_llms + j % 3].to_bits());
            }
        }
        let (idx, val) = top_k(view(&q, n, d), view(&m, k_llms, d), 4, &cfg).expect("valid");
        for i in 0..n {
            let best = idx[i * 4] as usize;
            assert!(best < 3, "the first copy must win, got {best}");
            // The next best are the later copies of the same row, in index order.
            let expect = [best, best + 3, best + 6, best + 9];
            assert_eq!(&idx[i * 4..i * 4 + 4], &expect.map(|x| x as u32));
            assert!(val[i * 4..i * 4 + 4]
                .iter()
                .all(|v| v.to_bits() == val[i * 4].to_bits()));
            assert_eq!(val[i * 4].to_bits(), p[i * k_llms + best].to_bits());
        }
    }
}

#[test]
fn zero_question_has_probability_one_half() {
    let d = 6;
    let q = vec![0.0f32; 3 * d];
    let m = Rng(9).values(5 * d, 3.0);
    for level in SimdLevel::supported() {
        let p = probabilities(view(&q, 3, d), view(&m, 5, d), &config(1, level)).expect("valid");
        assert!(p.iter().all(|&x| x == 0.5), "{p:?}");
        let (idx, _) = top_k(view(&q, 3, d), view(&m, 5, d), 5, &config(1, level)).expect("valid");
        assert_eq!(&idx[..5], &[0, 1, 2, 3, 4], "all tied: index order");
    }
}

#[test]
fn tiny_and_huge_question_norms_stay_accurate() {
    let d = 40;
    let mut rng = Rng(13);
    let unit = rng.values(4 * d, 1.0);
    let scales = [1e-30f32, 1e-42, 1e18, 1e35];
    let q: Vec<f32> = unit
        .chunks(d)
        .zip(scales)
        .flat_map(|(row, s)| row.iter().map(move |&x| x * s))
        .collect();
    let m = rng.values(9 * d, 100.0);
    let logits = reference_logits(&q, &m, 4, 9, d);
    for level in SimdLevel::supported() {
        let (_, val) = top_k(view(&q, 4, d), view(&m, 9, d), 9, &config(1, level)).expect("valid");
        let p = probabilities(view(&q, 4, d), view(&m, 9, d), &config(1, level)).expect("valid");
        for (g, w) in p.iter().zip(&logits) {
            assert_close(*g, sigmoid64(*w), &format!("{level:?} extreme norm"));
        }
        assert!(val.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn bad_rows_are_reported_by_lowest_index() {
    let (n, d, k) = (5000, 8, 3);
    let m = Rng(1).values(k * d, 1.0);
    for level in SimdLevel::supported() {
        let cfg = config(2, level);
        let mut q = Rng(2).values(n * d, 1.0);
        q[4321 * d + 3] = f32::INFINITY;
        q[1234 * d] = f32::NAN;
        let err = probabilities(view(&q, n, d), view(&m, k, d), &cfg).unwrap_err();
        assert_eq!(err, KernelError::NonFiniteQuestion { row: 1234 });
        assert_eq!(err.to_string(), "question row 1234 contains NaN or inf");
        let err = top_k(view(&q, n, d), view(&m, k, d), 1, &cfg).unwrap_err();
        assert_eq!(err, KernelError::NonFiniteQuestion { row: 1234 });
        let err = mean_probability(view(&q, n, d), view(&m, k, d), &cfg).unwrap_err();
        assert_eq!(err, KernelError::NonFiniteQuestion { row: 1234 });

        let mut q = Rng(2).values(n * d, 1.0);
        q[77 * d..78 * d].fill(3e38);
        let err = probabilities(view(&q, n, d), view(&m, k, d), &cfg).unwrap_err();
        assert_eq!(err, KernelError::QuestionNormOverflow { row: 77 });

        let q = Rng(2).values(n * d, 1.0);
        let mut bad_m = m.clone();
        bad_m[2 * d + 1] = f32::NEG_INFINITY;
        let err = top_k(view(&q, n, d), view(&bad_m, k, d), 1, &cfg).unwrap_err();
        assert_eq!(err.to_string(), "llm row 2 contains NaN or inf");
    }
}

#[test]
fn shape_errors_name_the_problem() {
    let cfg = Config::new(1);
    let q = vec![1.0f32; 6];
    let m = vec![1.0f32; 8];
    let err = probabilities(view(&q, 2, 3), view(&m, 2, 4), &cfg).unwrap_err();
    assert_eq!(
        err.to_string(),
        "questions has dimension 3 but llms has dimension 4"
    );
    let err = top_k(view(&q, 2, 3), view(&q, 2, 3), 0, &cfg).unwrap_err();
    assert_eq!(err.to_string(), "k must be in 1..=K (K = 2), got 0");
    let err = top_k(view(&q, 2, 3), view(&q, 2, 3), 3, &cfg).unwrap_err();
    assert_eq!(err, KernelError::InvalidK { k: 3, llms: 2 });
    let err = mean_probability(view(&[], 0, 3), view(&q, 2, 3), &cfg).unwrap_err();
    assert_eq!(err.to_string(), "cannot forecast on an empty question bank");
    let err = probabilities(view(&[], 0, 3), view(&[], 0, 3), &cfg).unwrap_err();
    assert_eq!(err, KernelError::NoLlms);
    let err = probabilities(view(&[], 4, 0), view(&[], 2, 0), &cfg).unwrap_err();
    assert_eq!(err, KernelError::EmptyDimension);
    assert!(MatrixView::new("questions", &q, 4, 3).is_err());
}

#[test]
fn empty_question_bank_gives_empty_outputs() {
    let m = vec![0.5f32; 12];
    let cfg = Config::new(0);
    assert!(probabilities(view(&[], 0, 3), view(&m, 4, 3), &cfg)
        .expect("valid")
        .is_empty());
    let (idx, val) = top_k(view(&[], 0, 3), view(&m, 4, 3), 2, &cfg).expect("valid");
    assert!(idx.is_empty() && val.is_empty());
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let (n, k, d) = (3000, 45, 33);
    let q = Rng(21).values(n * d, 1.0);
    let m = Rng(22).values(k * d, 1.0);
    let level = SimdLevel::detect();
    let one = probabilities(view(&q, n, d), view(&m, k, d), &config(1, level)).expect("valid");
    let many = probabilities(view(&q, n, d), view(&m, k, d), &config(4, level)).expect("valid");
    assert_eq!(one, many);
    let a = top_k(view(&q, n, d), view(&m, k, d), 3, &config(1, level)).expect("valid");
    let b = top_k(view(&q, n, d), view(&m, k, d), 3, &config(0, level)).expect("valid");
    assert_eq!(a, b);
}

#[test]
fn stable_sigmoid_saturates_without_nan() {
    assert_eq!(crate::sigmoid(1e30), 1.0);
    assert_eq!(crate::sigmoid(-1e30), 0.0);
    assert_eq!(crate::sigmoid(0.0), 0.5);
    assert!((f64::from(crate::sigmoid(-20.0)) - sigmoid64(-20.0)).abs() < 1e-12);
    // Where exp(-|x|) is not small beside 1, both branches' divisions show.
    for x in [-3.0f32, -1.5, -0.25, 0.25, 1.5, 3.0] {
        let got = f64::from(crate::sigmoid(x));
        assert!(
            (got - sigmoid64(f64::from(x))).abs() < 1e-7,
            "sigmoid({x}) = {got}"
        );
    }
}

#[test]
fn a_huge_penalty_still_reports_the_probabilities() {
    // P - penalty in float32 loses P entirely at penalty 1e8; the reported values must not be rebuilt from it.
    let mut rng = Rng(0xb16_c057);
    let (n, k, d) = (37, 5, 8);
    let q = rng.values(n * d, 1.0);
    let m = rng.values(k * d, 1.0);
    let penalty: Vec<f32> = (0..k).map(|j| 1e8 * (1.0 + j as f32)).collect();
    for level in SimdLevel::supported() {
        let cfg = config(1, level);
        let p = crate::probabilities(view(&q, n, d), view(&m, k, d), &cfg).expect("valid");
        let (idx, val) = crate::top_k_adjusted(
            view(&q, n, d),
            view(&m, k, d),
            k,
            &Calibration::none(),
            Some(&penalty),
            &cfg,
        )
        .expect("valid");
        for i in 0..n {
            assert_eq!(idx[i * k], 0, "{level:?}: the cheapest LLM ranks first");
            for r in 0..k {
                let j = idx[i * k + r] as usize;
                assert_eq!(val[i * k + r], p[i * k + j], "{level:?} row {i} rank {r}");
            }
        }
    }
}

#[test]
fn calibration_and_penalty_match_reference_on_every_level() {
    let mut rng = Rng(0x5eed_ca1b);
    for &(n, k, d) in SHAPES.iter() {
        let q = rng.values(n * d, 1.5);
        let m = rng.values(k * d, 1.5);
        let scale: Vec<f32> = (0..k).map(|j| 0.5 + 0.1 * (j % 7) as f32).collect();
        let bias: Vec<f32> = (0..k).map(|j| -0.3 + 0.05 * (j % 5) as f32).collect();
        let penalty: Vec<f32> = (0..k).map(|j| 0.013 * (j % 11) as f32).collect();
        let logits = reference_logits(&q, &m, n, k, d);
        let cal_p: Vec<f64> = logits
            .iter()
            .enumerate()
            .map(|(i, &z)| sigmoid64(f64::from(scale[i % k]) * z + f64::from(bias[i % k])))
            .collect();
        let cal = Calibration {
            scale: Some(&scale),
            bias: Some(&bias),
            offsets: None,
        };
        for level in SimdLevel::supported() {
            let cfg = config(2, level);
            let p = crate::probabilities_calibrated(view(&q, n, d), view(&m, k, d), &cal, &cfg)
                .expect("valid");
            for (i, (&got, &want)) in p.iter().zip(&cal_p).enumerate() {
                assert_close(got, want, &format!("{level:?} calibrated p[{i}]"));
            }
            if n > 0 {
                let means =
                    crate::mean_probability_calibrated(view(&q, n, d), view(&m, k, d), &cal, &cfg)
                        .expect("valid");
                for j in 0..k {
                    let want = (0..n).map(|i| cal_p[i * k + j]).sum::<f64>() / n as f64;
                    assert_close(means[j], want, &format!("{level:?} calibrated mean[{j}]"));
                }
            }
            // Top 1, and top 3 where an LLM offered later often ranks above the kept ones, so that each
            // reported probability must move along with its entry.
            for top in [1, k.min(3)] {
                let (idx, val) = crate::top_k_adjusted(
                    view(&q, n, d),
                    view(&m, k, d),
                    top,
                    &cal,
                    Some(&penalty),
                    &cfg,
                )
                .expect("valid");
                for i in 0..n {
                    let keys: Vec<f64> = (0..k)
                        .map(|j| cal_p[i * k + j] - f64::from(penalty[j]))
                        .collect();
                    let mut ranked = keys.clone();
                    ranked.sort_by(|a, b| b.total_cmp(a));
                    for r in 0..top {
                        let chosen = idx[i * top + r] as usize;
                        assert!(
                            keys[chosen] >= ranked[r] - 1e-5,
                            "{level:?} row {i} rank {r}: chose {chosen} (key {}), want key {}",
                            keys[chosen],
                            ranked[r]
                        );
                        assert_close(
                            val[i * top + r],
                            cal_p[i * k + chosen],
                            "top-k reported probability",
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn bad_calibration_and_penalty_are_rejected() {
    let cfg = config(1, SimdLevel::Portable);
    let (q, m) = (vec![1.0f32; 6], vec![1.0f32; 6]);
    let short = [1.0f32];
    let cal = Calibration {
        scale: Some(&short),
        bias: None,
        offsets: None,
    };
    let err =
        crate::probabilities_calibrated(view(&q, 2, 3), view(&m, 2, 3), &cal, &cfg).unwrap_err();
    assert!(matches!(
        err,
        KernelError::LlmParameterLength {
            len: 1,
            llms: 2,
            ..
        }
    ));
    let zero = [1.0f32, 0.0];
    let cal = Calibration {
        scale: Some(&zero),
        bias: None,
        offsets: None,
    };
    let err =
        crate::probabilities_calibrated(view(&q, 2, 3), view(&m, 2, 3), &cal, &cfg).unwrap_err();
    assert!(matches!(err, KernelError::BadLlmParameter { row: 1, .. }));
    let nan = [f32::NAN, 0.0];
    let err = crate::top_k_adjusted(
        view(&q, 2, 3),
        view(&m, 2, 3),
        1,
        &Calibration::none(),
        Some(&nan),
        &cfg,
    )
    .unwrap_err();
    assert!(err.to_string().contains("penalty entry 0"));
}

#[test]
fn offsets_are_added_to_the_logit_before_calibration_on_every_level() {
    let mut rng = Rng(0x00ff_5e75);
    for &(n, k, d) in SHAPES.iter() {
        let q = rng.values(n * d, 1.5);
        let m = rng.values(k * d, 1.5);
        let offsets = rng.values(n * k, 2.0);
        let scale: Vec<f32> = (0..k).map(|j| 0.5 + 0.1 * (j % 7) as f32).collect();
        let logits = reference_logits(&q, &m, n, k, d);
        let want: Vec<f64> = logits
            .iter()
            .enumerate()
            .map(|(i, &z)| sigmoid64(f64::from(scale[i % k]) * (z + f64::from(offsets[i]))))
            .collect();
        let cal = Calibration {
            scale: Some(&scale),
            bias: None,
            offsets: Some(view(&offsets, n, k)),
        };
        for level in SimdLevel::supported() {
            let cfg = config(2, level);
            let p = crate::probabilities_calibrated(view(&q, n, d), view(&m, k, d), &cal, &cfg)
                .expect("valid");
            for (i, (&got, &w)) in p.iter().zip(&want).enumerate() {
                assert_close(got, w, &format!("{level:?} offset p[{i}]"));
            }
            if n > 0 {
                let means =
                    crate::mean_probability_calibrated(view(&q, n, d), view(&m, k, d), &cal, &cfg)
                        .expect("valid");
                for j in 0..k {
                    let mean = (0..n).map(|i| want[i * k + j]).sum::<f64>() / n as f64;
                    assert_close(means[j], mean, &format!("{level:?} offset mean[{j}]"));
                }
            }
            let (idx, val) =
                crate::top_k_adjusted(view(&q, n, d), view(&m, k, d), 1, &cal, None, &cfg)
                    .expect("valid");
            for i in 0..n {
                let best = (0..k).map(|j| want[i * k + j]).fold(f64::MIN, f64::max);
                let chosen = idx[i] as usize;
                assert!(want[i * k + chosen] >= best - 1e-5, "{level:?} row {i}");
                assert_close(
                    val[i],
                    want[i * k + chosen],
                    "top-k probability with offsets",
                );
            }
        }
    }
}

#[test]
fn bad_offsets_are_rejected() {
    let cfg = config(1, SimdLevel::Portable);
    let (q, m) = (vec![1.0f32; 6], vec![1.0f32; 6]);
    let short = vec![0.0f32; 2];
    let cal = Calibration {
        offsets: Some(view(&short, 1, 2)),
        ..Calibration::none()
    };
    let err =
        crate::probabilities_calibrated(view(&q, 2, 3), view(&m, 2, 3), &cal, &cfg).unwrap_err();
    assert!(matches!(err, KernelError::OffsetShape { rows: 1, .. }));
    let nan = vec![0.0f32, 0.0, 0.0, f32::NAN];
    let cal = Calibration {
        offsets: Some(view(&nan, 2, 2)),
        ..Calibration::none()
    };
    let err =
        crate::mean_probability_calibrated(view(&q, 2, 3), view(&m, 2, 3), &cal, &cfg).unwrap_err();
    assert!(err.to_string().contains("question row 1, LLM 1"));
}
