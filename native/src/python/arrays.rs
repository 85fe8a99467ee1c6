//! Arrays that Python passes as bytes (native-endian numpy buffers), decoded; and the pack
//! sources that the writer and the delta search both read, decoded from those arrays.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pack::entries::{Entries, PackEntries};
use crate::pack::object_id::{HashAlgo, ObjectId};
use crate::pack::source::PackFile;
use crate::to_py_err;

fn decode<T, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().unwrap_or([0; N])))
        .collect()
}

pub(crate) fn u64s(b: &[u8]) -> Vec<u64> {
    decode(b, u64::from_ne_bytes)
}

pub(crate) fn i64s(b: &[u8]) -> Vec<i64> {
    decode(b, i64::from_ne_bytes)
}

pub(crate) fn u32s(b: &[u8]) -> Vec<u32> {
    decode(b, u32::from_ne_bytes)
}

pub(crate) fn i32s(b: &[u8]) -> Vec<i32> {
    decode(b, i32::from_ne_bytes)
}

/// `values` as bytes, each by `f` (`u64::to_ne_bytes` for a native-endian numpy array, which
/// `np.frombuffer` reads back): the way back of `decode`.
pub(crate) fn bytes_of<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&f(v));
    }
    out
}

/// The hash Python names (`extensions.objectFormat`'s values).
pub(crate) fn hash_named(name: &str) -> PyResult<HashAlgo> {
    HashAlgo::named(name).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("unknown hash algorithm '{name}'"))
    })
}

/// `b`, concatenated ids of `algo`, as object ids; `what` names them in the error.
pub(crate) fn ids_column(algo: HashAlgo, b: &[u8], what: &str) -> PyResult<Vec<ObjectId>> {
    crate::pack::object_id::ids_of(algo, b).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("{what}: not a whole number of object ids"))
    })
}

/// `raw` as one id of `algo`; `what` names it in the error.
pub(crate) fn one_id(algo: HashAlgo, raw: &[u8], what: &str) -> PyResult<ObjectId> {
    ObjectId::try_from(raw)
        .ok()
        .filter(|id| id.algo() == algo)
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{what} is not a {} id", algo.name()))
        })
}

pub(crate) type Col<'py> = Bound<'py, PyBytes>;

/// A source pack as Python describes it to the writer, the object check and the delta
/// search: format/layout.py's `EntryColumns`, read by its attributes, every column
/// native-endian and in pack order.
#[derive(FromPyObject)]
pub struct PackSource<'py> {
    path: PathBuf,
    /// u64 each.
    offsets: Col<'py>,
    /// Where the entries end (the trailer's offset).
    data_end: u64,
    /// u8 each.
    header_lens: Col<'py>,
    /// The stored types, u8 each.
    kinds: Col<'py>,
    /// u64 each.
    sizes: Col<'py>,
    /// Base positions, -1 for none, i64 each.
    bases: Col<'py>,
    /// u32 each, or empty when not known.
    crcs: Col<'py>,
    object_format: String,
}

/// Open and check one source pack: columns of one length, offsets ascending within its
/// entries, delta bases within the pack.
pub(crate) fn source(args: &PackSource<'_>) -> PyResult<PackEntries> {
    let path = args.path.clone();
    let data_end = args.data_end;
    let (offsets, header_lens, kinds) = (
        args.offsets.as_bytes(),
        args.header_lens.as_bytes(),
        args.kinds.as_bytes(),
    );
    let (sizes, bases, crcs) = (
        args.sizes.as_bytes(),
        args.bases.as_bytes(),
        args.crcs.as_bytes(),
    );
    let pack = PackFile::open(&path, false, hash_named(&args.object_format)?).map_err(to_py_err)?;
    let e = Entries {
        offsets: u64s(offsets),
        kinds: kinds.to_vec(),
        header_lens: header_lens.to_vec(),
        sizes: u64s(sizes),
        crcs: u32s(crcs),
        bases: i64s(bases),
        data_end,
    };
    let n = e.offsets.len();
    let lengths = [
        e.header_lens.len(),
        e.kinds.len(),
        e.sizes.len(),
        e.bases.len(),
    ];
    if lengths.iter().any(|&l| l != n) || !(e.crcs.is_empty() || e.crcs.len() == n) {
        return Err(bad_source(&path, "columns differ in length"));
    }
    if e.offsets.windows(2).any(|w| w[0] >= w[1])
        || e.offsets.last().is_some_and(|&o| o >= data_end)
    {
        return Err(bad_source(
            &path,
            "offsets not ascending within the entries",
        ));
    }
    if e.bases.iter().any(|&b| b >= n as i64) {
        return Err(bad_source(&path, "a delta base out of range"));
    }
    Ok(PackEntries {
        pack,
        path,
        entries: e,
    })
}

fn bad_source(path: &std::path::Path, what: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!("bad pack source {}: {what}", path.display()))
}
