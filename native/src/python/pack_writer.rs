//! The Python face of the pack writer (write/pack_writer.rs): a plan's columns checked and
//! written with the GIL released, progress polled, cancellable.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::PackError;
use crate::pack::entries::PackEntries;
use crate::pack::object_read::Store;
use crate::progress::Progress;
use crate::python::arrays::{self, bytes_of, i64s, ids_column, u32s, u64s, Col, PackSource};
use crate::python::limits::Limits;
use crate::to_py_err;
use crate::write::pack_writer::{write_pack, Plan};

pub(crate) fn bad_plan(what: &str) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(format!("bad pack plan: {what}"))
}

/// What PackWriter.write wrote, its entries in pack order.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub struct WriteOutcome {
    /// Each entry's offset, native u64s.
    offsets: Py<PyBytes>,
    /// The CRC32 of each entry's bytes, big-endian u32s.
    crcs: Py<PyBytes>,
    /// The pack's trailing checksum.
    checksum: Py<PyBytes>,
    /// The pack file's size in bytes.
    size: u64,
}

/// Writes one pack from a plan; see write/pack_writer.rs for the meaning of each column.
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
    /// each; limits.threads: how many compress the entries the plan produces.
    #[new]
    #[pyo3(signature = (sources, how, src, pos, base, kinds, oids, loose, new_deltas, ref_delta, level, limits, object_format="sha1"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        sources: Vec<PackSource<'_>>,
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
        limits: Limits,
        object_format: &str,
    ) -> PyResult<Self> {
        let algo = arrays::hash_named(object_format)?;
        let srcs = sources
            .iter()
            .map(arrays::source)
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
            object_limit: limits.object_limit,
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
        let store = Store::new(srcs, Vec::new(), limits.object_limit).map_err(to_py_err)?;
        Ok(PackWriter {
            progress: Arc::new(Progress::default()),
            job: Mutex::new(Some((store, plan))),
            threads: limits.threads.max(1),
        })
    }

    /// Write the pack to `path`. Nothing is left at `path` on failure.
    fn write(&self, py: Python<'_>, path: PathBuf) -> PyResult<WriteOutcome> {
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
        Ok(WriteOutcome {
            offsets: PyBytes::new(py, &offsets).unbind(),
            crcs: PyBytes::new(py, &crcs).unbind(),
            checksum: PyBytes::new(py, &written.checksum).unbind(),
            size: written.size,
        })
    }

    fn progress(&self) -> (u8, u64, u64) {
        self.progress.snapshot()
    }

    fn cancel(&self) {
        self.progress.cancelled.store(true, Ordering::Relaxed);
    }
}
