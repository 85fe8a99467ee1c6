//! The Python face of sorted id arrays (pack/sorted_ids.rs): the sorting and look-ups repack's
//! enumeration makes on every object.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::pack::object_id::{HashAlgo, ObjectId};
use crate::python::arrays::{self, bytes_of, ids_column};

/// ids::sort_order over concatenated ids of `object_format`, as native i64s.
#[pyfunction]
#[pyo3(signature = (oids, object_format="sha1"))]
pub fn id_sort_order<'py>(
    py: Python<'py>,
    oids: &[u8],
    object_format: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let oids = ids_column(arrays::hash_named(object_format)?, oids, "id_sort_order")?;
    let out: Vec<u8> = py.detach(|| {
        crate::pack::sorted_ids::sort_order(&oids)
            .into_iter()
            .flat_map(|i| i64::from(i).to_ne_bytes())
            .collect()
    });
    Ok(PyBytes::new(py, &out))
}

fn sorted_ids(algo: HashAlgo, b: &[u8], what: &str) -> PyResult<Vec<ObjectId>> {
    let ids = ids_column(algo, b, what)?;
    if !crate::pack::sorted_ids::is_sorted(&ids) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what}: ids not sorted"
        )));
    }
    Ok(ids)
}

/// ids::find over concatenated ids of `object_format` (`sorted` must be ascending), as
/// native i64s.
#[pyfunction]
#[pyo3(signature = (sorted, want, object_format="sha1"))]
pub fn find_ids<'py>(
    py: Python<'py>,
    sorted: &[u8],
    want: &[u8],
    object_format: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let algo = arrays::hash_named(object_format)?;
    let sorted = sorted_ids(algo, sorted, "find_ids")?;
    let want = ids_column(algo, want, "find_ids")?;
    let out = py.detach(|| {
        bytes_of(
            &crate::pack::sorted_ids::find(&sorted, &want),
            i64::to_ne_bytes,
        )
    });
    Ok(PyBytes::new(py, &out))
}

/// The ids of `want` found in `sorted` (ids of `object_format`): (indexes into `want`,
/// positions in `sorted`), native u64s, only for those found (a check that expects few hits
/// need not hold one per id).
#[pyfunction]
#[pyo3(signature = (sorted, want, object_format="sha1"))]
pub fn find_hits<'py>(
    py: Python<'py>,
    sorted: &[u8],
    want: &[u8],
    object_format: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let algo = arrays::hash_named(object_format)?;
    let sorted = sorted_ids(algo, sorted, "find_hits")?;
    let want = ids_column(algo, want, "find_hits")?;
    let (at, pos) = py.detach(|| {
        let finder = crate::pack::sorted_ids::Finder::new(&sorted);
        let (mut at, mut pos) = (Vec::new(), Vec::new());
        for (i, w) in want.iter().enumerate() {
            if let Some(p) = finder.at(w) {
                at.extend_from_slice(&(i as u64).to_ne_bytes());
                pos.extend_from_slice(&(p as u64).to_ne_bytes());
            }
        }
        (at, pos)
    });
    PyTuple::new(py, [PyBytes::new(py, &at), PyBytes::new(py, &pos)])
}
