//! The commit and tree graph the reachability bitmaps are computed from, over pack positions:
//! for each commit its tree and parents, for each tree the objects it names. Two places fill
//! it: the walk, as it reads each commit and tree (walk/edges.rs), and, when the walk was
//! Git's, a reading of the new pack itself (reach.rs).

use crate::pack::entry_header::{HashAlgo, ObjectId};

/// Edges over pack positions, in chunks that many objects share: object `i` names, in order,
/// the targets of its chunks (`chunks(i)`). A commit names its tree, then its parents.
///
/// Successive versions of a directory differ in a few entries, and a large repository's trees
/// name tens of millions of objects (git/git: 2.6 GB of trees, ~64 million entries): stored
/// once per tree, the edges alone would outweigh the rest of a repack. A tree's entries are
/// cut into chunks at entries chosen by what they name alone (or after 64 entries), so a
/// change leaves the chunks around it identical to the previous version's, and a chunk met
/// again is stored once.
pub struct Graph {
    /// Which part holds object `i`'s edges (NOT_RECORDED if none does), and where in that
    /// part's `refs`.
    part: Vec<u32>,
    lo: Vec<u32>,
    hi: Vec<u32>,
    /// What each reading task produced, kept as it is (copying it into one store would hold
    /// it twice at the peak).
    parts: Vec<Rows>,
    /// The hash of the ids it names.
    algo: HashAlgo,
}

/// A chunk: (part, number within the part).
pub type ChunkId = (u32, u32);

/// The target of an edge to an object the pack does not hold (a promised object of a partial
/// clone, one a .keep pack holds, or one named only by unreachable objects): harmless unless
/// a bitmap's walk meets it.
pub const OUTSIDE: u32 = u32::MAX;

const NOT_RECORDED: u32 = u32::MAX;

impl Graph {
    /// The graph of `n` objects whose edges `parts` hold (an object in two parts has the
    /// last one's; they are the same; one at OUTSIDE is left out).
    pub fn from_parts(n: usize, mut parts: Vec<Rows>, algo: HashAlgo) -> Graph {
        let mut part = vec![NOT_RECORDED; n];
        let (mut lo, mut hi) = (vec![0; n], vec![0; n]);
        for (p, rows) in parts.iter_mut().enumerate() {
            let mut from = 0;
            for (&i, &end) in rows.positions.iter().zip(&rows.ends) {
                if i != OUTSIDE {
                    part[i as usize] = p as u32;
                    lo[i as usize] = from;
                    hi[i as usize] = end;
                }
                from = end;
            }
            rows.positions = Vec::new();
            rows.ends = Vec::new();
        }
        Graph {
            part,
            lo,
            hi,
            parts,
            algo,
        }
    }

    /// Whether object `i`'s edges were read (every commit and tree whose are needed must be).
    pub fn recorded(&self, i: usize) -> bool {
        self.part[i] != NOT_RECORDED
    }

    /// The chunks of object `i`'s edges, in order (none if not recorded).
    pub fn chunks(&self, i: usize) -> impl Iterator<Item = (ChunkId, &[u32])> + '_ {
        let part = self.part[i];
        let refs = match self.parts.get(part as usize) {
            Some(rows) => &rows.refs[self.lo[i] as usize..self.hi[i] as usize],
            None => &[],
        };
        refs.iter()
            .map(move |&c| ((part, c), self.parts[part as usize].chunk(c)))
    }

    /// Object `i`'s edges, in order.
    pub fn edges(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        self.chunks(i)
            .flat_map(|(_, targets)| targets.iter().copied())
    }

    /// The id behind an OUTSIDE target of chunk `c`.
    pub fn missing_in(&self, c: ChunkId) -> ObjectId {
        self.parts[c.0 as usize]
            .outside
            .iter()
            .find(|&&(k, _)| k == c.1)
            .map_or(ObjectId::null(self.algo), |&(_, id)| id)
    }

    /// Edge targets stored, and edges named (with repeats), for reports and tests.
    pub fn sizes(&self) -> (usize, usize) {
        let stored = self.parts.iter().map(|p| p.data.len()).sum();
        let named = self
            .parts
            .iter()
            .map(|p| p.refs.iter().map(|&c| p.chunk(c).len()).sum::<usize>())
            .sum();
        (stored, named)
    }
}

/// The edges read by one task: object `positions[k]` names the chunks
/// `refs[ends[k - 1]..ends[k]]`; chunk `c` (numbered within the task) is
/// `data[chunk_ends[c - 1]..chunk_ends[c]]`, and `outside` names the objects behind its
/// OUTSIDE targets.
#[derive(Default)]
pub struct Rows {
    pub(crate) positions: Vec<u32>,
    ends: Vec<u32>,
    refs: Vec<u32>,
    chunk_ends: Vec<u32>,
    pub(crate) data: Vec<u32>,
    pub(crate) outside: Vec<(u32, ObjectId)>,
}

impl Rows {
    /// Give back the room vectors grew into (up to half of what they hold).
    pub fn shrink(&mut self) {
        self.refs.shrink_to_fit();
        self.chunk_ends.shrink_to_fit();
        self.data.shrink_to_fit();
        self.outside.shrink_to_fit();
    }

    pub fn chunk(&self, c: u32) -> &[u32] {
        let from = if c == 0 {
            0
        } else {
            self.chunk_ends[c as usize - 1]
        };
        &self.data[from as usize..self.chunk_ends[c as usize] as usize]
    }

    /// A target of the chunk being built.
    pub fn push(&mut self, target: u32) {
        self.data.push(target);
    }

    /// The object behind the OUTSIDE target just pushed.
    pub fn push_outside(&mut self, id: ObjectId) {
        self.data.push(OUTSIDE);
        self.outside.push((self.chunk_ends.len() as u32, id));
    }

    /// Where the chunk being built starts in `data`.
    fn open_from(&self) -> usize {
        self.chunk_ends.last().map_or(0, |&e| e as usize)
    }

    /// The targets pushed since the last chunk ended.
    pub fn open_chunk(&self) -> &[u32] {
        &self.data[self.open_from()..]
    }

    /// Whether the chunk being built names an object outside (it cannot be shared: its
    /// missing ids are kept by chunk).
    pub fn open_chunk_outside(&self) -> bool {
        self.outside
            .last()
            .is_some_and(|&(c, _)| c as usize == self.chunk_ends.len())
    }

    /// Drop the chunk being built (an equal one is stored already).
    pub fn discard_chunk(&mut self) {
        self.data.truncate(self.open_from());
    }

    /// End the chunk whose targets were just pushed; its number.
    pub fn close_chunk(&mut self) -> u32 {
        self.chunk_ends.push(self.data.len() as u32);
        (self.chunk_ends.len() - 1) as u32
    }

    /// Every object and target renamed by `to` (OUTSIDE: one the graph leaves out); a target
    /// left out becomes OUTSIDE, `id_of` naming it.
    pub fn map_targets(&mut self, to: impl Fn(u32) -> u32, id_of: impl Fn(u32) -> ObjectId) {
        let mut from = 0;
        for (c, &end) in self.chunk_ends.iter().enumerate() {
            for t in &mut self.data[from as usize..end as usize] {
                if *t == OUTSIDE {
                    continue;
                }
                let mapped = to(*t);
                if mapped == OUTSIDE {
                    self.outside.push((c as u32, id_of(*t)));
                }
                *t = mapped;
            }
            from = end;
        }
        for i in &mut self.positions {
            *i = to(*i);
        }
    }

    /// The object whose chunks follow names chunk `c` next.
    pub fn refer(&mut self, c: u32) {
        self.refs.push(c);
    }

    /// Object `i`'s chunks are the ones referred to since the last object ended.
    pub fn end_object(&mut self, i: u32) {
        self.positions.push(i);
        self.ends.push(self.refs.len() as u32);
    }
}
