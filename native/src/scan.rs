//! The first pass: read every entry once, in order: header, inflate (to find where the entry
//! ends and check its size), crc32 of the raw entry, and the id of every whole object.
//!
//! Entry boundaries are only known by inflating, which makes the pass sequential. We split it
//! anyway: each extra thread starts at a guessed entry boundary in the middle of the pack,
//! confirmed by inflating two consecutive entries there. Parsing from a true boundary is
//! deterministic, so when the thread before it reaches the same offset the two chains agree
//! from there on; a wrong guess only costs the work of that thread (we splice wherever the
//! chains meet, or re-parse sequentially if they never do).

use crate::entry::{is_delta, parse_header, BaseRef, EntryHeader, MAX_HEADER_LEN, RAWSZ};
use crate::error::{PackError, Result};
use crate::hash::{FileChecksum, ObjectHasher};
use crate::inflate::{looks_like_zlib, Inflater};
use crate::progress::{Progress, PHASE_INDEXING};
use crate::source::{PackFile, Window};
use crate::table::Table;

/// Entries whose inflated size exceeds this are inflated in a stream, never held whole here
/// (the default; `ScanOptions::whole_limit` lowers it under a small memory budget).
pub const WHOLE_LIMIT: u64 = 32 << 20;
/// The read window of the first pass.
const WINDOW: usize = 1 << 20;
/// Largest window grown for one entry before falling back to streaming.
const MAX_WINDOW: usize = 96 << 20;
/// Chunk size of streaming reads and inflates.
const STREAM_CHUNK: usize = 256 << 10;
/// How far past a split point a thread looks for an entry boundary.
const SYNC_SPAN: u64 = 8 << 20;
/// Largest entry a boundary guess is checked against: guesses are mostly false, and a false
/// header can declare any size, which must not make us allocate it.
const PROBE_LIMIT: u64 = 1 << 20;

pub const PACK_HEADER_LEN: u64 = 12;

#[derive(Debug, Clone, Copy)]
pub struct PackHeader {
    pub version: u32,
    pub count: u32,
}

pub fn read_header(pack: &PackFile) -> Result<PackHeader> {
    if pack.len < PACK_HEADER_LEN + RAWSZ as u64 {
        return Err(PackError::at(
            0,
            format!("file of {} bytes is too short to be a pack", pack.len),
        ));
    }
    let mut hdr = [0u8; 12];
    pack.read_exact_at(&mut hdr, 0)?;
    if &hdr[0..4] != b"PACK" {
        return Err(PackError::at(0, "bad pack signature (not a pack file)"));
    }
    let version = u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
    if version != 2 && version != 3 {
        return Err(PackError::at(
            4,
            format!("pack version {version} is not supported"),
        ));
    }
    let count = u32::from_be_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
    Ok(PackHeader { version, count })
}

/// zlib's compressBound: no stream a zlib deflater writes for `size` bytes is longer.
fn compress_bound(size: u64) -> u64 {
    size + (size >> 12) + (size >> 14) + (size >> 25) + 13
}

pub struct ScanOptions {
    pub threads: usize,
    pub detect_collisions: bool,
    /// Packs smaller than this are scanned by one thread (splitting costs a boundary search).
    pub split_min_bytes: u64,
    /// Entries inflating to more than this are streamed rather than inflated whole.
    pub whole_limit: u64,
}

pub const DEFAULT_SPLIT_MIN_BYTES: u64 = 4 * SYNC_SPAN;

struct Scanner<'a> {
    pack: &'a PackFile,
    window: Window<'a>,
    inflater: Inflater,
    scratch: Vec<u8>,
    detect_collisions: bool,
    whole_limit: u64,
}

impl<'a> Scanner<'a> {
    fn new(pack: &'a PackFile, limit: u64, opts: &ScanOptions) -> Self {
        Scanner {
            pack,
            window: Window::new(pack, limit, WINDOW),
            inflater: Inflater::new(),
            scratch: Vec::new(),
            detect_collisions: opts.detect_collisions,
            whole_limit: opts.whole_limit.min(WHOLE_LIMIT),
        }
    }

    fn header(&mut self, offset: u64) -> Result<EntryHeader> {
        let limit = self.window.limit();
        let bytes = self.window.at(offset, MAX_HEADER_LEN)?;
        let h = parse_header(bytes, offset)?.ok_or_else(|| {
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
    fn entry(&mut self, offset: u64, out: &mut Table) -> Result<u64> {
        let h = self.header(offset)?;
        let whole = if h.size <= self.whole_limit {
            self.inflate_whole(offset, &h, false)?
        } else {
            None
        };
        let (used, crc, oid) = match whole {
            Some(r) => r,
            None => self.inflate_streaming(offset, &h)?,
        };
        let idx = out.len() as u32;
        out.offsets.push(offset);
        out.kinds.push(h.kind);
        out.header_lens.push(h.header_len as u8);
        out.sizes.push(h.size);
        out.crcs.push(crc);
        out.ofs_bases.push(match h.base {
            BaseRef::Offset(b) => b,
            _ => 0,
        });
        if let BaseRef::Id(id) = h.base {
            out.ref_bases.push((id, idx));
        }
        out.oids.push(oid.unwrap_or([0; RAWSZ]));
        out.real_kinds
            .push(if is_delta(h.kind) { 0 } else { h.kind });
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
    ) -> Result<Option<(u64, u32, Option<[u8; RAWSZ]>)>> {
        let size = h.size as usize;
        if self.scratch.len() < size {
            self.scratch.resize(size, 0);
        }
        let mut want =
            (h.header_len as u64 + compress_bound(h.size)).min(MAX_WINDOW as u64) as usize;
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
                        let mut hasher = ObjectHasher::new(h.kind, h.size, self.detect_collisions);
                        hasher.update(&self.scratch[..size]);
                        Some(hasher.finish(offset)?)
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
    fn inflate_streaming(
        &mut self,
        offset: u64,
        h: &EntryHeader,
    ) -> Result<(u64, u32, Option<[u8; RAWSZ]>)> {
        let limit = self.window.limit();
        let mut crc = crc32fast::Hasher::new();
        let mut head = vec![0u8; h.header_len];
        self.pack.read_exact_at(&mut head, offset)?;
        crc.update(&head);
        let mut hasher = if is_delta(h.kind) {
            None
        } else {
            Some(ObjectHasher::new(h.kind, h.size, self.detect_collisions))
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
    fn find_boundary(&mut self, from: u64) -> Option<u64> {
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

pub struct ScanResult {
    pub header: PackHeader,
    pub table: Table,
    pub checksum: [u8; RAWSZ],
}

struct Region {
    start: u64,
    table: Table,
    end: u64,
    error: Option<PackError>,
}

fn scan_region(
    pack: &PackFile,
    limit: u64,
    start: u64,
    stop: u64,
    expected: usize,
    opts: &ScanOptions,
    progress: &Progress,
) -> Region {
    let mut scanner = Scanner::new(pack, limit, opts);
    let mut table = Table::default();
    // Sized up front: growing by reallocation leaves the old blocks behind as heap fragments.
    table.reserve(expected);
    let mut at = start;
    let mut error = None;
    while at < stop && at < limit {
        if table.len() % 4096 == 0 {
            if let Err(e) = progress.check_cancelled() {
                error = Some(e);
                break;
            }
        }
        match scanner.entry(at, &mut table) {
            Ok(next) => at = next,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
        progress.add(1);
    }
    Region {
        start,
        table,
        end: at,
        error,
    }
}

fn checksum_of(pack: &PackFile, limit: u64, progress: &Progress) -> Result<[u8; RAWSZ]> {
    let mut sum = FileChecksum::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < limit {
        progress.check_cancelled()?;
        let n = pack.read_upto(&mut buf, at, limit)?;
        sum.update(&buf[..n]);
        at += n as u64;
    }
    Ok(sum.finish())
}

/// Run the first pass over the whole pack.
pub fn scan(pack: &PackFile, opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    let header = read_header(pack)?;
    let limit = pack.len - RAWSZ as u64;
    let count = u64::from(header.count);
    progress.start(PHASE_INDEXING, count);

    // Split points, found in parallel.
    let threads = opts.threads.max(1);
    let span = limit - PACK_HEADER_LEN;
    let mut starts = vec![PACK_HEADER_LEN];
    if threads > 1 && span > opts.split_min_bytes && count > threads as u64 {
        let found: Vec<Option<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|i| {
                    let from = PACK_HEADER_LEN + span / threads as u64 * i as u64;
                    s.spawn(move || Scanner::new(pack, limit, opts).find_boundary(from))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(None))
                .collect()
        });
        starts.extend(found.into_iter().flatten());
        starts.dedup();
    }

    let (regions, checksum) = std::thread::scope(|s| {
        let sum = s.spawn(|| checksum_of(pack, limit, progress));
        let handles: Vec<_> = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let stop = starts.get(i + 1).copied().unwrap_or(limit);
                // Entries are spread over the pack about evenly by bytes.
                let share =
                    (count as u128 * u128::from(stop - start) / u128::from(span.max(1))) as usize;
                let expected = (share + share / 16 + 64)
                    .min(count as usize)
                    .min(((stop - start) / 8) as usize + 64);
                s.spawn(move || scan_region(pack, limit, start, stop, expected, opts, progress))
            })
            .collect();
        let regions: Vec<Region> = handles
            .into_iter()
            .map(|h| h.join().expect("scan thread panicked"))
            .collect();
        (regions, sum.join().expect("checksum thread panicked"))
    });
    progress.check_cancelled()?;

    let (mut table, end) = stitch(pack, limit, count, regions, opts)?;
    if (table.len() as u64) < count {
        return Err(PackError::at(
            end,
            format!(
                "pack is truncated: it declares {count} objects but holds {}",
                table.len()
            ),
        ));
    }
    let junk_at = if table.len() as u64 > count {
        table.offsets[count as usize]
    } else {
        end
    };
    if junk_at != limit {
        return Err(PackError::at(junk_at, "pack has junk at the end"));
    }
    table.truncate(count as usize);
    table.data_end = limit;

    let checksum = checksum?;
    let mut trailer = [0u8; RAWSZ];
    pack.read_exact_at(&mut trailer, limit)?;
    if checksum != trailer {
        return Err(PackError::at(
            limit,
            format!(
                "pack checksum mismatch: the trailer says {}, the contents hash to {}",
                crate::hash::hex(&trailer),
                crate::hash::hex(&checksum)
            ),
        ));
    }
    Ok(ScanResult {
        header,
        table,
        checksum,
    })
}

/// Join the regions into one table in pack order, re-parsing wherever two threads' chains of
/// entries do not meet. Stops once `count` entries are known.
fn stitch(
    pack: &PackFile,
    limit: u64,
    count: u64,
    regions: Vec<Region>,
    opts: &ScanOptions,
) -> Result<(Table, u64)> {
    let mut regions = regions.into_iter();
    // The first region starts at the first entry: its table becomes the result, uncopied.
    let Some(first) = regions.next() else {
        return Ok((Table::default(), PACK_HEADER_LEN));
    };
    let mut table = first.table;
    let mut cur = first.end;
    if let Some(e) = first.error {
        if (table.len() as u64) < count {
            return Err(e);
        }
    }
    let rest: Vec<Region> = regions.collect();
    table.reserve(rest.iter().map(|r| r.table.len()).sum());
    let mut scanner: Option<Scanner> = None;
    for region in rest {
        if table.len() as u64 >= count {
            break;
        }
        let from = loop {
            if cur == region.start {
                break Some(0);
            }
            if let Ok(i) = region.table.offsets.binary_search(&cur) {
                break Some(i);
            }
            if cur >= region.end {
                break None;
            }
            // The chains have not met: continue sequentially from `cur`.
            let sc = scanner.get_or_insert_with(|| Scanner::new(pack, limit, opts));
            cur = sc.entry(cur, &mut table)?;
            if table.len() as u64 >= count {
                break None;
            }
        };
        if let Some(from) = from {
            table.append_from(&region.table, from);
            cur = region.end;
            if let Some(e) = region.error {
                if (table.len() as u64) < count {
                    return Err(e);
                }
            }
        }
    }
    // A region may have stopped at its split point without reaching the pack's end.
    while (table.len() as u64) < count && cur < limit {
        let sc = scanner.get_or_insert_with(|| Scanner::new(pack, limit, opts));
        cur = sc.entry(cur, &mut table)?;
    }
    Ok((table, cur))
}
