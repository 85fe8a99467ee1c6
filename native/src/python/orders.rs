//! The Python face of the traversals over delta forests that the write orders use
//! (orders/families.rs).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::orders::families;
use crate::python::arrays::{bytes_of, i64s};

fn check_nodes(values: &[i64], n: usize, what: &str) -> PyResult<()> {
    if values.iter().any(|&v| v < -1 || v >= n as i64) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what} out of range"
        )));
    }
    Ok(())
}

/// families::add_families over native i64 arrays and one flag byte a node:
/// returns (the nodes added as native i64s, the updated flags).
#[pyfunction]
pub(crate) fn add_families<'py>(
    py: Python<'py>,
    roots: &[u8],
    start: &[u8],
    child: &[u8],
    filled: &[u8],
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let (roots, start, child) = (i64s(roots), i64s(start), i64s(child));
    let n = start.len().saturating_sub(1);
    check_nodes(&roots, n, "root")?;
    check_nodes(&child, n, "child")?;
    if filled.len() != n || start.iter().any(|&s| s < 0 || s as usize > child.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "arrays do not describe one forest",
        ));
    }
    let mut flags: Vec<bool> = filled.iter().map(|&b| b != 0).collect();
    let mut out = Vec::new();
    families::add_families(&roots, &start, &child, &mut flags, &mut out);
    let added = bytes_of(&out, i64::to_ne_bytes);
    let flags: Vec<u8> = flags.iter().map(|&b| u8::from(b)).collect();
    pyo3::types::PyTuple::new(py, [PyBytes::new(py, &added), PyBytes::new(py, &flags)])
}

/// families::roots_and_depths over a native i64 array of bases: (roots, depths), native i64s.
#[pyfunction]
pub(crate) fn chain_roots_depths<'py>(
    py: Python<'py>,
    base: &[u8],
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let base = i64s(base);
    let (roots, depths) = families::roots_and_depths(&base)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("delta cycle"))?;
    pyo3::types::PyTuple::new(
        py,
        [
            PyBytes::new(py, &bytes_of(&roots, i64::to_ne_bytes)),
            PyBytes::new(py, &bytes_of(&depths, i64::to_ne_bytes)),
        ],
    )
}

/// families::bases_first over native i64 arrays.
#[pyfunction]
pub(crate) fn bases_first<'py>(
    py: Python<'py>,
    order: &[u8],
    base: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let (order, base) = (i64s(order), i64s(base));
    check_nodes(&base, base.len(), "base")?;
    if order.iter().any(|&v| v < 0 || v as usize >= base.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "order out of range",
        ));
    }
    let out = families::bases_first(&order, &base)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("delta cycle"))?;
    Ok(PyBytes::new(py, &bytes_of(&out, i64::to_ne_bytes)))
}
