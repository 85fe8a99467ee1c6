//! The first pass made while a pack arrives on a stream (stream.rs inflates every entry to
//! find where it ends anyway): the entry table, each whole object's id, each raw entry's
//! CRC32, the pack's checksum and Git's object checks, as the scan (first_pass.rs) finds them in a
//! stored pack, so that the stored pack need not be read again before its deltas are resolved.

use crate::error::{PackError, Result};
use crate::fsck::{Checker, Seen};
use crate::index::first_pass::PackHeader;
use crate::index::table::Table;
use crate::pack::entry_header::{is_delta, EntryHeader, HashAlgo, ObjectId, OBJ_BLOB};
use crate::pack::hash::{hex, FileChecksum, ObjectHasher};

/// What the first pass found, for the indexer to take over (python/index.rs `adopt`).
pub struct Indexed {
    pub header: PackHeader,
    pub table: Table,
    pub checksum: ObjectId,
    pub check: Option<Checker>,
}

pub struct Recorder {
    algo: HashAlgo,
    detect_collisions: bool,
    /// Objects up to this size are checked whole, as the scan checks them (it inflates
    /// them whole); larger ones are checked once the pack is resolved (Checker::defer).
    whole_limit: u64,
    pub table: Table,
    pub check: Option<Checker>,
    sum: FileChecksum,
    // The entry being read.
    header: Option<EntryHeader>,
    crc: crc32fast::Hasher,
    hasher: Option<ObjectHasher>,
    /// Checked whole, as the scan checks what it inflates whole; the bytes are held as they
    /// are inflated (`hold`: but a blob's, which the checks do not read).
    checked: bool,
    hold: bool,
    held: Vec<u8>,
    checksum: Option<ObjectId>,
}

impl Recorder {
    pub fn new(algo: HashAlgo, detect_collisions: bool, whole_limit: u64) -> Self {
        Recorder {
            algo,
            detect_collisions,
            whole_limit,
            table: Table::new(algo),
            check: None,
            sum: FileChecksum::new(algo),
            header: None,
            crc: crc32fast::Hasher::new(),
            hasher: None,
            checked: false,
            hold: false,
            held: Vec::new(),
            checksum: None,
        }
    }

    /// Bytes of the pack before its trailer, in order.
    pub fn pack_bytes(&mut self, bytes: &[u8]) {
        self.sum.update(bytes);
    }

    /// An entry whose header (`raw`, its bytes) was read; its zlib stream comes next.
    pub fn start_entry(&mut self, h: EntryHeader, raw: &[u8]) {
        self.crc = crc32fast::Hasher::new();
        self.crc.update(raw);
        let whole = !is_delta(h.kind);
        self.hasher =
            whole.then(|| ObjectHasher::new(self.algo, h.kind, h.size, self.detect_collisions));
        self.checked = whole && self.check.is_some() && h.size <= self.whole_limit;
        self.hold = self.checked && h.kind != OBJ_BLOB;
        self.held.clear();
        self.header = Some(h);
    }

    /// Part of the entry's stream (`raw`) and what it inflated to (`out`).
    pub fn entry_data(&mut self, raw: &[u8], out: &[u8]) {
        self.crc.update(raw);
        if let Some(h) = self.hasher.as_mut() {
            h.update(out);
        }
        if self.hold {
            if self.held.is_empty() {
                self.held
                    .reserve(self.header.map_or(0, |h| h.size as usize));
            }
            self.held.extend_from_slice(out);
        }
    }

    /// The entry at `offset` ends here, its whole stream (`raw`) inflated at once to `out`.
    pub fn whole_entry(&mut self, offset: u64, raw: &[u8], out: &[u8]) -> Result<()> {
        self.crc.update(raw);
        if let Some(h) = self.hasher.as_mut() {
            h.update(out);
        }
        self.finish_entry(offset, Some(out))
    }

    /// The entry at `offset` ends here (after entry_data).
    pub fn end_entry(&mut self, offset: u64) -> Result<()> {
        self.finish_entry(offset, None)
    }

    /// The entry's row of the table, its id, its checks.
    fn finish_entry(&mut self, offset: u64, whole: Option<&[u8]>) -> Result<()> {
        let h = self.header.take().expect("an entry was started");
        let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new()).finalize();
        let oid = match self.hasher.take() {
            Some(hasher) => Some(hasher.finish(offset)?),
            None => None,
        };
        if let (Some(c), Some(id)) = (self.check.as_ref(), oid) {
            let seen = Seen {
                delta: false,
                offset,
            };
            if self.checked {
                c.check(seen, h.kind, &id, whole.unwrap_or(&self.held));
            } else if h.kind != OBJ_BLOB {
                c.defer(offset); // as the scan: too large to hold, checked once resolved
            }
            if self.held.capacity() > 1 << 20 {
                self.held = Vec::new(); // a large object's room is not kept
            }
        }
        self.table.push_entry(offset, &h, crc, oid);
        Ok(())
    }

    /// The trailer, at `offset`: it must be the checksum of what came before.
    pub fn trailer(&mut self, trailer: &[u8], offset: u64) -> Result<()> {
        let sum = std::mem::replace(&mut self.sum, FileChecksum::new(self.algo)).finish();
        if sum[..] != *trailer {
            return Err(PackError::at(
                offset,
                format!(
                    "pack checksum mismatch: the trailer says {}, the contents hash to {}",
                    hex(trailer),
                    hex(&sum)
                ),
            ));
        }
        self.checksum = Some(sum);
        self.table.entries.data_end = offset;
        Ok(())
    }

    /// What was found, once the trailer is read (else None).
    pub fn take(&mut self, header: PackHeader) -> Option<Indexed> {
        let checksum = self.checksum.take()?;
        if let Some(c) = &self.check {
            c.done_on_this_thread(); // resolution checks on the pool's threads
        }
        Some(Indexed {
            header,
            table: std::mem::replace(&mut self.table, Table::new(self.algo)),
            checksum,
            check: self.check.take(),
        })
    }
}
