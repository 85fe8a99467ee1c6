//! The Python face of seekstats' hot loops: parsing the pack access log, the
//! page-cache-aware nearness of accesses, and the model of index-pack's second pass.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::python::arrays::{bytes_of, i32s, i64s, u64s};
use crate::{seek::access_log, seek::nearness, seek::second_pass};

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

/// second_pass::index_pack_reads over native arrays (i64 children and their starts, u64
/// object sizes, i64 roots): the pack positions read, native i64s.
#[pyfunction]
pub(crate) fn index_pack_reads<'py>(
    py: Python<'py>,
    child: &[u8],
    start: &[u8],
    size: &[u8],
    roots: &[u8],
    cache_limit: u64,
    threads: usize,
    keeps_children: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let (child, start, size, roots) = (i64s(child), i64s(start), u64s(size), i64s(roots));
    let n = size.len();
    let in_range = |v: &i64| *v >= 0 && (*v as usize) < n;
    let starts_ok = start.len() == n + 1
        && start.first() == Some(&0)
        && start.last() == Some(&(child.len() as i64))
        && start.windows(2).all(|w| w[0] <= w[1]);
    if threads == 0 || !starts_ok || !child.iter().all(in_range) || !roots.iter().all(in_range) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "index_pack_reads: arrays do not describe one delta forest",
        ));
    }
    let reads = py.detach(|| {
        let forest = second_pass::Forest {
            child: &child,
            start: &start,
            size: &size,
            roots: &roots,
        };
        second_pass::index_pack_reads(forest, cache_limit, threads, keeps_children)
    });
    Ok(PyBytes::new(py, &bytes_of(&reads, i64::to_ne_bytes)))
}
