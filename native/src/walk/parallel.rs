//! The walk on every core. Its objects are the trees, blobs and tags waiting to be walked
//! (the roots' first, then each commit's tree), cut into runs of consecutive items; each
//! thread walks runs, in increasing order, with a seen set of its own, and the runs'
//! objects are joined in order, each kept where it was first shown.
//!
//! Why that is Git's order: a walk shows each object at its first occurrence in the
//! depth-first expansion of the items, in order, with nothing passed over. Passing over a
//! tree seen before changes nothing else, since what it leads to was shown with it. So a
//! run walked on its own shows, of the objects no earlier run shows, the same ones in the
//! same order as the whole walk; and a thread that keeps its seen set from its earlier runs
//! only passes over more objects that an earlier run shows. Joining the runs in order and
//! dropping what an earlier run showed gives the walk's sequence exactly, whatever thread
//! walked which run. The cost is the trees two runs both meet (a run starts with no tree
//! seen that its thread did not walk): about one checkout's trees a run.
//!
//! The commits are found on the calling thread while the first runs are walked.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::bitmap::graph::Rows;
use crate::error::{PackError, Result};
use crate::pack::entry_header::ObjectId;
use crate::walk::commit_order::CommitOrder;
use crate::walk::id_set::{IdSet, Marks};
use crate::walk::odb::ObjectDb;
use crate::walk::walker::{Pending, Walked, Walker, NO_NUMBER};

/// Items a run holds: large enough that what two runs both read is small beside a run
/// (git/git: one checkout is ~400 trees, a run ~30,000), small enough to share the work
/// evenly at the end.
pub const RUN_ITEMS: usize = 2048;

/// A run walked: what it showed, and after each of its items how much it had shown.
struct Run {
    shown: Walked,
    ends: Vec<usize>,
}

#[derive(Default)]
struct State {
    items: Vec<Pending>,
    /// Every item is known (the commit walk has ended).
    complete: bool,
    /// Runs handed out so far.
    taken: usize,
    walked: BTreeMap<usize, Result<Run>>,
    /// A run or the commit walk failed: nothing more is started.
    failed: bool,
}

struct Feed {
    state: Mutex<State>,
    changed: Condvar,
    run_items: usize,
}

impl Feed {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, item: Pending) {
        let mut s = self.lock();
        s.items.push(item);
        if s.items.len().is_multiple_of(self.run_items) {
            self.changed.notify_all();
        }
    }

    fn end(&self, failed: bool) {
        let mut s = self.lock();
        s.complete = true;
        s.failed |= failed;
        self.changed.notify_all();
    }

    /// The next run to walk, once all its items are known; None when there is none.
    fn take(&self) -> Option<(usize, Vec<Pending>)> {
        let mut s = self.lock();
        loop {
            let start = s.taken * self.run_items;
            if s.failed || (s.complete && start >= s.items.len()) {
                return None;
            }
            let end = (start + self.run_items).min(s.items.len());
            if start < end && (end == start + self.run_items || s.complete) {
                s.taken += 1;
                return Some((s.taken - 1, s.items[start..end].to_vec()));
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn put(&self, k: usize, run: Result<Run>) {
        let mut s = self.lock();
        s.failed |= run.is_err();
        s.walked.insert(k, run);
        self.changed.notify_all();
    }

    /// Run `k` once walked (called after the commit walk, in order).
    fn wait_for(&self, k: usize) -> Result<Run> {
        let mut s = self.lock();
        loop {
            if let Some(run) = s.walked.remove(&k) {
                return run;
            }
            if s.failed && k >= s.taken {
                // Never to be walked: a run failed first.
                let failed = s.walked.values_mut().find(|r| r.is_err());
                return match failed.map(|r| std::mem::replace(r, Err(stopped()))) {
                    Some(Err(e)) => Err(e),
                    _ => Err(stopped()),
                };
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn runs(&self) -> usize {
        self.lock().items.len().div_ceil(self.run_items)
    }
}

fn stopped() -> PackError {
    PackError::general("the walk stopped".to_string())
}

/// The run a thread is walking: should the thread die in it (a bug), the run is put back
/// failed, so that the join does not wait for it forever.
struct Holding<'f> {
    feed: &'f Feed,
    run: Option<usize>,
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.run.take() {
            let died = PackError::general("a thread of the walk died".to_string());
            self.feed.put(k, Err(died));
        }
    }
}

/// One thread's share: runs, each walked to its end, until none is left; the graph it
/// recorded, if asked to.
fn walk_runs(feed: &Feed, mut w: Walker<'_>) -> Option<Rows> {
    let mut holding = Holding { feed, run: None };
    while let Some((k, items)) = feed.take() {
        holding.run = Some(k);
        let mut ends = Vec::with_capacity(items.len());
        let run = items
            .into_iter()
            .try_for_each(|item| {
                w.walk_pending(item)?;
                ends.push(w.shown());
                Ok(())
            })
            .map(|()| Run {
                shown: w.take_shown(),
                ends,
            });
        holding.run = None;
        feed.put(k, run);
    }
    w.take_edges()
}

/// The walk with the commits found by `w` (its roots prepared in `roots`) and the items
/// walked on `dbs.len()` threads.
pub(super) fn walk_on_every_core(
    mut w: Walker<'_>,
    mut commits: CommitOrder,
    roots: Vec<Pending>,
    mut dbs: Vec<ObjectDb>,
) -> Result<Walked> {
    let (opts, progress) = (w.opts, w.progress);
    let feed = Feed {
        state: Mutex::default(),
        changed: Condvar::new(),
        run_items: opts.run_items.max(1),
    };
    let first_tree = roots.len();
    for item in roots {
        feed.push(item);
    }
    let mut order = Vec::new();
    std::thread::scope(|scope| {
        let walkers = dbs.len();
        let mut threads = Vec::with_capacity(walkers);
        for db in &mut dbs {
            let feed = &feed;
            threads.push(
                scope.spawn(move || walk_runs(feed, Walker::new(db, opts, progress, walkers))),
            );
        }
        let found = (|| -> Result<()> {
            while let Some((id, tree)) = commits.next(&mut w)? {
                order.push(id);
                feed.push(Pending::Tree(tree, Vec::new()));
            }
            Ok(())
        })();
        feed.end(found.is_err());
        found?;
        let objects = w.objects();
        let joined = join(
            &feed,
            objects,
            w.take_shown(),
            &order,
            first_tree,
            opts.in_commit_order,
        );
        if joined.is_err() {
            feed.end(true);
        }
        let mut joined = joined?;
        joined.edges.extend(w.take_edges());
        for t in threads {
            // A thread that died failed its run, and the join above with it.
            joined.edges.extend(t.join().ok().flatten());
        }
        Ok(joined)
    })
}

/// The runs joined in order, each object kept where first shown; the commits first, or
/// each before its tree's objects (the first also before the roots') in commit order.
fn join(
    feed: &Feed,
    objects: usize,
    found: Walked,
    order: &[ObjectId],
    first_tree: usize,
    in_commit_order: bool,
) -> Result<Walked> {
    let mut out = Walked::default();
    let mut seen = Marks::new(objects);
    let mut missing = IdSet::default();
    for id in found.missing {
        if missing.insert(id) {
            out.missing.push(id);
        }
    }
    let mut commits_shown = 0;
    let mut show_commits = |out: &mut Walked, upto: usize| {
        for &id in &order[commits_shown.min(upto)..upto] {
            out.ids.push(id);
            out.numbers.push(NO_NUMBER);
            out.names.push_none();
        }
        commits_shown = commits_shown.max(upto);
    };
    if !in_commit_order {
        show_commits(&mut out, order.len());
    }
    let mut item = 0;
    for k in 0..feed.runs() {
        let run = feed.wait_for(k)?;
        let mut from = 0;
        for &end in &run.ends {
            if in_commit_order {
                // Item `first_tree + c` is commit c's tree; the roots' items follow commit 0.
                let upto = if item < first_tree {
                    1
                } else {
                    item - first_tree + 1
                };
                show_commits(&mut out, upto.min(order.len()));
            }
            for j in from..end {
                let n = run.shown.numbers[j];
                if seen.insert(n) {
                    out.ids.push(run.shown.ids[j]);
                    out.numbers.push(n);
                    out.names.push_from(&run.shown.names, j);
                }
            }
            from = end;
            item += 1;
        }
        for id in run.shown.missing {
            if missing.insert(id) {
                out.missing.push(id);
            }
        }
        out.entries_passed += run.shown.entries_passed;
    }
    show_commits(&mut out, order.len());
    Ok(out)
}
