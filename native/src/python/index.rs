//! The Python face of the indexer (index/indexer.rs): a handle whose long steps release the
//! GIL, whose progress a Python thread can poll, and which can be cancelled from that thread.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::index::indexer::{Indexer, IndexerOptions, StepError};
use crate::progress::Progress;
use crate::python::arrays::{bytes_of, hash_named, one_id};
use crate::python::fsck::{
    findings_to_py, outcome_to_py, special_named, CheckOptions, CheckOutcome,
};
use crate::python::limits::Limits;
use crate::python::stream::PackStream;
use crate::to_py_err;

/// The index table of an indexed pack, one row an object, in name order.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct IndexTable {
    /// The ids, one after another.
    names: Py<PyBytes>,
    /// The CRC32 of each entry's bytes, big-endian u32s.
    crcs: Py<PyBytes>,
    /// Each entry's pack offset, native u64s.
    offsets: Py<PyBytes>,
    /// In pack order, each entry's place in name order: the `.rev` file's big-endian u32s.
    rev_positions: Py<PyBytes>,
}

/// An indexed pack's entries, in pack order.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct IndexedEntries {
    /// Native u64s.
    offsets: Py<PyBytes>,
    /// The type each entry is stored as (a delta's is 6 or 7), one byte each.
    kinds: Py<PyBytes>,
    /// The type of the object each entry holds, one byte each.
    real_kinds: Py<PyBytes>,
    /// The size of each object, native u64s.
    sizes: Py<PyBytes>,
    /// The ids, one after another.
    ids: Py<PyBytes>,
}

#[pyclass(frozen, module = "packorder._native")]
pub struct PackIndexer {
    progress: Arc<Progress>,
    state: Mutex<Indexer>,
}

/// A broken pack is PackFormatError; a step out of order, RuntimeError.
fn step_err(e: StepError) -> PyErr {
    match e {
        StepError::Pack(e) => to_py_err(e),
        StepError::Order(why) => pyo3::exceptions::PyRuntimeError::new_err(why),
    }
}

impl PackIndexer {
    fn lock(&self) -> MutexGuard<'_, Indexer> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PackIndexer {
    #[new]
    #[pyo3(signature = (path, limits, detect_collisions=true, writable=false, split_min_bytes=None, trace=false, object_format="sha1"))]
    fn new(
        path: PathBuf,
        limits: Limits,
        detect_collisions: bool,
        writable: bool,
        split_min_bytes: Option<u64>,
        trace: bool,
        object_format: &str,
    ) -> PyResult<Self> {
        let algo = hash_named(object_format)?;
        let opts = IndexerOptions {
            threads: limits.threads,
            budget: limits.budget,
            object_limit: limits.object_limit,
            detect_collisions,
            writable,
            split_min_bytes,
            trace,
        };
        let indexer = Indexer::open(&path, algo, &opts).map_err(step_err)?;
        Ok(PackIndexer {
            progress: Arc::new(Progress::default()),
            state: Mutex::new(indexer),
        })
    }

    /// Pass 1: read every entry. Raises PackFormatError on bad input.
    fn scan(&self, py: Python<'_>) -> PyResult<()> {
        let progress = self.progress.clone();
        let mut st = self.lock();
        let st = &mut *st;
        py.detach(|| st.scan(&progress)).map_err(step_err)
    }

    /// Pass 1 as made while the pack arrived (`stream`, a PackStream that read all of it,
    /// the object checks included): its findings taken over, as scan() would have found them.
    fn adopt(&self, py: Python<'_>, stream: &Bound<'_, PackStream>) -> PyResult<()> {
        let Some(indexed) = stream.get().parser().take_indexed() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the stream has not read a whole pack",
            ));
        };
        let mut st = self.lock();
        let st = &mut *st;
        py.detach(|| st.adopt(indexed)).map_err(step_err)
    }

    /// Pass 2: resolve every delta whose base is in the pack.
    fn resolve(&self, py: Python<'_>) -> PyResult<()> {
        let progress = self.progress.clone();
        let mut st = self.lock();
        let st = &mut *st;
        py.detach(|| st.resolve(&progress)).map_err(step_err)
    }

    /// Run Git's object checks on every object as it is hashed (python/fsck.rs CheckOptions).
    fn set_checks(&self, checks: CheckOptions) -> PyResult<()> {
        checks.install(&mut *self.lock())
    }

    /// Whether an object failed the checks (resolving then stopped early).
    fn checks_failed(&self) -> bool {
        self.lock().checks_failed()
    }

    /// End the object checks (after resolving and completing): python::fsck::outcome_to_py.
    fn finish_checks(&self, py: Python<'_>) -> PyResult<CheckOutcome> {
        let st = self.lock();
        let st = &*st;
        let out = py.detach(|| st.finish_checks()).map_err(step_err)?;
        outcome_to_py(py, out)
    }

    /// Check a `.gitmodules` or `.gitattributes` blob the repository holds (`kind` its type,
    /// None if missing); its findings.
    fn check_special_blob<'py>(
        &self,
        py: Python<'py>,
        id: &[u8],
        special: &str,
        kind: Option<u8>,
        data: &[u8],
    ) -> PyResult<Bound<'py, PyList>> {
        let st = self.lock();
        let id = one_id(st.algo(), id, "the blob's id")?;
        let special = special_named(special)?;
        let findings = st
            .check_special_blob(&id, special, kind, data)
            .map_err(step_err)?;
        findings_to_py(py, findings)
    }

    /// Record each delta's base from the next resolve on (for --verify-stat).
    fn record_shape(&self) {
        self.lock().record_shape();
    }

    /// In pack order: (base entries, delta depths), native u32s; a whole object's base is
    /// 2**32-1 and its depth 0.
    fn delta_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let st = self.lock();
        let (bases, depths) = st.delta_shape().map_err(step_err)?;
        let bases = bytes_of(bases, u32::to_ne_bytes);
        let depths = bytes_of(&depths, u32::to_ne_bytes);
        PyTuple::new(py, [PyBytes::new(py, &bases), PyBytes::new(py, &depths)])
    }

    /// Offsets of the deltas still unresolved, in pack order.
    fn unresolved_offsets(&self) -> PyResult<Vec<u64>> {
        self.lock().unresolved_offsets().map_err(step_err)
    }

    /// The ids that unresolved REF_DELTA entries name, each once, in the order in which Git
    /// asks the repository for a thin pack's bases (Indexer::missing_bases).
    fn missing_bases<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let ids = self.lock().missing_bases().map_err(step_err)?;
        Ok(ids.iter().map(|id| PyBytes::new(py, id)).collect())
    }

    /// Append each (id, type, data) of `bases` (read from the repository, in missing_bases'
    /// order) that an unresolved entry still wants, as a whole object, and resolve what it
    /// unlocks, as Git completes a thin pack: one base resolved may make a later one
    /// unneeded. Returns (appended, None), or (appended so far, k) when `bases[k]` does not
    /// hash to its id (a corrupt object in the repository), nothing of it written.
    fn append_bases(
        &self,
        py: Python<'_>,
        bases: Vec<(Vec<u8>, u8, Vec<u8>)>,
        level: u32,
    ) -> PyResult<(u32, Option<usize>)> {
        let progress = self.progress.clone();
        let mut st = self.lock();
        let st = &mut *st;
        py.detach(|| st.append_bases(&bases, level, &progress))
            .map_err(step_err)
    }

    /// After appending bases: rewrite the header count and trailer; returns the new checksum.
    fn finish_thin<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut st = self.lock();
        let st = &mut *st;
        let sum = py.detach(|| st.finish_thin()).map_err(step_err)?;
        Ok(PyBytes::new(py, &sum))
    }

    /// The index table, names sorted as Git sorts them (by id, ties by pack offset).
    /// Ends resolution (Indexer::name_order).
    fn index_table(&self, py: Python<'_>) -> PyResult<IndexTable> {
        let mut st = self.lock();
        let st = &mut *st;
        let order = py.detach(|| st.name_order()).map_err(step_err)?;
        let table = st.table().map_err(step_err)?;
        let n = order.len();
        // Each column is written straight into its Python bytes object: no second copy.
        let rawsz = st.algo().rawsz();
        let names = PyBytes::new_with(py, n * rawsz, |buf| {
            for (chunk, &i) in buf.chunks_exact_mut(rawsz).zip(&order) {
                chunk.copy_from_slice(table.oids.raw(i as usize));
            }
            Ok(())
        })?;
        let crcs = PyBytes::new_with(py, n * 4, |buf| {
            for (chunk, &i) in buf.chunks_exact_mut(4).zip(&order) {
                chunk.copy_from_slice(&table.entries.crcs[i as usize].to_be_bytes());
            }
            Ok(())
        })?;
        let offsets = PyBytes::new_with(py, n * 8, |buf| {
            for (chunk, &i) in buf.chunks_exact_mut(8).zip(&order) {
                chunk.copy_from_slice(&table.entries.offsets[i as usize].to_ne_bytes());
            }
            Ok(())
        })?;
        let rev = PyBytes::new_with(py, n * 4, |buf| {
            for (pos, &i) in order.iter().enumerate() {
                let i = i as usize;
                buf[i * 4..i * 4 + 4].copy_from_slice(&(pos as u32).to_be_bytes());
            }
            Ok(())
        })?;
        Ok(IndexTable {
            names: names.unbind(),
            crcs: crcs.unbind(),
            offsets: offsets.unbind(),
            rev_positions: rev.unbind(),
        })
    }

    /// Per-entry arrays in pack order.
    fn entries(&self, py: Python<'_>) -> PyResult<IndexedEntries> {
        let st = self.lock();
        let table = st.table().map_err(step_err)?;
        let offsets = bytes_of(&table.entries.offsets, u64::to_ne_bytes);
        let sizes = bytes_of(&table.entries.sizes, u64::to_ne_bytes);
        Ok(IndexedEntries {
            offsets: PyBytes::new(py, &offsets).unbind(),
            kinds: PyBytes::new(py, &table.entries.kinds).unbind(),
            real_kinds: PyBytes::new(py, &table.real_kinds).unbind(),
            sizes: PyBytes::new(py, &sizes).unbind(),
            ids: PyBytes::new(py, table.oids.as_bytes()).unbind(),
        })
    }

    /// Offsets (native u64s) of the entries the second pass read, in the order the reads
    /// happened across threads; empty unless the indexer was made with trace=True.
    fn trace_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &bytes_of(self.lock().trace_offsets(), u64::to_ne_bytes))
    }

    /// (phase, done, total); phases: 0 idle, 1 indexing, 2 resolving, 3 checksum.
    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    /// Ask a running scan or resolve to stop; it then raises PackFormatError of kind
    /// "interrupted".
    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }

    #[getter]
    fn checksum<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.lock().checksum().map(|c| PyBytes::new(py, &c))
    }

    #[getter]
    fn version(&self) -> Option<u32> {
        self.lock().version()
    }

    #[getter]
    fn pack_size(&self) -> u64 {
        self.lock().pack_size()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, value) in self.lock().stats() {
            d.set_item(name, value)?;
        }
        Ok(d)
    }
}
