//! Which delta bases the resolver keeps in memory: each base is kept while children still
//! need it, under a budget for all of them together, with large objects admitted through a
//! gate so the budget holds however many threads run (see resolve.rs for the policy).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

pub(crate) struct Base {
    pub(crate) entry: u32,
    pub(crate) kind: u8,
    /// Size of the object (its data, once materialized).
    pub(crate) size: u64,
    pub(crate) parent: Option<Arc<Base>>,
    pub(crate) data: Mutex<Option<Arc<Vec<u8>>>>,
    pub(crate) pending: AtomicU32,
}

// A delta chain is a linked list of bases, each holding its parent. Dropping the last
// reference to a deep one would drop its parent inside its own drop, and so on: a chain
// 100,000 deep (a hostile pack) overflows the thread's stack. Unlink iteratively instead:
// each parent this drop owns alone is taken apart here, the others are left to their owners.
impl Drop for Base {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(parent) = next {
            next = match Arc::try_unwrap(parent) {
                Ok(mut alone) => alone.parent.take(),
                Err(_shared) => None,
            };
        }
    }
}

pub(crate) struct KeptBases {
    pub(crate) budget: u64,
    pub(crate) used: AtomicU64,
    pub(crate) peak: AtomicU64,
    pub(crate) evictions: AtomicU64,
    /// How many bases hold data now.
    pub(crate) count: AtomicU64,
    pub(crate) order: Mutex<VecDeque<Weak<Base>>>,
}

impl KeptBases {
    pub(crate) fn new(budget: u64) -> Self {
        KeptBases {
            budget,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            count: AtomicU64::new(0),
            order: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn keep(&self, base: &Arc<Base>, data: Arc<Vec<u8>>) {
        // What the data really holds: a reused buffer may have room beyond its length.
        let len = data.capacity() as u64;
        {
            let mut slot = base.data.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_some() {
                return;
            }
            *slot = Some(data);
        }
        let used = self.used.fetch_add(len, Ordering::Relaxed) + len;
        self.peak.fetch_max(used, Ordering::Relaxed);
        let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        order.push_back(Arc::downgrade(base));
        if used > self.budget {
            self.evict(&mut order, base);
        }
        // Released bases leave stale entries behind; sweep them once they dominate.
        if order.len() as u64 > 2 * count + 4096 {
            order.retain(|w| {
                w.upgrade()
                    .is_some_and(|b| b.data.try_lock().map(|d| d.is_some()).unwrap_or(true))
            });
        }
    }

    /// Drop the oldest kept bases until under budget, sparing `newest`.
    fn evict(&self, order: &mut VecDeque<Weak<Base>>, newest: &Arc<Base>) {
        self.evict_down_to(order, self.budget, newest);
    }

    /// Evict the oldest kept bases (never `protect`) until `need` more bytes fit in the budget,
    /// or nothing more can go.
    pub(crate) fn make_room(&self, need: u64, protect: &Arc<Base>) {
        let target = self.budget.saturating_sub(need);
        if self.used.load(Ordering::Relaxed) <= target {
            return;
        }
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        self.evict_down_to(&mut order, target, protect);
    }

    /// Drop the oldest kept bases, never `protect`, until they hold at most `target` bytes or
    /// every one has been looked at once.
    fn evict_down_to(&self, order: &mut VecDeque<Weak<Base>>, target: u64, protect: &Arc<Base>) {
        let mut tries = order.len();
        while self.used.load(Ordering::Relaxed) > target && tries > 0 {
            tries -= 1;
            let Some(weak) = order.pop_front() else { break };
            let Some(b) = weak.upgrade() else { continue };
            if Arc::ptr_eq(&b, protect) {
                order.push_back(weak);
                continue;
            }
            // A base being rebuilt right now is busy: leave it for later.
            let Ok(mut slot) = b.data.try_lock() else {
                order.push_back(weak);
                continue;
            };
            if let Some(d) = slot.take() {
                self.used.fetch_sub(d.capacity() as u64, Ordering::Relaxed);
                self.count.fetch_sub(1, Ordering::Relaxed);
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn release(&self, base: &Base) {
        let taken = base.data.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(d) = taken {
            self.used.fetch_sub(d.capacity() as u64, Ordering::Relaxed);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Admission of large objects; see resolve.rs. A holder is a thread working on a large object
/// or, through the whole of it, on the subtree below one (resolved on that thread alone).
pub(crate) struct Gate {
    pub(crate) state: Mutex<GateState>,
    pub(crate) released: Condvar,
    pub(crate) largest: AtomicU64,
}

#[derive(Default)]
pub(crate) struct GateState {
    holders: u32,
    in_flight: u64,
}

/// A large object's admission, given back when its thread is done with it (and with the
/// subtree below it).
pub(crate) struct Ticket<'a> {
    gate: &'a Gate,
    bytes: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut st = self.gate.state.lock().unwrap_or_else(|e| e.into_inner());
        st.holders -= 1;
        st.in_flight -= self.bytes;
        self.gate.released.notify_all();
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            state: Mutex::new(GateState::default()),
            released: Condvar::new(),
            largest: AtomicU64::new(0),
        }
    }

    /// Wait until `need` more bytes fit beside the kept bases and the other holders' objects
    /// within the budget plus the largest object, or until nobody else holds a large object
    /// (so one thread always proceeds). A holder never waits for anything, so a waiter always
    /// gets in eventually.
    pub(crate) fn admit<'a>(
        &'a self,
        need: u64,
        kept: &KeptBases,
        protect: &Arc<Base>,
    ) -> Ticket<'a> {
        let largest = self.largest.fetch_max(need, Ordering::Relaxed).max(need);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let held = kept.used.load(Ordering::Relaxed) + st.in_flight;
            if st.holders == 0 || held + need <= kept.budget + largest {
                st.holders += 1;
                st.in_flight += need;
                break;
            }
            st = self.released.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        drop(st);
        // Room is made only once admitted: a waiter evicting now would take the bases of the
        // holder it waits for, which would then rebuild them.
        kept.make_room(need, protect);
        Ticket {
            gate: self,
            bytes: need,
        }
    }
}
