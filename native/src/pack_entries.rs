//! One existing pack's entries as arrays in pack order: what the writer copies from, and
//! what objects are read from for the delta search, the writer and the object check
//! (object_read.rs). Reading and inflating one entry is done here, once.

use std::path::PathBuf;

use crate::error::{PackError, Result};
use crate::inflate::Inflater;
use crate::source::PackFile;

/// One existing pack's entries, arrays in pack order.
pub struct PackEntries {
    pub pack: PackFile,
    pub path: PathBuf,
    pub offsets: Vec<u64>,
    pub ends: Vec<u64>,
    pub header_lens: Vec<u8>,
    pub kinds: Vec<u8>,
    pub sizes: Vec<u64>,
    /// Pack position of each entry's delta base, -1 for whole objects.
    pub bases: Vec<i64>,
    /// CRC32 of each raw entry from the source's index; empty for a v1 index, which has none
    /// (then the final verification of the new pack is what catches a corrupt source).
    pub crcs: Vec<u32>,
}

impl PackEntries {
    /// The error for entry `pos`, naming the pack.
    pub fn corrupt(&self, pos: usize, what: &str) -> PackError {
        PackError::at(
            self.offsets[pos],
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
        let size = self.sizes[pos];
        if size > object_limit {
            return Err(self.corrupt(
                pos,
                &format!("an entry of {size} bytes does not fit in memory"),
            ));
        }
        let start = self.offsets[pos] + u64::from(self.header_lens[pos]);
        let end = self.ends[pos];
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
