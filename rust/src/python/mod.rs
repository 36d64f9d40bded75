//! PyO3 bindings: the `jeirt_lite._core` extension module, behind the `python` feature. The only code of the
//! crate that knows Python lives in this folder.
//!
//! `_core` below registers what each binding module defines; those take the argument conversions and
//! `JeirtError` from `convert` and nothing from each other, except `pipeline`, which runs `static_encoder`'s
//! encoder (and `votes`' search) in the background.

mod bf16;
mod convert;
mod csv;
mod kernels;
mod pipeline;
mod static_encoder;
mod votes;

use pyo3::prelude::*;

use convert::JeirtError;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("JeirtError", m.py().get_type::<JeirtError>())?;
    kernels::register(m)?;
    m.add_class::<static_encoder::StaticEncoder>()?;
    bf16::register(m)?;
    pipeline::register(m)?;
    csv::register(m)?;
    votes::register(m)?;
    Ok(())
}
