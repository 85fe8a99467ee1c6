//! The Python face of loose objects: the header or the whole of one object file.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::to_py_err;

/// (type, size) of the loose object file at `path`.
#[pyfunction]
pub fn loose_header(py: Python<'_>, path: PathBuf) -> PyResult<(u8, u64)> {
    py.detach(|| crate::pack::loose::loose_header(&path))
        .map_err(to_py_err)
}

/// (type, content) of the loose object file at `path`.
#[pyfunction]
pub fn read_loose<'py>(py: Python<'py>, path: PathBuf) -> PyResult<(u8, Bound<'py, PyBytes>)> {
    let (kind, data) = py
        .detach(|| crate::pack::loose::read_loose(&path, u64::MAX >> 1))
        .map_err(to_py_err)?;
    Ok((kind, PyBytes::new(py, &data)))
}
