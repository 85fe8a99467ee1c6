//! One walker: what `git rev-list --objects` does for each object waiting to be walked
//! (list-objects.c of Git 2.47): a tag shown with its name, a tree shown before its
//! entries, depth first, each blob with its path, each object once (marked by number, in a
//! bitmap), gitlinks not followed; and the roots prepared as Git's handle_commit does. The
//! order of the whole walk is traverse.rs's; the walk on every core runs one walker a thread
//! (parallel.rs).

use crate::bitmap::graph::Rows;
use crate::error::{PackError, Result};
use crate::pack::delta_chain::Object;
use crate::pack::entry_header::{ObjectId, OBJ_BLOB, OBJ_TAG, OBJ_TREE};
use crate::pack::hash::hex;
use crate::progress::Progress;
use crate::walk::copied::{WalkedTrees, WALKED_TREES_BUDGET};
use crate::walk::edges::EdgeRecorder;
use crate::walk::id_set::{IdSet, Marks};
use crate::walk::numbers::{GITLINK, MISSING};
use crate::walk::objects::{parse_tag, MODE_DIR, MODE_GITLINK};
use crate::walk::odb::ObjectDb;
use crate::walk::path_names::PathNames;
use crate::walk::same_path::{child_path, PathKey, PathTrees, PATH_TREES_BUDGET, ROOT_PATH};
use crate::walk::tree::{read_tree, TreeCursor};

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
    /// With two or more, trees are walked on that many cores (parallel.rs) when the packs
    /// hold at least `parallel_from` objects.
    pub threads: usize,
    pub parallel_from: usize,
    /// Items a thread walks at a time (parallel.rs's RUN_ITEMS but in tests).
    pub run_items: usize,
    /// Record the commit and tree graph (edges.rs), for a bitmap.
    pub record_edges: bool,
}

#[derive(Default)]
pub struct Walked {
    pub ids: Vec<ObjectId>,
    /// The hashes of the path each object was found at (path_names.rs).
    pub names: PathNames,
    /// Each shown object's number (ObjectDb::number), NO_NUMBER for a commit.
    pub numbers: Vec<u32>,
    pub missing: Vec<ObjectId>,
    /// Tree entries passed over unread, as copies of entries of a tree already walked.
    pub entries_passed: u64,
    /// The graph the walkers recorded, when asked to.
    pub edges: Vec<Rows>,
}

pub const NO_NUMBER: u32 = u32::MAX;

#[derive(Clone)]
pub enum Pending {
    Tag(ObjectId, Vec<u8>),
    Tree(ObjectId, Vec<u8>),
    Blob(ObjectId, Vec<u8>),
}

pub struct Walker<'a> {
    db: &'a mut ObjectDb,
    pub opts: &'a WalkOptions,
    pub progress: &'a Progress,
    out: Walked,
    /// The objects seen, by number (ObjectDb::number); missing ones are in `missing`.
    seen: Marks,
    missing: IdSet,
    walked: WalkedTrees,
    paths: PathTrees,
    /// Tree entries passed over as copies of a walked base's or of the last tree at their path.
    skipped: u64,
    edges: Option<EdgeRecorder>,
}

/// A tree being walked, its number, and the length of its path (with the '/' after it) in
/// the path buffer.
struct Frame {
    tree: TreeCursor,
    number: u32,
    base_len: usize,
}

impl<'a> Walker<'a> {
    /// A walker of a walk with `walkers` of them, which share its memory for trees.
    pub fn new(
        db: &'a mut ObjectDb,
        opts: &'a WalkOptions,
        progress: &'a Progress,
        walkers: usize,
    ) -> Self {
        let objects = db.objects();
        let walkers = walkers.max(1);
        Walker {
            db,
            opts,
            progress,
            out: Walked::default(),
            seen: Marks::new(objects),
            missing: IdSet::default(),
            walked: WalkedTrees::new(WALKED_TREES_BUDGET / walkers),
            paths: PathTrees::new(PATH_TREES_BUDGET / walkers as u64),
            skipped: 0,
            edges: opts.record_edges.then(EdgeRecorder::default),
        }
    }

    /// The graph recorded, if asked for (what `take_shown` leaves).
    pub fn take_edges(&mut self) -> Option<Rows> {
        self.edges.take().map(EdgeRecorder::finish)
    }

    /// Record commit `id`'s tree and parents, when recording.
    pub fn record_commit(&mut self, id: &ObjectId, tree: &ObjectId, parents: &[ObjectId]) {
        let Some(edges) = &mut self.edges else {
            return;
        };
        // A commit read has a number; its links are numbered or missing.
        let Some(n) = self.db.number(id) else {
            return;
        };
        let db = &*self.db;
        let links = std::iter::once(tree).chain(parents);
        edges.commit(n, links.map(|l| (db.number(l), *l)));
    }

    /// What was shown since the last call, and the entries passed over.
    pub fn take_shown(&mut self) -> Walked {
        let mut out = std::mem::take(&mut self.out);
        out.entries_passed = std::mem::take(&mut self.skipped);
        out
    }

    pub fn objects(&self) -> usize {
        self.db.objects()
    }

    pub fn shown(&self) -> usize {
        self.out.ids.len()
    }

    /// Show `id` (numbered `number`, or NO_NUMBER for a commit) found at `name`.
    pub fn show(&mut self, id: ObjectId, number: u32, name: Option<&[u8]>) {
        self.out.ids.push(id);
        self.out.numbers.push(number);
        self.out.names.push(name);
    }

    fn lost(&mut self, id: ObjectId, what: &str) -> Result<()> {
        if self.opts.missing_ok {
            if self.missing.insert(id) {
                self.out.missing.push(id);
            }
            Ok(())
        } else {
            Err(PackError::missing(
                &id,
                format!("missing {what} {}", hex(&id)),
            ))
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

    pub fn read_as(&mut self, id: &ObjectId, kind: u8, what: &str) -> Result<Option<Object>> {
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
        self.blob_numbered(id, self.db.number(&id), path)
    }

    /// The blob `id`, numbered `number` (None: missing), found at `path`.
    fn blob_numbered(&mut self, id: ObjectId, number: Option<u32>, path: &[u8]) -> Result<()> {
        match number {
            Some(n) if self.seen.insert(n) => self.show(id, n, Some(path)),
            Some(_) => {}
            None => self.lost(id, "blob")?,
        }
        Ok(())
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
                let done = stack.pop().expect("a frame");
                if let Some(edges) = &mut self.edges {
                    let (data, entries) = done.tree.read();
                    edges.tree(done.number, done.tree.id(), data, entries)?;
                }
                let numbered = self.edges.is_some();
                done.tree
                    .finish(&mut self.walked, Some(&mut self.paths), numbered);
                continue;
            };
            if let Some(next) = top.tree.peek_id() {
                self.db.prefetch(next);
            }
            let gitlink = entry.mode & 0o170000 == MODE_GITLINK;
            let number = match gitlink {
                true => None,
                false => self.db.number(&entry.id),
            };
            top.tree.number(match (gitlink, number) {
                (true, _) => GITLINK,
                (false, n) => n.unwrap_or(MISSING),
            });
            let name = top.tree.name(&entry);
            path.extend_from_slice(name);
            if entry.mode & 0o170000 == MODE_DIR {
                let key = child_path(top.tree.path().unwrap_or(ROOT_PATH), name);
                self.enter_numbered(entry.id, number, path, key, &mut stack)?;
            } else if !gitlink {
                let p = std::mem::take(path);
                self.blob_numbered(entry.id, number, &p)?;
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
        self.enter_numbered(id, self.db.number(&id), path, key, stack)
    }

    /// `enter` for a tree numbered `number` (None: missing).
    fn enter_numbered(
        &mut self,
        id: ObjectId,
        number: Option<u32>,
        path: &mut Vec<u8>,
        key: PathKey,
        stack: &mut Vec<Frame>,
    ) -> Result<bool> {
        let Some(n) = number else {
            self.lost(id, "tree")?;
            return Ok(false);
        };
        if !self.seen.insert(n) {
            return Ok(false);
        }
        // One tree of a large repository holds most of its history: stop within it.
        self.progress.check_cancelled()?;
        let read = read_tree(self.db, &id, self.db.place(n))?;
        self.show(id, n, Some(path));
        if !path.is_empty() {
            path.push(b'/');
        }
        stack.push(Frame {
            tree: TreeCursor::new(id, read, &self.walked).at_path(key, &mut self.paths),
            number: n,
            base_len: path.len(),
        });
        self.progress.add(1);
        Ok(true)
    }

    pub fn flush(&mut self, pending: &mut Vec<Pending>) -> Result<()> {
        for p in pending.drain(..) {
            self.walk_pending(p)?;
        }
        Ok(())
    }

    /// One object waiting to be walked, and what it leads to.
    pub fn walk_pending(&mut self, p: Pending) -> Result<()> {
        self.progress.check_cancelled()?;
        match p {
            Pending::Tag(id, name) => match self.db.number(&id) {
                Some(n) if self.seen.insert(n) => self.show(id, n, Some(&name)),
                Some(_) => {}
                None => self.lost(id, "tag")?,
            },
            Pending::Tree(id, mut path) => self.tree(id, &mut path)?,
            Pending::Blob(id, p) => self.blob(id, &p)?,
        }
        Ok(())
    }

    /// handle_commit for a root: tags peeled (each one pending, with its name), a tree or
    /// blob pending with the root's path (none once peeled from a tag); commits are the
    /// commit walk's.
    pub fn prepare_root(&mut self, root: &Root, pending: &mut Vec<Pending>) -> Result<()> {
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
