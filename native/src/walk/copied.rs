//! Tree entries the walk passes over unread: a tree rebuilt from a delta whose base was
//! walked to its end holds, wherever the delta copied whole entries of the base, entries
//! whose objects were seen already (Git would look each up and pass it by). Exact: an entry
//! passed is a copy of the base's bytes starting at one of the base's entry starts.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use crate::pack::delta::Copied;
use crate::walk::id_set::LinkHasher;
use crate::walk::objects::TreeEntries;
use crate::walk::odb::EntryLink;

/// The entry starts of the trees walked to their end, the most recent kept (a tree's
/// versions delta against each other, and the walk meets them one commit after another).
pub struct WalkedTrees {
    entries: HashMap<EntryLink, (Arc<TreeEntries>, usize), BuildHasherDefault<LinkHasher>>,
    order: VecDeque<EntryLink>,
    held: usize,
    budget: usize,
}

/// What a walk keeps, shared by its walkers: 4 bytes an entry (its start), 8 million
/// entries; a walk that records the graph keeps each entry's number too, so half as many.
pub const WALKED_TREES_BUDGET: usize = 32 << 20;

impl WalkedTrees {
    pub fn new(budget: usize) -> Self {
        WalkedTrees {
            entries: HashMap::default(),
            order: VecDeque::new(),
            held: 0,
            budget,
        }
    }

    pub fn keep(&mut self, link: EntryLink, entries: Arc<TreeEntries>, len: usize) {
        self.held += entries.size();
        self.entries.insert(link, (entries, len));
        self.order.push_back(link);
        while self.held > self.budget {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some((s, _)) = self.entries.remove(&old) {
                self.held -= s.size();
            }
        }
    }
}

/// What a tree's delta copied from a walked base: the copies, the base's entry starts and
/// length, and the next copy to look at.
pub struct Copies {
    copies: Vec<Copied>,
    base: Arc<TreeEntries>,
    base_len: usize,
    next: usize,
}

impl Copies {
    /// Pass over the entries at `at` that the delta copied whole from entries of the base
    /// (the base was walked to its end, so what they name was seen), recording them (with
    /// the numbers of the base's entries they copy) and moving `at` past them; returns how
    /// many were passed.
    pub fn pass(&mut self, at: &mut usize, entries: &mut TreeEntries) -> u64 {
        let mut passed = 0;
        while let Some(c) = self.copies.get(self.next) {
            if c.at + c.len <= *at {
                self.next += 1;
                continue;
            }
            if c.at > *at {
                break;
            }
            // `at` lies in this copy, at `from` in the base: an entry start there?
            let from = c.from + (*at - c.at);
            let base_starts = &self.base.starts;
            let Ok(mut k) = base_starts.binary_search(&(from as u32)) else {
                break;
            };
            let copy_end = c.from + c.len;
            let end_of = |k: usize| base_starts.get(k).map_or(self.base_len, |&e| e as usize);
            while k < base_starts.len() && end_of(k + 1) <= copy_end {
                let start = (base_starts[k] as usize - from + *at) as u32;
                entries.push(start, self.base.number(k));
                k += 1;
                passed += 1;
            }
            let moved = end_of(k).min(copy_end);
            if moved == from {
                break;
            }
            *at += moved - from;
            if moved < copy_end {
                // The next entry runs past this copy: the walk parses it.
                break;
            }
        }
        passed
    }
}

impl WalkedTrees {
    /// What `copies` (of a tree's delta against `base`) let the walk pass, if `base` was
    /// walked to its end.
    pub fn copies_from(&self, base: EntryLink, copies: Vec<Copied>) -> Option<Copies> {
        let (entries, len) = self.entries.get(&base)?;
        Some(Copies {
            copies,
            base: entries.clone(),
            base_len: *len,
            next: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const RAWSZ: usize = crate::pack::object_id::HashAlgo::Sha1.rawsz();

    fn entry(name: &str, id: u8) -> Vec<u8> {
        let mut e = format!("100644 {name}\0").into_bytes();
        e.extend([id; RAWSZ]);
        e
    }

    #[test]
    fn entries_copied_whole_from_a_walked_base_are_passed() {
        let (a, b, c) = (entry("a", 1), entry("bb", 2), entry("c", 3));
        let base: Vec<u8> = [a.clone(), b.clone(), c.clone()].concat();
        let base_starts = vec![0u32, a.len() as u32, (a.len() + b.len()) as u32];
        let base_entries = TreeEntries {
            starts: base_starts,
            numbers: vec![1, 2, 3],
        };
        // The new tree: a and b copied, a new entry inserted, then c copied.
        let new = entry("b2", 9);
        let data: Vec<u8> = [a.clone(), b.clone(), new.clone(), c.clone()].concat();
        let copies = vec![
            Copied {
                at: 0,
                from: 0,
                len: a.len() + b.len(),
            },
            Copied {
                at: a.len() + b.len() + new.len(),
                from: a.len() + b.len(),
                len: c.len(),
            },
        ];
        let mut copied = Copies {
            copies,
            base: Arc::new(base_entries),
            base_len: base.len(),
            next: 0,
        };
        let (mut at, mut entries) = (0, TreeEntries::default());
        assert_eq!(copied.pass(&mut at, &mut entries), 2);
        assert_eq!(at, a.len() + b.len());
        assert_eq!(entries.starts, vec![0, a.len() as u32]);
        // The new entry is parsed by the walk; then c is passed.
        entries.push(at as u32, 9);
        at += new.len();
        assert_eq!(copied.pass(&mut at, &mut entries), 1);
        assert_eq!(at, data.len());
        // Passed entries carry the numbers of the base's entries they copy.
        assert_eq!(entries.numbers, vec![1, 2, 9, 3]);
    }

    #[test]
    fn a_copy_not_at_an_entry_of_the_base_passes_nothing() {
        let (a, b) = (entry("a", 1), entry("b", 2));
        let base: Vec<u8> = [a.clone(), b.clone()].concat();
        let mut copied = Copies {
            copies: vec![Copied {
                at: 0,
                from: a.len() - 1,
                len: b.len(),
            }],
            base: Arc::new(TreeEntries {
                starts: vec![0, a.len() as u32],
                numbers: vec![1, 2],
            }),
            base_len: base.len(),
            next: 0,
        };
        let (mut at, mut entries) = (0, TreeEntries::default());
        assert_eq!(copied.pass(&mut at, &mut entries), 0);
        assert_eq!(at, 0);
    }
}
