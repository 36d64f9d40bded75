//! `top_k` with k = 1 takes a lane-wise path (`TopKSink::consume_lanes`); these tests hold it to the general
//! running list (the first column of k = 2) bit for bit, on every SIMD level, with padding LLMs that would win
//! if they were not masked, ties, zero rows and calibration.

use crate::{
    probabilities_calibrated, top_k, top_k_adjusted, Calibration, Config, MatrixView, SimdLevel,
};

/// Deterministic values in `[-1, 1)` (a multiplicative hash of the index and seed).
fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let h = (i as u32 ^ seed.wrapping_mul(0x9E37_79B9)).wrapping_mul(2_654_435_761);
            (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn view(data: &[f32], rows: usize, cols: usize) -> MatrixView<'_> {
    MatrixView::new("test", data, rows, cols).expect("consistent test shape")
}

/// Asserts k = 1 equals the first column of k = 2 (indices and probability bits).
fn assert_top1_is_first_of_top2(
    q: &[f32],
    m: &[f32],
    n: usize,
    k_llms: usize,
    d: usize,
    cal: &Calibration<'_>,
) {
    for level in SimdLevel::supported() {
        let cfg = Config {
            threads: 2,
            simd: level,
        };
        let (q, m) = (view(q, n, d), view(m, k_llms, d));
        let (i1, v1) = top_k_adjusted(q, m, 1, cal, None, &cfg).expect("valid");
        if k_llms < 2 {
            let p = probabilities_calibrated(q, m, cal, &cfg).expect("valid");
            assert!(i1.iter().all(|&j| j == 0));
            assert_eq!(v1, p);
            continue;
        }
        let (i2, v2) = top_k_adjusted(q, m, 2, cal, None, &cfg).expect("valid");
        for r in 0..n {
            assert_eq!(i1[r], i2[2 * r], "{level:?} K={k_llms} row {r}");
            assert_eq!(
                v1[r].to_bits(),
                v2[2 * r].to_bits(),
                "{level:?} K={k_llms} row {r}"
            );
        }
    }
}

#[test]
fn top1_equals_the_general_list_on_every_level_and_shape() {
    for (n, k_llms, d) in [
        (1, 1, 1),
        (37, 7, 5),
        (50, 16, 3),
        (61, 17, 33),
        (100, 112, 64),
        (30, 129, 9),
    ] {
        let (q, m) = (values(n * d, 1), values(k_llms * d, 2));
        assert_top1_is_first_of_top2(&q, &m, n, k_llms, d, &Calibration::none());
        let scale: Vec<f32> = values(k_llms, 3).iter().map(|x| 1.5 + x).collect();
        let bias = values(k_llms, 4);
        let cal = Calibration {
            scale: Some(&scale),
            bias: Some(&bias),
            offsets: None,
        };
        assert_top1_is_first_of_top2(&q, &m, n, k_llms, d, &cal);
    }
}

#[test]
fn padding_llms_never_win_when_every_real_logit_is_below_theirs() {
    // q > 0 and m < 0: every real logit is below -|q|, the logit a zero padding row would get.
    let (n, d) = (25, 6);
    let q: Vec<f32> = values(n * d, 5).iter().map(|x| 1.5 + x).collect();
    for k_llms in [1, 5, 17, 33, 49] {
        let m: Vec<f32> = values(k_llms * d, 6).iter().map(|x| x - 1.5).collect();
        for level in SimdLevel::supported() {
            let cfg = Config {
                threads: 1,
                simd: level,
            };
            let (idx, _) = top_k(view(&q, n, d), view(&m, k_llms, d), 1, &cfg).expect("valid");
            assert!(
                idx.iter().all(|&j| (j as usize) < k_llms),
                "{level:?} K={k_llms}"
            );
        }
        assert_top1_is_first_of_top2(&q, &m, n, k_llms, d, &Calibration::none());
    }
}

#[test]
fn ties_and_zero_rows_go_to_the_lowest_index() {
    let d = 4;
    let k_llms = 40;
    let base = values(d, 7);
    let m: Vec<f32> = (0..k_llms).flat_map(|_| base.clone()).collect(); // 40 identical LLMs
    let mut q = values(9 * d, 8);
    q[..d].fill(0.0); // a zero row: logit 0 for every LLM
    for level in SimdLevel::supported() {
        let cfg = Config {
            threads: 1,
            simd: level,
        };
        let (idx, _) = top_k(view(&q, 9, d), view(&m, k_llms, d), 1, &cfg).expect("valid");
        assert_eq!(idx, vec![0; 9], "{level:?}");
    }
    assert_top1_is_first_of_top2(&q, &m, 9, k_llms, d, &Calibration::none());
}
