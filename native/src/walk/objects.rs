//! The parts of commits, trees and tags a walk follows, parsed as Git parses them
//! (commit.c's parse_commit_buffer and parse_commit_date, tree-walk.c, tag.c).

use crate::error::{PackError, Result};
use crate::pack::entry_header::{type_named, ObjectId};
use crate::pack::hash::{hex, parse_hex};
use crate::walk::numbers::MISSING;

pub struct Commit {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    /// The committer's timestamp, as Git reads it for ordering (0 when it cannot).
    pub date: u64,
}

fn bad(id: &ObjectId, what: &str) -> PackError {
    PackError::general(format!("{what} in object {}", hex(id)))
}

/// A commit's links; the ids it names are of its own id's hash.
pub fn parse_commit(id: &ObjectId, data: &[u8]) -> Result<Commit> {
    let algo = id.algo();
    let hexsz = algo.hexsz();
    if data.len() <= hexsz + 6 || &data[..5] != b"tree " || data[5 + hexsz] != b'\n' {
        return Err(bad(id, "bad tree pointer"));
    }
    let tree = parse_hex(algo, &data[5..5 + hexsz]).ok_or_else(|| bad(id, "bad tree pointer"))?;
    let mut at = 6 + hexsz;
    let mut parents = Vec::new();
    while at + 7 + hexsz < data.len() && &data[at..at + 7] == b"parent " {
        if data[at + 7 + hexsz] != b'\n' {
            return Err(bad(id, "bad parents"));
        }
        parents.push(
            parse_hex(algo, &data[at + 7..at + 7 + hexsz]).ok_or_else(|| bad(id, "bad parents"))?,
        );
        at += 8 + hexsz;
    }
    Ok(Commit {
        tree,
        parents,
        date: commit_date(&data[at..]),
    })
}

/// parse_commit_date: the "author" line must come first, then "committer"; the number after
/// the committer line's last '>' (strtoumax: a leading '-' wraps around).
fn commit_date(buf: &[u8]) -> u64 {
    if buf.len() <= 6 || &buf[..6] != b"author" {
        return 0;
    }
    let Some(nl) = buf.iter().position(|&c| c == b'\n') else {
        return 0;
    };
    let buf = &buf[nl + 1..];
    if buf.len() <= 9 || &buf[..9] != b"committer" {
        return 0;
    }
    let Some(eol) = buf.iter().position(|&c| c == b'\n') else {
        return 0;
    };
    let Some(gt) = buf[..eol].iter().rposition(|&c| c == b'>') else {
        return 0;
    };
    let mut s = &buf[gt + 1..eol];
    while let Some((&c, rest)) = s.split_first() {
        if !c.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    let negative = s.first() == Some(&b'-');
    if negative {
        s = &s[1..];
    } else if !s.first().is_some_and(u8::is_ascii_digit) {
        return 0;
    }
    let mut n: u64 = 0;
    for &c in s.iter().take_while(|c| c.is_ascii_digit()) {
        match n
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
        {
            Some(v) => n = v,
            None => return u64::MAX,
        }
    }
    if negative {
        n.wrapping_neg()
    } else {
        n
    }
}

/// One tree entry: its mode, name and id.
pub struct TreeEntry<'a> {
    pub mode: u32,
    pub name: &'a [u8],
    pub id: &'a [u8],
}

/// A tree's entries as a walk met them: where each starts in the tree's data, and the number
/// of the object it names (numbers.rs: GITLINK, or MISSING until known), in entry order.
#[derive(Default)]
pub struct TreeEntries {
    pub starts: Vec<u32>,
    pub numbers: Vec<u32>,
}

impl TreeEntries {
    pub fn with_capacity(n: usize) -> Self {
        TreeEntries {
            starts: Vec::with_capacity(n),
            numbers: Vec::with_capacity(n),
        }
    }

    pub fn push(&mut self, start: u32, number: u32) {
        self.starts.push(start);
        self.numbers.push(number);
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The bytes they take in memory.
    pub fn size(&self) -> usize {
        4 * (self.starts.capacity() + self.numbers.capacity())
    }

    /// Made ready to be kept: the room reserved for entries the tree did not have given
    /// back (an entry was guessed at 24 bytes, most take twice that), so that what is kept is
    /// what is counted; the numbers dropped unless `numbered` (only a walk that records the
    /// graph reads them, and they cost a walk of libgit2 16 MiB at its peak).
    pub fn keep(&mut self, numbered: bool) {
        self.starts.shrink_to_fit();
        match numbered {
            true => self.numbers.shrink_to_fit(),
            false => self.numbers = Vec::new(),
        }
    }

    /// The number of entry `k`'s object, MISSING if not kept.
    pub fn number(&self, k: usize) -> u32 {
        self.numbers.get(k).copied().unwrap_or(MISSING)
    }
}

pub const MODE_DIR: u32 = 0o040000;
pub const MODE_GITLINK: u32 = 0o160000;

/// The entry of tree `id` that starts at `at` in its data, and where the next one starts;
/// None at the end.
pub fn tree_entry_at<'a>(
    id: &ObjectId,
    data: &'a [u8],
    at: usize,
) -> Result<Option<(TreeEntry<'a>, usize)>> {
    let rest = &data[at..];
    if rest.is_empty() {
        return Ok(None);
    }
    let malformed = || bad(id, "malformed tree entry");
    let sp = rest.iter().position(|&c| c == b' ').ok_or_else(malformed)?;
    if sp == 0 {
        return Err(malformed());
    }
    let mut mode = 0u32;
    for &c in &rest[..sp] {
        if !(b'0'..=b'7').contains(&c) {
            return Err(bad(id, "malformed mode in tree entry"));
        }
        mode = (mode << 3) | u32::from(c - b'0');
    }
    let nul = sp
        + 1
        + rest[sp + 1..]
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(malformed)?;
    let rawsz = id.algo().rawsz();
    if nul == sp + 1 || rest.len() < nul + 1 + rawsz {
        return Err(malformed());
    }
    let entry = TreeEntry {
        mode,
        name: &rest[sp + 1..nul],
        id: &rest[nul + 1..nul + 1 + rawsz],
    };
    Ok(Some((entry, at + nul + 1 + rawsz)))
}

pub struct Tag {
    pub object: ObjectId,
    pub kind: u8,
    /// The tag's name (its `tag` header), which rev-list prints beside it.
    pub name: Vec<u8>,
}

/// parse_tag_buffer: "object <hex>\ntype <type>\n", then an optional "tag <name>\n".
pub fn parse_tag(id: &ObjectId, data: &[u8]) -> Result<Tag> {
    let algo = id.algo();
    let hexsz = algo.hexsz();
    if data.len() < 7 + hexsz + 1 || &data[..7] != b"object " || data[7 + hexsz] != b'\n' {
        return Err(bad(id, "bad tag"));
    }
    let object = parse_hex(algo, &data[7..7 + hexsz]).ok_or_else(|| bad(id, "bad tag"))?;
    let rest = &data[8 + hexsz..];
    let line = |r: &[u8], key: &[u8]| -> Option<(Vec<u8>, usize)> {
        if !r.starts_with(key) {
            return None;
        }
        let nl = r.iter().position(|&c| c == b'\n')?;
        Some((r[key.len()..nl].to_vec(), nl + 1))
    };
    let (kind_name, used) = line(rest, b"type ").ok_or_else(|| bad(id, "bad tag"))?;
    let kind = type_named(&kind_name).ok_or_else(|| bad(id, "unknown type in tag"))?;
    let name = line(&rest[used..], b"tag ")
        .map(|(n, _)| n)
        .unwrap_or_default();
    Ok(Tag { object, kind, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_git_reads_them() {
        let c = b"author A <a@x> 5 +0000\ncommitter C <c@x>  1234567890 +0100\n\nmsg";
        assert_eq!(commit_date(c), 1234567890);
        assert_eq!(commit_date(b"committer C <c@x> 5 +0000\n"), 0);
        assert_eq!(
            commit_date(b"author A <a@x> 5 +0000\ncommitter C <c@x> x\n"),
            0
        );
        assert_eq!(
            commit_date(b"author A\ncommitter C <c@x> -1 +0000\n"),
            u64::MAX
        );
    }

    #[test]
    fn tree_entries_in_order() {
        let id = ObjectId::null(crate::pack::entry_header::HashAlgo::Sha1);
        let mut t = b"100644 a\0".to_vec();
        t.extend([1u8; 20]);
        t.extend(b"40000 dir\0");
        t.extend([2u8; 20]);
        let (first, next) = tree_entry_at(&id, &t, 0).unwrap().unwrap();
        assert_eq!(
            (first.mode, first.name, first.id[0]),
            (0o100644, &b"a"[..], 1)
        );
        let (second, end) = tree_entry_at(&id, &t, next).unwrap().unwrap();
        assert_eq!(
            (second.mode, second.name, second.id[0]),
            (MODE_DIR, &b"dir"[..], 2)
        );
        assert!(tree_entry_at(&id, &t, end).unwrap().is_none());
        assert!(tree_entry_at(&id, b"100644 a\0short", 0).is_err());
    }
}
