//! JE-IRT scoring and top-k routing kernels (placeholder until the kernels land).
