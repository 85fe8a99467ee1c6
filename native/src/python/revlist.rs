//! The Python face of the parser of `git rev-list --objects` output (walk/revlist.rs).

use crate::python::arrays;
use crate::python::walk::Walked;
use crate::to_py_err;
use crate::walk::revlist::RevListParser;
use pyo3::prelude::*;

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

    /// The objects listed, as a walk gives them.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Walked> {
        self.0.finish().map_err(to_py_err)?;
        let algo = self.0.algo;
        let p = std::mem::replace(&mut self.0, RevListParser::new(algo));
        Ok(Walked::new(py, &p.oids, &p.names, &p.missing))
    }
}
