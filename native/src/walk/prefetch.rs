//! The walk's second core: a thread that walks the same trees ahead of the walk and hands
//! them over rebuilt. Trees are entered in an order that depends on trees alone (which
//! were seen, and which entries are directories), so a walk of the trees only, with no
//! blobs, paths or output, enters the same trees in the same order: the n-th tree it reads
//! is the walk's n-th. It does about half the work (rebuilding trees from their deltas, and
//! the directory entries), and the walk takes each tree from it instead of rebuilding it.
//! What it hands over is only a cache: a tree it has not reached yet, or one that is not the
//! walk's next (which would be a bug), the walk reads itself.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use crate::error::Result;
use crate::pack::entry::ObjectId;
use crate::walk::copied::WalkedTrees;
use crate::walk::id_set::IdSet;
use crate::walk::objects::MODE_DIR;
use crate::walk::odb::ObjectDb;
use crate::walk::tree::{read_tree, TreeCursor, TreeRead};

struct State {
    /// (number, id, tree), in the order read.
    ready: VecDeque<(u64, ObjectId, TreeRead)>,
    bytes: usize,
    /// The number of the tree the walk wants next: anything below it is of no more use.
    wanted: u64,
    stop: bool,
    finished: bool,
    /// The walk sleeps until the tree it wants arrives.
    waiting: bool,
}

/// About 20 microseconds of spinning.
const SPINS: usize = 2000;

pub struct Prefetch {
    state: Mutex<State>,
    changed: Condvar,
    budget: usize,
}

impl Prefetch {
    pub fn new(budget: usize) -> Self {
        Prefetch {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                bytes: 0,
                wanted: 0,
                stop: false,
                finished: false,
                waiting: false,
            }),
            changed: Condvar::new(),
            budget,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The walk's tree number `n`, `id`, once read ahead; None if the reading ahead ended
    /// first (then the walk reads it itself). The walk waits for it: the other core is
    /// reading it already, and the walk's own cache no longer holds the trees its delta
    /// would be rebuilt from.
    pub fn take(&self, n: u64, id: &ObjectId) -> Option<TreeRead> {
        let mut st = self.lock();
        st.wanted = n;
        loop {
            while st.ready.front().is_some_and(|(k, _, _)| *k < n) {
                let (_, _, t) = st.ready.pop_front().expect("a tree");
                st.bytes -= t.data.len();
            }
            match st.ready.front() {
                Some((k, tid, _)) if *k == n && tid == id => {
                    let (_, _, t) = st.ready.pop_front().expect("a tree");
                    st.bytes -= t.data.len();
                    st.wanted = n + 1;
                    self.changed.notify_all();
                    return Some(t);
                }
                Some((k, _, _)) if *k == n => {
                    // Not the tree the walk enters: stop reading ahead rather than guess.
                    st.stop = true;
                    st.ready.clear();
                    st.bytes = 0;
                    self.changed.notify_all();
                    return None;
                }
                _ if st.stop || st.finished => return None,
                _ => {
                    // The other core is on it: a short spin first, since sleeping and being
                    // woken for each tree costs more than most trees take to read.
                    drop(st);
                    for _ in 0..SPINS {
                        std::hint::spin_loop();
                    }
                    st = self.lock();
                    if st.ready.front().is_some_and(|(k, _, _)| *k >= n) || st.stop || st.finished {
                        continue;
                    }
                    st.waiting = true;
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                    st.waiting = false;
                }
            }
        }
    }

    /// The reading ahead has handed over everything it will (or failed).
    fn finish(&self) {
        self.lock().finished = true;
        self.changed.notify_all();
    }

    /// Hand over tree number `n`; false once the walk wants no more.
    fn give(&self, n: u64, id: ObjectId, tree: TreeRead) -> bool {
        let mut st = self.lock();
        while !st.stop && st.bytes > self.budget && n >= st.wanted {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.stop {
            return false;
        }
        if n >= st.wanted {
            st.bytes += tree.data.len();
            st.ready.push_back((n, id, tree));
            if st.waiting {
                self.changed.notify_all();
            }
        }
        true
    }

    pub fn stop(&self) {
        let mut st = self.lock();
        st.stop = true;
        st.ready.clear();
        st.bytes = 0;
        self.changed.notify_all();
    }

    fn stopped(&self) -> bool {
        self.lock().stop
    }
}

/// Read the trees `roots` (in the walk's order) and all they contain, depth first, as the
/// walk will, handing each over to `prefetch`. An error ends it quietly: the walk meets the
/// same tree and reports it.
pub fn read_ahead(mut db: ObjectDb, roots: &[ObjectId], prefetch: &Prefetch) {
    // However this ends (a panic included), the walk must stop waiting for it.
    struct Finish<'a>(&'a Prefetch);
    impl Drop for Finish<'_> {
        fn drop(&mut self) {
            self.0.finish();
        }
    }
    let _finish = Finish(prefetch);
    let mut seen = IdSet::default();
    let mut walked = WalkedTrees::default();
    let mut n = 0u64;
    let mut enter = |id: ObjectId,
                     stack: &mut Vec<TreeCursor>,
                     db: &mut ObjectDb,
                     walked: &WalkedTrees|
     -> Result<bool> {
        if !seen.insert(id) {
            return Ok(false);
        }
        let Some(tree) = read_tree(db, &id)? else {
            return Ok(false);
        };
        let handed = TreeRead {
            link: tree.link,
            data: tree.data.clone(),
            delta: tree.delta.clone(),
        };
        stack.push(TreeCursor::new(id, tree, walked));
        let go_on = prefetch.give(n, id, handed);
        n += 1;
        Ok(go_on)
    };
    let mut stack: Vec<TreeCursor> = Vec::new();
    let mut passed = 0;
    let outcome = (|| -> Result<()> {
        for &root in roots {
            if !enter(root, &mut stack, &mut db, &walked)? && prefetch.stopped() {
                return Ok(());
            }
            while let Some(top) = stack.last_mut() {
                let Some(entry) = top.next(&mut passed)? else {
                    stack.pop().expect("a cursor").finish(&mut walked, None);
                    continue;
                };
                if entry.mode & 0o170000 == MODE_DIR
                    && !enter(entry.id, &mut stack, &mut db, &walked)?
                    && prefetch.stopped()
                {
                    return Ok(());
                }
            }
        }
        Ok(())
    })();
    drop(outcome);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha1(n: u8) -> ObjectId {
        ObjectId::of(crate::pack::object_id::HashAlgo::Sha1, &[n; 20])
    }
    use crate::pack::delta_chain::Object;

    fn tree(byte: u8) -> TreeRead {
        TreeRead {
            link: None,
            data: Object::new(vec![byte; 10]),
            delta: None,
        }
    }

    #[test]
    fn trees_are_handed_over_in_order_and_stale_ones_dropped() {
        let p = Prefetch::new(1 << 20);
        assert!(p.give(0, sha1(0), tree(0)));
        assert!(p.give(1, sha1(1), tree(1)));
        assert!(p.give(2, sha1(2), tree(2)));
        // The walk read tree 0 itself (say): tree 1 is next, and tree 0 is dropped.
        let got = p.take(1, &sha1(1)).expect("tree 1");
        assert_eq!(got.data[0], 1);
        // A tree that is not the walk's next stops the reading ahead.
        assert!(p.take(2, &sha1(9)).is_none());
        assert!(!p.give(3, sha1(3), tree(3)));
    }

    #[test]
    fn the_walk_waits_for_the_tree_it_wants_and_stops_waiting_when_reading_ends() {
        let p = Prefetch::new(1 << 20);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                p.give(0, sha1(0), tree(7));
                p.finish();
            });
            assert_eq!(p.take(0, &sha1(0)).expect("tree 0").data[0], 7);
            assert!(p.take(1, &sha1(1)).is_none());
        });
    }
}
