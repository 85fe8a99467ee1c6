//! The commit and tree graph (graph.rs) of a pack we just wrote and verified, read from its
//! bytes: what the bitmaps are computed from when the walk was Git's, which gives no graph.
//!
//! Deltas are resolved family by family (a whole object, then its deltas depth first), the
//! families spread over threads; blobs are never read. Objects are rebuilt by the reader the
//! delta search and the writer use (object_read.rs): in depth-first order a delta's base is
//! the object read just before it, and its cache still holds it.

use rayon::prelude::*;

use std::collections::HashMap;

use crate::bitmap::graph::{Graph, Rows, OUTSIDE};
use crate::error::{PackError, Result};
use crate::pack::entries::Entries;
use crate::pack::entry_header::{HashAlgo, ObjectId, MAX_RAWSZ, OBJ_COMMIT, OBJ_TREE};
use crate::pack::hash::{hex, parse_hex};
use crate::pack::object_read::{Reader, Store};
use crate::pack::sorted_ids::Finder;

/// What one reading task's reader may keep of the objects it rebuilt. On git/git (a bitmap
/// beside a reuse repack, 5 runs): 2 MiB rebuilt chains often enough to cost 12% more CPU,
/// 16 MiB held 28 MiB more at the peak; 8 MiB took 0.97 of the CPU and 0.98 of the peak RSS
/// of the family walk this replaced.
const FAMILY_CACHE: u64 = 8 << 20;

/// The objects of a pack as the graph needs them: its entries (those of the reader's store),
/// and what the writer knows of them.
pub struct Objects<'a> {
    /// The hash of the pack's ids.
    pub algo: HashAlgo,
    pub entries: &'a Entries,
    /// The object's real type.
    pub kinds: &'a [u8],
    /// Ids sorted, the pack position of each, and each pack position's place among them.
    pub sorted_ids: &'a [ObjectId],
    pub sorted_pos: &'a [u32],
    pub index_pos: &'a [u32],
}

fn wanted(kind: u8) -> bool {
    kind == OBJ_COMMIT || kind == OBJ_TREE
}

struct GraphReader<'a> {
    e: &'a Objects<'a>,
    finder: Finder<'a>,
}

impl GraphReader<'_> {
    /// The pack position of `id`, pushed to the chunk being built in `rows`.
    fn position(&self, id: &[u8], rows: &mut Rows) {
        // Tree entries end in a whole id (tree_entry_end checked it): copied, not converted,
        // so that nothing here can panic.
        let mut raw = [0u8; MAX_RAWSZ];
        let rawsz = self.e.algo.rawsz();
        let n = rawsz.min(id.len());
        raw[..n].copy_from_slice(&id[..n]);
        let id = ObjectId::of(self.e.algo, &raw[..rawsz]);
        match self.finder.at(&id) {
            Some(k) => rows.push(self.e.sorted_pos[k]),
            None => rows.push_outside(id),
        }
    }

    fn id_of(&self, pos: usize) -> ObjectId {
        self.e.sorted_ids[self.e.index_pos[pos] as usize]
    }

    /// Whether the tree entries `raw` name exactly `targets` (gitlinks aside).
    fn names_exactly(&self, mut raw: &[u8], targets: &[u32]) -> bool {
        let mut k = 0;
        while let Some(end) = tree_entry_end(raw, self.e.algo.rawsz()) {
            if !raw.starts_with(b"160000 ") {
                match targets.get(k) {
                    Some(&t)
                        if t != OUTSIDE
                            && self.id_of(t as usize)[..]
                                == raw[end - self.e.algo.rawsz()..end] => {}
                    _ => return false,
                }
                k += 1;
            }
            raw = &raw[end..];
        }
        k == targets.len()
    }

    /// Append the edges of entry `i`, whose object is `data`.
    fn edges(&self, i: usize, data: &[u8], rows: &mut Rows, seen: &mut Interner) -> Result<()> {
        let bad = |what: &str| {
            PackError::at(
                self.e.entries.offsets[i],
                format!("{what} in object {}", hex(&self.id_of(i))),
            )
        };
        if self.e.kinds[i] == OBJ_COMMIT {
            let mut rest = data;
            let mut first = true;
            loop {
                let key: &[u8] = if first { b"tree " } else { b"parent " };
                let Some(line) = rest.strip_prefix(key) else {
                    break;
                };
                let id = line
                    .get(..2 * self.e.algo.rawsz())
                    .and_then(|hex| parse_hex(self.e.algo, hex))
                    .filter(|_| line.get(2 * self.e.algo.rawsz()) == Some(&b'\n'))
                    .ok_or_else(|| bad("malformed commit header"))?;
                self.position(&id, rows);
                rest = &line[2 * self.e.algo.rawsz() + 1..];
                first = false;
            }
            if first {
                return Err(bad("commit without a tree line"));
            }
            let c = rows.close_chunk();
            rows.refer(c);
        } else {
            let mut at = 0;
            let mut from = 0;
            let mut count = 0;
            let mut key = 0u64;
            while at < data.len() {
                let end = tree_entry_end(&data[at..], self.e.algo.rawsz())
                    .ok_or_else(|| bad("malformed tree entry"))?;
                let id = &data[at + end - self.e.algo.rawsz()..at + end];
                let mut first = [0u8; 8];
                first.copy_from_slice(&id[..8]);
                key = key.rotate_left(7) ^ u64::from_le_bytes(first);
                at += end;
                count += 1;
                if id[0] & 0xf8 == 0 || count == 64 || at == data.len() {
                    let raw = &data[from..at];
                    let known = seen.candidates(key).iter().copied();
                    let c = match known
                        .into_iter()
                        .find(|&c| self.names_exactly(raw, rows.chunk(c)))
                    {
                        Some(c) => c,
                        None => {
                            self.chunk_targets(raw, rows);
                            // A chunk naming a missing object cannot be checked by id later.
                            let shared = !rows.open_chunk_outside();
                            let c = rows.close_chunk();
                            if shared {
                                seen.add(key, c);
                            }
                            c
                        }
                    };
                    rows.refer(c);
                    (from, count, key) = (at, 0, 0);
                }
            }
        }
        rows.end_object(i as u32);
        Ok(())
    }

    /// The targets of a run of whole tree entries, appended to the chunk being built.
    fn chunk_targets(&self, mut raw: &[u8], rows: &mut Rows) {
        while let Some(end) = tree_entry_end(raw, self.e.algo.rawsz()) {
            // A submodule's commit lives in another repository.
            if !raw.starts_with(b"160000 ") {
                self.position(&raw[end - self.e.algo.rawsz()..end], rows);
            }
            raw = &raw[end..];
        }
    }

    /// Edges of a whole object and of every delta below it, appended to `out`. Depth first,
    /// one child at a time: a child's base is the object read just before it or one of its
    /// ancestors, all recently used in `reader`'s cache.
    fn family(
        &self,
        root: usize,
        children: &[Vec<u32>],
        reader: &mut Reader<'_>,
        out: &mut Rows,
    ) -> Result<()> {
        let mut seen = Interner::default();
        let data = reader.read_entry(0, root)?;
        self.edges(root, &data, out, &mut seen)?;
        // (entry, how many of its children are done)
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (i, next) = *top;
            let Some(&c) = children[i].get(next) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            let c = c as usize;
            let obj = reader.read_entry(0, c)?;
            self.edges(c, &obj, out, &mut seen)?;
            stack.push((c, 0));
        }
        Ok(())
    }
}

/// Where a tree entry starting `rest` ends ("MODE NAME\0" and an id of `rawsz` bytes), if whole.
fn tree_entry_end(rest: &[u8], rawsz: usize) -> Option<usize> {
    let sp = rest.iter().position(|&b| b == b' ')?;
    let nul = sp + rest[sp..].iter().position(|&b| b == 0)?;
    (rest.len() >= nul + 1 + rawsz).then_some(nul + 1 + rawsz)
}

/// Read the edges of every commit and tree in the pack, whose objects `store` (its one pack)
/// reads.
pub fn read_graph(store: &Store, objects: &Objects<'_>, pool: &rayon::ThreadPool) -> Result<Graph> {
    let n = objects.kinds.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for i in 0..n {
        if !wanted(objects.kinds[i]) {
            continue;
        }
        match objects.entries.bases[i] {
            b if b < 0 => roots.push(i),
            b => children[b as usize].push(i as u32),
        }
    }
    let graph_reader = GraphReader {
        e: objects,
        finder: Finder::new(objects.sorted_ids),
    };
    let families: Vec<Rows> = pool.install(|| {
        roots
            .par_chunks(64)
            .map(|chunk| {
                let mut rows = Rows::default();
                let mut reader = Reader::new(store, FAMILY_CACHE);
                for &r in chunk {
                    graph_reader.family(r, &children, &mut reader, &mut rows)?;
                }
                rows.shrink();
                Ok(rows)
            })
            .collect::<Result<_>>()
    })?;
    drop(children);
    Ok(Graph::from_parts(n, families, objects.algo))
}

/// The tree chunks met in one delta family, by a key mixed from their ids.
#[derive(Default)]
struct Interner {
    by_key: HashMap<u64, Vec<u32>>,
}

impl Interner {
    fn candidates(&self, key: u64) -> &[u32] {
        self.by_key.get(&key).map_or(&[], Vec::as_slice)
    }

    fn add(&mut self, key: u64, c: u32) {
        self.by_key.entry(key).or_default().push(c);
    }
}
