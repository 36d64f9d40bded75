//! The scoring kernels: P(correct) for every (question, LLM) pair (`score`), the k most likely-correct LLMs per
//! question (`topk`) and the mean P per LLM (`forecast`). All three run one fused, blocked, multi-threaded pass
//! (`engine`) over the LLM table packed in panels (`pack`), with per-LLM calibration, penalties and logit
//! offsets (`adjust`) and a stable sigmoid (`sigmoid`). `bf16` is the reduced-precision pass for CPUs with
//! AVX-512 BF16; `peak` measures the multiply-add peak the benchmarks compare the kernels with.

pub(crate) mod adjust;
#[cfg(target_arch = "x86_64")]
pub(crate) mod bf16;
pub(crate) mod engine;
pub(crate) mod forecast;
pub(crate) mod pack;
pub(crate) mod peak;
pub(crate) mod score;
pub(crate) mod sigmoid;
pub(crate) mod topk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_top1;
