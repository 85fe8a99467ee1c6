//! The Python face of delta creation: a reusable index of one base, and the window search
//! over a sorted list of objects (with the GIL released, progress polled, cancellable).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::pack::object_read::{Locator, Store, LOOSE};
use crate::progress::Progress;
use crate::python::arrays::{self, bytes_of, i32s, i64s, u32s, u64s, PackSource};
use crate::python::limits::Limits;
use crate::to_py_err;
use crate::write::delta_create;
use crate::write::delta_search::{search, Candidate, Options};

/// Progress phase of the delta search.
pub const PHASE_DELTAS: u8 = 4;

fn bad(what: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!("bad delta search input: {what}"))
}

/// An index of one base, to encode any number of targets against it.
#[pyclass(frozen, module = "packorder._native")]
pub struct DeltaIndex {
    base: Vec<u8>,
    index: delta_create::DeltaIndex,
}

#[pymethods]
impl DeltaIndex {
    #[new]
    fn new(py: Python<'_>, base: Vec<u8>) -> Self {
        let index = py.detach(|| delta_create::DeltaIndex::new(&base));
        DeltaIndex { base, index }
    }

    /// The delta from the base to `target` (Git's format), or None if it would be longer
    /// than `max_size` bytes.
    #[pyo3(signature = (target, max_size=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        target: &[u8],
        max_size: Option<usize>,
    ) -> Option<Bound<'py, PyBytes>> {
        let max = max_size.unwrap_or(usize::MAX);
        let out = py.detach(|| self.index.encode(&self.base, target, max))?;
        Some(PyBytes::new(py, &out))
    }

    #[getter]
    fn memory(&self) -> usize {
        self.index.memory()
    }
}

struct Job {
    store: Store,
    cands: Vec<Candidate>,
    chunks: Vec<usize>,
    opts: Options,
    threads: usize,
}

/// What DeltaSearch.run found.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct FoundDeltas {
    /// One per candidate, native i64s: the candidate it is a delta against, or -1.
    bases: Py<PyBytes>,
    /// The deltas, in candidate order, of the candidates with a base.
    deltas: Py<PyList>,
    /// The search's counts (tries, objects read, inflated, deltas applied, cache hits and
    /// evictions).
    stats: Py<PyDict>,
}

/// The window search over a sorted candidate list; see delta_search.rs.
#[pyclass(frozen, module = "packorder._native")]
pub struct DeltaSearch {
    progress: Arc<Progress>,
    job: Mutex<Option<Job>>,
}

#[pymethods]
impl DeltaSearch {
    /// packs: the packs the candidates are read from; loose: paths. Candidates, sorted, one element each: kinds u8, sizes
    /// u64, sources i32 (pack index, -1 loose), positions u64 (pack position or loose
    /// index), max_depths u32, same_pack u8, ranks u32 (optional: a base may not outrank its
    /// delta). chunks: i64 boundaries from 0 to the count.
    #[new]
    #[pyo3(signature = (packs, loose, kinds, sizes, sources, positions, max_depths, same_pack, chunks, window, limits, ranks=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        packs: Vec<PackSource<'_>>,
        loose: Vec<PathBuf>,
        kinds: &[u8],
        sizes: &[u8],
        sources: &[u8],
        positions: &[u8],
        max_depths: &[u8],
        same_pack: &[u8],
        chunks: &[u8],
        window: usize,
        limits: Limits,
        ranks: Option<&[u8]>,
    ) -> PyResult<Self> {
        let srcs = packs
            .iter()
            .map(arrays::source)
            .collect::<PyResult<Vec<_>>>()?;
        let store = Store::new(srcs, loose, limits.object_limit).map_err(to_py_err)?;
        let sizes = u64s(sizes);
        let sources = i32s(sources);
        let positions = u64s(positions);
        let max_depths = u32s(max_depths);
        let n = kinds.len();
        let ranks = match ranks {
            Some(r) => u32s(r),
            None => vec![0; n],
        };
        if [
            sizes.len(),
            sources.len(),
            positions.len(),
            max_depths.len(),
            same_pack.len(),
            ranks.len(),
        ]
        .iter()
        .any(|&l| l != n)
        {
            return Err(bad("candidate columns differ in length"));
        }
        let cands: Vec<Candidate> = (0..n)
            .map(|i| Candidate {
                kind: kinds[i],
                size: sizes[i],
                loc: Locator {
                    source: if sources[i] < 0 {
                        LOOSE
                    } else {
                        sources[i] as u32
                    },
                    pos: positions[i],
                },
                max_depth: max_depths[i],
                same_pack: same_pack[i] != 0,
                rank: ranks[i],
            })
            .collect();
        let chunks: Vec<usize> = i64s(chunks)
            .into_iter()
            .map(|c| c.max(0) as usize)
            .collect();
        let job = Job {
            store,
            cands,
            chunks,
            opts: Options {
                window,
                cache_budget: limits.budget,
            },
            threads: limits.threads.max(1),
        };
        Ok(DeltaSearch {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some(job)),
        })
    }

    /// Run the search.
    fn run(&self, py: Python<'_>) -> PyResult<FoundDeltas> {
        let job = self.job.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(job) = job else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "this search has already run",
            ));
        };
        let progress = self.progress.clone();
        progress.start(PHASE_DELTAS, job.cands.len() as u64);
        let found = py
            .detach(|| {
                let r = search(
                    &job.store,
                    &job.cands,
                    &job.chunks,
                    &job.opts,
                    &progress,
                    job.threads,
                );
                drop(job);
                crate::trim_heap();
                r
            })
            .map_err(to_py_err)?;
        let bases = bytes_of(&found.base, i64::to_ne_bytes);
        let deltas = PyList::empty(py);
        for d in found.deltas.into_iter().flatten() {
            deltas.append(PyBytes::new(py, &d))?;
        }
        let stats = PyDict::new(py);
        stats.set_item("tries", found.tries)?;
        stats.set_item("objects_read", found.stats.objects)?;
        stats.set_item("inflated", found.stats.inflated)?;
        stats.set_item("deltas_applied", found.stats.applied)?;
        stats.set_item("cache_hits", found.stats.cache_hits)?;
        stats.set_item("cache_evictions", found.stats.evictions)?;
        Ok(FoundDeltas {
            bases: PyBytes::new(py, &bases).unbind(),
            deltas: deltas.unbind(),
            stats: stats.unbind(),
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
