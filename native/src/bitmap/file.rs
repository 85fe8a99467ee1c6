//! A pack's reachability bitmap (Git's `.bitmap`, version 1, Documentation/technical/
//! bitmap-format): for chosen commits, the set of objects reachable from each, one bit per
//! object in pack order; four bitmaps of the objects of each type; and each object's
//! path-name hash, which pack-objects uses to pair delta candidates when it serves from the
//! bitmap.
//!
//! Commits are computed ancestors first, so each one's set is the union of the sets of the
//! chosen commits it reaches plus what it adds on its own. A set is always closed (every
//! object in it brings everything it names), which is what lets a walk stop at the first
//! object already in the set.

use std::collections::VecDeque;

use crate::bitmap::ewah::Ewah;
use crate::bitmap::graph::{ChunkId, Graph, OUTSIDE};
use crate::pack::entry_header::{ObjectId, OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE};

const BITMAP_OPT_FULL_DAG: u16 = 0x1;
const BITMAP_OPT_HASH_CACHE: u16 = 0x4;
/// A bitmap may be stored XORed with one of the entries just before it; we try this many
/// (Git's reader accepts up to 160).
const XOR_CANDIDATES: usize = 10;
const NOT_DONE: u32 = u32::MAX;

pub struct Input<'a> {
    /// Real type of each object, pack order.
    pub kinds: &'a [u8],
    pub graph: &'a Graph,
    /// Pack positions of the commits to give a bitmap.
    pub selected: &'a [u32],
    /// Pack position -> position in the .idx (id order).
    pub index_pos: &'a [u32],
    /// Path-name hash of each object, pack order (0 where it has no path); written unless
    /// `hash_cache` is off (`pack.writeBitmapHashCache=false`).
    pub name_hashes: &'a [u32],
    pub hash_cache: bool,
    pub pack_checksum: &'a ObjectId,
}

#[derive(Debug)]
pub enum BitmapError {
    /// A chosen commit reaches an object the pack does not hold: (the position of the
    /// object naming it, its id). The pack cannot have a bitmap of its own.
    Outside(u32, ObjectId),
    /// The objects do not form a commit graph (a parent that is not a commit, a cycle).
    Corrupt(String),
    /// The graph lacks the edges of the commit or tree at this position (the walk that
    /// recorded it did not read it): the graph is to be read from the pack instead.
    Unrecorded(u32),
}

/// The error for an OUTSIDE target met in chunk `c` of object `from`'s edges.
fn outside(g: &Graph, from: u32, c: ChunkId) -> BitmapError {
    BitmapError::Outside(from, g.missing_in(c))
}

/// A commit's tree and parents; an error if one of them is not in the pack.
fn commit_edges(g: &Graph, c: u32, out: &mut Vec<u32>) -> Result<(), BitmapError> {
    if !g.recorded(c as usize) {
        return Err(BitmapError::Unrecorded(c));
    }
    out.clear();
    for (k, targets) in g.chunks(c as usize) {
        if targets.contains(&OUTSIDE) {
            return Err(outside(g, c, k));
        }
        out.extend_from_slice(targets);
    }
    if out.is_empty() {
        return Err(BitmapError::Corrupt(format!(
            "commit at position {c} has no tree"
        )));
    }
    Ok(())
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub bitmaps: usize,
    pub xored: usize,
    pub bytes: usize,
}

fn set(bits: &mut [u64], i: u32) {
    bits[i as usize / 64] |= 1 << (i % 64);
}

fn has(bits: &[u64], i: u32) -> bool {
    bits[i as usize / 64] & (1 << (i % 64)) != 0
}

/// Each selected commit's distance from the root commits (1 for a root), so that sorting by
/// it puts every commit after its ancestors. 0 for commits no selected commit reaches.
fn generations(input: &Input<'_>) -> Result<Vec<u32>, BitmapError> {
    let g = input.graph;
    let mut gen = vec![0u32; input.kinds.len()];
    let mut stack: Vec<(u32, bool)> = Vec::new();
    let mut edges = Vec::new();
    for &s in input.selected {
        stack.push((s, false));
        while let Some((c, expanded)) = stack.pop() {
            if gen[c as usize] != 0 {
                continue;
            }
            commit_edges(g, c, &mut edges)?;
            let parents = &edges[1..];
            if !expanded {
                stack.push((c, true));
                for &p in parents {
                    if input.kinds[p as usize] != OBJ_COMMIT {
                        return Err(BitmapError::Corrupt(format!(
                            "a parent of commit at position {c} is not a commit"
                        )));
                    }
                    if gen[p as usize] == 0 {
                        stack.push((p, false));
                    }
                }
            } else {
                let mut top = 0;
                for &p in parents {
                    if gen[p as usize] == 0 {
                        return Err(BitmapError::Corrupt("the commit graph has a cycle".into()));
                    }
                    top = top.max(gen[p as usize]);
                }
                gen[c as usize] = top + 1;
            }
        }
    }
    Ok(gen)
}

/// The set of objects reachable from commit `c`, into `bits` (cleared first).
fn reachable_from(
    input: &Input<'_>,
    c: u32,
    done: &[u32],
    stored: &[Ewah],
    bits: &mut [u64],
) -> Result<(), BitmapError> {
    let g = input.graph;
    bits.fill(0);
    let mut commits = vec![c];
    let mut trees = Vec::new();
    let mut edges = Vec::new();
    // Commits first: the sets of chosen ancestors come in whole, so that the trees walked
    // next stop at everything those already hold.
    while let Some(x) = commits.pop() {
        if has(bits, x) {
            continue;
        }
        if x != c && done[x as usize] != NOT_DONE {
            stored[done[x as usize] as usize].or_into(bits);
            continue;
        }
        set(bits, x);
        commit_edges(g, x, &mut edges)?;
        trees.push(edges[0]);
        commits.extend_from_slice(&edges[1..]);
    }
    while let Some(t) = trees.pop() {
        if has(bits, t) {
            continue;
        }
        if input.kinds[t as usize] != OBJ_TREE {
            return Err(BitmapError::Corrupt(format!(
                "object at position {t} is named as a tree but is not one"
            )));
        }
        if !g.recorded(t as usize) {
            return Err(BitmapError::Unrecorded(t));
        }
        set(bits, t);
        for (k, targets) in g.chunks(t as usize) {
            for &child in targets {
                if child == OUTSIDE {
                    return Err(outside(g, t, k));
                }
                match input.kinds[child as usize] {
                    OBJ_TREE => trees.push(child),
                    OBJ_BLOB => set(bits, child),
                    // A commit or tag named by a tree would enter the set without what it
                    // reaches: the set would claim a closure it lacks.
                    _ => {
                        return Err(BitmapError::Corrupt(format!(
                            "tree at position {t} names an object that is neither a tree nor a blob"
                        )))
                    }
                }
            }
        }
    }
    Ok(())
}

/// The `.bitmap` file's bytes, its trailing checksum included.
pub fn write(input: &Input<'_>) -> Result<(Vec<u8>, Stats), BitmapError> {
    let n = input.kinds.len();
    let words = n.div_ceil(64);
    let gen = generations(input)?;
    let mut order: Vec<u32> = input.selected.to_vec();
    order.sort_unstable_by_key(|&c| (gen[c as usize], c));
    order.dedup();

    let mut out = Vec::new();
    out.extend_from_slice(b"BITM");
    out.extend_from_slice(&1u16.to_be_bytes());
    let flags = BITMAP_OPT_FULL_DAG
        | if input.hash_cache {
            BITMAP_OPT_HASH_CACHE
        } else {
            0
        };
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&(order.len() as u32).to_be_bytes());
    out.extend_from_slice(input.pack_checksum);
    for kind in [OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG] {
        let mut bits = vec![0u64; words];
        for (i, &k) in input.kinds.iter().enumerate() {
            if k == kind {
                set(&mut bits, i as u32);
            }
        }
        Ewah::compress(&bits).serialize(&mut out);
    }

    let mut done = vec![NOT_DONE; n];
    let mut stored: Vec<Ewah> = Vec::with_capacity(order.len());
    let mut recent: VecDeque<Vec<u64>> = VecDeque::with_capacity(XOR_CANDIDATES);
    let mut stats = Stats {
        bitmaps: order.len(),
        ..Stats::default()
    };
    let mut bits = vec![0u64; words];
    let mut scratch = vec![0u64; words];
    for &c in &order {
        reachable_from(input, c, &done, &stored, &mut bits)?;
        let plain = Ewah::compress(&bits);
        // The smallest of the plain bitmap and its XOR with each recent entry.
        let mut best = (0usize, plain.clone());
        for (back, prev) in recent.iter().rev().enumerate() {
            for ((s, &a), &b) in scratch.iter_mut().zip(&bits).zip(prev) {
                *s = a ^ b;
            }
            let x = Ewah::compress(&scratch);
            if x.words.len() < best.1.words.len() {
                best = (back + 1, x);
            }
        }
        if best.0 > 0 {
            stats.xored += 1;
        }
        out.extend_from_slice(&input.index_pos[c as usize].to_be_bytes());
        out.push(best.0 as u8);
        out.push(0);
        best.1.serialize(&mut out);
        done[c as usize] = stored.len() as u32;
        stored.push(plain);
        if recent.len() == XOR_CANDIDATES {
            recent.pop_front();
        }
        recent.push_back(bits.clone());
    }

    if input.hash_cache {
        let mut hashes = vec![0u32; n];
        for (i, &h) in input.name_hashes.iter().enumerate() {
            hashes[input.index_pos[i] as usize] = h;
        }
        for h in hashes {
            out.extend_from_slice(&h.to_be_bytes());
        }
    }
    let mut sum = crate::pack::hash::FileChecksum::new(input.pack_checksum.algo());
    sum.update(&out);
    out.extend_from_slice(&sum.finish());
    stats.bytes = out.len();
    Ok((out, stats))
}
