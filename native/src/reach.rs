//! The commit and tree graph of a pack we just wrote and verified, read from its bytes: for
//! each commit its tree and parents, for each tree the objects it names, as pack positions.
//! This is what the reachability bitmaps (bitmap.rs) are computed from; reading it from the
//! new pack rather than asking Git keeps the bitmap about exactly the pack it describes.
//!
//! Deltas are resolved family by family (a whole object, then its deltas depth first), the
//! families spread over threads; blobs are never read.

use std::rc::Rc;

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

/// Edges as compressed rows over pack positions: `targets[start[i]..start[i + 1]]`. A
/// commit's row is its tree, then its parents.
pub struct Graph {
    pub start: Vec<u32>,
    pub targets: Vec<u32>,
}

impl Graph {
    pub fn edges(&self, i: usize) -> &[u32] {
        &self.targets[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// Why a pack cannot have a bitmap of its own: an object it names is not in it.
#[derive(Debug)]
pub enum GraphError {
    Pack(PackError),
    Outside { from: ObjectId, missing: ObjectId },
}

impl From<PackError> for GraphError {
    fn from(e: PackError) -> Self {
        GraphError::Pack(e)
    }
}

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

type Rows = Vec<(u32, Vec<u32>)>;

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

    fn position(&self, id: &[u8], from: usize) -> std::result::Result<u32, GraphError> {
        let id: ObjectId = id.try_into().expect("20 bytes");
        match self.finder.at(&id) {
            Some(k) => Ok(self.e.sorted_pos[k]),
            None => Err(GraphError::Outside {
                from: self.id_of(from),
                missing: id,
            }),
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

    fn edges(&self, i: usize, data: &[u8]) -> std::result::Result<Vec<u32>, GraphError> {
        let bad = |what: &str| {
            GraphError::Pack(PackError::at(
                self.e.offsets[i],
                format!("{what} in object {}", hex(&self.id_of(i))),
            ))
        };
        let mut out = Vec::new();
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
                out.push(self.position(&id, i)?);
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
                    out.push(self.position(id, i)?);
                }
                rest = &rest[nul + 1 + RAWSZ..];
            }
        }
        Ok(out)
    }

    /// Edges of a whole object and of every delta below it.
    fn family(&self, root: usize, children: &[Vec<u32>]) -> std::result::Result<Rows, GraphError> {
        let mut inflater = Inflater::new();
        let mut buf = Vec::new();
        let mut rows = Vec::new();
        let mut stack: Vec<(usize, Rc<Vec<u8>>)> =
            vec![(root, Rc::new(self.inflate(root, &mut inflater, &mut buf)?))];
        while let Some((i, data)) = stack.pop() {
            rows.push((i as u32, self.edges(i, &data)?));
            for &c in &children[i] {
                let c = c as usize;
                let delta = self.inflate(c, &mut inflater, &mut buf)?;
                let obj = apply_delta(&data, &delta, self.e.offsets[c], self.object_limit)?;
                stack.push((c, Rc::new(obj)));
            }
        }
        Ok(rows)
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
) -> std::result::Result<Graph, GraphError> {
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
            .par_iter()
            .with_max_len(64)
            .map(|&r| reader.family(r, &children))
            .collect::<std::result::Result<_, _>>()
    })?;
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, edges) in families.into_iter().flatten() {
        rows[i as usize] = edges;
    }
    let mut start = Vec::with_capacity(n + 1);
    let mut targets = Vec::new();
    start.push(0u32);
    for row in rows {
        targets.extend(row);
        start.push(targets.len() as u32);
    }
    Ok(Graph { start, targets })
}
