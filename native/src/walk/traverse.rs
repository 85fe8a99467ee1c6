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

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::error::{PackError, Result};
use crate::pack::delta_chain::Object;
use crate::pack::entry::{ObjectId, OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE};
use crate::pack::hash::hex;
use crate::progress::Progress;
use crate::walk::copied::WalkedTrees;
use crate::walk::id_set::IdSet;
use crate::walk::objects::{parse_commit, parse_tag, MODE_DIR, MODE_GITLINK};
use crate::walk::odb::ObjectDb;
use crate::walk::prefetch::{read_ahead, Prefetch};
use crate::walk::same_path::{child_path, PathKey, PathTrees, ROOT_PATH};
use crate::walk::tree::{read_tree, TreeCursor};
use crate::write::revlist::name_hash;

/// A root that is not (necessarily) a commit: a ref's object, or an index entry with its path.
pub struct Root {
    pub id: ObjectId,
    pub path: Option<Vec<u8>>,
    /// Its type when known without reading it (an index names blobs and trees), else 0.
    pub kind: u8,
}

pub struct WalkOptions {
    pub in_commit_order: bool,
    /// Objects that cannot be read are reported (`missing`) instead of failing the walk, as
    /// `--missing=print` does in a partial clone.
    pub missing_ok: bool,
    /// Commits whose parents are not followed (a shallow clone's boundary), sorted.
    pub shallow: Vec<ObjectId>,
    /// With two or more, trees are read ahead on a second core (prefetch.rs) when the
    /// packs hold at least `read_ahead_from` objects.
    pub threads: usize,
    pub read_ahead_from: usize,
}

#[derive(Default)]
pub struct Walked {
    pub ids: Vec<ObjectId>,
    pub name_hashes: Vec<u32>,
    pub missing: Vec<ObjectId>,
    /// Tree entries passed over unread, as copies of entries of a tree already walked.
    pub entries_passed: u64,
}

/// A commit waiting in the date-ordered list: its id, tree and parents.
type Queued = (ObjectId, ObjectId, Vec<ObjectId>);

enum Pending {
    Tag(ObjectId, Vec<u8>),
    Tree(ObjectId, Vec<u8>),
    Blob(ObjectId, Vec<u8>),
}

struct Walker<'a> {
    db: &'a mut ObjectDb,
    opts: &'a WalkOptions,
    progress: &'a Progress,
    out: Walked,
    seen: IdSet,
    missing: IdSet,
    walked: WalkedTrees,
    paths: PathTrees,
    /// Tree entries passed over as copies of a walked base's or of the last tree at their path.
    skipped: u64,
    /// Trees read ahead by the other core, and how many trees were entered (its numbering).
    prefetch: Option<&'a Prefetch>,
    trees_entered: u64,
}

/// A tree being walked, and the length of its path (with the '/' after it) in the path buffer.
struct Frame {
    tree: TreeCursor,
    base_len: usize,
}

impl Walker<'_> {
    fn show(&mut self, id: ObjectId, name: Option<&[u8]>) {
        // rev-list prints a name up to its first newline, and the hash is of what it printed.
        let hash = name.map_or(0, |n| {
            name_hash(n.split(|&c| c == b'\n').next().unwrap_or(n))
        });
        self.out.ids.push(id);
        self.out.name_hashes.push(hash);
    }

    fn lost(&mut self, id: ObjectId, what: &str) -> Result<()> {
        if self.opts.missing_ok {
            if self.missing.insert(id) {
                self.out.missing.push(id);
            }
            Ok(())
        } else {
            Err(PackError::general(format!("missing {what} {}", hex(&id))))
        }
    }

    /// The object `id` if the repository has it; None if missing (and that is allowed).
    fn read(&mut self, id: &ObjectId, what: &str) -> Result<Option<(u8, Object)>> {
        match self.db.find(id) {
            Some(at) => Ok(Some(self.db.read(at)?)),
            None => {
                self.lost(*id, what)?;
                Ok(None)
            }
        }
    }

    fn read_as(&mut self, id: &ObjectId, kind: u8, what: &str) -> Result<Option<Object>> {
        match self.read(id, what)? {
            None => Ok(None),
            Some((k, data)) if k == kind => Ok(Some(data)),
            Some(_) => Err(PackError::general(format!(
                "object {} is not a {what}",
                hex(id)
            ))),
        }
    }

    fn blob(&mut self, id: ObjectId, path: &[u8]) -> Result<()> {
        if !self.seen.insert(id) {
            return Ok(());
        }
        if self.db.find(&id).is_some() {
            self.show(id, Some(path));
            Ok(())
        } else {
            self.lost(id, "blob")
        }
    }

    /// process_tree: `path` is the tree's own path ("" at a root).
    fn tree(&mut self, id: ObjectId, path: &mut Vec<u8>) -> Result<()> {
        let start = path.len();
        let mut stack: Vec<Frame> = Vec::new();
        if !self.enter(id, path, ROOT_PATH, &mut stack)? {
            return Ok(());
        }
        while let Some(top) = stack.last_mut() {
            path.truncate(top.base_len);
            let Some(entry) = top.tree.next(&mut self.skipped)? else {
                let done = stack.pop().expect("a frame").tree;
                done.finish(&mut self.walked, Some(&mut self.paths));
                continue;
            };
            let name = top.tree.name(&entry);
            path.extend_from_slice(name);
            if entry.mode & 0o170000 == MODE_DIR {
                let key = child_path(top.tree.path().unwrap_or(ROOT_PATH), name);
                self.enter(entry.id, path, key, &mut stack)?;
            } else if entry.mode & 0o170000 != MODE_GITLINK {
                let p = std::mem::take(path);
                self.blob(entry.id, &p)?;
                *path = p;
            }
        }
        path.truncate(start);
        Ok(())
    }

    /// Show the tree `id` found at `path` and push it to be walked, unless seen or missing.
    fn enter(
        &mut self,
        id: ObjectId,
        path: &mut Vec<u8>,
        key: PathKey,
        stack: &mut Vec<Frame>,
    ) -> Result<bool> {
        if self.seen.contains(&id) {
            return Ok(false);
        }
        self.seen.insert(id);
        // One tree of a large repository holds most of its history: stop within it.
        self.progress.check_cancelled()?;
        let handed = self.prefetch.and_then(|p| p.take(self.trees_entered, &id));
        let read = match handed {
            Some(tree) => tree,
            None => match read_tree(self.db, &id)? {
                Some(tree) => tree,
                None => {
                    self.lost(id, "tree")?;
                    return Ok(false);
                }
            },
        };
        self.trees_entered += 1;
        self.show(id, Some(path));
        if !path.is_empty() {
            path.push(b'/');
        }
        stack.push(Frame {
            tree: TreeCursor::new(id, read, &self.walked).at_path(key, &mut self.paths),
            base_len: path.len(),
        });
        self.progress.add(1);
        Ok(true)
    }

    fn flush(&mut self, pending: &mut Vec<Pending>) -> Result<()> {
        let mut path = Vec::new();
        for p in pending.drain(..) {
            self.progress.check_cancelled()?;
            match p {
                Pending::Tag(id, name) => {
                    if self.seen.insert(id) {
                        self.show(id, Some(&name));
                    }
                }
                Pending::Tree(id, p) => {
                    path = p;
                    self.tree(id, &mut path)?;
                }
                Pending::Blob(id, p) => self.blob(id, &p)?,
            }
        }
        drop(path);
        Ok(())
    }

    /// handle_commit for a root: tags peeled (each one pending, with its name), a tree or
    /// blob pending with the root's path (none once peeled from a tag); commits are the
    /// commit walk's.
    fn prepare_root(&mut self, root: &Root, pending: &mut Vec<Pending>) -> Result<()> {
        let mut id = root.id;
        let mut path = root.path.clone();
        let mut kind = root.kind;
        loop {
            let tag = if kind == 0 || kind == OBJ_TAG {
                // Its type is known only once read (and a tag is read for what it names).
                let Some((k, data)) = self.read(&id, "object")? else {
                    return Ok(());
                };
                kind = k;
                (k == OBJ_TAG).then(|| parse_tag(&id, &data)).transpose()?
            } else {
                None
            };
            match (kind, tag) {
                (OBJ_TAG, Some(tag)) => {
                    pending.push(Pending::Tag(id, tag.name));
                    (id, kind, path) = (tag.object, 0, None);
                }
                (OBJ_TREE, _) => {
                    pending.push(Pending::Tree(id, path.unwrap_or_default()));
                    return Ok(());
                }
                (OBJ_BLOB, _) => {
                    pending.push(Pending::Blob(id, path.unwrap_or_default()));
                    return Ok(());
                }
                _ => return Ok(()),
            }
        }
    }
}

/// Walk from `commits` (the starting commits, in the order Git meets them: what
/// `git rev-list --no-walk=unsorted` prints for the same revisions) and `roots`.
pub fn walk(
    db: &mut ObjectDb,
    commits: &[ObjectId],
    roots: &[Root],
    opts: &WalkOptions,
    progress: &Progress,
) -> Result<Walked> {
    let mut w = Walker {
        db,
        opts,
        progress,
        out: Walked::default(),
        seen: IdSet::default(),
        missing: IdSet::default(),
        walked: WalkedTrees::default(),
        paths: PathTrees::default(),
        skipped: 0,
        prefetch: None,
        trees_entered: 0,
    };
    let mut pending = Vec::new();
    for root in roots {
        w.prepare_root(root, &mut pending)?;
    }
    progress.start(crate::progress::PHASE_WALKING, 0);
    // The commits' order depends on commits alone: it is found first, and the trees read
    // after (interleaved with the commits when in commit order), as Git shows them.
    let order = commit_order(&mut w, commits)?;
    let trees: Vec<ObjectId> = pending
        .iter()
        .filter_map(|p| match p {
            Pending::Tree(id, _) => Some(*id),
            _ => None,
        })
        .chain(order.iter().map(|&(_, tree)| tree))
        .collect();
    let prefetch = Prefetch::new(PREFETCH_BUDGET);
    let helper_db =
        (opts.threads > 1 && w.db.packed_objects() >= READ_AHEAD_FROM).then(|| w.db.sibling());
    std::thread::scope(|scope| {
        if let Some(helper_db) = helper_db {
            let (prefetch, trees) = (&prefetch, &trees);
            scope.spawn(move || read_ahead(helper_db, trees, prefetch));
            w.prefetch = Some(prefetch);
        }
        let shown = (|| -> Result<()> {
            for &(id, tree) in &order {
                progress.check_cancelled()?;
                pending.push(Pending::Tree(tree, Vec::new()));
                w.show(id, None);
                if opts.in_commit_order {
                    w.flush(&mut pending)?;
                }
            }
            w.flush(&mut pending)
        })();
        prefetch.stop();
        shown
    })?;
    w.out.entries_passed = w.skipped;
    Ok(w.out)
}

/// Trees read ahead and not yet taken, at most (the other core's lead).
const PREFETCH_BUDGET: usize = 32 << 20;

/// Reading ahead pays on large repositories only (scripts/bench_walk.py, 5 runs, against
/// the walk on one core): git/git (419,403 objects) 0.87 of rev-list's time instead of
/// 0.95; libgit2 (134,603) 1.13 instead of 1.07, redis (94,856) 1.12 instead of 1.02.
pub const READ_AHEAD_FROM: usize = 250_000;

/// The commits in the order Git shows them, each with its tree: the starting ones sorted by
/// date (a stable sort, newest first), then the newest taken each time and its parents not
/// seen yet inserted after every commit at least as recent.
fn commit_order(w: &mut Walker<'_>, commits: &[ObjectId]) -> Result<Vec<(ObjectId, ObjectId)>> {
    let mut queue: BTreeMap<(Reverse<u64>, u64), Queued> = BTreeMap::new();
    let mut seen_commits = IdSet::default();
    let mut seq = 0u64;
    let mut start = Vec::new();
    for id in commits {
        if seen_commits.insert(*id) {
            let Some(data) = w.read_as(id, OBJ_COMMIT, "commit")? else {
                continue;
            };
            let c = parse_commit(id, &data)?;
            start.push((c.date, *id, c.tree, c.parents));
        }
    }
    start.sort_by_key(|c| Reverse(c.0));
    for (date, id, tree, parents) in start {
        queue.insert((Reverse(date), seq), (id, tree, parents));
        seq += 1;
    }
    let mut order = Vec::new();
    while let Some((_, (id, tree, parents))) = queue.pop_first() {
        w.progress.check_cancelled()?;
        order.push((id, tree));
        if w.opts.shallow.binary_search(&id).is_ok() {
            continue;
        }
        for p in parents {
            if !seen_commits.insert(p) {
                continue;
            }
            let Some(data) = w.read_as(&p, OBJ_COMMIT, "commit")? else {
                continue;
            };
            let c = parse_commit(&p, &data)?;
            queue.insert((Reverse(c.date), seq), (p, c.tree, c.parents));
            seq += 1;
        }
    }
    Ok(order)
}
