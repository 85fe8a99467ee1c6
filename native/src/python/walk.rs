//! The Python face of the object walk: a handle whose run releases the GIL, whose progress a
//! Python thread polls, and which that thread can cancel.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::PackError;
use crate::pack::entry_header::{HashAlgo, ObjectId};
use crate::progress::Progress;
use crate::python::arrays::{bytes_of, hash_named, ids_column, one_id};
use crate::python::limits::Limits;
use crate::to_py_err;
use crate::walk::edges::WalkGraph;
use crate::walk::index_file::{index_roots, IndexRoots};
use crate::walk::odb::ObjectDb;
use crate::walk::parallel::RUN_ITEMS;
use crate::walk::path_names::PathNames;
use crate::walk::traverse::{walk, PARALLEL_FROM};
use crate::walk::walker::{Root, WalkOptions};

struct Job {
    packs: Vec<PathBuf>,
    loose: Vec<(ObjectId, PathBuf)>,
    commits: Vec<ObjectId>,
    roots: Vec<Root>,
    opts: WalkOptions,
    limits: Limits,
    algo: HashAlgo,
}

#[pyclass(frozen, module = "packorder._native")]
pub struct ObjectWalker {
    progress: Arc<Progress>,
    job: Mutex<Option<Job>>,
    /// Why an index is left to Git, if one is.
    #[pyo3(get)]
    unsupported: Option<&'static str>,
}

#[pymethods]
impl ObjectWalker {
    /// packs: pack paths (each beside its .idx); loose_ids (ids of `object_format`, sorted)
    /// with loose_paths; commits: the starting commits in Git's order; roots:
    /// [(id, path or None)] that are not commits, in order; index_files: the worktrees'
    /// indexes, in Git's order (read here); shallow: sorted ids whose parents are not walked;
    /// limits.threads: 2 or more walks on that many cores, from parallel_from objects, run_items
    /// items at a time; record_edges: keep the commit and tree graph, for a bitmap.
    #[new]
    #[pyo3(signature = (packs, loose_ids, loose_paths, commits, roots, index_files, in_commit_order, missing_ok, shallow, limits, parallel_from=PARALLEL_FROM, run_items=RUN_ITEMS, object_format="sha1", record_edges=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        packs: Vec<PathBuf>,
        loose_ids: &[u8],
        loose_paths: Vec<PathBuf>,
        commits: &[u8],
        roots: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        index_files: Vec<PathBuf>,
        in_commit_order: bool,
        missing_ok: bool,
        shallow: &[u8],
        limits: Limits,
        parallel_from: usize,
        run_items: usize,
        object_format: &str,
        record_edges: bool,
    ) -> PyResult<Self> {
        let algo = hash_named(object_format)?;
        let loose_ids = ids_column(algo, loose_ids, "loose ids")?;
        if loose_ids.len() != loose_paths.len() || loose_ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "loose ids: not sorted, or not one per path",
            ));
        }
        let mut roots = roots
            .into_iter()
            .map(|(id, path)| {
                let id = one_id(algo, &id, "a root id")?;
                Ok(Root { id, path, kind: 0 })
            })
            .collect::<PyResult<Vec<_>>>()?;
        // The indexes are read now, so that one this walk leaves to Git is known before it
        // starts.
        let mut unsupported = None;
        for index in &index_files {
            match index_roots(index, algo).map_err(to_py_err)? {
                IndexRoots::Roots(r) => roots.extend(r),
                IndexRoots::Unsupported(why) => unsupported = Some(why),
            }
        }
        let job = Job {
            packs,
            loose: loose_ids.into_iter().zip(loose_paths).collect(),
            commits: ids_column(algo, commits, "commits")?,
            roots,
            opts: WalkOptions {
                in_commit_order,
                missing_ok,
                shallow: ids_column(algo, shallow, "shallow commits")?,
                threads: limits.threads,
                parallel_from,
                run_items,
                record_edges,
            },
            limits,
            algo,
        };
        Ok(ObjectWalker {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some(job)),
            unsupported,
        })
    }

    /// Walk.
    fn run(&self, py: Python<'_>) -> PyResult<ObjectWalk> {
        let job = self.job.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut job) = job else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this walk has already run",
            ));
        };
        let progress = self.progress.clone();
        let algo = job.algo;
        let (mut w, numbering) = py
            .detach(|| -> Result<_, PackError> {
                let loose = std::mem::take(&mut job.loose);
                let mut db = ObjectDb::open(
                    &job.packs,
                    loose,
                    job.limits.budget,
                    job.limits.object_limit,
                    job.algo,
                )?;
                let walked = walk(&mut db, &job.commits, &job.roots, &job.opts, &progress)?;
                let numbering = db.numbering();
                drop(db);
                // The walkers' caches are freed among what the graph keeps.
                crate::trim_heap();
                Ok((walked, numbering))
            })
            .map_err(to_py_err)?;
        let edges = match job.opts.record_edges {
            true => Some(WalkEdges {
                graph: Mutex::new(Some(WalkGraph {
                    parts: std::mem::take(&mut w.edges),
                    numbering,
                    algo,
                })),
            }),
            false => None,
        };
        Ok(ObjectWalk {
            walked: Py::new(py, Walked::new(py, &w.ids, &w.names, &w.missing))?,
            edges: edges.map(|e| Py::new(py, e)).transpose()?,
        })
    }

    /// (phase, done, total).
    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }
}

/// What a walk gives, one row an object in Git's order: the hashes of the path it was found
/// at are walk/path_names.rs's.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct Walked {
    /// The ids, one after another.
    ids: Py<PyBytes>,
    /// Git's name hash (version 1) of each path, native u32s.
    name_hashes: Py<PyBytes>,
    /// Git's name hash version 2 of each path, native u32s.
    name_hashes_v2: Py<PyBytes>,
    /// The whole path's hash, native u64s; 0: none (a commit or a tag).
    path_hashes: Py<PyBytes>,
    /// Ids of missing objects the walk was allowed to pass, one after another.
    missing: Py<PyBytes>,
}

impl Walked {
    pub(crate) fn new(
        py: Python<'_>,
        ids: &[ObjectId],
        names: &PathNames,
        missing: &[ObjectId],
    ) -> Walked {
        let bytes = |b: &[u8]| PyBytes::new(py, b).unbind();
        Walked {
            ids: bytes(&crate::pack::object_id::concat(ids)),
            name_hashes: bytes(&bytes_of(&names.v1, u32::to_ne_bytes)),
            name_hashes_v2: bytes(&bytes_of(&names.v2, u32::to_ne_bytes)),
            path_hashes: bytes(&bytes_of(&names.paths, u64::to_ne_bytes)),
            missing: bytes(&crate::pack::object_id::concat(missing)),
        }
    }
}

#[pymethods]
impl Walked {
    /// Two walks are the same when every column is.
    fn __eq__(&self, py: Python<'_>, other: PyRef<'_, Self>) -> bool {
        let same =
            |a: &Py<PyBytes>, b: &Py<PyBytes>| a.bind(py).as_bytes() == b.bind(py).as_bytes();
        same(&self.ids, &other.ids)
            && same(&self.name_hashes, &other.name_hashes)
            && same(&self.name_hashes_v2, &other.name_hashes_v2)
            && same(&self.path_hashes, &other.path_hashes)
            && same(&self.missing, &other.missing)
    }
}

/// What ObjectWalker.run gives.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct ObjectWalk {
    walked: Py<Walked>,
    /// The commit and tree graph recorded, when the walker was asked to.
    edges: Option<Py<WalkEdges>>,
}

/// The commit and tree graph a walk recorded, for the bitmap of the pack written from it
/// (taken by the first `pack_bitmap` given it).
#[pyclass(frozen, module = "packorder._native")]
pub struct WalkEdges {
    graph: Mutex<Option<WalkGraph>>,
}

impl WalkEdges {
    pub fn take(&self) -> Option<WalkGraph> {
        self.graph.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
