//! The Python face of the pack writer and of the enumeration helpers repack needs.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::error::PackError;
use crate::pack::entry::ObjectId;
use crate::pack::object_id::{concat, HashAlgo};
use crate::pack::object_read::Store;
use crate::pack::pack_entries::PackEntries;
use crate::progress::Progress;
use crate::python::arrays::{self, bytes_of, i64s, ids_column, u32s, u64s, Col, PackSource};
use crate::to_py_err;
use crate::write::object_check::check_objects;
use crate::write::pack_writer::{write_pack, Plan};
use crate::write::revlist::RevListParser;

fn bad_plan(what: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!("bad pack plan: {what}"))
}

/// Parses `git rev-list --objects` output fed in chunks.
#[pyclass(module = "packorder._native")]
pub struct RevList(RevListParser);

#[pymethods]
impl RevList {
    /// A parser of the ids of `object_format`.
    #[new]
    #[pyo3(signature = (object_format="sha1"))]
    fn new(object_format: &str) -> PyResult<Self> {
        Ok(RevList(RevListParser::new(arrays::hash_named(
            object_format,
        )?)))
    }

    fn feed(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let p = &mut self.0;
        py.detach(|| p.feed(data)).map_err(to_py_err)
    }

    /// Feed everything read from the file descriptor `fd` (left open) until its end, without
    /// the GIL: the reader never waits for Python, so Git never waits on a full pipe.
    fn feed_fd(&mut self, py: Python<'_>, fd: i32) -> PyResult<()> {
        use std::os::fd::FromRawFd;
        if fd < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "feed_fd: bad file descriptor",
            ));
        }
        let p = &mut self.0;
        py.detach(|| {
            // SAFETY: the caller owns `fd` and keeps it open for the call; ManuallyDrop
            // leaves closing it to the caller.
            let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
            p.feed_from(&mut *file)
        })
        .map_err(to_py_err)
    }

    /// (ids, name hashes version 1 and 2 as native u32s, path hashes as native u64s, missing
    /// ids).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.0.finish().map_err(to_py_err)?;
        let algo = self.0.algo;
        let p = std::mem::replace(&mut self.0, RevListParser::new(algo));
        let oids = concat(&p.oids);
        let missing = concat(&p.missing);
        PyTuple::new(
            py,
            [
                PyBytes::new(py, &oids),
                PyBytes::new(py, &bytes_of(&p.names.v1, u32::to_ne_bytes)),
                PyBytes::new(py, &bytes_of(&p.names.v2, u32::to_ne_bytes)),
                PyBytes::new(py, &bytes_of(&p.names.paths, u64::to_ne_bytes)),
                PyBytes::new(py, &missing),
            ],
        )
    }
}

/// (type, size) of the loose object file at `path`.
#[pyfunction]
pub fn loose_header(py: Python<'_>, path: PathBuf) -> PyResult<(u8, u64)> {
    py.detach(|| crate::pack::loose::loose_header(&path))
        .map_err(to_py_err)
}

/// (type, content) of the loose object file at `path`.
#[pyfunction]
pub fn read_loose<'py>(py: Python<'py>, path: PathBuf) -> PyResult<(u8, Bound<'py, PyBytes>)> {
    let (kind, data) = py
        .detach(|| crate::pack::loose::read_loose(&path, u64::MAX >> 1))
        .map_err(to_py_err)?;
    Ok((kind, PyBytes::new(py, &data)))
}

/// Writes one pack from a plan; see writer.rs for the meaning of each column.
#[pyclass(frozen, module = "packorder._native")]
pub struct PackWriter {
    progress: Arc<Progress>,
    job: Mutex<Option<(Store, Plan)>>,
    threads: usize,
}

#[pymethods]
impl PackWriter {
    /// sources: the packs the plan copies from. Plan columns: how u8, src u32, pos
    /// u64, base i64, kinds u8, oids (ids of `object_format`); loose: paths; new_deltas: bytes
    /// each; threads: how many compress the entries the plan produces.
    #[new]
    #[pyo3(signature = (sources, how, src, pos, base, kinds, oids, loose, new_deltas, ref_delta, level, object_limit, threads, object_format="sha1"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        sources: Vec<PyRef<'_, PackSource>>,
        how: &[u8],
        src: &[u8],
        pos: &[u8],
        base: &[u8],
        kinds: &[u8],
        oids: &[u8],
        loose: Vec<PathBuf>,
        new_deltas: Vec<Col<'_>>,
        ref_delta: bool,
        level: u32,
        object_limit: u64,
        threads: usize,
        object_format: &str,
    ) -> PyResult<Self> {
        let algo = arrays::hash_named(object_format)?;
        let srcs = sources
            .iter()
            .map(|s| arrays::source(py, s))
            .collect::<PyResult<Vec<PackEntries>>>()?;
        let plan = Plan {
            how: how.to_vec(),
            src: u32s(src),
            pos: u64s(pos),
            base: i64s(base),
            kinds: kinds.to_vec(),
            oids: ids_column(algo, oids, "plan ids")?,
            algo,
            loose,
            new_deltas: new_deltas.iter().map(|d| d.as_bytes().to_vec()).collect(),
            ref_delta,
            level,
            object_limit,
        };
        let n = plan.how.len();
        if [
            plan.src.len(),
            plan.pos.len(),
            plan.base.len(),
            plan.kinds.len(),
            plan.oids.len(),
        ]
        .iter()
        .any(|&l| l != n)
        {
            return Err(bad_plan("plan columns differ in length"));
        }
        for i in 0..n {
            let ok = match plan.how[i] {
                crate::write::pack_writer::COPY_WHOLE
                | crate::write::pack_writer::COPY_DELTA
                | crate::write::pack_writer::FROM_PACK => srcs
                    .get(plan.src[i] as usize)
                    .is_some_and(|s| (plan.pos[i] as usize) < s.entries.offsets.len()),
                crate::write::pack_writer::FROM_LOOSE => (plan.src[i] as usize) < plan.loose.len(),
                crate::write::pack_writer::NEW_DELTA => {
                    (plan.src[i] as usize) < plan.new_deltas.len()
                }
                _ => false,
            };
            if !ok {
                return Err(bad_plan(&format!("entry {i} refers to nothing")));
            }
        }
        let store = Store::new(srcs, Vec::new(), object_limit).map_err(to_py_err)?;
        Ok(PackWriter {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some((store, plan))),
            threads: threads.max(1),
        })
    }

    /// Write the pack to `path`; returns (offsets as native u64s, crcs as big-endian u32s,
    /// checksum, pack size). Nothing is left at `path` on failure.
    fn write<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyTuple>> {
        let job = self.job.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((store, plan)) = job else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this writer has already run",
            ));
        };
        let progress = self.progress.clone();
        progress.start(1, plan.how.len() as u64);
        let written = py
            .detach(|| {
                let r = write_pack(&path, &store, &plan, self.threads, &progress);
                if r.is_err() {
                    let _ = std::fs::remove_file(&path);
                }
                r
            })
            .map_err(|e: PackError| to_py_err(e))?;
        let offsets = bytes_of(&written.offsets, u64::to_ne_bytes);
        let crcs = bytes_of(&written.crcs, u32::to_be_bytes);
        let items: [Py<PyAny>; 4] = [
            PyBytes::new(py, &offsets).into_any().unbind(),
            PyBytes::new(py, &crcs).into_any().unbind(),
            PyBytes::new(py, &written.checksum).into_any().unbind(),
            written.size.into_pyobject(py)?.into_any().unbind(),
        ];
        PyTuple::new(py, items)
    }

    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }
}

/// A check's inputs: the new pack, the entries to check, their planned ids and types.
type CheckJob = (Store, Vec<u64>, Vec<ObjectId>, Vec<u8>);

/// The proof that chosen entries of a new pack are the planned objects (object_check.rs),
/// run with the GIL released and polled for progress like the writer.
#[pyclass(frozen, module = "packorder._native")]
pub struct ObjectCheck {
    progress: Arc<Progress>,
    job: Mutex<Option<CheckJob>>,
    threads: usize,
    budget: u64,
}

#[pymethods]
impl ObjectCheck {
    /// pack: the new pack; targets: pack positions (u64) in
    /// ascending order; ids: the id planned for each; kinds: each one's type (u8).
    #[new]
    #[pyo3(signature = (pack, targets, ids, kinds, threads, budget, object_limit))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pack: PyRef<'_, PackSource>,
        targets: &[u8],
        ids: &[u8],
        kinds: &[u8],
        threads: usize,
        budget: u64,
        object_limit: u64,
    ) -> PyResult<Self> {
        let source = arrays::source(py, &pack)?;
        let ids = ids_column(source.pack.algo, ids, "check ids")?;
        let store = Store::new(vec![source], Vec::new(), object_limit).map_err(to_py_err)?;
        let targets = u64s(targets);
        if ids.len() != targets.len() || kinds.len() != targets.len() {
            return Err(bad_plan("check columns differ in length"));
        }
        Ok(ObjectCheck {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some((store, targets, ids, kinds.to_vec()))),
            threads,
            budget,
        })
    }

    fn run(&self, py: Python<'_>) -> PyResult<()> {
        let job = self.job.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((store, targets, ids, kinds)) = job else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this check has already run",
            ));
        };
        let progress = self.progress.clone();
        progress.start(1, targets.len() as u64);
        let (threads, budget) = (self.threads, self.budget);
        py.detach(|| check_objects(&store, &targets, &ids, &kinds, threads, budget, &progress))
            .map_err(to_py_err)
    }

    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }
}

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
        crate::pack::ids::sort_order(&oids)
            .into_iter()
            .flat_map(|i| i64::from(i).to_ne_bytes())
            .collect()
    });
    Ok(PyBytes::new(py, &out))
}

fn sorted_ids(algo: HashAlgo, b: &[u8], what: &str) -> PyResult<Vec<ObjectId>> {
    let ids = ids_column(algo, b, what)?;
    if !crate::pack::ids::is_sorted(&ids) {
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
    let out = py.detach(|| bytes_of(&crate::pack::ids::find(&sorted, &want), i64::to_ne_bytes));
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
        let finder = crate::pack::ids::Finder::new(&sorted);
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
