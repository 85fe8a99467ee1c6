//! The first pass: read every entry once, in order: header, inflate (to find where the entry
//! ends and check its size), crc32 of the raw entry, and the id of every whole object.
//!
//! Entry boundaries are only known by inflating, which makes the pass sequential. We split it
//! anyway: each extra thread starts at a guessed entry boundary in the middle of the pack,
//! confirmed by inflating two consecutive entries there. Parsing from a true boundary is
//! deterministic, so when the thread before it reaches the same offset the two chains agree
//! from there on; a wrong guess only costs the work of that thread (we splice wherever the
//! chains meet, or re-parse sequentially if they never do).

use crate::error::{PackError, Result};
use crate::fsck::Checker;
pub use crate::index::entry_scanner::WHOLE_LIMIT;
use crate::index::entry_scanner::{Scanner, SYNC_SPAN};
use crate::index::table::Table;
use crate::pack::hash::FileChecksum;
use crate::pack::object_id::{HashAlgo, ObjectId};
use crate::pack::source::PackFile;
use crate::progress::{Progress, PHASE_INDEXING};

pub const PACK_HEADER_LEN: u64 = 12;

#[derive(Debug, Clone, Copy)]
pub struct PackHeader {
    pub version: u32,
    pub count: u32,
}

pub fn read_header(pack: &PackFile) -> Result<PackHeader> {
    if pack.len < PACK_HEADER_LEN + pack.trailer_len() {
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

pub struct ScanOptions<'a> {
    pub threads: usize,
    pub detect_collisions: bool,
    /// Packs smaller than this are scanned by one thread (splitting costs a boundary search).
    pub split_min_bytes: u64,
    /// Entries inflating to more than this are streamed rather than inflated whole.
    pub whole_limit: u64,
    /// Git's object checks, run on each whole object as it is hashed.
    pub check: Option<&'a Checker>,
}

pub const DEFAULT_SPLIT_MIN_BYTES: u64 = 4 * SYNC_SPAN;

fn new_scanner<'a>(pack: &'a PackFile, limit: u64, opts: &ScanOptions<'a>) -> Scanner<'a> {
    Scanner::new(
        pack,
        limit,
        opts.detect_collisions,
        opts.whole_limit,
        opts.check,
    )
}

pub struct ScanResult {
    pub header: PackHeader,
    pub table: Table,
    pub checksum: ObjectId,
    /// Some thread read entries from a boundary that was not one (they looked like entries:
    /// a stored blob holding a pack can): whatever checked them saw objects of no pack.
    pub false_entries: bool,
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
    let mut scanner = new_scanner(pack, limit, opts);
    let mut table = Table::new(pack.algo);
    // Sized up front: growing by reallocation leaves the old blocks behind as heap fragments.
    table.reserve(expected);
    let mut at = start;
    let mut error = None;
    while at < stop && at < limit {
        if table.len().is_multiple_of(4096) {
            if let Err(e) = progress.check_cancelled() {
                error = Some(e);
                break;
            }
        }
        if table.len() == table.capacity() {
            // More entries than this region's share of bytes suggested (small ones come
            // first in a pack): grow by a step, not by doubling, for the same reason.
            table.reserve(expected / 8 + 64);
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

fn checksum_of(
    pack: &PackFile,
    algo: HashAlgo,
    limit: u64,
    progress: &Progress,
) -> Result<ObjectId> {
    let mut sum = FileChecksum::new(algo);
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

/// Run the first pass over the whole pack. A pack that fails it but whose trailer is the
/// checksum of the other hash is a pack of that hash: said so in one line.
pub fn scan(pack: &PackFile, opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    scan_as(pack, opts, progress).map_err(|e| match other_hash(pack, progress) {
        Some(other) => PackError::general(format!(
            "this is a {} pack (its trailer is its {} checksum), read as {}: \
             use --object-format={} or a {} repository",
            other.name(),
            other.name(),
            pack.algo.name(),
            other.name(),
            other.name()
        )),
        _ => e,
    })
}

/// The other hash, if the pack's last bytes are that hash's checksum of the rest.
fn other_hash(pack: &PackFile, progress: &Progress) -> Option<HashAlgo> {
    let other = match pack.algo {
        HashAlgo::Sha1 => HashAlgo::Sha256,
        HashAlgo::Sha256 => HashAlgo::Sha1,
    };
    let limit = pack.len.checked_sub(other.rawsz() as u64)?;
    if limit < PACK_HEADER_LEN {
        return None;
    }
    let mut trailer = vec![0u8; other.rawsz()];
    pack.read_exact_at(&mut trailer, limit).ok()?;
    let sum = checksum_of(pack, other, limit, progress).ok()?;
    (sum[..] == trailer[..]).then_some(other)
}

fn scan_as(pack: &PackFile, opts: &ScanOptions, progress: &Progress) -> Result<ScanResult> {
    let header = read_header(pack)?;
    let limit = pack.len - pack.trailer_len();
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
                    s.spawn(move || new_scanner(pack, limit, opts).find_boundary(from))
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
        let sum = s.spawn(|| checksum_of(pack, pack.algo, limit, progress));
        let handles: Vec<_> = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let stop = starts.get(i + 1).copied().unwrap_or(limit);
                // The first region's table becomes the whole pack's (stitch): room for every
                // entry from the start, so that the others are appended in place rather than
                // into a copy (the old and new tables side by side were the peak of a scan of
                // git/git: 419,403 entries of about 50 bytes). Room not filled is never
                // touched. The other regions: entries are spread about evenly by bytes.
                let (share, to) = if i == 0 {
                    (count as usize, limit)
                } else {
                    let bytes = u128::from(stop - start);
                    (
                        (count as u128 * bytes / u128::from(span.max(1))) as usize,
                        stop,
                    )
                };
                let expected = (share + share / 16 + 64)
                    .min(count as usize)
                    .min(((to - start) / 8) as usize + 64);
                s.spawn(move || scan_region(pack, limit, start, stop, expected, opts, progress))
            })
            .collect();
        // A thread that panicked (a bug, not the data: every data error is a Region's or the
        // checksum's own error) becomes an error too, not an abort.
        let regions: Vec<Region> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Region {
                    start: PACK_HEADER_LEN,
                    table: Table::new(pack.algo),
                    end: PACK_HEADER_LEN,
                    error: Some(PackError::general("internal error: a scan thread failed")),
                })
            })
            .collect();
        let sum = sum.join().unwrap_or_else(|_| {
            Err(PackError::general(
                "internal error: the checksum thread failed",
            ))
        });
        (regions, sum)
    });
    progress.check_cancelled()?;

    let (mut table, end, dropped) = stitch(pack, limit, count, regions, opts)?;
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
        table.entries.offsets[count as usize]
    } else {
        end
    };
    if junk_at != limit {
        return Err(PackError::at(junk_at, "pack has junk at the end"));
    }
    table.truncate(count as usize);
    table.entries.data_end = limit;
    let offsets = &table.entries.offsets;
    let false_entries = dropped.iter().any(|o| offsets.binary_search(o).is_err());

    let checksum = checksum?;
    let mut trailer = vec![0u8; pack.algo.rawsz()];
    pack.read_exact_at(&mut trailer, limit)?;
    if checksum[..] != trailer[..] {
        return Err(PackError::at(
            limit,
            format!(
                "pack checksum mismatch: the trailer says {}, the contents hash to {}",
                crate::pack::hash::hex(&trailer),
                crate::pack::hash::hex(&checksum)
            ),
        ));
    }
    Ok(ScanResult {
        header,
        table,
        checksum,
        false_entries,
    })
}

/// Join the regions into one table in pack order, re-parsing wherever two threads' chains of
/// entries do not meet. Stops once `count` entries are known. Also returns the offsets of the
/// entries a thread read that were not taken (read twice, or from a false boundary).
fn stitch(
    pack: &PackFile,
    limit: u64,
    count: u64,
    regions: Vec<Region>,
    opts: &ScanOptions,
) -> Result<(Table, u64, Vec<u64>)> {
    let mut regions = regions.into_iter();
    let mut dropped = Vec::new();
    // The first region starts at the first entry: its table becomes the result, uncopied.
    let Some(first) = regions.next() else {
        return Ok((Table::new(pack.algo), PACK_HEADER_LEN, dropped));
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
            dropped.extend_from_slice(&region.table.entries.offsets);
            continue;
        }
        let from = loop {
            if cur == region.start {
                break Some(0);
            }
            if let Ok(i) = region.table.entries.offsets.binary_search(&cur) {
                break Some(i);
            }
            if cur >= region.end {
                break None;
            }
            // The chains have not met: continue sequentially from `cur`.
            let sc = scanner.get_or_insert_with(|| new_scanner(pack, limit, opts));
            cur = sc.entry(cur, &mut table)?;
            if table.len() as u64 >= count {
                break None;
            }
        };
        let taken = from.unwrap_or(region.table.len());
        dropped.extend_from_slice(&region.table.entries.offsets[..taken]);
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
        let sc = scanner.get_or_insert_with(|| new_scanner(pack, limit, opts));
        cur = sc.entry(cur, &mut table)?;
    }
    Ok((table, cur, dropped))
}
