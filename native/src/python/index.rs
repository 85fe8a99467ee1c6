//! The Python face of the indexer: a handle whose long calls release the GIL, whose progress a
//! Python thread can poll, and which can be cancelled from that thread.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;

use crate::error::PackError;
use crate::fsck::Checker;
use crate::index::received::Indexed;
use crate::index::resolve::{resolve, unresolved, Forest, ResolveOptions, ResolveStats};
use crate::index::scan::{scan, PackHeader, ScanOptions, DEFAULT_SPLIT_MIN_BYTES};
use crate::index::table::Table;
use crate::index::{checks, per_thread_share};
use crate::pack::entry::{is_delta, ObjectId};
use crate::pack::source::PackFile;
use crate::progress::{Progress, PHASE_RESOLVING};
use crate::python::arrays::{bytes_of, hash_named, one_id};
use crate::python::fsck::{check_repository_blob, finish_checks, CheckOptions};
use crate::python::stream::PackStream;
use crate::{index::thin, to_py_err};

struct State {
    pack: PackFile,
    threads: usize,
    split_min_bytes: u64,
    detect_collisions: bool,
    resolve_opts: ResolveOptions,
    pool: rayon::ThreadPool,
    header: Option<PackHeader>,
    checksum: Option<ObjectId>,
    table: Option<Table>,
    forest: Option<Forest>,
    stats: ResolveStats,
    /// For each missing base, the REF_DELTA entries that name it (missing_bases).
    wanting: HashMap<ObjectId, Vec<u32>>,
    appended: u32,
    /// Offsets of the entries read while resolving, in order, when tracing.
    trace: Vec<u64>,
    /// Git's object checks, when asked for (set_checks).
    check: Option<Checker>,
}

#[pyclass(frozen, module = "packorder._native")]
pub struct PackIndexer {
    progress: Arc<Progress>,
    state: Mutex<State>,
}

fn not_checking() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("no object checks were asked for")
}

fn not_scanned() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("the pack has not been scanned yet")
}

impl PackIndexer {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PackIndexer {
    #[new]
    #[pyo3(signature = (path, threads, budget, object_limit, detect_collisions=true, writable=false, split_min_bytes=None, trace=false, object_format="sha1"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: PathBuf,
        threads: usize,
        budget: u64,
        object_limit: u64,
        detect_collisions: bool,
        writable: bool,
        split_min_bytes: Option<u64>,
        trace: bool,
        object_format: &str,
    ) -> PyResult<Self> {
        let threads = threads.max(1);
        let algo = hash_named(object_format)?;
        let pack = PackFile::open(&path, writable, algo).map_err(to_py_err)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("packorder-resolve-{i}"))
            .build()
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
        Ok(PackIndexer {
            progress: Arc::new(Progress::default()),
            state: Mutex::new(State {
                pack,
                threads,
                split_min_bytes: split_min_bytes.unwrap_or(DEFAULT_SPLIT_MIN_BYTES),
                detect_collisions,
                resolve_opts: ResolveOptions {
                    trace,
                    budget,
                    object_limit,
                    big_threshold: per_thread_share(budget, threads),
                    detect_collisions,
                    shape: false,
                },
                pool,
                header: None,
                checksum: None,
                table: None,
                forest: None,
                stats: ResolveStats::default(),
                wanting: HashMap::new(),
                appended: 0,
                trace: Vec::new(),
                check: None,
            }),
        })
    }

    /// Pass 1: read every entry. Raises PackFormatError on bad input.
    fn scan(&self, py: Python<'_>) -> PyResult<()> {
        let progress = self.progress.clone();
        let mut st = self.lock();
        let st = &mut *st;
        let opts = ScanOptions {
            threads: st.threads,
            detect_collisions: st.detect_collisions,
            split_min_bytes: st.split_min_bytes,
            whole_limit: per_thread_share(st.resolve_opts.budget, st.threads),
            check: st.check.as_ref(),
        };
        let pack = &st.pack;
        let result = py.detach(|| {
            let mut r = scan(pack, &opts, &progress)?;
            let forest = Forest::new(&mut r.table)?;
            Ok::<_, PackError>((r, forest))
        });
        let (r, forest) = result.map_err(to_py_err)?;
        if let Some(check) = st.check.as_mut().filter(|_| r.false_entries) {
            let limit = st.resolve_opts.object_limit;
            let (pack, table) = (&st.pack, &r.table);
            py.detach(|| checks::check_again(pack, table, check, limit))
                .map_err(to_py_err)?;
        }
        crate::trim_heap();
        st.header = Some(r.header);
        st.checksum = Some(r.checksum);
        st.table = Some(r.table);
        st.forest = Some(forest);
        Ok(())
    }

    /// Pass 1 as made while the pack arrived (`stream`, a PackStream that read all of it,
    /// the object checks included): its findings taken over, as scan() would have found them.
    fn adopt(&self, py: Python<'_>, stream: &Bound<'_, PackStream>) -> PyResult<()> {
        let indexed = stream.get().parser().take_indexed();
        let Some(Indexed {
            header,
            mut table,
            checksum,
            check,
        }) = indexed
        else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the stream has not read a whole pack",
            ));
        };
        let mut st = self.lock();
        if table.entries.data_end != st.pack.len - st.pack.trailer_len() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the stream read another pack",
            ));
        }
        let forest = py.detach(|| Forest::new(&mut table)).map_err(to_py_err)?;
        crate::trim_heap();
        st.header = Some(header);
        st.checksum = Some(checksum);
        st.table = Some(table);
        st.forest = Some(forest);
        st.check = check;
        Ok(())
    }

    /// Pass 2: resolve every delta whose base is in the pack.
    fn resolve(&self, py: Python<'_>) -> PyResult<()> {
        let progress = self.progress.clone();
        let mut st = self.lock();
        let st = &mut *st;
        let (Some(table), Some(forest)) = (st.table.as_mut(), st.forest.as_mut()) else {
            return Err(not_scanned());
        };
        let (pack, opts, pool, trace) = (&st.pack, &st.resolve_opts, &st.pool, &mut st.trace);
        let check = st.check.as_ref();
        let stats = py
            .detach(|| {
                progress.start(PHASE_RESOLVING, table.delta_count() as u64);
                let roots: Vec<u32> = (0..table.len())
                    .filter(|&i| !is_delta(table.entries.kinds[i]))
                    .map(|i| i as u32)
                    .collect();
                let stats = resolve(
                    pack, table, forest, &roots, opts, &progress, pool, trace, check,
                );
                crate::trim_heap();
                stats
            })
            .map_err(to_py_err)?;
        st.stats.add(stats);
        Ok(())
    }

    /// Run Git's object checks on every object as it is hashed (python/fsck.rs CheckOptions).
    fn set_checks(&self, checks: CheckOptions) -> PyResult<()> {
        let mut st = self.lock();
        st.check = Some(checks.checker(st.pack.algo)?);
        Ok(())
    }

    /// Whether an object failed the checks (resolving then stopped early).
    fn checks_failed(&self) -> bool {
        self.lock().check.as_ref().is_some_and(|c| c.failed())
    }

    /// End the object checks (after resolving and completing): python::fsck::finish_checks.
    fn finish_checks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let st = self.lock();
        let check = st.check.as_ref().ok_or_else(not_checking)?;
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let limit = st.resolve_opts.object_limit;
        finish_checks(py, &st.pack, table, check, limit)
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
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let st = self.lock();
        let check = st.check.as_ref().ok_or_else(not_checking)?;
        let id = one_id(st.pack.algo, id, "the blob's id")?;
        check_repository_blob(py, check, id, special, kind, data)
    }

    /// Record each delta's base from the next resolve on (for --verify-stat).
    fn record_shape(&self) {
        self.lock().resolve_opts.shape = true;
    }

    /// In pack order: (base entries, delta depths), native u32s; a whole object's base is
    /// 2**32-1 and its depth 0.
    fn delta_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let st = self.lock();
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let bases = bytes_of(&table.shape, u32::to_ne_bytes);
        let depths = bytes_of(&table.delta_depths(), u32::to_ne_bytes);
        pyo3::types::PyTuple::new(py, [PyBytes::new(py, &bases), PyBytes::new(py, &depths)])
    }

    /// Offsets of the deltas still unresolved, in pack order.
    fn unresolved_offsets(&self) -> PyResult<Vec<u64>> {
        let st = self.lock();
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        Ok(unresolved(table)
            .into_iter()
            .map(|i| table.entries.offsets[i as usize])
            .collect())
    }

    /// The ids that unresolved REF_DELTA entries name, each once, in the pack order of the
    /// first entry naming it: the order in which Git asks the repository for a thin pack's
    /// bases. Remembers which entries want each, for append_bases.
    fn missing_bases<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let mut st = self.lock();
        let st = &mut *st;
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let mut by_entry: Vec<(u32, ObjectId)> = table
            .ref_bases
            .iter()
            .filter(|&&(_, i)| table.real_kinds[i as usize] == 0)
            .map(|&(id, i)| (i, id))
            .collect();
        by_entry.sort_unstable();
        st.wanting.clear();
        let mut order = Vec::new();
        for (entry, id) in by_entry {
            let wanting = st.wanting.entry(id).or_default();
            if wanting.is_empty() {
                order.push(PyBytes::new(py, &id));
            }
            wanting.push(entry);
        }
        Ok(order)
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
        let (Some(table), Some(forest)) = (st.table.as_mut(), st.forest.as_mut()) else {
            return Err(not_scanned());
        };
        let (pack, opts, pool, detect, trace, wanting) = (
            &mut st.pack,
            &st.resolve_opts,
            &st.pool,
            st.detect_collisions,
            &mut st.trace,
            &st.wanting,
        );
        let check = st.check.as_ref();
        let (appended, bad, stats) = py
            .detach(|| {
                let to = thin::Resolving {
                    forest,
                    opts,
                    progress: &progress,
                    pool,
                    trace,
                    check,
                };
                thin::append_bases(pack, table, to, wanting, &bases, level, detect)
            })
            .map_err(to_py_err)?;
        st.stats.add(stats);
        st.appended += appended;
        Ok((appended, bad))
    }

    /// After appending bases: rewrite the header count and trailer; returns the new checksum.
    fn finish_thin<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut st = self.lock();
        let st = &mut *st;
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let pack = &mut st.pack;
        let sum = py.detach(|| thin::finish(pack, table)).map_err(to_py_err)?;
        st.checksum = Some(sum);
        Ok(PyBytes::new(py, &sum))
    }

    /// The index table: (names, crc32s big-endian, offsets as native u64, rev positions
    /// big-endian u32), names sorted as Git sorts them (by id, ties by pack offset).
    /// Ends resolution: the delta forest is dropped first, to keep the peak memory low.
    fn index_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let mut st = self.lock();
        st.forest = None;
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let n = table.len();
        let order = py.detach(|| {
            crate::trim_heap();
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.par_sort_unstable_by(|&a, &b| {
                table
                    .oids
                    .raw(a as usize)
                    .cmp(table.oids.raw(b as usize))
                    .then(a.cmp(&b))
            });
            order
        });
        // Each column is written straight into its Python bytes object: no second copy.
        let rawsz = st.pack.algo.rawsz();
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
        pyo3::types::PyTuple::new(py, [names, crcs, offsets, rev])
    }

    /// Per-entry arrays in pack order: (offsets u64, kinds u8, real kinds u8, sizes u64, ids).
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let st = self.lock();
        let table = st.table.as_ref().ok_or_else(not_scanned)?;
        let offsets = bytes_of(&table.entries.offsets, u64::to_ne_bytes);
        let sizes = bytes_of(&table.entries.sizes, u64::to_ne_bytes);
        let ids = table.oids.as_bytes();
        let items = [
            PyBytes::new(py, &offsets),
            PyBytes::new(py, &table.entries.kinds),
            PyBytes::new(py, &table.real_kinds),
            PyBytes::new(py, &sizes),
            PyBytes::new(py, ids),
        ];
        pyo3::types::PyTuple::new(py, items)
    }

    /// Offsets (native u64s) of the entries the second pass read, in the order the reads
    /// happened across threads; empty unless the indexer was made with trace=True.
    fn trace_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let st = self.lock();
        PyBytes::new(py, &bytes_of(&st.trace, u64::to_ne_bytes))
    }

    /// (phase, done, total); phases: 0 idle, 1 indexing, 2 resolving, 3 checksum.
    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    /// Ask a running scan or resolve to stop; it then raises PackFormatError with kind "interrupted".
    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }

    #[getter]
    fn checksum<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.lock().checksum.map(|c| PyBytes::new(py, &c))
    }

    #[getter]
    fn version(&self) -> Option<u32> {
        self.lock().header.map(|h| h.version)
    }

    #[getter]
    fn pack_size(&self) -> u64 {
        self.lock().pack.len
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = self.lock();
        let d = PyDict::new(py);
        if let Some(t) = st.table.as_ref() {
            d.set_item("objects", t.len())?;
            d.set_item("deltas", t.delta_count())?;
        }
        d.set_item("appended_bases", st.appended)?;
        d.set_item("resolved_deltas", st.stats.resolved)?;
        d.set_item("base_inflations", st.stats.base_inflations)?;
        d.set_item("delta_inflations", st.stats.delta_inflations)?;
        d.set_item("rebuilds", st.stats.rebuilds)?;
        d.set_item("evictions", st.stats.evictions)?;
        d.set_item("peak_kept_bytes", st.stats.peak_kept)?;
        Ok(d)
    }
}
