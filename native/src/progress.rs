//! Counters a Python thread reads while native work runs with the GIL released.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::error::{PackError, Result};

pub const PHASE_IDLE: u8 = 0;
pub const PHASE_INDEXING: u8 = 1;
pub const PHASE_RESOLVING: u8 = 2;
pub const PHASE_CHECKSUM: u8 = 3;
/// (4 is the delta search's, python/delta.rs.)
pub const PHASE_WALKING: u8 = 5;

#[derive(Default)]
pub struct Progress {
    pub phase: AtomicU8,
    pub done: AtomicU64,
    pub total: AtomicU64,
    pub cancelled: AtomicBool,
}

impl Progress {
    pub fn start(&self, phase: u8, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.phase.store(phase, Ordering::Relaxed);
    }

    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    pub fn check_cancelled(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Relaxed) {
            Err(PackError::interrupted())
        } else {
            Ok(())
        }
    }

    pub fn snapshot(&self) -> (u8, u64, u64) {
        (
            self.phase.load(Ordering::Relaxed),
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}
