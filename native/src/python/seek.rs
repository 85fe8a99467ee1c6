//! The Python face of seekstats' hot loops: parsing the pack access log, and the
//! page-cache-aware nearness of accesses.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::python::arrays::{bytes_of, i32s, u64s};
use crate::{seek::access_log, seek::nearness};

type AccessLogParts<'py> = (
    Vec<Bound<'py, PyBytes>>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// A GIT_TRACE_PACK_ACCESS log parsed: (distinct paths, each line's path index as native
/// i32s, each line's offset as native u64s), or None when a line needs the exact parser.
#[pyfunction]
pub(crate) fn parse_pack_access<'py>(py: Python<'py>, data: &[u8]) -> Option<AccessLogParts<'py>> {
    let log = py.detach(|| access_log::parse(data))?;
    let index = bytes_of(&log.index, i32::to_ne_bytes);
    let offsets = bytes_of(&log.offsets, u64::to_ne_bytes);
    let paths = log.paths.iter().map(|p| PyBytes::new(py, p)).collect();
    Some((paths, PyBytes::new(py, &index), PyBytes::new(py, &offsets)))
}

/// nearness::near_read over native arrays (i32 packs, u64 starts and ends): a byte a flag.
#[pyfunction]
pub(crate) fn near_read<'py>(
    py: Python<'py>,
    packs: &[u8],
    starts: &[u8],
    ends: &[u8],
    near: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let n = packs.len() / 4;
    if !packs.len().is_multiple_of(4) || starts.len() != 8 * n || ends.len() != 8 * n {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "near_read: arrays of different lengths",
        ));
    }
    let flags = py.detach(|| {
        let flags = nearness::near_read(&i32s(packs), &u64s(starts), &u64s(ends), near);
        flags.into_iter().map(u8::from).collect::<Vec<u8>>()
    });
    Ok(PyBytes::new(py, &flags))
}
