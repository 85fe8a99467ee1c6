//! Trees: Git's `fsck_tree` (entry names, modes and order), the entries a tree links to, and
//! the `.gitmodules` and `.gitattributes` blobs it names, whose contents are checked later.

use crate::fsck::names::{
    is_dotgit, is_dotgitattributes, is_dotgitignore, is_dotgitmodules, is_dotmailmap,
    is_ntfs_dotgit, is_ntfs_dotgitmodules,
};
use crate::fsck::report::Report;
use crate::fsck::rules::{Msg, Rules};
use crate::pack::object_id::{HashAlgo, ObjectId};

const S_IFMT: u16 = 0o170000;
const S_IFDIR: u16 = 0o040000;
const S_IFREG: u16 = 0o100000;
const S_IFLNK: u16 = 0o120000;
const S_IFGITLINK: u16 = 0o160000;

/// A blob a tree names as `.gitmodules` or `.gitattributes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    Gitmodules,
    Gitattributes,
}

#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub mode: u16,
    pub name: &'a [u8],
    pub id: ObjectId,
    /// Where the entry's mode starts, for the zero-padding check.
    pub mode_text: &'a [u8],
}

/// Git's `decode_tree_entry` on what is left of a tree; Err is Git's error line.
fn decode(algo: HashAlgo, rest: &[u8]) -> Result<(Entry<'_>, usize), &'static str> {
    const MALFORMED: &str = "malformed mode in tree entry";
    let (size, rawsz) = (rest.len(), algo.rawsz());
    if size < rawsz + 3 || rest[size - (rawsz + 1)] != 0 {
        return Err("too-short tree object");
    }
    if rest[0] == b' ' {
        return Err(MALFORMED);
    }
    let mut mode = 0u32;
    let mut p = 0;
    loop {
        let c = rest[p];
        p += 1;
        if c == b' ' {
            break;
        }
        if !(b'0'..=b'7').contains(&c) {
            return Err(MALFORMED);
        }
        mode = mode.wrapping_mul(8).wrapping_add(u32::from(c - b'0'));
    }
    // The NUL before the last id is there: the name ends, and its id is whole.
    let name_len = memchr::memchr(0, &rest[p..]).ok_or(MALFORMED)?;
    if name_len == 0 {
        return Err("empty filename in tree entry");
    }
    let name = &rest[p..p + name_len];
    let id_at = p + name_len + 1;
    let id = ObjectId::of(algo, &rest[id_at..id_at + rawsz]);
    let entry = Entry {
        mode: mode as u16,
        name,
        id,
        mode_text: rest,
    };
    Ok((entry, id_at + rawsz))
}

/// The entries of a tree as Git's walk reads them, and the error line of a malformed entry,
/// where the walk stops. Err when the first entry is malformed: the tree is unreadable.
pub fn entries(
    algo: HashAlgo,
    data: &[u8],
) -> Result<(Vec<Entry<'_>>, Option<&'static str>), &'static str> {
    let mut out = Vec::new();
    if data.is_empty() {
        return Ok((out, None));
    }
    let (mut e, mut used) = decode(algo, data)?;
    let mut rest = data;
    loop {
        // Git's walk moves to the next entry before it hands this one out.
        rest = &rest[used..];
        if rest.is_empty() {
            out.push(e);
            return Ok((out, None));
        }
        match decode(algo, rest) {
            Ok((next, n)) => {
                out.push(e);
                (e, used) = (next, n);
            }
            Err(error) => return Ok((out, Some(error))),
        }
    }
}

pub fn is_dir(mode: u16) -> bool {
    mode & S_IFMT == S_IFDIR
}

/// What a walk links an entry to, by Git's canonical modes: a tree, a blob, or nothing (a
/// gitlink, or any other mode, which Git reads as one).
pub fn link_kind(mode: u16) -> Option<u8> {
    match mode & S_IFMT {
        S_IFDIR => Some(crate::pack::entry_header::OBJ_TREE),
        S_IFREG | S_IFLNK => Some(crate::pack::entry_header::OBJ_BLOB),
        _ => None,
    }
}

const TREE_UNORDERED: i8 = -1;
const TREE_HAS_DUPS: i8 = -2;

fn is_less_than_slash(c: u8) -> bool {
    c != 0 && c < b'/'
}

/// Git's `verify_ordered`, with its stack of file names a later directory of the same name
/// would duplicate.
fn verify_ordered<'a>(
    mode1: u16,
    name1: &'a [u8],
    mode2: u16,
    name2: &'a [u8],
    candidates: &mut Vec<&'a [u8]>,
) -> i8 {
    let len = name1.len().min(name2.len());
    match name1[..len].cmp(&name2[..len]) {
        std::cmp::Ordering::Less => return 0,
        std::cmp::Ordering::Greater => return TREE_UNORDERED,
        std::cmp::Ordering::Equal => {}
    }
    let mut c1 = name1.get(len).copied().unwrap_or(0);
    let mut c2 = name2.get(len).copied().unwrap_or(0);
    if c1 == 0 && c2 == 0 {
        return TREE_HAS_DUPS;
    }
    if c1 == 0 && is_dir(mode1) {
        c1 = b'/';
    }
    if c2 == 0 && is_dir(mode2) {
        c2 = b'/';
    }
    if c1 == 0 && is_less_than_slash(c2) {
        candidates.push(name1);
    } else if c2 == b'/' && is_less_than_slash(c1) {
        while let Some(f) = candidates.pop() {
            let Some(p) = name2.strip_prefix(f) else {
                continue;
            };
            match p.first() {
                None => return TREE_HAS_DUPS,
                Some(&c) if is_less_than_slash(c) => {
                    candidates.push(f);
                    break;
                }
                _ => {}
            }
        }
    }
    if c1 < c2 {
        0
    } else {
        TREE_UNORDERED
    }
}

/// An entry named `.gitmodules` or `.gitattributes`: its blob is checked later, unless it is
/// a symbolic link, which is reported (true when that fails the tree).
fn note_special(
    r: &mut Report,
    found: &mut Vec<(ObjectId, Special)>,
    e: &Entry,
    special: Special,
) -> bool {
    if e.mode != S_IFLNK {
        found.push((e.id, special));
        return false;
    }
    match special {
        Special::Gitmodules => r.report(Msg::GitmodulesSymlink, ".gitmodules is a symbolic link"),
        Special::Gitattributes => {
            r.report(Msg::GitattributesSymlink, ".gitattributes is a symlink")
        }
    }
}

/// Whether `name` can be one of the names HFS+ or NTFS read as `.git`, `.gitmodules` and the
/// like: those start with '.', 'g', 'm' or '~' (an NTFS short name), or with a character
/// HFS+ ignores (not ASCII). Nearly every name is ruled out by its first byte.
fn may_be_special(name: &[u8]) -> bool {
    match name.first() {
        Some(&c) => c == b'.' || c == b'~' || c >= 0x80 || matches!(c | 0x20, b'g' | b'm'),
        None => false,
    }
}

/// Git's `fsck_tree`; true when it fails the object. `found` receives the blobs named
/// `.gitmodules` and `.gitattributes` (also for a tree on the skip list, as in Git), and
/// `walked` the entries Git's walk of the tree gives, when every entry decodes (each entry
/// decoded once here).
pub fn check<'a>(
    r: &mut Report,
    rules: &Rules,
    data: &'a [u8],
    found: &mut Vec<(ObjectId, Special)>,
    walked: &mut Vec<Entry<'a>>,
) -> bool {
    let mut failed = false;
    let (mut null_id, mut full_path, mut empty_name, mut dot, mut dotdot) =
        (false, false, false, false, false);
    let (mut dotgit, mut zero_pad, mut bad_modes, mut dups, mut unsorted, mut large) =
        (false, false, false, false, false, false);
    let mut candidates = Vec::new();
    let mut previous: Option<(u16, &[u8])> = None;
    if data.is_empty() {
        return false;
    }
    let mut next = decode(r.algo, data);
    let mut rest = data;
    loop {
        let (e, used) = match next {
            Ok(d) => d,
            Err(error) => {
                r.plain_error(error);
                return r.report(Msg::BadTree, "cannot be parsed as a tree");
            }
        };
        // (`walked` holds only a tree decoded to its end: the walk of a malformed one
        // prints its own error lines.)
        let name = e.name;
        null_id |= e.id.is_null();
        let slashes = memchr::memchr2(b'/', b'\\', name).is_some();
        full_path |= slashes && name.contains(&b'/');
        empty_name |= name.is_empty();
        dot |= name == b".";
        dotdot |= name == b"..";
        zero_pad |= e.mode_text[0] == b'0';
        large |= name.len() > rules.max_tree_entry_len;
        let symlink = e.mode == S_IFLNK;
        if may_be_special(name) {
            dotgit |= is_dotgit(name);
            if is_dotgitmodules(name) {
                failed |= note_special(r, found, &e, Special::Gitmodules);
            }
            if is_dotgitattributes(name) {
                failed |= note_special(r, found, &e, Special::Gitattributes);
            }
            if symlink {
                if is_dotgitignore(name) {
                    failed |= r.report(Msg::GitignoreSymlink, ".gitignore is a symlink");
                }
                if is_dotmailmap(name) {
                    failed |= r.report(Msg::MailmapSymlink, ".mailmap is a symlink");
                }
            }
        }
        for k in memchr::memchr_iter(b'\\', if slashes { name } else { &[] }) {
            let after = &name[k + 1..];
            dotgit |= is_ntfs_dotgit(after);
            if is_ntfs_dotgitmodules(after) {
                failed |= note_special(r, found, &e, Special::Gitmodules);
            }
        }
        rest = &rest[used..];
        let more = !rest.is_empty();
        if more {
            next = decode(r.algo, rest);
            if let Err(error) = next {
                r.plain_error(error);
                failed |= r.report(Msg::BadTree, "cannot be parsed as a tree");
                walked.clear();
                break;
            }
        }
        match e.mode {
            m if m == S_IFREG | 0o755
                || m == S_IFREG | 0o644
                || m == S_IFLNK
                || m == S_IFDIR
                || m == S_IFGITLINK => {}
            // A few early trees have 0664; fsck's strict mode (index-pack's) counts it bad.
            _ => bad_modes = true,
        }
        if let Some((mode, prev)) = previous {
            match verify_ordered(mode, prev, e.mode, name, &mut candidates) {
                TREE_UNORDERED => unsorted = true,
                TREE_HAS_DUPS => dups = true,
                _ => {}
            }
        }
        previous = Some((e.mode, name));
        walked.push(e);
        if !more {
            break;
        }
    }
    let summary = [
        (
            null_id,
            Msg::NullSha1,
            "contains entries pointing to null sha1",
        ),
        (full_path, Msg::FullPathname, "contains full pathnames"),
        (empty_name, Msg::EmptyName, "contains empty pathname"),
        (dot, Msg::HasDot, "contains '.'"),
        (dotdot, Msg::HasDotdot, "contains '..'"),
        (dotgit, Msg::HasDotgit, "contains '.git'"),
        (
            zero_pad,
            Msg::ZeroPaddedFilemode,
            "contains zero-padded file modes",
        ),
        (bad_modes, Msg::BadFilemode, "contains bad file modes"),
        (
            dups,
            Msg::DuplicateEntries,
            "contains duplicate file entries",
        ),
        (unsorted, Msg::TreeNotSorted, "not properly sorted"),
        (
            large,
            Msg::LargePathname,
            "contains excessively large pathname",
        ),
    ];
    for (seen, msg, text) in summary {
        if seen {
            failed |= r.report(msg, text);
        }
    }
    failed
}
