//! The commit and tree graph the walk records as it reads each commit and tree, so that the
//! bitmap of the pack a repack writes is computed without reading a commit or tree again
//! (bitmap/graph.rs has the form; bitmap/reach.rs reads it from a pack when Git walked).
//!
//! Edges are recorded as object numbers (numbers.rs) and turned into pack positions once the
//! pack is written. A tree's entries come as the walk met them, those it passed over unread
//! included (they carry the numbers of the tree they were copies of), so recording costs no
//! look-up. Chunks are cut where an entry's number chooses (or after 64 entries), and a chunk
//! met again anywhere in the walk is stored once: a directory's versions share most chunks.

use std::collections::HashMap;
use std::sync::Arc;

use crate::bitmap::graph::{Graph, Rows, OUTSIDE};
use crate::error::Result;
use crate::pack::entry_header::{HashAlgo, ObjectId};
use crate::walk::numbers::{Numbering, GITLINK, MISSING};
use crate::walk::objects::{tree_entry_at, TreeEntries};

/// The most entries in one chunk.
const CHUNK_ENTRIES: usize = 64;

/// One walker's record.
#[derive(Default)]
pub struct EdgeRecorder {
    rows: Rows,
    /// Chunks stored, by a key mixed from their targets (one chunk a key: two different
    /// chunks with one key, which takes a 64-bit collision, are both stored whole).
    chunks: HashMap<u64, u32>,
}

fn mix(n: u32) -> u64 {
    u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl EdgeRecorder {
    /// Commit `number`'s tree and parents, each a number or, when the repository lacks
    /// it, its id.
    pub fn commit(&mut self, number: u32, targets: impl Iterator<Item = (Option<u32>, ObjectId)>) {
        for (n, id) in targets {
            match n {
                Some(n) => self.rows.push(n),
                None => self.rows.push_outside(id),
            }
        }
        let c = self.rows.close_chunk();
        self.rows.refer(c);
        self.rows.end_object(number);
    }

    /// Tree `number` (id `id`), whose `entries` were all met; its data is read only for the
    /// ids of entries the repository lacks.
    pub fn tree(
        &mut self,
        number: u32,
        id: &ObjectId,
        data: &[u8],
        entries: &TreeEntries,
    ) -> Result<()> {
        let (mut key, mut count) = (0u64, 0);
        for (&start, &n) in entries.starts.iter().zip(&entries.numbers) {
            match n {
                GITLINK => continue,
                MISSING => {
                    let (entry, _) =
                        tree_entry_at(id, data, start as usize)?.expect("an entry starts there");
                    self.rows.push_outside(ObjectId::of(id.algo(), entry.id));
                }
                n => self.rows.push(n),
            }
            key = key.rotate_left(7) ^ mix(n);
            count += 1;
            if mix(n) >> 59 == 0 || count == CHUNK_ENTRIES {
                self.close(key);
                (key, count) = (0, 0);
            }
        }
        if count > 0 {
            self.close(key);
        }
        self.rows.end_object(number);
        Ok(())
    }

    /// End the chunk being built: the stored one it equals, or a new one.
    fn close(&mut self, key: u64) {
        if self.rows.open_chunk_outside() {
            let c = self.rows.close_chunk();
            self.rows.refer(c);
            return;
        }
        if let Some(&c) = self.chunks.get(&key) {
            if self.rows.chunk(c) == self.rows.open_chunk() {
                self.rows.discard_chunk();
                self.rows.refer(c);
                return;
            }
        }
        let c = self.rows.close_chunk();
        self.chunks.entry(key).or_insert(c);
        self.rows.refer(c);
    }

    pub fn finish(mut self) -> Rows {
        self.rows.shrink();
        self.rows
    }
}

/// What a walk recorded: its walkers' records, and the numbering they use.
pub struct WalkGraph {
    pub parts: Vec<Rows>,
    pub numbering: Arc<Numbering>,
    pub algo: HashAlgo,
}

impl WalkGraph {
    /// The graph over the positions of a pack whose objects are `pack_ids`, in pack order.
    /// An edge to an object the pack lacks becomes OUTSIDE, with its id.
    pub fn into_graph(mut self, pack_ids: &[ObjectId]) -> Graph {
        let numbering = &self.numbering;
        let mut position = vec![OUTSIDE; numbering.objects()];
        for (p, id) in pack_ids.iter().enumerate() {
            if let Some(n) = numbering.number(id) {
                position[n as usize] = p as u32;
            }
        }
        for rows in &mut self.parts {
            rows.map_targets(|n| position[n as usize], |n| *numbering.id_of(n));
        }
        Graph::from_parts(pack_ids.len(), self.parts, self.algo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitmap::file::{self, BitmapError, Input};
    use crate::pack::entry_header::{OBJ_BLOB, OBJ_COMMIT, OBJ_TREE};

    fn id(n: u8) -> ObjectId {
        ObjectId::of(HashAlgo::Sha1, &[n; 20])
    }

    /// A tree's data and entries naming `named` (number, id byte), gitlinks where the
    /// number is GITLINK.
    fn tree(named: &[(u32, u8)]) -> (Vec<u8>, TreeEntries) {
        let (mut data, mut entries) = (Vec::new(), TreeEntries::default());
        for (k, &(n, b)) in named.iter().enumerate() {
            entries.push(data.len() as u32, n);
            let mode = if n == GITLINK { "160000" } else { "100644" };
            data.extend(format!("{mode} f{k}\0").bytes());
            data.extend([b; 20]);
        }
        (data, entries)
    }

    fn numbering(ids: Vec<ObjectId>) -> Arc<Numbering> {
        Arc::new(Numbering::new(Arc::new(Vec::new()), ids).unwrap())
    }

    #[test]
    fn a_chunk_met_again_is_stored_once() {
        let mut rec = EdgeRecorder::default();
        let named: Vec<(u32, u8)> = (0..200).map(|n| (n, 0)).collect();
        let (data, entries) = tree(&named);
        rec.tree(1000, &id(9), &data, &entries).unwrap();
        rec.tree(1001, &id(8), &data, &entries).unwrap();
        let rows = rec.finish();
        assert_eq!(rows.data.len(), 200);
        let graph = Graph::from_parts(1002, vec![rows], HashAlgo::Sha1);
        let first: Vec<u32> = graph.edges(1000).collect();
        assert_eq!(first, (0..200).collect::<Vec<_>>());
        assert_eq!(graph.edges(1001).collect::<Vec<_>>(), first);
        assert!(graph.recorded(1000) && !graph.recorded(999));
    }

    #[test]
    fn gitlinks_are_left_out_and_missing_objects_named_by_id() {
        let mut rec = EdgeRecorder::default();
        let (data, entries) = tree(&[(0, 1), (GITLINK, 2), (MISSING, 3), (1, 4)]);
        rec.tree(5, &id(9), &data, &entries).unwrap();
        let graph = Graph::from_parts(6, vec![rec.finish()], HashAlgo::Sha1);
        let chunks: Vec<_> = graph.chunks(5).collect();
        let targets: Vec<u32> = chunks.iter().flat_map(|(_, t)| t.iter().copied()).collect();
        assert_eq!(targets, vec![0, OUTSIDE, 1]);
        let (outside_chunk, _) = chunks.iter().find(|(_, t)| t.contains(&OUTSIDE)).unwrap();
        assert_eq!(graph.missing_in(*outside_chunk), id(3));
    }

    /// A commit (number 0) naming its tree (1), which names a blob (2) and a subtree (3)
    /// naming another blob (4); the pack holds them in another order, and lacks the last blob
    /// when `lacking`.
    fn recorded(lacking: bool) -> (Graph, Vec<u8>) {
        let ids: Vec<ObjectId> = (10..15).map(id).collect();
        let mut rec = EdgeRecorder::default();
        rec.commit(0, [(Some(1), ids[1])].into_iter());
        let (data, entries) = tree(&[(2, 12), (3, 13)]);
        rec.tree(1, &ids[1], &data, &entries).unwrap();
        let (data, entries) = tree(&[(4, 14)]);
        rec.tree(3, &ids[3], &data, &entries).unwrap();
        let walked = WalkGraph {
            parts: vec![rec.finish()],
            numbering: numbering(ids.clone()),
            algo: HashAlgo::Sha1,
        };
        // Pack order: commit, tree, subtree, blobs.
        let mut pack = vec![ids[0], ids[1], ids[3], ids[2]];
        let mut kinds = vec![OBJ_COMMIT, OBJ_TREE, OBJ_TREE, OBJ_BLOB];
        if !lacking {
            pack.push(ids[4]);
            kinds.push(OBJ_BLOB);
        }
        (walked.into_graph(&pack), kinds)
    }

    fn bitmap(
        graph: &Graph,
        kinds: &[u8],
    ) -> std::result::Result<(Vec<u8>, file::Stats), BitmapError> {
        let n = kinds.len();
        let index_pos: Vec<u32> = (0..n as u32).collect();
        file::write(&Input {
            kinds,
            graph,
            selected: &[0],
            index_pos: &index_pos,
            name_hashes: &vec![0; n],
            hash_cache: false,
            pack_checksum: &id(1),
        })
    }

    #[test]
    fn the_graph_is_turned_into_pack_positions() {
        let (graph, kinds) = recorded(false);
        assert_eq!(graph.edges(0).collect::<Vec<_>>(), vec![1]);
        assert_eq!(graph.edges(1).collect::<Vec<_>>(), vec![3, 2]);
        assert_eq!(graph.edges(2).collect::<Vec<_>>(), vec![4]);
        assert!(bitmap(&graph, &kinds).is_ok());
    }

    #[test]
    fn an_object_the_pack_lacks_is_outside_with_its_id() {
        let (graph, kinds) = recorded(true);
        match bitmap(&graph, &kinds) {
            Err(BitmapError::Outside(from, missing)) => {
                assert_eq!((from, missing), (2, id(14)));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_tree_the_walk_did_not_record_is_reported_not_guessed() {
        let (graph, mut kinds) = recorded(false);
        // A pack with one more tree that the first tree does not name but whose position the
        // commit now reaches: made by renaming the blob at position 3 a tree.
        kinds[3] = OBJ_TREE;
        match bitmap(&graph, &kinds) {
            Err(BitmapError::Unrecorded(at)) => assert_eq!(at, 3),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
