//! Objects of the indexed pack read again by entry once every id is known: for the checks
//! that need an object after the passes (a `.gitmodules` blob a tree names, or an object too
//! large to be held when it was hashed), through the shared chain decoder.

use crate::error::{PackError, Result};
use crate::index::resolve::inflate_entry;
use crate::index::table::Table;
use crate::pack::delta_chain::{decode, ChainLinks, ChainStats, NoCache, Object};
use crate::pack::entry_header::{parse_header, BaseRef, ObjectId, MAX_HEADER_LEN};
use crate::pack::source::PackFile;

pub struct Entries<'a> {
    pack: &'a PackFile,
    table: &'a Table,
    object_limit: u64,
    /// Entries sorted by id, for REF_DELTA bases.
    by_id: Vec<u32>,
}

impl<'a> Entries<'a> {
    pub fn new(pack: &'a PackFile, table: &'a Table, object_limit: u64) -> Self {
        let mut by_id: Vec<u32> = (0..table.len() as u32).collect();
        by_id.sort_unstable_by(|&a, &b| table.oids.raw(a as usize).cmp(table.oids.raw(b as usize)));
        Entries {
            pack,
            table,
            object_limit,
            by_id,
        }
    }

    /// The entry holding object `id`, if the pack has it.
    pub fn find(&self, id: &ObjectId) -> Option<u32> {
        let at = self
            .by_id
            .binary_search_by(|&i| self.table.oids.raw(i as usize).cmp(id))
            .ok()?;
        Some(self.by_id[at])
    }

    /// An object the pack holds twice, if any.
    pub fn duplicate(&self) -> Option<ObjectId> {
        let oids = &self.table.oids;
        self.by_id
            .windows(2)
            .find(|w| oids.raw(w[0] as usize) == oids.raw(w[1] as usize))
            .map(|w| oids.get(w[0] as usize))
    }

    /// Entry `entry`'s object.
    pub fn read(&mut self, entry: u32) -> Result<Object> {
        decode(self, &mut NoCache, entry, &mut ChainStats::default())
    }
}

impl ChainLinks for Entries<'_> {
    type Link = u32;

    fn base(&self, &i: &u32) -> Result<Option<u32>> {
        let offset = self.table.entries.offsets[i as usize];
        let mut head = [0u8; MAX_HEADER_LEN];
        let n = self.pack.read_upto(&mut head, offset, self.pack.len)?;
        let h = parse_header(&head[..n], offset, self.pack.algo)?
            .ok_or_else(|| PackError::at(offset, "entry header is cut off"))?;
        let missing = || PackError::at(offset, "delta base is not in the pack");
        match h.base {
            BaseRef::Offset(b) => {
                let at = self
                    .table
                    .entries
                    .offsets
                    .binary_search(&b)
                    .map_err(|_| missing())?;
                Ok(Some(at as u32))
            }
            BaseRef::Id(id) => self.find(&id).map(Some).ok_or_else(missing),
            BaseRef::None => Ok(None),
        }
    }

    fn inflate(&mut self, &i: &u32, out: &mut Vec<u8>) -> Result<()> {
        inflate_entry(self.pack, self.table, self.object_limit, i as usize, out)
    }

    fn offset(&self, &i: &u32) -> u64 {
        self.table.entries.offsets[i as usize]
    }

    fn object_limit(&self) -> u64 {
        self.object_limit
    }

    fn max_chain(&self) -> usize {
        self.table.len() + 1
    }

    fn cycle(&self, &start: &u32) -> PackError {
        PackError::at(self.offset(&start), "delta chain loops")
    }
}
