//! packorder._native: module registration, the mapping of errors to Python, and the
//! allocator settings (process-wide). The functions and classes live in python/.

pub mod bitmap;
pub mod error;
pub mod fsck;
pub mod index;
pub mod orders;
pub mod pack;
pub mod progress;
mod python;
pub mod seek;
pub mod walk;
pub mod write;

use pyo3::prelude::*;

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

/// PackFormatError(message, offset-or-None), its `kind` the error's kind by name and its
/// `object_id` the id a "missing" one is about (the class says "corrupt" and None, for one
/// raised without them).
pub(crate) fn to_py_err(e: error::PackError) -> PyErr {
    let err = PackFormatError::new_err((e.message, e.offset));
    if e.kind != error::ErrorKind::Corrupt {
        Python::attach(|py| {
            // Setting an attribute on a fresh exception cannot fail but for lack of memory,
            // and then the error raised is the one to see.
            let value = err.value(py);
            let _ = value.setattr("kind", e.kind.name());
            if let Some(id) = &e.object {
                let _ = value.setattr("object_id", pyo3::types::PyBytes::new(py, id));
            }
        });
    }
    err
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let pack_format_error = m.py().get_type::<PackFormatError>();
    pack_format_error.setattr("kind", error::ErrorKind::Corrupt.name())?;
    pack_format_error.setattr("object_id", m.py().None())?;
    m.add("PackFormatError", pack_format_error)?;
    // The phases of Progress::snapshot, so that Python names them without its own numbers.
    m.add("PHASE_INDEXING", progress::PHASE_INDEXING)?;
    m.add("PHASE_RESOLVING", progress::PHASE_RESOLVING)?;
    m.add("PHASE_CHECKSUM", progress::PHASE_CHECKSUM)?;
    m.add("PHASE_WALKING", progress::PHASE_WALKING)?;
    m.add_class::<python::index::PackIndexer>()?;
    m.add_class::<python::stream::PackStream>()?;
    m.add_class::<python::stream::StreamCounts>()?;
    m.add_class::<python::format::FileChecksum>()?;
    m.add_class::<python::revlist::RevList>()?;
    m.add_class::<python::walk::ObjectWalker>()?;
    m.add_class::<python::walk::WalkEdges>()?;
    m.add_class::<python::walk::Walked>()?;
    m.add_class::<python::walk::ObjectWalk>()?;
    m.add_class::<python::pack_writer::PackWriter>()?;
    m.add_class::<python::object_check::ObjectCheck>()?;
    m.add_class::<python::delta::DeltaIndex>()?;
    m.add_class::<python::delta::DeltaSearch>()?;
    m.add_class::<python::delta::FoundDeltas>()?;
    m.add_class::<python::pack_writer::WriteOutcome>()?;
    m.add_class::<python::bitmap::BitmapOutcome>()?;
    m.add_class::<python::index::IndexTable>()?;
    m.add_class::<python::index::IndexedEntries>()?;
    m.add_class::<python::fsck::CheckOutcome>()?;
    m.add_class::<python::fsck::PyFinding>()?;
    m.add_class::<python::format::EntryHeaders>()?;
    m.add_function(wrap_pyfunction!(python::bitmap::pack_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(python::loose::loose_header, m)?)?;
    m.add_function(wrap_pyfunction!(python::loose::read_loose, m)?)?;
    m.add_function(wrap_pyfunction!(python::sorted_ids::id_sort_order, m)?)?;
    m.add_function(wrap_pyfunction!(python::sorted_ids::find_ids, m)?)?;
    m.add_function(wrap_pyfunction!(python::sorted_ids::find_hits, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::object_id, m)?)?;
    m.add_function(wrap_pyfunction!(tune_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(python::fsck::fsck_messages, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::read_entry_headers, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::range_crcs, m)?)?;
    m.add_function(wrap_pyfunction!(python::orders::add_families, m)?)?;
    m.add_function(wrap_pyfunction!(python::orders::bases_first, m)?)?;
    m.add_function(wrap_pyfunction!(python::orders::chain_roots_depths, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::file_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(python::seek::parse_pack_access, m)?)?;
    m.add_function(wrap_pyfunction!(python::seek::near_read, m)?)?;
    m.add_function(wrap_pyfunction!(python::seek::index_pack_reads, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::apply_delta, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::parse_entry_header, m)?)?;
    m.add_function(wrap_pyfunction!(python::format::encode_entry_header, m)?)?;
    Ok(())
}
