//! What one native job may use, as Python states it: settings.py's `Limits`, read by its
//! attributes. The three travel together through every job that reads objects; by name they
//! cannot be passed in another job's order.

use pyo3::prelude::*;

#[derive(FromPyObject, Clone, Copy)]
pub(crate) struct Limits {
    /// How many threads the job runs on.
    pub threads: usize,
    /// Bytes of inflated objects the job may keep for reuse (a job that keeps none does not
    /// read it).
    pub budget: u64,
    /// The most bytes one object may declare; a larger one is refused as corrupt rather than
    /// allocated.
    pub object_limit: u64,
}
