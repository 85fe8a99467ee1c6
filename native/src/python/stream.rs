//! The Python face of the stream parser of `index-pack --stdin` (index/stream.rs): Python
//! reads what it asks for and feeds it in, so that a read blocked on a pipe stays in the main
//! thread, where Ctrl-C and SIGTERM reach it.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::index::{first_pass::WHOLE_LIMIT, per_thread_share, stream};
use crate::python::arrays::hash_named;
use crate::python::fsck::CheckOptions;
use crate::to_py_err;

/// index/stream.rs's `StreamCounts` (what each count is), as Python reads it.
#[pyclass(get_all, frozen, module = "packorder._native")]
pub(crate) struct StreamCounts {
    entries_read: u32,
    entries_declared: u32,
    bytes_used: u64,
    bytes_git_read: u64,
}

#[pyclass(frozen, module = "packorder._native")]
pub(crate) struct PackStream(Mutex<stream::PackStream>);

impl PackStream {
    pub(crate) fn parser(&self) -> MutexGuard<'_, stream::PackStream> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PackStream {
    /// A parser of a pack of ids of `object_format`; `header`: the 12 bytes of the pack
    /// header the caller read already, or none; `limit`: stop once more bytes than that are
    /// used (0: no limit). The first pass is made as the pack arrives, as the indexer's scan
    /// would make it with `threads` and `budget` (what it holds whole), with or without
    /// collision detection. `git_buffer`: the input buffer of the Git whose reads are
    /// followed (4096 bytes before Git 2.55, 128 KiB since).
    #[new]
    #[pyo3(signature = (header=b"".as_slice(), limit=0, object_format="sha1", detect_collisions=true, budget=96 << 20, threads=1, git_buffer=stream::BUFFER))]
    fn new(
        header: &[u8],
        limit: u64,
        object_format: &str,
        detect_collisions: bool,
        budget: u64,
        threads: usize,
        git_buffer: usize,
    ) -> PyResult<Self> {
        if !header.is_empty() && header.len() != 12 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a pack header is 12 bytes",
            ));
        }
        if git_buffer < 128 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "git_buffer holds at least a pack header and an object id",
            ));
        }
        let algo = hash_named(object_format)?;
        let whole_limit = per_thread_share(budget, threads).min(WHOLE_LIMIT);
        let parser = stream::PackStream::new(
            algo,
            header,
            limit,
            detect_collisions,
            whole_limit,
            git_buffer,
        );
        Ok(PackStream(Mutex::new(parser.map_err(to_py_err)?)))
    }

    /// Run Git's object checks on every object, as PackIndexer.set_checks.
    fn set_checks(&self, checks: CheckOptions) -> PyResult<()> {
        checks.install(&mut *self.parser())
    }

    /// How many bytes to read next (the rest of Git's read, or more within the pack), 0 once
    /// the pack is complete or the limit is passed.
    fn want(&self) -> usize {
        self.parser().want()
    }

    /// Parse the bytes of one read (at most `want()`); PackFormatError on a broken pack.
    fn feed(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let mut guard = self.parser();
        let parser = &mut *guard;
        if data.len() > parser.want() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "more bytes than were asked for",
            ));
        }
        py.detach(|| parser.feed(data)).map_err(to_py_err)
    }

    /// The input ended (a read got nothing): parse what is buffered; what the parse still
    /// wants after that, it cannot have (`want()` > 0: the pack ended early).
    fn end_of_input(&self, py: Python<'_>) -> PyResult<()> {
        let mut guard = self.parser();
        let parser = &mut *guard;
        py.detach(|| parser.end_of_input()).map_err(to_py_err)
    }

    /// Whether the parse is among the pack's entries (past its header, before its trailer).
    #[getter]
    fn in_entries(&self) -> bool {
        self.parser().in_entries()
    }

    #[getter]
    fn done(&self) -> bool {
        self.parser().done()
    }

    #[getter]
    fn over_limit(&self) -> bool {
        self.parser().over_limit()
    }

    /// How far it has come, the four counts read at once.
    fn counts(&self) -> StreamCounts {
        let stream::StreamCounts {
            entries_read,
            entries_declared,
            bytes_used,
            bytes_git_read,
        } = self.parser().counts();
        StreamCounts {
            entries_read,
            entries_declared,
            bytes_used,
            bytes_git_read,
        }
    }

    /// The bytes read and not used: once the pack is complete, those past its end.
    fn rest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.parser().rest())
    }
}
