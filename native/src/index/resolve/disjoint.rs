//! Writes into the table's columns from the resolving tasks: each index is written by the one
//! task that claimed its entry, and read only by tasks spawned after that.

use crate::pack::entry_header::{HashAlgo, ObjectId, MAX_RAWSZ};
use crate::pack::object_id::IdColumn;

/// A vector written at disjoint indices by several threads. Each index is written by the one
/// task that claimed the entry (see `claimed`), before any task that reads it is spawned.
pub(super) struct Disjoint<T> {
    ptr: *mut T,
    len: usize,
}

unsafe impl<T: Send> Send for Disjoint<T> {}
unsafe impl<T: Send> Sync for Disjoint<T> {}

impl<T: Copy> Disjoint<T> {
    pub(super) fn new(v: &mut [T]) -> Self {
        Disjoint {
            ptr: v.as_mut_ptr(),
            len: v.len(),
        }
    }

    pub(super) fn set(&self, i: usize, value: T) {
        assert!(i < self.len);
        // SAFETY: in bounds; only the claiming task writes index i, and nobody reads it before.
        unsafe { self.ptr.add(i).write(value) }
    }

    pub(super) fn get(&self, i: usize) -> T {
        assert!(i < self.len);
        // SAFETY: in bounds; index i was written before this reader was spawned.
        unsafe { self.ptr.add(i).read() }
    }

    /// `set` of `values.len()` consecutive indexes from `at`.
    fn set_run(&self, at: usize, values: &[T]) {
        assert!(at + values.len() <= self.len);
        // SAFETY: in bounds, as `set`; the run is the claiming task's alone.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.ptr.add(at), values.len()) }
    }

    /// `get` of `out.len()` consecutive indexes from `at`.
    fn get_run(&self, at: usize, out: &mut [T]) {
        assert!(at + out.len() <= self.len);
        // SAFETY: in bounds, as `get`; written before this reader was spawned.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(at), out.as_mut_ptr(), out.len()) }
    }
}

/// The table's id column, written an id at a time by the task that resolved it.
pub(super) struct DisjointIds {
    algo: HashAlgo,
    bytes: Disjoint<u8>,
}

impl DisjointIds {
    pub(super) fn new(ids: &mut IdColumn) -> Self {
        DisjointIds {
            algo: ids.algo(),
            bytes: Disjoint::new(ids.as_mut_bytes()),
        }
    }

    pub(super) fn set(&self, i: usize, id: ObjectId) {
        self.bytes.set_run(i * self.algo.rawsz(), &id);
    }

    pub(super) fn get(&self, i: usize) -> ObjectId {
        let n = self.algo.rawsz();
        let mut raw = [0u8; MAX_RAWSZ];
        self.bytes.get_run(i * n, &mut raw[..n]);
        ObjectId::of(self.algo, &raw[..n])
    }
}
