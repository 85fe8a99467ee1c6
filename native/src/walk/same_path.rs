//! Tree entries the walk passes over unread because the tree walked last at the same path
//! holds the very same entry. Every entry of a tree walked to its end names an object seen
//! already (or a gitlink, which is never followed), so an entry whose bytes equal one of
//! its entries needs no look-up. Exact whatever tree is compared with: an entry is passed
//! only when its bytes (mode, name and id) are a whole entry of the walked tree. The path
//! only picks the tree most likely to be alike: the same directory one commit later, which
//! differs in an entry or two however the pack's deltas run (copied.rs needs the delta's
//! base walked first, and misses the trees whose base is walked after them).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::pack::delta_chain::Object;
use crate::pack::lru::Lru;
use crate::walk::objects::{TreeEntries, MODE_DIR};

/// A path as the walk's key for it: a hash, child by child, from the root's.
pub type PathKey = u64;

pub const ROOT_PATH: PathKey = 0xcbf2_9ce4_8422_2325;

pub fn child_path(parent: PathKey, name: &[u8]) -> PathKey {
    let mut h = (parent ^ u64::from(b'/')).wrapping_mul(0x100_0000_01b3);
    for &c in name {
        h = (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// A tree walked to its end: its data and its entries.
#[derive(Clone)]
struct Walked {
    data: Object,
    entries: Arc<TreeEntries>,
}

/// The tree walked last at each path, the most recently used kept under a budget.
pub struct PathTrees(Lru<PathKey, Walked>);

/// What a walk keeps, shared by its walkers.
pub const PATH_TREES_BUDGET: u64 = 32 << 20;

impl PathTrees {
    pub fn new(budget: u64) -> Self {
        PathTrees(Lru::new(budget))
    }

    pub fn keep(&mut self, path: PathKey, data: Object, entries: Arc<TreeEntries>) {
        let size = (data.len() + entries.size()) as u64;
        self.0.insert(path, Walked { data, entries }, size);
    }

    /// What the tree walked last at `path` lets a tree met there pass.
    pub fn at(&mut self, path: PathKey) -> Option<SamePath> {
        let walked = self.0.get(&path)?.clone();
        Some(SamePath { walked, next: 0 })
    }
}

/// A tree being read beside the one walked last at its path: the next walked entry to
/// compare with.
pub struct SamePath {
    walked: Walked,
    next: usize,
}

impl SamePath {
    fn start(&self, k: usize) -> usize {
        self.walked.entries.starts[k] as usize
    }

    fn end(&self, k: usize) -> usize {
        self.walked
            .entries
            .starts
            .get(k + 1)
            .map_or(self.walked.data.len(), |&e| e as usize)
    }

    /// Pass over the entries of `tree` at `at` that equal the walked tree's next ones,
    /// recording them; returns how many were passed.
    pub fn pass(&mut self, tree: &[u8], at: &mut usize, entries: &mut TreeEntries) -> u64 {
        let first = self.next;
        if first >= self.walked.entries.len() {
            return 0;
        }
        let from = self.start(first);
        // One comparison for the run of equal entries, not one for each.
        let same = common_prefix(&tree[*at..], &self.walked.data[from..]);
        while self.next < self.walked.entries.len() && self.end(self.next) - from <= same {
            let number = self.walked.entries.number(self.next);
            entries.push((*at + self.start(self.next) - from) as u32, number);
            self.next += 1;
        }
        if self.next > first {
            *at += self.end(self.next - 1) - from;
        }
        (self.next - first) as u64
    }

    /// The entry `name` (`mode`) was read instead: the walked tree's entries that sort
    /// before it, or bear its name, are behind.
    pub fn read(&mut self, name: &[u8], mode: u32) {
        self.next = self.first_after(name, mode & 0o170000 == MODE_DIR, Ordering::Equal);
    }

    /// The entries of `tree` before `at` were passed otherwise (copies of a delta's base):
    /// compare from the walked entry that sorts where the entry at `at` does.
    pub fn seek(&mut self, tree: &[u8], at: usize) {
        if let Some((name, dir)) = name_of(&tree[at..]) {
            self.next = self.first_after(name, dir, Ordering::Less);
        }
    }

    /// The first walked entry from `next` on that sorts after `name` by more than `past`
    /// (Equal: after it; Less: at it or after). The answer is nearly always within an entry
    /// or two of `next` (the entry read replaced the walked one there), so the search
    /// gallops from `next` before it bisects.
    fn first_after(&self, name: &[u8], dir: bool, past: Ordering) -> usize {
        let len = self.walked.entries.len();
        let after = |k: usize| match name_of(&self.walked.data[self.start(k)..self.end(k)]) {
            Some((walked_name, walked_dir)) => {
                tree_order(walked_name, walked_dir, name, dir) > past
            }
            // Unparsable: stop here (a wrong answer costs only look-ups, never a wrong pass).
            None => true,
        };
        let (mut lo, mut step) = (self.next, 1);
        let mut hi = loop {
            if lo >= len {
                return len;
            }
            if after(lo) {
                return lo;
            }
            let probe = lo + step;
            if probe >= len || after(probe) {
                break probe.min(len);
            }
            lo = probe + 1;
            step *= 2;
        };
        lo += 1;
        // after(lo - 1) is false and hi is len or after(hi) is true.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if after(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// The name of the tree entry `entry` starts with, and whether it is a directory's; a
/// quick parse (no mode check): a wrong answer costs only a look-up, never a wrong pass.
fn name_of(entry: &[u8]) -> Option<(&[u8], bool)> {
    let sp = entry.iter().position(|&c| c == b' ')?;
    let nul = sp + entry[sp..].iter().position(|&c| c == 0)?;
    Some((&entry[sp + 1..nul], entry[..sp] == *b"40000"))
}

/// How many bytes `a` and `b` share from their starts.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n {
        let x = u128::from_ne_bytes(a[i..i + 16].try_into().unwrap())
            ^ u128::from_ne_bytes(b[i..i + 16].try_into().unwrap());
        let y = u128::from_ne_bytes(a[i + 16..i + 32].try_into().unwrap())
            ^ u128::from_ne_bytes(b[i + 16..i + 32].try_into().unwrap());
        if (x | y) != 0 {
            break;
        }
        i += 32;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Git's order of tree entries (base_name_compare): by name, a directory's as if it ended
/// in '/'. Equal names compare equal whatever the modes: one replaced the other.
fn tree_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        Ordering::Equal => {}
        other => return other,
    }
    let end = |s: &[u8], dir: bool| s.get(n).copied().unwrap_or(if dir { b'/' } else { 0 });
    end(a, a_dir).cmp(&end(b, b_dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    const RAWSZ: usize = crate::pack::object_id::HashAlgo::Sha1.rawsz();

    fn entry(mode: &str, name: &str, id: u8) -> Vec<u8> {
        let mut e = format!("{mode} {name}\0").into_bytes();
        e.extend([id; RAWSZ]);
        e
    }

    /// A walked tree of `entries`, each naming the object numbered as its id's byte.
    fn walked(entries: &[Vec<u8>]) -> (Object, Arc<TreeEntries>) {
        let mut list = TreeEntries::default();
        let mut data = Vec::new();
        for e in entries {
            list.push(data.len() as u32, u32::from(*e.last().unwrap()));
            data.extend(e);
        }
        (Arc::new(data), Arc::new(list))
    }

    #[test]
    fn equal_entries_are_passed_and_changed_ones_read() {
        let (a, b, c, d) = (
            entry("100644", "a", 1),
            entry("40000", "b", 2),
            entry("100644", "c", 3),
            entry("100644", "d", 4),
        );
        let (data, starts) = walked(&[a.clone(), b.clone(), c.clone(), d.clone()]);
        let mut trees = PathTrees::new(PATH_TREES_BUDGET);
        let path = child_path(ROOT_PATH, b"src");
        trees.keep(path, data, starts);
        assert!(trees.at(child_path(ROOT_PATH, b"lib")).is_none());
        // b changed, a new entry before d, c deleted.
        let (b2, cc) = (entry("40000", "b", 9), entry("100644", "cc", 5));
        let tree: Vec<u8> = [a.clone(), b2.clone(), cc.clone(), d.clone()].concat();
        let mut same = trees.at(path).expect("walked at src");
        let (mut at, mut out) = (0, TreeEntries::default());
        assert_eq!(same.pass(&tree, &mut at, &mut out), 1);
        assert_eq!(at, a.len());
        // The walk reads b itself, then cc.
        same.read(b"b", MODE_DIR);
        assert_eq!(same.pass(&tree, &mut at, &mut out), 0);
        out.push(at as u32, 9);
        at += b2.len();
        same.read(b"b", MODE_DIR);
        assert_eq!(same.pass(&tree, &mut at, &mut out), 0);
        out.push(at as u32, 5);
        at += cc.len();
        same.read(b"cc", 0o100644);
        assert_eq!(same.pass(&tree, &mut at, &mut out), 1);
        assert_eq!(at, tree.len());
        // Passed entries carry the numbers of the entries they equal.
        assert_eq!(out.numbers, vec![1, 9, 5, 4]);
        let starts = [
            0,
            a.len(),
            a.len() + b2.len(),
            a.len() + b2.len() + cc.len(),
        ];
        assert_eq!(out.starts, starts.map(|s| s as u32).to_vec());
    }

    #[test]
    fn a_prefix_of_an_entry_is_not_passed() {
        // Same mode and name, and an id that differs in its last byte only.
        let (data, starts) = walked(&[entry("100644", "a", 1)]);
        let mut other = entry("100644", "a", 1);
        *other.last_mut().unwrap() = 2;
        let mut same = SamePath {
            walked: Walked {
                data,
                entries: starts,
            },
            next: 0,
        };
        let (mut at, mut out) = (0, TreeEntries::default());
        assert_eq!(same.pass(&other, &mut at, &mut out), 0);
        assert_eq!(at, 0);
    }

    #[test]
    fn first_after_agrees_with_a_scan() {
        let names: Vec<String> = (0..40).map(|i| format!("n{:03}", i * 3)).collect();
        let entries: Vec<Vec<u8>> = names.iter().map(|n| entry("100644", n, 1)).collect();
        let (data, starts) = walked(&entries);
        for next in [0, 1, 5, 39, 40] {
            let same = SamePath {
                walked: Walked {
                    data: data.clone(),
                    entries: starts.clone(),
                },
                next,
            };
            for probe in 0..125 {
                let name = format!("n{probe:03}");
                for past in [Ordering::Equal, Ordering::Less] {
                    let scan = (next..names.len())
                        .find(|&k| {
                            tree_order(names[k].as_bytes(), false, name.as_bytes(), false) > past
                        })
                        .unwrap_or(names.len());
                    assert_eq!(
                        same.first_after(name.as_bytes(), false, past),
                        scan,
                        "{name} from {next}"
                    );
                }
            }
        }
    }

    #[test]
    fn tree_order_puts_a_directory_after_its_name_with_a_dot() {
        assert_eq!(tree_order(b"a", true, b"a.c", false), Ordering::Greater);
        assert_eq!(tree_order(b"a", false, b"a.c", false), Ordering::Less);
        assert_eq!(tree_order(b"a", false, b"a", true), Ordering::Equal);
        assert_eq!(tree_order(b"b", false, b"a/x", false), Ordering::Greater);
    }
}
