//! The entries of one pack, struct-of-arrays in pack (offset) order: the one shape shared by
//! the indexer (which fills it while scanning a pack, table.rs adding what indexing finds
//! out), the writer that copies from existing packs, the object reader (object_read.rs) and
//! the bitmap's graph read. Reading and inflating one entry of an open pack is done here, once.

use std::path::PathBuf;

use crate::error::{PackError, Result};
use crate::pack::inflate::Inflater;
use crate::pack::source::PackFile;

#[derive(Default)]
pub struct Entries {
    pub offsets: Vec<u64>,
    /// Entry type as stored (1-4, 6 OFS_DELTA, 7 REF_DELTA).
    pub kinds: Vec<u8>,
    pub header_lens: Vec<u8>,
    /// Inflated size of what the entry stores (the object, or its delta).
    pub sizes: Vec<u64>,
    /// CRC32 of each raw entry; empty when unknown (a v1 index has none; then the final
    /// verification of a new pack is what catches a corrupt source).
    pub crcs: Vec<u32>,
    /// Pack position of each entry's delta base, -1 for whole objects; empty while the
    /// indexer has not yet resolved bases (it keeps them as offsets and ids, see table.rs).
    pub bases: Vec<i64>,
    /// End of the last entry (start of the trailer).
    pub data_end: u64,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// End offset of entry `i` (the next entry's start, or the trailer).
    pub fn end_of(&self, i: usize) -> u64 {
        self.offsets.get(i + 1).copied().unwrap_or(self.data_end)
    }

    /// Byte range of entry `i`'s zlib stream.
    pub fn stream_of(&self, i: usize) -> (u64, u64) {
        (
            self.offsets[i] + u64::from(self.header_lens[i]),
            self.end_of(i),
        )
    }
}

/// An existing pack, open, with its entries.
pub struct PackEntries {
    pub pack: PackFile,
    pub path: PathBuf,
    pub entries: Entries,
}

impl PackEntries {
    /// The error for entry `pos`, naming the pack.
    pub fn corrupt(&self, pos: usize, what: &str) -> PackError {
        PackError::at(
            self.entries.offsets[pos],
            format!("{} is corrupt: {what}", self.path.display()),
        )
    }

    /// Inflate entry `pos` (the object, or the delta it stores) into `out`, its compressed
    /// bytes read through `raw`. An entry declaring more than `object_limit` bytes is refused
    /// before anything is allocated for it.
    pub fn inflate(
        &self,
        pos: usize,
        inflater: &mut Inflater,
        raw: &mut Vec<u8>,
        out: &mut Vec<u8>,
        object_limit: u64,
    ) -> Result<()> {
        let size = self.entries.sizes[pos];
        if size > object_limit {
            return Err(self.corrupt(
                pos,
                &format!("an entry of {size} bytes does not fit in memory"),
            ));
        }
        let (start, end) = self.entries.stream_of(pos);
        if end < start {
            return Err(self.corrupt(pos, "entry ends before its header"));
        }
        raw.resize((end - start) as usize, 0);
        self.pack.read_exact_at(raw, start)?;
        inflater
            .inflate_into(raw, size as usize, out)
            .map_err(|f| self.corrupt(pos, &f.describe(size)))?;
        Ok(())
    }
}
