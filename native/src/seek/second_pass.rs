//! The model of `git index-pack`'s second pass (packorder/seek/ipmodel.py states what Git
//! does and what is modelled): which entries it reads, in which order, with a number of
//! threads and a delta base cache. Native because fleet triage runs it on every pack of
//! every repository, twice (the packs as they are and the planned one), and the same model
//! in Python took 0.4-0.7 s on a pack of 200,000 objects.
//!
//! Every step follows the Python model it replaced exactly (the same reads in the same
//! order, tests/seek/test_simulate.py and tests/fleet/test_fleet_prediction.py compare with Git), down
//! to the floating-point event times and the ties between threads.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

const STEP: f64 = 1.0; // time to resolve one child, besides its bytes
const PER_BYTE: f64 = 1e-4; // time per byte of the object made (inflate, apply, hash)
const LOCK: f64 = 0.1; // time a thread holds the work lock to take or finish work

/// The delta forest of a pack, as the second pass walks it.
pub struct Forest<'a> {
    /// Children of each entry, in the order Git hands them out (REF_DELTA ones first, then
    /// OFS_DELTA, each in pack order): `child[start[i]..start[i + 1]]`.
    pub child: &'a [i64],
    pub start: &'a [i64],
    /// Size of the object each entry stands for (what the cache counts).
    pub size: &'a [u64],
    /// Whole objects, in pack order: the work dispatched one by one.
    pub roots: &'a [i64],
}

/// Git's `struct base_data`: a resolved object that may still have children to hand out.
struct Base {
    obj: usize,
    parent: Option<usize>,
    data: bool,
    next: usize,
    stop: usize,
    remaining: usize, // children whose subtree is not finished
    retain: usize,
    list: List,
}

const NONE: usize = usize::MAX;

/// An insertion-ordered list of bases (an OrderedDict of the Python model): a base joins and
/// leaves the lists in the order of events, not of its creation. Linked through `links`,
/// one (previous, next) pair a base, shared by both lists (a base is in one at a time).
struct Ordered {
    head: usize,
    tail: usize,
}

impl Ordered {
    const EMPTY: Ordered = Ordered {
        head: NONE,
        tail: NONE,
    };

    fn push(&mut self, links: &mut [(usize, usize)], id: usize) {
        links[id] = (self.tail, NONE);
        if self.tail == NONE {
            self.head = id;
        } else {
            links[self.tail].1 = id;
        }
        self.tail = id;
    }

    /// Remove `id`, which is in this list.
    fn remove(&mut self, links: &mut [(usize, usize)], id: usize) {
        let (prev, next) = links[id];
        if prev == NONE {
            self.head = next;
        } else {
            links[prev].1 = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            links[next].0 = prev;
        }
        links[id] = (NONE, NONE);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum List {
    Neither,
    Work,
    Done,
}

struct SecondPass<'a> {
    forest: Forest<'a>,
    limit: u64,
    /// Git 2.55 and later keep a queued child's data, for the cache to prune; Git before
    /// frees it at once, and its first child reads it again.
    keeps_children: bool,
    used: u64,
    bases: Vec<Base>,
    links: Vec<(usize, usize)>, // each base's neighbours in its list
    work: Ordered,              // tail = top of the stack
    done: Ordered,
    reads: Vec<i64>,
    dispatched: usize,
}

impl<'a> SecondPass<'a> {
    fn new_base(&mut self, obj: usize, parent: Option<usize>) -> usize {
        let (first, stop) = (
            self.forest.start[obj] as usize,
            self.forest.start[obj + 1] as usize,
        );
        self.bases.push(Base {
            obj,
            parent,
            data: false,
            next: first,
            stop,
            remaining: stop - first,
            retain: 0,
            list: List::Neither,
        });
        self.links.push((NONE, NONE));
        self.bases.len() - 1
    }

    fn size(&self, b: usize) -> u64 {
        self.forest.size[self.bases[b].obj]
    }

    fn free(&mut self, b: usize) {
        if self.bases[b].data {
            self.bases[b].data = false;
            self.used -= self.size(b);
        }
    }

    fn prune(&mut self, retain: Option<usize>) {
        if self.used <= self.limit {
            return;
        }
        // Oldest first, the done list before the work stack; pruning moves no base.
        for head in [self.done.head, self.work.head] {
            let mut b = head;
            while b != NONE {
                let base = &self.bases[b];
                if Some(b) != retain && base.retain == 0 && base.data {
                    self.free(b);
                    if self.used <= self.limit {
                        return;
                    }
                }
                b = self.links[b].1;
            }
        }
    }

    fn join(&mut self, b: usize, list: List) {
        match list {
            List::Work => self.work.push(&mut self.links, b),
            List::Done => self.done.push(&mut self.links, b),
            List::Neither => {}
        }
        self.bases[b].list = list;
    }

    fn leave(&mut self, b: usize) {
        match self.bases[b].list {
            List::Work => self.work.remove(&mut self.links, b),
            List::Done => self.done.remove(&mut self.links, b),
            List::Neither => {}
        }
        self.bases[b].list = List::Neither;
    }

    /// Make present the data of base `b`'s object: Git's get_base_data.
    fn read(&mut self, b: usize) {
        self.reads.push(self.bases[b].obj as i64);
        self.bases[b].data = true;
        self.used += self.size(b);
        self.prune(Some(b));
    }

    fn load(&mut self, b: usize) {
        if self.bases[b].data {
            return;
        }
        let mut chain = Vec::new();
        let mut c = b;
        while let (Some(parent), false) = (self.bases[c].parent, self.bases[c].data) {
            chain.push(c);
            c = parent;
        }
        if chain.is_empty() {
            self.read(c);
        }
        for &c in chain.iter().rev() {
            let parent = self.bases[c].parent.expect("a chained base has a parent");
            self.load(parent);
            self.read(c);
        }
    }

    /// Under the lock: the next object to resolve and its base, or None when done.
    fn take(&mut self) -> Option<(usize, Option<usize>)> {
        let parent = self.work.tail;
        if parent == NONE {
            if self.dispatched >= self.forest.roots.len() {
                return None;
            }
            self.dispatched += 1;
            return Some((self.forest.roots[self.dispatched - 1] as usize, None));
        }
        let p = &mut self.bases[parent];
        let obj = self.forest.child[p.next] as usize;
        p.next += 1;
        if p.next >= p.stop {
            self.leave(parent);
            self.join(parent, List::Done);
        }
        self.load(parent);
        self.bases[parent].retain += 1;
        Some((obj, Some(parent)))
    }

    /// Outside the lock: read the entry (a root only if it has children).
    fn resolve(&mut self, obj: usize, parent: Option<usize>) -> usize {
        let child = self.new_base(obj, parent);
        let remaining = self.bases[child].remaining;
        if parent.is_some() || remaining > 0 {
            self.reads.push(obj as i64);
            self.bases[child].data = remaining > 0;
        }
        child
    }

    /// Under the lock: queue a child that has children, or free what it completes.
    fn finish(&mut self, child: usize, parent: Option<usize>) {
        if let Some(p) = parent {
            self.bases[p].retain -= 1;
        }
        if self.bases[child].data {
            self.join(child, List::Work);
            self.used += self.size(child);
            self.prune(None);
            if !self.keeps_children {
                self.free(child);
            }
            return;
        }
        let mut p = parent;
        while let Some(b) = p {
            self.bases[b].remaining -= 1;
            if self.bases[b].remaining > 0 {
                break;
            }
            self.free(b);
            self.leave(b);
            p = self.bases[b].parent;
        }
    }
}

/// A thread's next event: at `time`, take work (pending None) or finish the pending work.
struct Event {
    time: f64,
    thread: usize,
    pending: Option<(usize, Option<usize>)>,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    // Reversed, so that the max-heap gives the earliest event, the lower thread on a tie (a
    // thread has one event at a time, so that decides).
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.thread.cmp(&self.thread))
    }
}

/// Pack positions of the entries the second pass reads, in order, with `threads` threads
/// and a cache of `cache_limit` bytes a thread, as Git before 2.55 reads them or, with
/// `keeps_children`, as Git 2.55 and later do. The forest must be well formed (indexes in
/// range, every child listed once): the caller builds it from a parsed pack.
pub fn index_pack_reads(
    forest: Forest<'_>,
    cache_limit: u64,
    threads: usize,
    keeps_children: bool,
) -> Vec<i64> {
    let mut work = SecondPass {
        forest,
        limit: cache_limit.saturating_mul(threads as u64),
        keeps_children,
        used: 0,
        bases: Vec::new(),
        links: Vec::new(),
        work: Ordered::EMPTY,
        done: Ordered::EMPTY,
        reads: Vec::new(),
        dispatched: 0,
    };
    let mut events: BinaryHeap<Event> = (0..threads)
        .map(|thread| Event {
            time: 0.0,
            thread,
            pending: None,
        })
        .collect();
    let mut lock_free = 0.0f64;
    while let Some(Event {
        time,
        thread,
        pending,
    }) = events.pop()
    {
        let now = time.max(lock_free);
        lock_free = now + LOCK;
        match pending {
            None => {
                let Some((obj, parent)) = work.take() else {
                    continue; // nothing on the stack and nothing left to dispatch: the thread ends
                };
                let child = work.resolve(obj, parent);
                let size = work.forest.size[obj] as f64;
                events.push(Event {
                    time: lock_free + STEP + PER_BYTE * size,
                    thread,
                    pending: Some((child, parent)),
                });
            }
            Some((child, parent)) => {
                work.finish(child, parent);
                events.push(Event {
                    time: lock_free,
                    thread,
                    pending: None,
                });
            }
        }
    }
    work.reads
}
