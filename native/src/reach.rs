//! The commit and tree graph of a pack we just wrote and verified, read from its bytes: for
//! each commit its tree and parents, for each tree the objects it names, as pack positions.
//! This is what the reachability bitmaps (bitmap.rs) are computed from; reading it from the
//! new pack rather than asking Git keeps the bitmap about exactly the pack it describes.
//!
//! Deltas are resolved family by family (a whole object, then its deltas depth first), the
//! families spread over threads; blobs are never read.

use rayon::prelude::*;

use crate::delta::apply_delta;
use crate::entry::{parse_header, ObjectId, MAX_HEADER_LEN, OBJ_COMMIT, OBJ_TREE, RAWSZ};
use crate::error::{PackError, Result};
use crate::hash::hex;
use crate::ids::Finder;
use crate::inflate::Inflater;
use crate::source::PackFile;

/// The entries of a pack, in pack order.
pub struct Entries<'a> {
    pub offsets: &'a [u64],
    /// Where the entry data ends (the next entry, or the trailer).
    pub ends: &'a [u64],
    /// Pack position of each delta's base, -1 for a whole object.
    pub bases: &'a [i64],
    /// The object's real type.
    pub kinds: &'a [u8],
    /// Ids sorted, and the pack position of each.
    pub sorted_ids: &'a [ObjectId],
    pub sorted_pos: &'a [u32],
}

/// Edges over pack positions: object `i` names `targets[lo[i]..hi[i]]`. A commit names its
/// tree, then its parents.
pub struct Graph {
    pub lo: Vec<u32>,
    pub hi: Vec<u32>,
    pub targets: Vec<u32>,
    /// (position, id) of each object named but not held, and of who names it.
    pub outside: Vec<(u32, ObjectId)>,
}

impl Graph {
    pub fn edges(&self, i: usize) -> &[u32] {
        &self.targets[self.lo[i] as usize..self.hi[i] as usize]
    }
}

/// The target of an edge to an object the pack does not hold (a promised object of a partial
/// clone, or one named only by unreachable objects): harmless unless a bitmap's walk meets it.
pub const OUTSIDE: u32 = u32::MAX;

fn wanted(kind: u8) -> bool {
    kind == OBJ_COMMIT || kind == OBJ_TREE
}

struct Reader<'a> {
    pack: &'a PackFile,
    e: &'a Entries<'a>,
    finder: Finder<'a>,
    /// Largest object we agree to materialize (physical memory).
    object_limit: u64,
}

impl Reader<'_> {
    /// An entry's inflated data (the object, or the delta).
    fn inflate(&self, i: usize, inflater: &mut Inflater, buf: &mut Vec<u8>) -> Result<Vec<u8>> {
        let offset = self.e.offsets[i];
        let end = self.e.ends[i];
        if end <= offset || end > self.pack.len {
            return Err(PackError::at(offset, "entry ends outside the pack"));
        }
        buf.resize((end - offset) as usize, 0);
        self.pack.read_exact_at(buf, offset)?;
        let header = parse_header(&buf[..buf.len().min(MAX_HEADER_LEN)], offset)?
            .ok_or_else(|| PackError::at(offset, "truncated entry header"))?;
        if header.size > self.object_limit {
            return Err(PackError::at(offset, "object does not fit in memory"));
        }
        let (data, _) = inflater
            .inflate_to_vec(&buf[header.header_len..], header.size as usize)
            .map_err(|f| PackError::at(offset, f.describe(header.size)))?;
        Ok(data)
    }

    fn position(&self, id: &[u8], from: usize, rows: &mut Rows) -> u32 {
        let id: ObjectId = id.try_into().expect("20 bytes");
        match self.finder.at(&id) {
            Some(k) => self.e.sorted_pos[k],
            None => {
                rows.outside.push((from as u32, id));
                OUTSIDE
            }
        }
    }

    fn id_of(&self, pos: usize) -> ObjectId {
        let k = self
            .e
            .sorted_pos
            .iter()
            .position(|&p| p as usize == pos)
            .unwrap_or(0);
        self.e.sorted_ids[k]
    }

    /// Append the edges of entry `i`, whose object is `data`.
    fn edges(&self, i: usize, data: &[u8], rows: &mut Rows) -> Result<()> {
        let bad = |what: &str| {
            PackError::at(
                self.e.offsets[i],
                format!("{what} in object {}", hex(&self.id_of(i))),
            )
        };
        let mut out = std::mem::take(&mut rows.scratch);
        out.clear();
        if self.e.kinds[i] == OBJ_COMMIT {
            let mut rest = data;
            let mut first = true;
            loop {
                let key: &[u8] = if first { b"tree " } else { b"parent " };
                let Some(line) = rest.strip_prefix(key) else {
                    break;
                };
                let id = line
                    .get(..2 * RAWSZ)
                    .and_then(parse_hex)
                    .filter(|_| line.get(2 * RAWSZ) == Some(&b'\n'))
                    .ok_or_else(|| bad("malformed commit header"))?;
                out.push(self.position(&id, i, rows));
                rest = &line[2 * RAWSZ + 1..];
                first = false;
            }
            if first {
                return Err(bad("commit without a tree line"));
            }
        } else {
            let mut rest = data;
            while !rest.is_empty() {
                let sp = rest
                    .iter()
                    .position(|&b| b == b' ')
                    .ok_or_else(|| bad("malformed tree entry"))?;
                let nul = rest
                    .iter()
                    .position(|&b| b == 0)
                    .filter(|&n| n > sp)
                    .ok_or_else(|| bad("malformed tree entry"))?;
                let id = rest
                    .get(nul + 1..nul + 1 + RAWSZ)
                    .ok_or_else(|| bad("truncated tree entry"))?;
                // A submodule's commit lives in another repository.
                if &rest[..sp] != b"160000" {
                    out.push(self.position(id, i, rows));
                }
                rest = &rest[nul + 1 + RAWSZ..];
            }
        }
        rows.add(i, &out);
        rows.scratch = out;
        Ok(())
    }

    /// Edges of a whole object and of every delta below it, appended to `out`. Depth first,
    /// one child at a time: only the chain from the root down to the object being read is
    /// held (a tree with a thousand delta children would otherwise hold them all at once).
    fn family(&self, root: usize, children: &[Vec<u32>], out: &mut Rows) -> Result<()> {
        let mut inflater = Inflater::new();
        let mut buf = Vec::new();
        let data = self.inflate(root, &mut inflater, &mut buf)?;
        self.edges(root, &data, out)?;
        // (entry, its data, how many of its children are done)
        let mut stack: Vec<(usize, Vec<u8>, usize)> = vec![(root, data, 0)];
        while let Some(top) = stack.last_mut() {
            let (i, next) = (top.0, top.2);
            let Some(&c) = children[i].get(next) else {
                stack.pop();
                continue;
            };
            top.2 += 1;
            let c = c as usize;
            let delta = self.inflate(c, &mut inflater, &mut buf)?;
            let obj = apply_delta(&top.1, &delta, self.e.offsets[c], self.object_limit)?;
            self.edges(c, &obj, out)?;
            stack.push((c, obj, 0));
        }
        Ok(())
    }
}

/// Edges of some entries, flat: entry `positions[k]` names `targets[ends[k - 1]..ends[k]]`.
#[derive(Default)]
struct Rows {
    positions: Vec<u32>,
    ends: Vec<u32>,
    targets: Vec<u32>,
    outside: Vec<(u32, ObjectId)>,
    /// One object's edges while they are parsed.
    scratch: Vec<u32>,
}

impl Rows {
    fn add(&mut self, i: usize, edges: &[u32]) {
        self.targets.extend_from_slice(edges);
        self.positions.push(i as u32);
        self.ends.push(self.targets.len() as u32);
    }
}

fn parse_hex(s: &[u8]) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    s.chunks_exact(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

/// Read the edges of every commit and tree in the pack.
pub fn read_graph(
    pack: &PackFile,
    entries: &Entries<'_>,
    object_limit: u64,
    pool: &rayon::ThreadPool,
) -> Result<Graph> {
    let n = entries.kinds.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for i in 0..n {
        if !wanted(entries.kinds[i]) {
            continue;
        }
        match entries.bases[i] {
            b if b < 0 => roots.push(i),
            b => children[b as usize].push(i as u32),
        }
    }
    let reader = Reader {
        pack,
        e: entries,
        finder: Finder::new(entries.sorted_ids),
        object_limit,
    };
    let families: Vec<Rows> = pool.install(|| {
        roots
            .par_chunks(64)
            .map(|chunk| {
                let mut rows = Rows::default();
                for &r in chunk {
                    reader.family(r, &children, &mut rows)?;
                }
                Ok(rows)
            })
            .collect::<Result<_>>()
    })?;
    drop(children);
    // One copy of the edges: each family's are appended and freed in turn.
    let total = families.iter().map(|r| r.targets.len()).sum();
    let mut graph = Graph {
        lo: vec![0; n],
        hi: vec![0; n],
        targets: Vec::with_capacity(total),
        outside: Vec::new(),
    };
    for rows in families {
        let base = graph.targets.len() as u32;
        let mut from = 0;
        for (&i, &end) in rows.positions.iter().zip(&rows.ends) {
            graph.lo[i as usize] = base + from;
            graph.hi[i as usize] = base + end;
            from = end;
        }
        graph.targets.extend_from_slice(&rows.targets);
        graph.outside.extend_from_slice(&rows.outside);
    }
    Ok(graph)
}
