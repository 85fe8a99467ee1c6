//! The objects a worktree's index adds to a walk (`rev-list --indexed-objects`: revision.c's
//! do_add_index_objects_to_pending), read from the index file (gitformat-index, versions 2
//! to 4): every entry's blob with its path (gitlinks aside), in index order; then each valid
//! node of the cache tree (the TREE extension) with its directory's path, a node before its
//! subtrees; then the regular files the resolve-undo extension (REUC) records. A split or
//! sparse index is refused (the caller walks with Git instead).

use crate::error::{PackError, Result};
use crate::pack::entry_header::{HashAlgo, ObjectId, OBJ_BLOB, OBJ_TREE};
use crate::walk::walker::Root;

fn bad(path: &std::path::Path, what: &str) -> PackError {
    PackError::general(format!("index file {} is corrupt: {what}", path.display()))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// What the index at `path` adds to a walk, or why this reader leaves it to Git.
pub enum IndexRoots {
    Roots(Vec<Root>),
    Unsupported(&'static str),
}

pub fn index_roots(path: &std::path::Path, algo: HashAlgo) -> Result<IndexRoots> {
    let rawsz = algo.rawsz();
    // An entry: ctime, mtime, dev, ino, mode, uid, gid, size (40 bytes), the id, the flags.
    let fixed = 40 + rawsz + 2;
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(IndexRoots::Roots(Vec::new()))
        }
        Err(e) => return Err(PackError::io(&format!("reading {}", path.display()), e)),
    };
    if data.len() < 12 + rawsz || &data[..4] != b"DIRC" {
        return Err(bad(path, "no index header"));
    }
    let version = be32(&data[4..]);
    if !(2..=4).contains(&version) {
        return Err(bad(path, "unknown index version"));
    }
    let count = be32(&data[8..]) as usize;
    let end = data.len() - rawsz;
    let mut at = 12;
    let mut roots = Vec::new();
    let mut name: Vec<u8> = Vec::new();
    for _ in 0..count {
        if at + fixed > end {
            return Err(bad(path, "entries cut off"));
        }
        let mode = be32(&data[at + 24..]);
        let id = ObjectId::of(algo, &data[at + 40..at + 40 + rawsz]);
        let flags = u16::from_be_bytes([data[at + fixed - 2], data[at + fixed - 1]]);
        let mut p = at + fixed;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return Err(bad(path, "extended flags in a version 2 index"));
            }
            p += 2;
        }
        if version == 4 {
            // The path is the previous one without its last N bytes, plus a suffix.
            let mut strip: usize = 0;
            loop {
                let c = *data.get(p).ok_or_else(|| bad(path, "entries cut off"))?;
                p += 1;
                strip = (strip << 7) | usize::from(c & 0x7f);
                if c & 0x80 == 0 {
                    break;
                }
                strip += 1;
            }
            if strip > name.len() {
                return Err(bad(path, "bad path compression"));
            }
            name.truncate(name.len() - strip);
            let nul = data[p..end]
                .iter()
                .position(|&c| c == 0)
                .ok_or_else(|| bad(path, "entries cut off"))?;
            name.extend_from_slice(&data[p..p + nul]);
            at = p + nul + 1;
        } else {
            let nul = data[p..end]
                .iter()
                .position(|&c| c == 0)
                .ok_or_else(|| bad(path, "entries cut off"))?;
            name.clear();
            name.extend_from_slice(&data[p..p + nul]);
            // Entries are padded with NULs to a multiple of eight bytes.
            let len = p + nul - at;
            at += (len + 8) & !7;
        }
        if mode & 0o170000 == 0o040000 {
            return Ok(IndexRoots::Unsupported("a sparse index"));
        }
        if mode & 0o170000 != 0o160000 {
            roots.push(Root {
                id,
                path: Some(name.clone()),
                kind: OBJ_BLOB,
            });
        }
    }
    let mut trees = Vec::new();
    let mut undo = Vec::new();
    while at + 8 <= end {
        let sig = &data[at..at + 4];
        let size = be32(&data[at + 4..]) as usize;
        let body = data
            .get(at + 8..at + 8 + size)
            .ok_or_else(|| bad(path, "extension cut off"))?;
        match sig {
            b"TREE" => trees = cache_tree(body, algo).ok_or_else(|| bad(path, "bad cache tree"))?,
            b"REUC" => {
                undo = resolve_undo(body, algo).ok_or_else(|| bad(path, "bad resolve-undo"))?
            }
            b"link" => return Ok(IndexRoots::Unsupported("a split index")),
            b"sdir" => return Ok(IndexRoots::Unsupported("a sparse index")),
            _ => {}
        }
        at += 8 + size;
    }
    roots.extend(trees);
    roots.extend(undo);
    Ok(IndexRoots::Roots(roots))
}

struct Node {
    name: Vec<u8>,
    id: Option<ObjectId>,
    subtrees: Vec<Node>,
}

fn read_node(body: &[u8], at: &mut usize, algo: HashAlgo) -> Option<Node> {
    let nul = body[*at..].iter().position(|&c| c == 0)?;
    let name = body[*at..*at + nul].to_vec();
    *at += nul + 1;
    let nl = body[*at..].iter().position(|&c| c == b'\n')?;
    let line = std::str::from_utf8(&body[*at..*at + nl]).ok()?;
    *at += nl + 1;
    let (entries, subtrees) = line.split_once(' ')?;
    let entries: i64 = entries.parse().ok()?;
    let subtrees: usize = subtrees.parse().ok()?;
    let id = if entries >= 0 {
        let id = ObjectId::of(algo, body.get(*at..*at + algo.rawsz())?);
        *at += algo.rawsz();
        Some(id)
    } else {
        None
    };
    let mut children = Vec::with_capacity(subtrees.min(1 << 16));
    for _ in 0..subtrees {
        children.push(read_node(body, at, algo)?);
    }
    // Git keeps a node's subtrees ordered by name length, then bytes (cache-tree.c).
    children.sort_by(|a, b| (a.name.len(), &a.name).cmp(&(b.name.len(), &b.name)));
    Some(Node {
        name,
        id,
        subtrees: children,
    })
}

fn cache_tree(body: &[u8], algo: HashAlgo) -> Option<Vec<Root>> {
    let mut at = 0;
    let root = read_node(body, &mut at, algo)?;
    let mut out = Vec::new();
    // add_cache_tree: a node's tree (if valid), then its subtrees; iterative for deep trees.
    let mut stack: Vec<(Node, Vec<u8>)> = vec![(root, Vec::new())];
    while let Some((node, path)) = stack.pop() {
        if let Some(id) = node.id {
            out.push(Root {
                id,
                path: Some(path.clone()),
                kind: OBJ_TREE,
            });
        }
        for sub in node.subtrees.into_iter().rev() {
            let mut p = path.clone();
            if !p.is_empty() {
                p.push(b'/');
            }
            p.extend_from_slice(&sub.name);
            stack.push((sub, p));
        }
    }
    Some(out)
}

fn resolve_undo(body: &[u8], algo: HashAlgo) -> Option<Vec<Root>> {
    // A sorted string list in Git; a path recorded twice keeps its last record.
    let mut entries: std::collections::BTreeMap<Vec<u8>, ([u32; 3], Vec<ObjectId>)> =
        Default::default();
    let mut at = 0;
    while at < body.len() {
        let nul = body[at..].iter().position(|&c| c == 0)?;
        let path = body[at..at + nul].to_vec();
        at += nul + 1;
        let mut modes = [0u32; 3];
        for m in &mut modes {
            let nul = body[at..].iter().position(|&c| c == 0)?;
            *m = u32::from_str_radix(std::str::from_utf8(&body[at..at + nul]).ok()?, 8).ok()?;
            at += nul + 1;
        }
        let mut ids = Vec::new();
        for m in modes {
            if m != 0 {
                ids.push(ObjectId::of(algo, body.get(at..at + algo.rawsz())?));
                at += algo.rawsz();
            }
        }
        entries.insert(path, (modes, ids));
    }
    let mut out = Vec::new();
    for (path, (modes, ids)) in entries {
        let mut ids = ids.into_iter();
        for m in modes {
            if m == 0 {
                continue;
            }
            let id = ids.next()?;
            if m & 0o170000 == 0o100000 {
                out.push(Root {
                    id,
                    path: Some(path.clone()),
                    kind: OBJ_BLOB,
                });
            }
        }
    }
    Some(out)
}
