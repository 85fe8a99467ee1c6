//! The Python face of the proof that produced entries of a new pack are the planned objects
//! (write/object_check.rs).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::pack::entry_header::ObjectId;
use crate::pack::object_read::Store;
use crate::progress::Progress;
use crate::python::arrays::{self, ids_column, u64s, PackSource};
use crate::python::limits::Limits;
use crate::python::pack_writer::bad_plan;
use crate::to_py_err;
use crate::write::object_check::check_objects;

/// A check's inputs: the new pack, the entries to check, their planned ids and types.
type CheckJob = (Store, Vec<u64>, Vec<ObjectId>, Vec<u8>);

/// The proof that chosen entries of a new pack are the planned objects (object_check.rs),
/// run with the GIL released and polled for progress like the writer.
#[pyclass(frozen, module = "packorder._native")]
pub struct ObjectCheck {
    progress: Arc<Progress>,
    job: Mutex<Option<CheckJob>>,
    limits: Limits,
}

#[pymethods]
impl ObjectCheck {
    /// pack: the new pack; targets: pack positions (u64) in
    /// ascending order; ids: the id planned for each; kinds: each one's type (u8).
    #[new]
    #[pyo3(signature = (pack, targets, ids, kinds, limits))]
    fn new(
        pack: PackSource<'_>,
        targets: &[u8],
        ids: &[u8],
        kinds: &[u8],
        limits: Limits,
    ) -> PyResult<Self> {
        let source = arrays::source(&pack)?;
        let ids = ids_column(source.pack.algo, ids, "check ids")?;
        let store = Store::new(vec![source], Vec::new(), limits.object_limit).map_err(to_py_err)?;
        let targets = u64s(targets);
        if ids.len() != targets.len() || kinds.len() != targets.len() {
            return Err(bad_plan("check columns differ in length"));
        }
        Ok(ObjectCheck {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some((store, targets, ids, kinds.to_vec()))),
            limits,
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
        let Limits {
            threads, budget, ..
        } = self.limits;
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
