//! The walk `git rev-list --objects` makes (revision.c and list-objects.c of Git 2.47), over
//! the objects of an ObjectDb: every object reachable from the roots, each once, in Git's
//! order, with the path each tree and blob was first found at.
//!
//! Commits come first, in Git's date order: the starting commits sorted by committer date
//! (stable: equal dates keep their order), then one at a time the most recent is shown and
//! its parents not yet seen are inserted after every commit at least as recent. Then the
//! objects that are not commits: the roots that are not commits in their order (tags, each
//! with its name, peeled until a commit, tree or blob; trees and blobs with their paths),
//! then each shown commit's tree; a tree is shown before its entries, depth first, a blob
//! with its path. With `in_commit_order`, the objects not yet shown are flushed after each
//! commit instead of at the end.

use crate::error::Result;
use crate::pack::entry_header::ObjectId;
use crate::progress::Progress;
use crate::walk::commit_order::CommitOrder;
use crate::walk::odb::ObjectDb;
use crate::walk::parallel::walk_on_every_core;
use crate::walk::walker::{Pending, Root, WalkOptions, Walked, Walker, NO_NUMBER};

/// Walk from `commits` (the starting commits, in the order Git meets them: what
/// `git rev-list --no-walk=unsorted` prints for the same revisions) and `roots`.
pub fn walk(
    db: &mut ObjectDb,
    commits: &[ObjectId],
    roots: &[Root],
    opts: &WalkOptions,
    progress: &Progress,
) -> Result<Walked> {
    let parallel = opts.threads > 1 && db.packed_objects() >= opts.parallel_from;
    let workers: Vec<ObjectDb> = match parallel {
        true => (0..opts.threads)
            .map(|_| db.sibling(opts.threads))
            .collect(),
        false => Vec::new(),
    };
    let mut w = Walker::new(db, opts, progress, 1);
    let mut pending = Vec::new();
    for root in roots {
        w.prepare_root(root, &mut pending)?;
    }
    progress.start(crate::progress::PHASE_WALKING, 0);
    let mut commit_order = CommitOrder::start(&mut w, commits)?;
    if parallel {
        return walk_on_every_core(w, commit_order, pending, workers);
    }
    // The commits' order depends on commits alone: it is found first, and the trees read
    // after (interleaved with the commits when in commit order), as Git shows them.
    let mut order = Vec::new();
    while let Some(commit) = commit_order.next(&mut w)? {
        order.push(commit);
    }
    for (id, tree) in order {
        progress.check_cancelled()?;
        pending.push(Pending::Tree(tree, Vec::new()));
        w.show(id, NO_NUMBER, None);
        if opts.in_commit_order {
            w.flush(&mut pending)?;
        }
    }
    w.flush(&mut pending)?;
    let mut out = w.take_shown();
    out.edges.extend(w.take_edges());
    Ok(out)
}

/// Walking on every core pays from small repositories on (2 cores, 3 runs each, on a busy
/// machine: libgit2 0.86-0.92 s against 1.21-1.29 s on one; redis 1.03-1.47 against
/// 1.35-1.58 s); below this the threads cost more than the trees they share.
pub const PARALLEL_FROM: usize = 10_000;
