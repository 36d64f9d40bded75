//! The kernels' error type: a plain enum, mapped to `JeirtError` only at the Python boundary.

use std::fmt;

/// Everything a caller can get wrong (or a thread pool can fail at), with the offending row or size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// A flat buffer does not hold `rows * cols` values.
    BufferSize {
        name: &'static str,
        len: usize,
        rows: usize,
        cols: usize,
    },
    /// The vectors have no components (d = 0).
    EmptyDimension,
    /// The LLM table has no rows (K = 0).
    NoLlms,
    /// Questions and LLMs live in spaces of different dimension.
    DimensionMismatch { questions: usize, llms: usize },
    /// `k` is outside `1..=K`.
    InvalidK { k: usize, llms: usize },
    /// `mean_probability` needs at least one question.
    EmptyQuestionBank,
    /// A question row holds NaN or an infinity.
    NonFiniteQuestion { row: usize },
    /// A question row is finite but its Euclidean norm does not fit in float32.
    QuestionNormOverflow { row: usize },
    /// An LLM row holds NaN or an infinity.
    NonFiniteLlm { row: usize },
    /// An LLM row is finite but its Euclidean norm does not fit in float32.
    LlmNormOverflow { row: usize },
    /// The output (`rows x cols` values) cannot be allocated.
    OutputTooLarge { rows: usize, cols: usize },
    /// A thread count that cannot be used.
    InvalidThreads(String),
    /// A SIMD code path was requested that this CPU (or build) cannot run.
    UnsupportedSimd(&'static str),
    /// A per-LLM array (calibration scale or bias, penalty) does not have one entry per LLM.
    LlmParameterLength {
        what: &'static str,
        len: usize,
        llms: usize,
    },
    /// An entry of a per-LLM array is unusable (NaN/inf, or a scale <= 0).
    BadLlmParameter {
        what: &'static str,
        row: usize,
        why: &'static str,
    },
    /// The logit offsets are not one row per question and one column per LLM.
    OffsetShape {
        rows: usize,
        cols: usize,
        questions: usize,
        llms: usize,
    },
    /// A logit offset is NaN or inf.
    NonFiniteOffset { row: usize, col: usize },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferSize {
                name,
                len,
                rows,
                cols,
            } => write!(
                f,
                "{name} holds {len} values but its shape ({rows}, {cols}) needs {}",
                rows.saturating_mul(*cols)
            ),
            Self::EmptyDimension => write!(f, "vectors must have dimension d >= 1, got d = 0"),
            Self::NoLlms => write!(f, "llms must have at least one row (K >= 1), got K = 0"),
            Self::DimensionMismatch { questions, llms } => write!(
                f,
                "questions has dimension {questions} but llms has dimension {llms}"
            ),
            Self::InvalidK { k, llms } => {
                write!(f, "k must be in 1..=K (K = {llms}), got {k}")
            }
            Self::EmptyQuestionBank => write!(f, "cannot forecast on an empty question bank"),
            Self::NonFiniteQuestion { row } => {
                write!(f, "question row {row} contains NaN or inf")
            }
            Self::QuestionNormOverflow { row } => {
                write!(f, "question row {row} has a norm that overflows float32")
            }
            Self::NonFiniteLlm { row } => write!(f, "llm row {row} contains NaN or inf"),
            Self::LlmNormOverflow { row } => {
                write!(f, "llm row {row} has a norm that overflows float32")
            }
            Self::OutputTooLarge { rows, cols } => write!(
                f,
                "cannot allocate an output of {rows} x {cols} values (out of memory)"
            ),
            Self::InvalidThreads(why) => write!(f, "invalid thread count: {why}"),
            Self::UnsupportedSimd(level) => {
                write!(f, "SIMD level {level} is not supported on this CPU")
            }
            Self::LlmParameterLength { what, len, llms } => {
                write!(f, "{what} must have one entry per LLM ({llms}), got {len}")
            }
            Self::BadLlmParameter { what, row, why } => {
                write!(f, "{what} entry {row} {why}")
            }
            Self::OffsetShape {
                rows,
                cols,
                questions,
                llms,
            } => write!(
                f,
                "offsets must have shape ({questions}, {llms}) (questions x LLMs), got ({rows}, {cols})"
            ),
            Self::NonFiniteOffset { row, col } => {
                write!(f, "offset at question row {row}, LLM {col} is NaN or inf")
            }
        }
    }
}

impl std::error::Error for KernelError {}
