//! A pack read from a stream (`index-pack --stdin`), ending its reads where Git's would end.
//! Git reads through a buffer (4096 bytes before Git 2.55, 128 KiB since), asking for more only
//! when the parse of the pack needs it, and stops at the pack's trailer. Its read(2) calls ask for whatever fills its
//! buffer, so how far it reads past the pack (bytes it then echoes to stdout) follows from
//! where its parse needs data: one byte at a time for the entry headers and the zlib streams
//! (a read only when its buffer is empty), 12 bytes at once for the pack header, and the
//! hash's length at once for a REF_DELTA's base and for the trailer (a read when fewer than
//! that are buffered).
//!
//! The parser keeps Git's reads as a count (`git_end`, where Git's buffer ends) and reads
//! ahead of them in large reads, but only as far as the pack must still reach: every entry
//! left is at least MIN_ENTRY bytes, and the trailer follows. Near the end the reads are
//! Git's own, so the pack's last read ends where Git's ends whenever a read gets all it asks
//! for. Reading ahead saves most of the read(2) calls and lets most entries inflate whole
//! (libdeflate) instead of through a stream.
//!
//! The caller reads; this parser says how much to ask for (`want`), takes what came
//! (`feed`), and finds where each entry ends by inflating it; what inflating finds (ids,
//! CRC32s, the checksum, the checks) is the indexer's first pass (received.rs).

use crate::error::{PackError, Result};
use crate::fsck::Checker;
use crate::index::checks::RunsChecks;
use crate::index::first_pass::PackHeader;
use crate::index::received::{Indexed, Recorder};
use crate::pack::entry_header::{parse_header, HashAlgo, OBJ_OFS_DELTA, OBJ_REF_DELTA};
use crate::pack::inflate::{deflated_bound, Inflater};

/// Git's input buffer (index-pack's `input_buffer`) before Git 2.55, which made it 128 KiB.
pub const BUFFER: usize = 4096;
/// The most one read asks for ahead of Git's reads: what a pipe holds by default, so a
/// larger read would get no more from one.
const AHEAD: u64 = 64 << 10;
/// The shortest entry of a valid pack: a header byte, then a zlib stream (its 2-byte header,
/// an empty fixed-Huffman block of 2 bytes, the 4-byte Adler-32).
const MIN_ENTRY: u64 = 9;
/// Output of a streamed inflate, thrown away (zlib keeps its own window).
const SCRATCH: usize = 64 << 10;
/// Entries up to WHOLE_LIMIT are first inflated whole from what is buffered (libdeflate,
/// several times faster than streaming them with zlib): the parser reads ahead until the
/// longest stream of the entry's size is buffered, where the pack must hold that much. A
/// stream that is not all buffered even so (near the pack's end) fails that and is
/// streamed; that is not tried when the entry inflates to more than WHOLE_RATIO times what is
/// buffered: its stream is most likely longer (a failed attempt costs an inflate of the
/// buffer).
const WHOLE_RATIO: u64 = 8;
const WHOLE_LIMIT: u64 = 4 << 20;

/// How far a stream has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamCounts {
    pub entries_read: u32,
    /// What the pack's header declares.
    pub entries_declared: u32,
    /// The bytes the pack so far takes (what is kept of the input).
    pub bytes_used: u64,
    /// The bytes Git's reads would have read by now: what its progress shows.
    pub bytes_git_read: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The 12 bytes of the pack header, at once.
    Header,
    /// An entry's type and size, a byte at a time.
    Size,
    /// An OFS_DELTA's base offset, a byte at a time.
    Offset,
    /// A REF_DELTA's base id, at once.
    BaseId,
    /// The entry's zlib stream.
    Data,
    /// The trailer, at once.
    Trailer,
    Done,
}

pub struct PackStream {
    algo: HashAlgo,
    /// Git's buffer: bytes read and not used yet are `buf[start..]`.
    buf: Vec<u8>,
    start: usize,
    /// Bytes used (the pack's offset of `buf[start]`).
    used: u64,
    /// Bytes read in all (a header the caller read counts as read).
    read: u64,
    /// Where Git's reads would have reached (its buffer's end), given reads that get all
    /// they ask for: at most `read` once a read has come short of it.
    git_end: u64,
    /// The size of the Git's buffer whose reads are followed.
    git_buffer: u64,
    /// The input ended: parse what is buffered without waiting for more.
    eof: bool,
    step: Step,
    version: u32,
    count: u32,
    objects: u32,
    entry_offset: u64,
    header: Vec<u8>,
    size: u64,
    produced: u64,
    /// Nothing of the entry's stream inflated yet.
    fresh: bool,
    inflater: Inflater,
    scratch: Vec<u8>,
    /// Git's --max-input-size: the parse stops once more than this is used (0: no limit).
    limit: u64,
    over_limit: bool,
    rec: Recorder,
}

fn consumed(before: u64, after: u64) -> usize {
    (after - before) as usize
}

impl PackStream {
    /// A parser of a pack of ids of `algo`; `header`: the pack header the caller read already
    /// (`--pack_header`, 12 bytes: Git parses it as if read, before its first read) or nothing;
    /// `git_buffer`: the size of the buffer of the Git whose reads are followed. Objects are hashed with collision detection or not; those up to `whole_limit` bytes
    /// are checked whole (Recorder), once checks are set.
    pub fn new(
        algo: HashAlgo,
        header: &[u8],
        limit: u64,
        detect_collisions: bool,
        whole_limit: u64,
        git_buffer: usize,
    ) -> Result<Self> {
        let mut buf = Vec::with_capacity(git_buffer);
        buf.extend_from_slice(header);
        let mut s = PackStream {
            algo,
            buf,
            start: 0,
            used: 0,
            read: header.len() as u64,
            git_end: header.len() as u64,
            git_buffer: git_buffer as u64,
            eof: false,
            step: Step::Header,
            version: 0,
            count: 0,
            objects: 0,
            entry_offset: 0,
            header: Vec::new(),
            size: 0,
            produced: 0,
            fresh: false,
            inflater: Inflater::new(),
            scratch: Vec::new(),
            limit,
            over_limit: false,
            rec: Recorder::new(algo, detect_collisions, whole_limit),
        };
        s.parse()?;
        Ok(s)
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// How many bytes the next read asks for, or 0 when the pack is complete (and Git's last
    /// read is made) or the parse stopped: the rest of Git's latest read, or more where the
    /// pack must still hold more.
    pub fn want(&self) -> usize {
        if self.over_limit {
            return 0;
        }
        let git = self.git_end.saturating_sub(self.read);
        let ahead = self.must_hold().saturating_sub(self.read).min(AHEAD);
        git.max(ahead) as usize
    }

    /// How long the pack is at least, from what is parsed: reading up to here never reads
    /// past its end (a broken pack may be shorter; its error comes all the same).
    fn must_hold(&self) -> u64 {
        let rawsz = self.algo.rawsz() as u64;
        match self.step {
            Step::Header => 12 + rawsz,
            Step::Trailer => self.used + rawsz,
            Step::Done => self.used,
            _ => self.used + u64::from(self.count - self.objects - 1) * MIN_ENTRY + rawsz,
        }
    }

    /// Git's parse needs `n` bytes at once where it stands: with fewer in its buffer, it
    /// reads, and its buffer then ends a buffer's length past where it stands.
    fn git_needs(&mut self, n: u64) {
        if self.git_end < self.used + n {
            self.git_end = self.used + self.git_buffer;
        }
    }

    /// Git's parse went on to `end` inflating: each time its buffer ran out before, it read
    /// again (a zlib stream takes what is buffered, and a read only follows an empty buffer).
    fn git_streamed_to(&mut self, end: u64) {
        if end > self.git_end {
            self.git_end += (end - self.git_end).div_ceil(self.git_buffer) * self.git_buffer;
        }
    }

    /// The input ended: whatever the parse waited for to read ahead, it takes what it has.
    pub fn end_of_input(&mut self) -> Result<()> {
        self.eof = true;
        self.feed(&[]) // a read that got nothing: Git's ends here too
    }

    /// Whether the parse is among the pack's entries (Git shows the bytes read then).
    pub fn in_entries(&self) -> bool {
        !matches!(self.step, Step::Header | Step::Trailer | Step::Done)
    }

    pub fn done(&self) -> bool {
        self.step == Step::Done
    }

    pub fn over_limit(&self) -> bool {
        self.over_limit
    }

    pub fn counts(&self) -> StreamCounts {
        StreamCounts {
            entries_read: self.objects,
            entries_declared: self.count,
            bytes_used: self.used,
            bytes_git_read: self.git_end.min(self.read),
        }
    }

    /// The bytes read past what was used: after the trailer, those past the pack's end.
    pub fn rest(&self) -> &[u8] {
        self.buffered()
    }

    /// The first pass's findings, once the pack is complete (taken once).
    pub fn take_indexed(&mut self) -> Option<Indexed> {
        let header = PackHeader {
            version: self.version,
            count: self.count,
        };
        self.rec.take(header)
    }

    fn take(&mut self, n: usize) {
        if self.step != Step::Trailer {
            self.rec.pack_bytes(&self.buf[self.start..self.start + n]);
        }
        self.start += n;
        self.used += n as u64;
        self.git_streamed_to(self.used);
        if self.limit != 0 && self.used > self.limit {
            self.over_limit = true;
        }
    }

    /// Take the bytes of one read (at most `want()` of them) and parse as far as they go.
    pub fn feed(&mut self, data: &[u8]) -> Result<()> {
        assert!(data.len() <= self.want(), "read more than asked for");
        self.buf.drain(..self.start);
        self.start = 0;
        self.buf.extend_from_slice(data);
        self.read += data.len() as u64;
        // A read that came short of Git's: Git's would have come short as well, there.
        self.git_end = self.git_end.min(self.read);
        self.parse()
    }

    fn parse(&mut self) -> Result<()> {
        let rawsz = self.algo.rawsz();
        while !self.over_limit {
            let have = self.buffered().len();
            match self.step {
                Step::Done => return Ok(()),
                Step::Header => {
                    self.git_needs(12);
                    if have < 12 {
                        return Ok(());
                    }
                    let hdr: [u8; 12] = self.buffered()[..12].try_into().unwrap();
                    if &hdr[..4] != b"PACK" {
                        return Err(PackError::at(0, "bad pack signature (not a pack file)"));
                    }
                    let version = u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
                    if version != 2 && version != 3 {
                        return Err(PackError::at(
                            4,
                            format!("pack version {version} is not supported"),
                        ));
                    }
                    self.version = version;
                    self.count = u32::from_be_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
                    self.rec.table.expect(self.count);
                    self.take(12);
                    self.next_entry();
                }
                Step::Size | Step::Offset => {
                    self.git_needs(1);
                    if have == 0 {
                        return Ok(());
                    }
                    let byte = self.buffered()[0];
                    self.take(1);
                    self.header.push(byte);
                    // Errors (a bad type, an overflow) as the indexer reports them.
                    parse_header(&self.header, self.entry_offset, self.algo)?;
                    if byte & 0x80 == 0 {
                        let kind = (self.header[0] >> 4) & 7;
                        self.step = match (self.step, kind) {
                            (Step::Size, OBJ_OFS_DELTA) => Step::Offset,
                            (Step::Size, OBJ_REF_DELTA) => Step::BaseId,
                            _ => self.start_data()?,
                        };
                    }
                }
                Step::BaseId => {
                    self.git_needs(rawsz as u64);
                    if have < rawsz {
                        return Ok(());
                    }
                    let id = self.buffered()[..rawsz].to_vec();
                    self.take(rawsz);
                    self.header.extend_from_slice(&id);
                    self.step = self.start_data()?;
                }
                Step::Data => {
                    self.git_needs(1);
                    if have == 0 || self.waits_to_inflate_whole(have) {
                        return Ok(());
                    }
                    self.inflate()?;
                }
                Step::Trailer => {
                    self.git_needs(rawsz as u64);
                    if have < rawsz {
                        return Ok(());
                    }
                    let trailer = &self.buf[self.start..self.start + rawsz];
                    self.rec.trailer(trailer, self.used)?;
                    self.take(rawsz);
                    self.step = Step::Done;
                    // What reading ahead and inflating whole held is not needed again
                    // (the deltas are resolved next, beside this parser).
                    self.buf.drain(..self.start);
                    self.buf.shrink_to_fit();
                    self.start = 0;
                    self.scratch = Vec::new();
                }
            }
        }
        Ok(())
    }

    fn next_entry(&mut self) {
        if self.objects == self.count {
            self.step = Step::Trailer;
        } else {
            self.step = Step::Size;
            self.entry_offset = self.used;
            self.header.clear();
        }
    }

    fn start_data(&mut self) -> Result<Step> {
        let h = parse_header(&self.header, self.entry_offset, self.algo)?
            .expect("a complete entry header");
        self.rec.start_entry(h, &self.header);
        self.size = h.size;
        self.produced = 0;
        self.fresh = true;
        self.inflater.stream.reset(true);
        Ok(Step::Data)
    }

    /// Whether to read more before inflating a fresh entry of which `have` bytes are
    /// buffered: while the pack must hold more, read until the longest stream of its size is.
    fn waits_to_inflate_whole(&self, have: usize) -> bool {
        self.fresh
            && !self.eof
            && self.size <= WHOLE_LIMIT
            && (have as u64) < deflated_bound(self.size)
            && self.read < self.must_hold()
    }

    fn entry_done(&mut self) {
        self.objects += 1;
        self.next_entry();
    }

    /// Inflate what is buffered of the current entry's stream; at its end, go on to the next.
    fn inflate(&mut self) -> Result<()> {
        let size = self.size as usize;
        let buffered = (self.buf.len() - self.start) as u64;
        if std::mem::take(&mut self.fresh) && self.size <= WHOLE_LIMIT.min(WHOLE_RATIO * buffered) {
            if self.scratch.len() < size.max(SCRATCH) {
                self.scratch.resize(size.max(SCRATCH), 0);
            }
            let input = &self.buf[self.start..];
            if let Ok(used) = self
                .inflater
                .inflate_exact(input, &mut self.scratch[..size])
            {
                let raw = &self.buf[self.start..self.start + used];
                self.rec
                    .whole_entry(self.entry_offset, raw, &self.scratch[..size])?;
                self.take(used);
                self.entry_done();
                return Ok(());
            }
            if self.scratch.len() > 4 * SCRATCH {
                self.scratch = Vec::new();
            }
        }
        if self.scratch.is_empty() {
            self.scratch = vec![0u8; SCRATCH];
        }
        let offset = self.entry_offset;
        loop {
            let (status, took, made) = {
                let stream = &mut self.inflater.stream;
                let (in0, out0) = (stream.total_in(), stream.total_out());
                let status = stream
                    .decompress(
                        &self.buf[self.start..],
                        &mut self.scratch,
                        flate2::FlushDecompress::None,
                    )
                    .map_err(|e| PackError::at(offset, format!("corrupt zlib stream: {e}")))?;
                let took = consumed(in0, stream.total_in());
                (status, took, stream.total_out() - out0)
            };
            let raw = &self.buf[self.start..self.start + took];
            self.rec.entry_data(raw, &self.scratch[..made as usize]);
            self.take(took);
            self.produced += made;
            if self.produced > self.size {
                return Err(PackError::at(
                    offset,
                    format!(
                        "zlib stream inflates to more bytes than the declared size {}",
                        self.size
                    ),
                ));
            }
            if status == flate2::Status::StreamEnd {
                if self.produced != self.size {
                    return Err(PackError::at(
                        offset,
                        format!(
                            "zlib stream inflates to fewer bytes ({}) than the declared size {}",
                            self.produced, self.size
                        ),
                    ));
                }
                self.rec.end_entry(offset)?;
                self.entry_done();
                return Ok(());
            }
            if self.start == self.buf.len() || self.over_limit {
                return Ok(()); // the stream goes on in the next read
            }
            if took == 0 && made == 0 {
                return Err(PackError::at(offset, "corrupt zlib stream"));
            }
        }
    }
}

impl RunsChecks for PackStream {
    fn algo(&self) -> HashAlgo {
        self.algo
    }

    /// Checks run on every object (set before the first feed).
    fn set_checks(&mut self, check: Checker) {
        self.rec.check = Some(check);
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
