//! Reading one pack entry after another: header, inflate (whole with libdeflate, or streamed
//! for large objects and broken streams), CRC32 of the raw entry, id of each whole object;
//! and recognising an entry boundary at a guessed offset, for the parallel first pass.

use crate::error::{PackError, Result};
use crate::fsck::{Checker, Seen};
use crate::index::table::Table;
use crate::pack::entry_header::{
    is_delta, parse_header, EntryHeader, ObjectId, MAX_HEADER_LEN, OBJ_BLOB,
};
use crate::pack::hash::ObjectHasher;
use crate::pack::inflate::{deflated_bound, looks_like_zlib, Inflater};
use crate::pack::source::{PackFile, Window};

/// Entries whose inflated size exceeds this are inflated in a stream, never held whole here
/// (the default; a scan's `whole_limit` lowers it under a small memory budget).
pub const WHOLE_LIMIT: u64 = 32 << 20;
/// The read window of the first pass.
const WINDOW: usize = 1 << 20;
/// Largest window grown for one entry before falling back to streaming.
const MAX_WINDOW: usize = 96 << 20;
/// Chunk size of streaming reads and inflates.
const STREAM_CHUNK: usize = 256 << 10;
/// How far past a split point a thread looks for an entry boundary.
pub(crate) const SYNC_SPAN: u64 = 8 << 20;
/// Largest entry a boundary guess is checked against: guesses are mostly false, and a false
/// header can declare any size, which must not make us allocate it.
const PROBE_LIMIT: u64 = 1 << 20;

/// What inflating one entry gives: compressed bytes used, CRC32 of the raw entry, and the id
/// of a whole object.
type Inflated = (u64, u32, Option<ObjectId>);

pub(crate) struct Scanner<'a> {
    pack: &'a PackFile,
    window: Window<'a>,
    inflater: Inflater,
    scratch: Vec<u8>,
    detect_collisions: bool,
    whole_limit: u64,
    check: Option<&'a Checker>,
}

impl<'a> Scanner<'a> {
    /// A scanner of `pack` up to `limit`; entries inflating to more than `whole_limit` are
    /// streamed; `check` sees every whole object it hashes.
    pub(crate) fn new(
        pack: &'a PackFile,
        limit: u64,
        detect_collisions: bool,
        whole_limit: u64,
        check: Option<&'a Checker>,
    ) -> Self {
        Scanner {
            pack,
            window: Window::new(pack, limit, WINDOW),
            inflater: Inflater::new(),
            scratch: Vec::new(),
            detect_collisions,
            whole_limit: whole_limit.min(WHOLE_LIMIT),
            check,
        }
    }

    fn header(&mut self, offset: u64) -> Result<EntryHeader> {
        let limit = self.window.limit();
        let bytes = self.window.at(offset, MAX_HEADER_LEN)?;
        let h = parse_header(bytes, offset, self.pack.algo)?.ok_or_else(|| {
            PackError::at(offset, "entry header is cut off by the end of the pack")
        })?;
        if offset + h.header_len as u64 >= limit {
            return Err(PackError::at(
                offset,
                "entry data is cut off by the end of the pack",
            ));
        }
        Ok(h)
    }

    /// Scan the entry at `offset` into `out`; returns the offset of the next entry.
    pub(crate) fn entry(&mut self, offset: u64, out: &mut Table) -> Result<u64> {
        let h = self.header(offset)?;
        let whole = if h.size <= self.whole_limit {
            self.inflate_whole(offset, &h, false)?
        } else {
            None
        };
        let (used, crc, oid) = match whole {
            Some(r) => r,
            None => {
                if let Some(c) = self
                    .check
                    .filter(|_| h.kind != OBJ_BLOB && !is_delta(h.kind))
                {
                    c.defer(offset); // not held whole here: checked once the pack is resolved
                }
                self.inflate_streaming(offset, &h)?
            }
        };
        out.push_entry(offset, &h, crc, oid);
        Ok(offset + h.header_len as u64 + used)
    }

    /// Inflate a small entry from the window. Returns None when the caller should stream it
    /// instead (the window could not be grown enough, or libdeflate refused it: the streaming
    /// inflater then gives the exact verdict).
    /// `probing`: a guessed boundary; one attempt, no hashing, no growing of the window.
    fn inflate_whole(
        &mut self,
        offset: u64,
        h: &EntryHeader,
        probing: bool,
    ) -> Result<Option<Inflated>> {
        let size = h.size as usize;
        if self.scratch.len() < size {
            self.scratch.resize(size, 0);
        }
        let mut want =
            (h.header_len as u64 + deflated_bound(h.size)).min(MAX_WINDOW as u64) as usize;
        loop {
            let buf = self.window.at(offset, want)?;
            let have = buf.len();
            match self
                .inflater
                .inflate_exact(&buf[h.header_len..], &mut self.scratch[..size])
            {
                Ok(used) => {
                    let crc = crc32fast::hash(&buf[..h.header_len + used]);
                    let oid = if !probing && !is_delta(h.kind) {
                        let mut hasher = ObjectHasher::new(
                            self.pack.algo,
                            h.kind,
                            h.size,
                            self.detect_collisions,
                        );
                        hasher.update(&self.scratch[..size]);
                        let id = hasher.finish(offset)?;
                        if let Some(c) = self.check {
                            let seen = Seen {
                                delta: false,
                                offset,
                            };
                            c.check(seen, h.kind, &id, &self.scratch[..size]);
                        }
                        Some(id)
                    } else {
                        None
                    };
                    if self.scratch.len() > 4 * WINDOW {
                        self.scratch = Vec::new();
                        self.window.shrink();
                    }
                    return Ok(Some((used as u64, crc, oid)));
                }
                Err(_) if !probing && !self.window.reaches_limit(offset) && have < MAX_WINDOW => {
                    want = (have * 2).clamp(WINDOW, MAX_WINDOW);
                }
                Err(_) => return Ok(None),
            }
        }
    }

    /// Inflate an entry in chunks without holding it; exact diagnostics for broken streams.
    fn inflate_streaming(&mut self, offset: u64, h: &EntryHeader) -> Result<Inflated> {
        let limit = self.window.limit();
        let mut crc = crc32fast::Hasher::new();
        let mut head = vec![0u8; h.header_len];
        self.pack.read_exact_at(&mut head, offset)?;
        crc.update(&head);
        let mut hasher = if is_delta(h.kind) {
            None
        } else {
            Some(ObjectHasher::new(
                self.pack.algo,
                h.kind,
                h.size,
                self.detect_collisions,
            ))
        };
        let stream = &mut self.inflater.stream;
        stream.reset(true);
        let mut input = vec![0u8; STREAM_CHUNK];
        let mut output = vec![0u8; STREAM_CHUNK];
        let mut pos = offset + h.header_len as u64;
        let mut produced = 0u64;
        loop {
            let n = self.pack.read_upto(&mut input, pos, limit)?;
            if n == 0 {
                return Err(PackError::at(
                    offset,
                    "zlib stream runs past the end of the pack",
                ));
            }
            let mut taken = 0usize;
            loop {
                let (in0, out0) = (stream.total_in(), stream.total_out());
                let status = stream
                    .decompress(&input[taken..n], &mut output, flate2::FlushDecompress::None)
                    .map_err(|e| PackError::at(offset, format!("corrupt zlib stream: {e}")))?;
                let took = (stream.total_in() - in0) as usize;
                let made = (stream.total_out() - out0) as usize;
                crc.update(&input[taken..taken + took]);
                taken += took;
                produced += made as u64;
                if produced > h.size {
                    return Err(PackError::at(
                        offset,
                        format!(
                            "zlib stream inflates to more bytes than the declared size {}",
                            h.size
                        ),
                    ));
                }
                if let Some(hs) = hasher.as_mut() {
                    hs.update(&output[..made]);
                }
                if status == flate2::Status::StreamEnd {
                    if produced != h.size {
                        return Err(PackError::at(
                            offset,
                            format!("zlib stream inflates to fewer bytes ({produced}) than the declared size {}", h.size),
                        ));
                    }
                    let oid = match hasher {
                        Some(hs) => Some(hs.finish(offset)?),
                        None => None,
                    };
                    return Ok((stream.total_in(), crc.finalize(), oid));
                }
                if taken == n || (took == 0 && made == 0) {
                    break;
                }
            }
            pos += taken as u64;
            if taken < n {
                // No progress with input left: the stream is stuck (cannot happen for valid zlib).
                return Err(PackError::at(offset, "corrupt zlib stream"));
            }
        }
    }

    /// Whether a plausible entry starts at `offset` and the one after it too (or the pack ends).
    fn probe(&mut self, offset: u64) -> bool {
        let limit = self.window.limit();
        let mut at = offset;
        for _ in 0..2 {
            if at == limit {
                return true;
            }
            let h = match self.header(at) {
                Ok(h) if h.size <= PROBE_LIMIT => h,
                _ => return false,
            };
            let Ok(bytes) = self.window.at(at, h.header_len + 2) else {
                return false;
            };
            if bytes.len() < h.header_len + 2 || !looks_like_zlib(&bytes[h.header_len..]) {
                return false;
            }
            match self.inflate_whole(at, &h, true) {
                Ok(Some((used, _, _))) => at += h.header_len as u64 + used,
                _ => return false,
            }
        }
        true
    }

    /// First offset in `[from, from + SYNC_SPAN)` where two consecutive entries parse and inflate.
    pub(crate) fn find_boundary(&mut self, from: u64) -> Option<u64> {
        let limit = self.window.limit();
        let end = (from + SYNC_SPAN).min(limit);
        let mut at = from;
        while at < end {
            let bytes = self.window.at(at, 64).ok()?;
            // Cheap filter: a known type, then a zlib header within a plausible header length.
            let kind = (bytes[0] >> 4) & 7;
            if matches!(kind, 1 | 2 | 3 | 4 | 6 | 7) && self.probe(at) {
                return Some(at);
            }
            at += 1;
        }
        None
    }
}
