//! Reading a pack file with positioned reads. The pack is not memory-mapped: mapped pages count
//! towards the process's resident size, and Git's index-pack (which we are measured against)
//! reads with read()/pread() too.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{PackError, Result};
use crate::pack::object_id::HashAlgo;

pub struct PackFile {
    pub file: File,
    pub len: u64,
    /// The hash of the pack's object names: its REF_DELTA bases and its trailer.
    pub algo: HashAlgo,
}

impl PackFile {
    pub fn open(path: &Path, writable: bool, algo: HashAlgo) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|e| PackError::io(&format!("cannot open {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| PackError::io("cannot stat pack", e))?
            .len();
        Ok(PackFile { file, len, algo })
    }

    /// Bytes of the trailer (the checksum of everything before it).
    pub fn trailer_len(&self) -> u64 {
        self.algo.rawsz() as u64
    }

    /// Fill `buf` from `offset`; fails if the file ends first.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| PackError::at(offset, format!("cannot read {} bytes: {e}", buf.len())))
    }

    /// Read up to `buf.len()` bytes at `offset`, stopping at `limit`; returns the count read.
    pub fn read_upto(&self, buf: &mut [u8], offset: u64, limit: u64) -> Result<usize> {
        let want = (limit.saturating_sub(offset)).min(buf.len() as u64) as usize;
        self.read_exact_at(&mut buf[..want], offset)?;
        Ok(want)
    }
}

/// A sliding window over `[.., limit)` of a pack, for the sequential first pass.
pub struct Window<'a> {
    pack: &'a PackFile,
    buf: Vec<u8>,
    start: u64,
    filled: usize,
    limit: u64,
    base_size: usize,
}

impl<'a> Window<'a> {
    pub fn new(pack: &'a PackFile, limit: u64, base_size: usize) -> Self {
        Window {
            pack,
            buf: Vec::new(),
            start: 0,
            filled: 0,
            limit,
            base_size,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes from `offset` to the end of the window, making sure at least `want` of them are
    /// present unless the window reaches `limit` first.
    pub fn at(&mut self, offset: u64, want: usize) -> Result<&[u8]> {
        let end = self.start + self.filled as u64;
        let have = offset >= self.start && offset <= end;
        let enough = have && (end - offset >= want as u64 || end == self.limit);
        if !enough {
            // No more than the pack has left: a small pack (a push of a few objects) does
            // not pay for a window of the full size.
            let room = usize::try_from(self.limit.saturating_sub(offset)).unwrap_or(usize::MAX);
            let size = want.max(self.base_size).min(room);
            if self.buf.len() < size {
                self.buf.resize(size, 0);
            }
            self.start = offset;
            self.filled = self
                .pack
                .read_upto(&mut self.buf[..size], offset, self.limit)?;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.buf[from..self.filled])
    }

    /// Whether the window holds everything from `offset` up to the limit.
    pub fn reaches_limit(&self, offset: u64) -> bool {
        offset >= self.start && self.start + self.filled as u64 == self.limit
    }

    /// Give back a window buffer grown for one large entry.
    pub fn shrink(&mut self) {
        if self.buf.len() > 4 * self.base_size {
            self.buf = Vec::new();
            self.filled = 0;
        }
    }
}
