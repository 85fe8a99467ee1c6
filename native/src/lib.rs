//! packorder._native: module registration and the mapping of errors to Python.

pub mod access_log;
pub mod bitmap;
mod columns;
pub mod delta;
pub mod delta_create;
pub mod delta_search;
pub mod entry;
pub mod error;
pub mod ewah;
pub mod graph;
pub mod hash;
pub mod ids;
pub mod inflate;
pub mod layout;
pub mod loose;
pub mod nearness;
pub mod object_check;
pub mod object_read;
pub mod pack_entries;
pub mod progress;
mod py_bitmap;
mod py_delta;
mod py_index;
mod py_write;
pub mod reach;
pub mod resolve;
mod retain;
pub mod revlist;
pub mod scan;
mod scanner;
pub mod source;
pub mod table;
pub mod thin;
pub mod writer;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use columns::{i32s, i64s, u64s};

pyo3::create_exception!(_native, PackFormatError, pyo3::exceptions::PyException);

/// Give freed heap pages back to the system between phases. Worker threads free into
/// per-thread malloc arenas that glibc otherwise keeps resident.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim has no preconditions.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Make glibc's malloc keep less freed memory resident, for a process about to index a pack:
/// one arena for all threads (worker threads otherwise free into arenas of their own, which
/// stay resident). Measured on redis' pack: peak RSS 57 -> 44 MiB at the same speed. The trim
/// and mmap thresholds are left alone: setting either turns off glibc's adaptive mmap
/// threshold, and then every large object costs an mmap, page faults and a munmap (30% of
/// the time on a pack of 16 MiB blobs). Process-wide, so only the command line calls it,
/// before any thread starts.
#[pyfunction]
fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        const M_ARENA_MAX: i32 = -8;
        // SAFETY: mallopt only changes allocator parameters.
        unsafe { mallopt(M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// PackFormatError(message, offset-or-None).
pub(crate) fn to_py_err(e: error::PackError) -> PyErr {
    PackFormatError::new_err((e.message, e.offset))
}

/// The id of an object of type `kind` (1-4) with content `data`.
#[pyfunction]
#[pyo3(signature = (kind, data, detect_collisions=true))]
fn object_id<'py>(
    py: Python<'py>,
    kind: u8,
    data: &[u8],
    detect_collisions: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let id = py
        .detach(|| hash::object_id(kind, data, detect_collisions, 0))
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &id))
}

/// Apply a Git delta to `base`; raises PackFormatError on a malformed delta.
#[pyfunction]
fn apply_delta<'py>(py: Python<'py>, base: &[u8], delta: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let out = py
        .detach(|| delta::apply_delta(base, delta, 0, u64::MAX))
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &out))
}

/// Parse an entry header at pack offset `offset` from `buf`:
/// (kind, size, header_len, base offset or None, base id or None); None if `buf` is too short.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn parse_entry_header<'py>(
    py: Python<'py>,
    buf: &[u8],
    offset: u64,
) -> PyResult<Option<(u8, u64, usize, Option<u64>, Option<Bound<'py, PyBytes>>)>> {
    let h = entry::parse_header(buf, offset).map_err(to_py_err)?;
    Ok(h.map(|h| {
        let (ofs, id) = match h.base {
            entry::BaseRef::None => (None, None),
            entry::BaseRef::Offset(o) => (Some(o), None),
            entry::BaseRef::Id(id) => (None, Some(PyBytes::new(py, &id))),
        };
        (h.kind, h.size, h.header_len, ofs, id)
    }))
}

/// Encode an entry header: the type/size varint, plus the OFS_DELTA distance when given.
#[pyfunction]
#[pyo3(signature = (kind, size, ofs_distance=None))]
fn encode_entry_header<'py>(
    py: Python<'py>,
    kind: u8,
    size: u64,
    ofs_distance: Option<u64>,
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(20);
    entry::encode_type_size(kind, size, &mut out);
    if let Some(rel) = ofs_distance {
        entry::encode_ofs(rel, &mut out);
    }
    PyBytes::new(py, &out)
}

/// Plain SHA-1 of file contents (idx and rev trailers), without loading OpenSSL into the process.
#[pyclass(module = "packorder._native")]
#[derive(Default)]
struct Sha1(hash::FileChecksum);

#[pymethods]
impl Sha1 {
    #[new]
    fn new() -> Self {
        Sha1::default()
    }

    /// Hash any contiguous bytes-like object (bytes, bytearray, memoryview).
    fn update(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let buf = pyo3::buffer::PyBuffer::<u8>::get(data)?;
        if !buf.is_c_contiguous() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "buffer is not contiguous",
            ));
        }
        // SAFETY: a contiguous buffer of len_bytes() bytes, kept alive and exported (so not
        // resized) by `buf` for the duration of the call.
        let slice =
            unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) };
        py.detach(|| self.0.update(slice));
        Ok(())
    }

    fn digest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.clone().finish())
    }
}

/// The entry headers at `offsets` (native u64s, ascending) of the pack at `path`:
/// (kinds, sizes as u64s, header lengths, OFS base offsets as u64s (0 if none), REF base
/// ids (20 zero bytes if none), object sizes as u64s), each a bytes object in the order of
/// `offsets`. Object sizes of deltas come from the delta header (their first bytes inflated);
/// with `object_sizes=False` they are not read (all zero), which saves an inflate a delta.
#[pyfunction]
#[pyo3(signature = (path, offsets, object_sizes=true))]
fn read_entry_headers<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    offsets: &[u8],
    object_sizes: bool,
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let offs = u64s(offsets);
    let h = py
        .detach(|| {
            let pack = source::PackFile::open(&path, false)?;
            layout::read_headers(&pack, &offs, object_sizes)
        })
        .map_err(to_py_err)?;
    let sizes: Vec<u8> = h.sizes.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let bases: Vec<u8> = h.ofs_bases.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let ids: Vec<u8> = h.ref_ids.iter().flatten().copied().collect();
    let object_sizes: Vec<u8> = h
        .object_sizes
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    pyo3::types::PyTuple::new(
        py,
        [
            PyBytes::new(py, &h.kinds),
            PyBytes::new(py, &sizes),
            PyBytes::new(py, &h.header_lens),
            PyBytes::new(py, &bases),
            PyBytes::new(py, &ids),
            PyBytes::new(py, &object_sizes),
        ],
    )
}

/// CRC32 of each byte range `[starts[i], ends[i])` (native u64s) of the file at `path`, as
/// big-endian u32s: to check a written pack against what the writer meant to write.
#[pyfunction]
fn range_crcs<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    starts: &[u8],
    ends: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let (starts, ends) = (u64s(starts), u64s(ends));
    let out = py
        .detach(|| -> error::Result<Vec<u8>> {
            let pack = source::PackFile::open(&path, false)?;
            let mut out = Vec::with_capacity(starts.len() * 4);
            let mut buf = vec![0u8; 1 << 20];
            // Ranges are mostly small and in file order: serve them from a window read ahead
            // (one read a MiB instead of one a range).
            let (mut win_start, mut win_len) = (0u64, 0usize);
            for (&s, &e) in starts.iter().zip(&ends) {
                let mut crc = crc32fast::Hasher::new();
                if e > s && e - s <= buf.len() as u64 {
                    if s < win_start || e > win_start + win_len as u64 {
                        win_start = s;
                        win_len = pack.read_upto(&mut buf, s, pack.len)?;
                        if (win_len as u64) < e - s {
                            return Err(error::PackError::at(
                                s + win_len as u64,
                                "file ends early",
                            ));
                        }
                    }
                    let from = (s - win_start) as usize;
                    crc.update(&buf[from..from + (e - s) as usize]);
                } else {
                    win_len = 0; // the buffer is reused below
                    read_range(&pack, &mut buf, s, e, |b| crc.update(b))?;
                }
                out.extend_from_slice(&crc.finalize().to_be_bytes());
            }
            Ok(out)
        })
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &out))
}

/// Feed `[from, to)` of the file to `f` through `buf`, a buffer at a time.
fn read_range(
    pack: &source::PackFile,
    buf: &mut [u8],
    from: u64,
    to: u64,
    mut f: impl FnMut(&[u8]),
) -> error::Result<()> {
    let mut at = from;
    while at < to {
        let n = pack.read_upto(buf, at, to)?;
        if n == 0 {
            return Err(error::PackError::at(at, "file ends early"));
        }
        f(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// Plain SHA-1 of the first `length` bytes of the file at `path`.
#[pyfunction]
fn file_sha1<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    length: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let sum = py
        .detach(|| -> error::Result<[u8; 20]> {
            let pack = source::PackFile::open(&path, false)?;
            let mut h = hash::FileChecksum::default();
            let mut buf = vec![0u8; 1 << 20];
            read_range(&pack, &mut buf, 0, length, |b| h.update(b))?;
            Ok(h.finish())
        })
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &sum))
}

type AccessLogParts<'py> = (
    Vec<Bound<'py, PyBytes>>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// A GIT_TRACE_PACK_ACCESS log parsed: (distinct paths, each line's path index as native
/// i32s, each line's offset as native u64s), or None when a line needs the exact parser.
#[pyfunction]
fn parse_pack_access<'py>(py: Python<'py>, data: &[u8]) -> Option<AccessLogParts<'py>> {
    let log = py.detach(|| access_log::parse(data))?;
    let index: Vec<u8> = log.index.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let offsets: Vec<u8> = log.offsets.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let paths = log.paths.iter().map(|p| PyBytes::new(py, p)).collect();
    Some((paths, PyBytes::new(py, &index), PyBytes::new(py, &offsets)))
}

/// nearness::near_read over native arrays (i32 packs, u64 starts and ends): a byte a flag.
#[pyfunction]
fn near_read<'py>(
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

fn check_nodes(values: &[i64], n: usize, what: &str) -> PyResult<()> {
    if values.iter().any(|&v| v < -1 || v >= n as i64) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what} out of range"
        )));
    }
    Ok(())
}

/// graph::add_families over native i64 arrays and one flag byte a node:
/// returns (the nodes added as native i64s, the updated flags).
#[pyfunction]
fn add_families<'py>(
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
    graph::add_families(&roots, &start, &child, &mut flags, &mut out);
    let added: Vec<u8> = out.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let flags: Vec<u8> = flags.iter().map(|&b| u8::from(b)).collect();
    pyo3::types::PyTuple::new(py, [PyBytes::new(py, &added), PyBytes::new(py, &flags)])
}

/// graph::roots_and_depths over a native i64 array of bases: (roots, depths), native i64s.
#[pyfunction]
fn chain_roots_depths<'py>(
    py: Python<'py>,
    base: &[u8],
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let base = i64s(base);
    let (roots, depths) = graph::roots_and_depths(&base)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("delta cycle"))?;
    let encode = |v: &[i64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    pyo3::types::PyTuple::new(
        py,
        [
            PyBytes::new(py, &encode(&roots)),
            PyBytes::new(py, &encode(&depths)),
        ],
    )
}

/// graph::bases_first over native i64 arrays.
#[pyfunction]
fn bases_first<'py>(py: Python<'py>, order: &[u8], base: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let (order, base) = (i64s(order), i64s(base));
    check_nodes(&base, base.len(), "base")?;
    if order.iter().any(|&v| v < 0 || v as usize >= base.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "order out of range",
        ));
    }
    let out = graph::bases_first(&order, &base)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("delta cycle"))?;
    Ok(PyBytes::new(
        py,
        &out.iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    ))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PackFormatError", m.py().get_type::<PackFormatError>())?;
    // The phases of Progress::snapshot, so that Python names them without its own numbers.
    m.add("PHASE_INDEXING", progress::PHASE_INDEXING)?;
    m.add("PHASE_RESOLVING", progress::PHASE_RESOLVING)?;
    m.add("PHASE_CHECKSUM", progress::PHASE_CHECKSUM)?;
    m.add_class::<py_index::PackIndexer>()?;
    m.add_class::<Sha1>()?;
    m.add_class::<py_write::RevList>()?;
    m.add_class::<py_write::PackWriter>()?;
    m.add_class::<py_write::ObjectCheck>()?;
    m.add_class::<py_delta::DeltaIndex>()?;
    m.add_class::<py_delta::DeltaSearch>()?;
    m.add_function(wrap_pyfunction!(py_bitmap::pack_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(py_write::loose_header, m)?)?;
    m.add_function(wrap_pyfunction!(py_write::read_loose, m)?)?;
    m.add_function(wrap_pyfunction!(py_write::id_sort_order, m)?)?;
    m.add_function(wrap_pyfunction!(py_write::find_ids, m)?)?;
    m.add_function(wrap_pyfunction!(py_write::find_hits, m)?)?;
    m.add_function(wrap_pyfunction!(object_id, m)?)?;
    m.add_function(wrap_pyfunction!(tune_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(read_entry_headers, m)?)?;
    m.add_function(wrap_pyfunction!(range_crcs, m)?)?;
    m.add_function(wrap_pyfunction!(add_families, m)?)?;
    m.add_function(wrap_pyfunction!(bases_first, m)?)?;
    m.add_function(wrap_pyfunction!(chain_roots_depths, m)?)?;
    m.add_function(wrap_pyfunction!(file_sha1, m)?)?;
    m.add_function(wrap_pyfunction!(parse_pack_access, m)?)?;
    m.add_function(wrap_pyfunction!(near_read, m)?)?;
    m.add_function(wrap_pyfunction!(apply_delta, m)?)?;
    m.add_function(wrap_pyfunction!(parse_entry_header, m)?)?;
    m.add_function(wrap_pyfunction!(encode_entry_header, m)?)?;
    Ok(())
}
