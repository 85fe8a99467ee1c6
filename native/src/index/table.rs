//! The indexer's table of one pack, struct-of-arrays in pack (offset) order: about 60 bytes
//! an entry, so ten million entries stay well under a gigabyte.

use crate::error::{PackError, Result};
use crate::pack::entries::Entries;
use crate::pack::entry_header::{
    is_delta, BaseRef, EntryHeader, HashAlgo, ObjectId, OBJ_OFS_DELTA, OBJ_REF_DELTA,
};
use crate::pack::object_id::IdColumn;

/// A pack being indexed: its entries (filled while scanning; `entries.bases` stays empty, the
/// bases are kept as below until the delta forest is built) and what indexing finds out.
#[derive(Default)]
pub struct Table {
    pub entries: Entries,
    /// For OFS_DELTA entries the absolute offset of the base entry, else 0. Emptied once the
    /// delta forest is built from it (see resolve::Forest), to save 8 bytes an entry.
    pub ofs_bases: Vec<u64>,
    /// For REF_DELTA entries: (base id, entry index).
    pub ref_bases: Vec<(ObjectId, u32)>,
    /// Object ids: known after pass 1 for whole objects, after resolution for deltas.
    pub oids: IdColumn,
    /// The object's type once known (1-4), 0 while unresolved.
    pub real_kinds: Vec<u8>,
    /// When asked for: each delta's base entry as resolved (u32::MAX for a whole object).
    pub shape: Vec<u32>,
}

impl Table {
    /// An empty table of a pack whose ids are of `algo`.
    pub fn new(algo: HashAlgo) -> Self {
        Table {
            oids: IdColumn::new(algo),
            ..Table::default()
        }
    }

    /// The entry at `offset` scanned: its header, the CRC32 of its bytes, and its id when
    /// it is a whole object (deltas get theirs once resolved).
    pub fn push_entry(&mut self, offset: u64, h: &EntryHeader, crc: u32, oid: Option<ObjectId>) {
        let idx = self.len() as u32;
        self.entries.offsets.push(offset);
        self.entries.kinds.push(h.kind);
        self.entries.header_lens.push(h.header_len as u8);
        self.entries.sizes.push(h.size);
        self.entries.crcs.push(crc);
        self.ofs_bases.push(match h.base {
            BaseRef::Offset(b) => b,
            _ => 0,
        });
        if let BaseRef::Id(id) = h.base {
            self.ref_bases.push((id, idx));
        }
        let algo = self.oids.algo();
        self.oids.push(&oid.unwrap_or(ObjectId::null(algo)));
        self.real_kinds
            .push(if is_delta(h.kind) { 0 } else { h.kind });
    }

    /// With the shape recorded: each entry's delta depth (0 for a whole object).
    pub fn delta_depths(&self) -> Vec<u32> {
        let mut depth = vec![u32::MAX; self.shape.len()];
        for start in 0..self.shape.len() {
            // Down the chain to an entry whose depth is known, then back up.
            let mut chain = Vec::new();
            let mut at = start;
            while depth[at] == u32::MAX {
                match self.shape[at] {
                    u32::MAX => depth[at] = 0,
                    base => {
                        chain.push(at);
                        at = base as usize;
                    }
                }
            }
            while let Some(i) = chain.pop() {
                depth[i] = depth[at] + 1;
                at = i;
            }
        }
        depth
    }

    pub fn len(&self) -> usize {
        self.entries.offsets.len()
    }

    /// Entries the rows have room for without growing.
    pub fn capacity(&self) -> usize {
        self.entries.offsets.capacity()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.offsets.is_empty()
    }

    /// Room for the `count` entries a pack's header announces, as far as a header can be
    /// believed before its entries arrive (a hostile one may claim four billion): a row
    /// grown by doubling wastes up to half its room, which the strict run's peak shows.
    pub fn expect(&mut self, count: u32) {
        self.reserve((count as usize).min(1 << 20));
    }

    pub fn reserve(&mut self, n: usize) {
        self.entries.offsets.reserve_exact(n);
        self.entries.kinds.reserve_exact(n);
        self.entries.header_lens.reserve_exact(n);
        self.entries.sizes.reserve_exact(n);
        self.entries.crcs.reserve_exact(n);
        self.ofs_bases.reserve_exact(n);
        self.oids.reserve_exact(n);
        self.real_kinds.reserve_exact(n);
    }

    pub fn delta_count(&self) -> usize {
        self.entries.kinds.iter().filter(|&&k| is_delta(k)).count()
    }

    /// Append the entries `from..` of `other` (a region scanned by another thread).
    pub fn append_from(&mut self, other: &Table, from: usize) {
        let base = self.len() as u32;
        self.entries
            .offsets
            .extend_from_slice(&other.entries.offsets[from..]);
        self.entries
            .kinds
            .extend_from_slice(&other.entries.kinds[from..]);
        self.entries
            .header_lens
            .extend_from_slice(&other.entries.header_lens[from..]);
        self.entries
            .sizes
            .extend_from_slice(&other.entries.sizes[from..]);
        self.entries
            .crcs
            .extend_from_slice(&other.entries.crcs[from..]);
        self.ofs_bases.extend_from_slice(&other.ofs_bases[from..]);
        self.oids.extend_from(&other.oids, from);
        self.real_kinds.extend_from_slice(&other.real_kinds[from..]);
        for &(id, idx) in &other.ref_bases {
            if idx as usize >= from {
                self.ref_bases.push((id, idx - from as u32 + base));
            }
        }
    }

    /// Keep only the first `n` entries.
    pub fn truncate(&mut self, n: usize) {
        self.entries.offsets.truncate(n);
        self.entries.kinds.truncate(n);
        self.entries.header_lens.truncate(n);
        self.entries.sizes.truncate(n);
        self.entries.crcs.truncate(n);
        self.ofs_bases.truncate(n);
        self.oids.truncate(n);
        self.real_kinds.truncate(n);
        self.ref_bases.retain(|&(_, i)| (i as usize) < n);
    }

    /// For each OFS_DELTA, the index of its base entry, as children lists (CSR): the deltas
    /// based on entry `i` are `list[start[i]..start[i+1]]`, in pack order. Also each entry's
    /// weight: the entries of its OFS subtree, itself included (a base precedes its deltas,
    /// so one sweep from the end adds each subtree into its base).
    pub fn ofs_children(&self) -> Result<(Vec<u32>, Vec<u32>, Vec<u32>)> {
        let n = self.len();
        let mut base_of = vec![u32::MAX; n];
        for (i, slot) in base_of.iter_mut().enumerate() {
            if self.entries.kinds[i] == OBJ_OFS_DELTA {
                let b = self.ofs_bases[i];
                match self.entries.offsets[..i].binary_search(&b) {
                    Ok(k) => *slot = k as u32,
                    Err(_) => {
                        return Err(PackError::at(
                            self.entries.offsets[i],
                            format!("delta base offset {b} is not the start of an entry"),
                        ))
                    }
                }
            }
        }
        let mut start = vec![0u32; n + 1];
        for &b in &base_of {
            if b != u32::MAX {
                start[b as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[n] as usize];
        for (i, &b) in base_of.iter().enumerate() {
            if b != u32::MAX {
                list[fill[b as usize] as usize] = i as u32;
                fill[b as usize] += 1;
            }
        }
        let mut weight = vec![1u32; n];
        for i in (0..n).rev() {
            if base_of[i] != u32::MAX {
                weight[base_of[i] as usize] += weight[i];
            }
        }
        Ok((start, list, weight))
    }

    /// REF_DELTA entries sorted by base id (then pack order), for lookup by a resolved id.
    pub fn sorted_ref_bases(&self) -> Vec<(ObjectId, u32)> {
        let mut v = self.ref_bases.clone();
        v.sort_unstable();
        v
    }

    pub fn is_ref_delta(&self, i: usize) -> bool {
        self.entries.kinds[i] == OBJ_REF_DELTA
    }
}

/// The REF_DELTA entries waiting for the object `id`.
pub fn ref_children<'a>(sorted: &'a [(ObjectId, u32)], id: &ObjectId) -> &'a [(ObjectId, u32)] {
    let lo = sorted.partition_point(|(b, _)| b < id);
    let hi = lo + sorted[lo..].partition_point(|(b, _)| b == id);
    &sorted[lo..hi]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::entry_header::OBJ_BLOB;

    fn entry(kind: u8, base: BaseRef) -> EntryHeader {
        EntryHeader {
            kind,
            size: 10,
            header_len: 2,
            base,
        }
    }

    /// A whole blob at 12 with a chain 12 <- 40 <- 60 and a leaf 12 <- 80, then a whole blob
    /// at 100 with one delta 100 <- 120.
    fn forest_table() -> Table {
        let mut t = Table::new(HashAlgo::Sha1);
        let whole = Some(ObjectId::null(HashAlgo::Sha1));
        t.push_entry(12, &entry(OBJ_BLOB, BaseRef::None), 0, whole);
        t.push_entry(40, &entry(OBJ_OFS_DELTA, BaseRef::Offset(12)), 0, None);
        t.push_entry(60, &entry(OBJ_OFS_DELTA, BaseRef::Offset(40)), 0, None);
        t.push_entry(80, &entry(OBJ_OFS_DELTA, BaseRef::Offset(12)), 0, None);
        t.push_entry(100, &entry(OBJ_BLOB, BaseRef::None), 0, whole);
        t.push_entry(120, &entry(OBJ_OFS_DELTA, BaseRef::Offset(100)), 0, None);
        t
    }

    #[test]
    fn ofs_children_lists_each_base_s_deltas_and_weighs_subtrees() {
        let (start, list, weight) = forest_table().ofs_children().unwrap();
        let children = |i: usize| list[start[i] as usize..start[i + 1] as usize].to_vec();
        assert_eq!(children(0), vec![1, 3]);
        assert_eq!(children(1), vec![2]);
        assert_eq!(children(4), vec![5]);
        assert!(children(2).is_empty() && children(3).is_empty() && children(5).is_empty());
        // Each entry's OFS subtree, itself included.
        assert_eq!(weight, vec![4, 2, 1, 1, 2, 1]);
    }

    #[test]
    fn an_ofs_base_between_entries_is_an_error_at_the_delta() {
        let mut t = forest_table();
        t.push_entry(140, &entry(OBJ_OFS_DELTA, BaseRef::Offset(50)), 0, None);
        let e = t.ofs_children().unwrap_err();
        assert_eq!(e.offset, Some(140));
    }
}
