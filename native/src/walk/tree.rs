//! A tree as the walk reads it: read (with the delta it was rebuilt from), then its entries
//! one after another, those its delta copied whole from a tree already walked passed over
//! (copied.rs), and its entries kept for the trees that delta against it.

use std::ops::Range;
use std::sync::Arc;

use crate::error::{PackError, Result};
use crate::pack::delta::Copied;
use crate::pack::delta_chain::Object;
use crate::pack::entry_header::{ObjectId, OBJ_TREE};
use crate::pack::hash::hex;
use crate::walk::copied::{Copies, WalkedTrees};
use crate::walk::numbers::MISSING;
use crate::walk::objects::{tree_entry_at, TreeEntries};
use crate::walk::odb::{EntryLink, Found, ObjectDb};
use crate::walk::same_path::{PathKey, PathTrees, SamePath};

/// A tree as the walk needs it: where it is stored, its data, and the delta (base and
/// copies) it was rebuilt from, if it was.
pub struct TreeRead {
    pub link: Option<EntryLink>,
    pub data: Object,
    pub delta: Option<(EntryLink, Vec<Copied>)>,
}

/// The tree `id`, found `at`.
pub fn read_tree(db: &mut ObjectDb, id: &ObjectId, at: Found) -> Result<TreeRead> {
    let mut read = db.read_with_delta(at)?;
    if read.kind != OBJ_TREE {
        return Err(PackError::general(format!(
            "object {} is not a tree",
            hex(id)
        )));
    }
    let link = match at {
        Found::Packed(p, offset) => Some((p, offset)),
        Found::Loose(_) => None,
    };
    if read.delta.is_none() {
        // Served from the cache: its delta, if its base was walked, still saves looking up
        // what the base named.
        if let Some(link) = link {
            read.delta = db.delta_of(link)?;
        }
    }
    Ok(TreeRead {
        link,
        data: read.data,
        delta: read.delta,
    })
}

/// An entry a cursor gives: its mode, the object it names, and where its name is.
pub struct Entry {
    pub mode: u32,
    pub id: ObjectId,
    pub name: Range<usize>,
}

pub struct TreeCursor {
    id: ObjectId,
    data: Object,
    at: usize,
    /// Where the tree is stored, if in a pack, and its entries met so far.
    link: Option<EntryLink>,
    entries: TreeEntries,
    /// When the tree was rebuilt from a delta whose base was walked to its end.
    copied: Option<Copies>,
    /// Its path, and the tree walked last there, when the walk keeps them.
    path: Option<PathKey>,
    same_path: Option<SamePath>,
}

impl TreeCursor {
    pub fn new(id: ObjectId, tree: TreeRead, walked: &WalkedTrees) -> Self {
        let copied = tree
            .delta
            .and_then(|(base, copies)| walked.copies_from(base, copies));
        // An entry takes at least 24 bytes ("1 a\0" and an id).
        let entries = TreeEntries::with_capacity(tree.data.len() / 24 + 1);
        TreeCursor {
            id,
            data: tree.data,
            at: 0,
            link: tree.link,
            entries,
            copied,
            path: None,
            same_path: None,
        }
    }

    /// Read beside the tree walked last at `path`, and kept as the last there when done.
    /// Only the walk itself does: a reader ahead of the walk that looked up directories only
    /// was tried, and spent more comparing entries than it saved.
    pub fn at_path(mut self, path: PathKey, paths: &mut PathTrees) -> Self {
        self.path = Some(path);
        self.same_path = paths.at(path);
        self
    }

    /// The next entry that has to be looked at, or None at the end; `passed` counts the
    /// entries passed over before it.
    pub fn next(&mut self, passed: &mut u64) -> Result<Option<Entry>> {
        loop {
            let from = self.at;
            // Copies first: they pass entries without reading their bytes.
            if let Some(c) = &mut self.copied {
                let copied = c.pass(&mut self.at, &mut self.entries);
                *passed += copied;
                if let Some(s) = self.same_path.as_mut().filter(|_| copied > 0) {
                    s.seek(&self.data, self.at);
                }
            }
            if let Some(s) = &mut self.same_path {
                *passed += s.pass(&self.data, &mut self.at, &mut self.entries);
            }
            if self.at == from {
                break;
            }
        }
        let Some((entry, next)) = tree_entry_at(&self.id, &self.data, self.at)? else {
            return Ok(None);
        };
        if let Some(s) = &mut self.same_path {
            s.read(entry.name, entry.mode);
        }
        let start = entry.name.as_ptr() as usize - self.data.as_ptr() as usize;
        let found = Entry {
            mode: entry.mode,
            id: entry.id.try_into().unwrap(),
            name: start..start + entry.name.len(),
        };
        // Its number is the caller's to give (`number`): MISSING until then.
        self.entries.push(self.at as u32, MISSING);
        self.at = next;
        Ok(Some(found))
    }

    /// The id of the entry after the one `next` gave last, if it has one: what the walk may
    /// look up next (unless it is passed over).
    pub fn peek_id(&self) -> Option<&[u8]> {
        let rest = self.data.get(self.at..)?;
        let nul = memchr::memchr(0, rest)?;
        rest.get(nul + 1..nul + 1 + self.id.algo().rawsz())
    }

    /// The entry `next` gave last names object `number` (numbers.rs; GITLINK for a gitlink).
    pub fn number(&mut self, number: u32) {
        if let Some(last) = self.entries.numbers.last_mut() {
            *last = number;
        }
    }

    /// The tree's data and its entries (all of them once `next` has given None).
    pub fn read(&self) -> (&[u8], &TreeEntries) {
        (&self.data, &self.entries)
    }

    pub fn id(&self) -> &ObjectId {
        &self.id
    }

    pub fn path(&self) -> Option<PathKey> {
        self.path
    }

    pub fn name(&self, entry: &Entry) -> &[u8] {
        &self.data[entry.name.clone()]
    }

    /// The tree was walked to its end: it serves the trees that delta against it, and the
    /// next one met at its path.
    /// `numbered`: the numbers of its entries are kept too (for a walk recording the graph).
    pub fn finish(
        mut self,
        walked: &mut WalkedTrees,
        paths: Option<&mut PathTrees>,
        numbered: bool,
    ) {
        self.entries.keep(numbered);
        let entries = Arc::new(self.entries);
        if let Some(link) = self.link {
            walked.keep(link, entries.clone(), self.data.len());
        }
        if let (Some(path), Some(paths)) = (self.path, paths) {
            paths.keep(path, self.data, entries);
        }
    }
}
