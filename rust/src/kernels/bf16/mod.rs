//! The reduced-precision pass: question and LLM components rounded to bfloat16, products accumulated in
//! float32 by AVX-512 BF16's `vdpbf16ps` (two multiply-adds per 32-bit lane, twice float32 FMA's), for CPUs
//! that have it (Zen 4, Sapphire Rapids and later).
//!
//! Rounding each component to 8 bits of mantissa moves a logit by about 1e-4 to 1e-3 on the shipped router;
//! `topk` therefore only uses this pass to shortlist candidates and scores those again in float64, and
//! `probabilities` in bfloat16 runs it centred (`centre`): only the rows' parts off their common
//! directions are rounded, and the epilogue adds the common parts back exactly.
//!
//! The files depend one way: `pack` (the LLM table in bf16 pairs) <- `centre` (the common directions taken
//! out) <- `pass` (the tiles) <- `topk` (shortlist and exact rescoring).

pub(crate) mod centre;
pub(crate) mod pack;
pub(crate) mod pass;
pub(crate) mod topk;
