//! JE-IRT scoring and top-k routing kernels.
//!
//! For a question vector `q` and an LLM vector `m` (both in R^d), the model predicts
//! `P(correct) = sigmoid(q.m/|q| - |q|)`. This crate computes, for a question table Q (N x d) and an LLM
//! table M (K x d), all float32 and row-major:
//!
//! - [`probabilities`]: the N x K matrix of P;
//! - [`top_k`]: the k most likely-correct LLMs per question, without materialising N x K;
//! - [`mean_probability`]: the mean P per LLM over the questions, without materialising N x K.
//!
//! Each has a variant with per-LLM calibration (`scale * logit + bias` before the sigmoid) and, for top-k,
//! a per-LLM penalty subtracted from P before ranking (cost-aware routing); see [`Calibration`].
//!
//! All three share one fused, blocked, multi-threaded pass (see `kernels::engine`), with AVX-512F, AVX2+FMA or
//! portable code chosen at run time. The modules, by concern; each uses only the modules listed before it and
//! the crate root's [`Config`] and [`Precision`]:
//!
//! - `error`, `matrix`, `alloc`, `pool`: the crate-wide basics ([`KernelError`], [`MatrixView`], zeroed
//!   outputs, the rayon pools);
//! - `simd`: the SIMD levels and the trait the kernels are written against once;
//! - `kernels`: the three kernels above, their shared pass, and the bfloat16 pass (`kernels::bf16`);
//! - `encoder`: the static encoder ([`StaticEncoder`]: the BERT tokenizer in [`text`], mean pooling and
//!   the adapter);
//! - `io`: the CSV/TSV record parser and score-row writer behind the Python package's readers and writers
//!   ([`csv_records`], [`score_rows`]);
//! - `votes`: the neighbour votes' search over a router's stored questions ([`VoteTable`]);
//! - `python`: the PyO3 bindings (`jeirt_lite._core`), behind the `python` feature; the pure Rust API here
//!   never touches Python.

mod alloc;
mod encoder;
mod error;
mod io;
mod kernels;
mod matrix;
mod pool;
mod simd;
mod votes;

#[cfg(feature = "python")]
mod python;

pub use encoder::{text, StaticEncoder};
pub use error::KernelError;
pub use io::{csv_records, score_rows};
pub use kernels::adjust::Calibration;
pub use kernels::forecast::{mean_probability, mean_probability_calibrated};
pub use kernels::peak::{bf16_peak_gflops, fma_peak_gflops};
pub use kernels::score::{probabilities, probabilities_calibrated, probabilities_with_precision};
pub use kernels::sigmoid::sigmoid;
pub use kernels::topk::{top_k, top_k_adjusted};
pub use matrix::MatrixView;
pub use pool::resolve_threads;
pub use simd::SimdLevel;
pub use votes::{VoteSettings, VoteTable, NOT_ASKED};

/// How a kernel call runs.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Worker threads; 0 means every available core. Small problems run on the calling thread.
    pub threads: usize,
    /// The SIMD code path; must be supported by this CPU (see [`SimdLevel::is_supported`]).
    pub simd: SimdLevel,
}

impl Config {
    /// `threads` workers and the best SIMD level of this CPU.
    pub fn new(threads: usize) -> Self {
        Self {
            threads,
            simd: SimdLevel::detect(),
        }
    }
}

/// The arithmetic of `top_k`'s scoring pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// float32 multiply-adds (every CPU).
    Float32,
    /// bfloat16 products accumulated in float32 (AVX-512 BF16), the shortlist rescored exactly.
    Bf16,
}

impl Precision {
    /// Whether this CPU can run `self`.
    pub fn is_supported(self) -> bool {
        match self {
            Self::Float32 => true,
            #[cfg(target_arch = "x86_64")]
            Self::Bf16 => kernels::bf16::pass::supported(),
            #[cfg(not(target_arch = "x86_64"))]
            Self::Bf16 => false,
        }
    }

    /// `Bf16` where this CPU has it, else `Float32`.
    pub fn detect() -> Self {
        if Self::Bf16.is_supported() {
            Self::Bf16
        } else {
            Self::Float32
        }
    }
}

/// [`top_k_adjusted`] with the scoring pass in `precision`. `Bf16` applies without a penalty and when the
/// CPU has it and the LLM table fits bfloat16; otherwise this is the float32 kernel. Probabilities are
/// float32-exact either way (the bf16 pass only shortlists, see `kernels::bf16::topk`).
pub fn top_k_with_precision(
    questions: MatrixView<'_>,
    llms: MatrixView<'_>,
    k: usize,
    calibration: &Calibration<'_>,
    penalty: Option<&[f32]>,
    config: &Config,
    precision: Precision,
) -> Result<(Vec<u32>, Vec<f32>), KernelError> {
    #[cfg(target_arch = "x86_64")]
    if precision == Precision::Bf16
        && penalty.is_none()
        && precision.is_supported()
        && llms.cols() == questions.cols()
        && (1..=llms.rows()).contains(&k)
    {
        if let Some(result) =
            kernels::bf16::topk::top_k_bf16(questions, llms, k, calibration, config)?
        {
            return Ok(result);
        }
    }
    let _ = precision;
    top_k_adjusted(questions, llms, k, calibration, penalty, config)
}

/// "release" or "debug": how this library was compiled (benchmarks refuse debug builds).
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Name of the SIMD code path the kernels use on this CPU: "avx512f", "avx2+fma" or "portable".
pub fn simd_level() -> &'static str {
    SimdLevel::detect().name()
}
