//! The order in which `git rev-list` shows commits (revision.c's date order without
//! `--topo-order`): the starting commits sorted by committer date (a stable sort, newest
//! first), then the newest taken each time and its parents not seen yet inserted after
//! every commit at least as recent. Found one commit at a time, so that the trees of the
//! first commits can be walked while the rest are still being found.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::error::Result;
use crate::pack::entry_header::{ObjectId, OBJ_COMMIT};
use crate::walk::id_set::IdSet;
use crate::walk::objects::parse_commit;
use crate::walk::walker::Walker;

/// A commit waiting in the date-ordered list: its id, tree and parents.
type Queued = (ObjectId, ObjectId, Vec<ObjectId>);

pub(super) struct CommitOrder {
    queue: BTreeMap<(Reverse<u64>, u64), Queued>,
    seen: IdSet,
    /// Insertion numbers: equal dates keep the order they were met in.
    seq: u64,
}

impl CommitOrder {
    /// Read the starting commits (a missing one is the walker's to report).
    pub(super) fn start(w: &mut Walker<'_>, commits: &[ObjectId]) -> Result<Self> {
        let mut order = CommitOrder {
            queue: BTreeMap::new(),
            seen: IdSet::default(),
            seq: 0,
        };
        let mut start = Vec::new();
        for id in commits {
            if order.seen.insert(*id) {
                let Some(data) = w.read_as(id, OBJ_COMMIT, "commit")? else {
                    continue;
                };
                let c = parse_commit(id, &data)?;
                start.push((c.date, *id, c.tree, c.parents));
            }
        }
        start.sort_by_key(|c| Reverse(c.0));
        for (date, id, tree, parents) in start {
            order
                .queue
                .insert((Reverse(date), order.seq), (id, tree, parents));
            order.seq += 1;
        }
        Ok(order)
    }

    /// The next commit Git shows, with its tree; None once all are shown.
    pub(super) fn next(&mut self, w: &mut Walker<'_>) -> Result<Option<(ObjectId, ObjectId)>> {
        let Some((_, (id, tree, parents))) = self.queue.pop_first() else {
            return Ok(None);
        };
        w.progress.check_cancelled()?;
        w.record_commit(&id, &tree, &parents);
        if w.opts.shallow.binary_search(&id).is_ok() {
            return Ok(Some((id, tree)));
        }
        for p in parents {
            if !self.seen.insert(p) {
                continue;
            }
            let Some(data) = w.read_as(&p, OBJ_COMMIT, "commit")? else {
                continue;
            };
            let c = parse_commit(&p, &data)?;
            self.queue
                .insert((Reverse(c.date), self.seq), (p, c.tree, c.parents));
            self.seq += 1;
        }
        Ok(Some((id, tree)))
    }
}
