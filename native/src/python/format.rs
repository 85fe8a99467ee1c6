//! The Python face of the pack format: object ids, deltas, entry headers, checksums and
//! CRCs of ranges, each one call.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pack::object_id::HashAlgo;
use crate::python::arrays::{bytes_of, hash_named, u64s};
use crate::{
    error, pack::delta, pack::entry_header, pack::hash, pack::header_reader, pack::source,
    to_py_err,
};

/// The id of an object of type `kind` (1-4) with content `data`, by `object_format`'s hash.
#[pyfunction]
#[pyo3(signature = (kind, data, detect_collisions=true, object_format="sha1"))]
pub(crate) fn object_id<'py>(
    py: Python<'py>,
    kind: u8,
    data: &[u8],
    detect_collisions: bool,
    object_format: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let algo = hash_named(object_format)?;
    let id = py
        .detach(|| hash::object_id(algo, kind, data, detect_collisions, 0))
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &id))
}

/// Apply a Git delta to `base`; raises PackFormatError on a malformed delta.
#[pyfunction]
pub(crate) fn apply_delta<'py>(
    py: Python<'py>,
    base: &[u8],
    delta: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let out = py
        .detach(|| delta::apply_delta(base, delta, 0, u64::MAX))
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &out))
}

/// Parse an entry header at pack offset `offset` from `buf`, in a pack of `object_format`:
/// (kind, size, header_len, base offset or None, base id or None); None if `buf` is too short.
#[pyfunction]
#[pyo3(signature = (buf, offset, object_format="sha1"))]
#[allow(clippy::type_complexity)]
pub(crate) fn parse_entry_header<'py>(
    py: Python<'py>,
    buf: &[u8],
    offset: u64,
    object_format: &str,
) -> PyResult<Option<(u8, u64, usize, Option<u64>, Option<Bound<'py, PyBytes>>)>> {
    let h =
        entry_header::parse_header(buf, offset, hash_named(object_format)?).map_err(to_py_err)?;
    Ok(h.map(|h| {
        let (ofs, id) = match h.base {
            entry_header::BaseRef::None => (None, None),
            entry_header::BaseRef::Offset(o) => (Some(o), None),
            entry_header::BaseRef::Id(id) => (None, Some(PyBytes::new(py, &id))),
        };
        (h.kind, h.size, h.header_len, ofs, id)
    }))
}

/// Encode an entry header: the type/size varint, plus the OFS_DELTA distance when given.
#[pyfunction]
#[pyo3(signature = (kind, size, ofs_distance=None))]
pub(crate) fn encode_entry_header<'py>(
    py: Python<'py>,
    kind: u8,
    size: u64,
    ofs_distance: Option<u64>,
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(20);
    entry_header::encode_type_size(kind, size, &mut out);
    if let Some(rel) = ofs_distance {
        entry_header::encode_ofs(rel, &mut out);
    }
    PyBytes::new(py, &out)
}

/// The plain hash (SHA-1 or SHA-256) of file contents (idx and rev trailers), without
/// loading OpenSSL into the process.
#[pyclass(module = "packorder._native")]
pub(crate) struct FileChecksum(hash::FileChecksum);

#[pymethods]
impl FileChecksum {
    #[new]
    #[pyo3(signature = (object_format="sha1"))]
    fn new(object_format: &str) -> PyResult<Self> {
        Ok(FileChecksum(hash::FileChecksum::new(hash_named(
            object_format,
        )?)))
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

/// The entry headers at `offsets` (native u64s, ascending) of the pack at `path`, in the
/// order of `offsets`. Object sizes of deltas come from the delta header (their first bytes
/// inflated); with `object_sizes=False` they are not read (all zero), which saves an inflate
/// a delta.
/// What read_entry_headers read, one row an entry.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct EntryHeaders {
    /// The type each entry is stored as, one byte each.
    kinds: Py<PyBytes>,
    /// The size the header gives (a delta's: the delta's), native u64s.
    sizes: Py<PyBytes>,
    /// The header's length, one byte each.
    header_lens: Py<PyBytes>,
    /// An OFS delta's base offset, native u64s; 0 for other entries.
    ofs_bases: Py<PyBytes>,
    /// A REF delta's base id, one after another; zero bytes for other entries.
    ref_ids: Py<PyBytes>,
    /// The size of the object each entry holds, native u64s (all 0 unless asked).
    object_sizes: Py<PyBytes>,
}

#[pyfunction]
#[pyo3(signature = (path, offsets, object_sizes=true, object_format="sha1"))]
pub(crate) fn read_entry_headers<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    offsets: &[u8],
    object_sizes: bool,
    object_format: &str,
) -> PyResult<EntryHeaders> {
    let offs = u64s(offsets);
    let algo = hash_named(object_format)?;
    let h = py
        .detach(|| {
            let pack = source::PackFile::open(&path, false, algo)?;
            header_reader::read_headers(&pack, offs, object_sizes)
        })
        .map_err(to_py_err)?;
    let sizes = bytes_of(&h.entries.sizes, u64::to_ne_bytes);
    let bases = bytes_of(&h.ofs_bases, u64::to_ne_bytes);
    let ids = crate::pack::object_id::concat(&h.ref_ids);
    let object_sizes = bytes_of(&h.object_sizes, u64::to_ne_bytes);
    Ok(EntryHeaders {
        kinds: PyBytes::new(py, &h.entries.kinds).unbind(),
        sizes: PyBytes::new(py, &sizes).unbind(),
        header_lens: PyBytes::new(py, &h.entries.header_lens).unbind(),
        ofs_bases: PyBytes::new(py, &bases).unbind(),
        ref_ids: PyBytes::new(py, &ids).unbind(),
        object_sizes: PyBytes::new(py, &object_sizes).unbind(),
    })
}

/// CRC32 of each byte range `[starts[i], ends[i])` (native u64s) of the file at `path`, as
/// big-endian u32s: to check a written pack against what the writer meant to write.
#[pyfunction]
pub(crate) fn range_crcs<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    starts: &[u8],
    ends: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let (starts, ends) = (u64s(starts), u64s(ends));
    let out = py
        .detach(|| -> error::Result<Vec<u8>> {
            // CRCs of byte ranges: the pack's hash plays no part.
            let pack = source::PackFile::open(&path, false, HashAlgo::Sha1)?;
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

/// The plain hash (`object_format`'s) of the first `length` bytes of the file at `path`.
#[pyfunction]
#[pyo3(signature = (path, length, object_format="sha1"))]
pub(crate) fn file_checksum<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    length: u64,
    object_format: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let algo = hash_named(object_format)?;
    let sum = py
        .detach(|| -> error::Result<crate::pack::object_id::ObjectId> {
            let pack = source::PackFile::open(&path, false, algo)?;
            let mut h = hash::FileChecksum::new(algo);
            let mut buf = vec![0u8; 1 << 20];
            read_range(&pack, &mut buf, 0, length, |b| h.update(b))?;
            Ok(h.finish())
        })
        .map_err(to_py_err)?;
    Ok(PyBytes::new(py, &sum))
}
