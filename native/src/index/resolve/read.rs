//! Reading one entry of the pack for the resolver: its compressed bytes through a
//! per-thread buffer (or straight from the file in pieces, for a large one) inflated into
//! the caller's buffer, and the per-thread buffers the resolver reuses; and rebuilding a
//! base it evicted, through the shared chain decoder.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Resolver;
use crate::error::{PackError, Result};
use crate::index::retain::{Base, KeptBases};
use crate::index::table::Table;
use crate::pack::delta_chain::{decode, BaseCache, ChainLinks, ChainStats};
use crate::pack::inflate::{inflated_bound, InflateFailure, Inflater};
use crate::pack::source::PackFile;

/// Per-thread buffers above this size are freed after use rather than kept for the next
/// (128 KiB: peak RSS about 1 MiB lower than with 1 MiB on libgit2 and redis, same speed).
pub(super) const KEEP_BUFFER_LIMIT: usize = 1 << 17;

thread_local! {
    pub(super) static INFLATER: RefCell<Inflater> = RefCell::new(Inflater::new());
    pub(super) static READ_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// A delta's inflated data, needed only while it is applied.
    pub(super) static DELTA_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// A resolved object: copied out only when it has children to keep it for.
    pub(super) static RESULT_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

pub(super) fn release_if_large(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP_BUFFER_LIMIT {
        *buf = Vec::new();
    }
}

impl Resolver<'_> {
    /// The data of `base`, rebuilt from the nearest ancestor still holding its data if evicted.
    pub(super) fn data_of(&self, base: &Arc<Base>) -> Result<Arc<Vec<u8>>> {
        let mut stats = ChainStats::default();
        let data = decode(
            &mut ForestLinks(self),
            &mut PendingBases(&self.kept),
            base.clone(),
            &mut stats,
        );
        self.rebuilds
            .fetch_add(stats.roots + stats.applied, Ordering::Relaxed);
        self.base_inflations
            .fetch_add(stats.roots, Ordering::Relaxed);
        self.delta_inflations
            .fetch_add(stats.applied, Ordering::Relaxed);
        data
    }

    /// Inflate entry `i`'s data (an object or a delta) from the pack.
    pub(super) fn inflate_entry(&self, i: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.inflate_entry_into(i, &mut out)?;
        Ok(out)
    }

    /// Inflate entry `i` into `out`, reusing its allocation.
    pub(super) fn inflate_entry_into(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        if let Some(t) = &self.trace {
            let offset = self.table.entries.offsets[i];
            t.lock().unwrap_or_else(|e| e.into_inner()).push(offset);
        }
        inflate_entry(self.pack, self.table, self.opts.object_limit, i, out)
    }
}

/// Inflate entry `i` of `table` (an object or a delta, at most `object_limit` bytes) into
/// `out`, reusing its allocation.
pub(crate) fn inflate_entry(
    pack: &PackFile,
    table: &Table,
    object_limit: u64,
    i: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (start, end) = table.entries.stream_of(i);
    let size = table.entries.sizes[i];
    let offset = table.entries.offsets[i];
    if size > object_limit {
        return Err(PackError::at(
            offset,
            format!("object of {size} bytes does not fit in memory"),
        ));
    }
    let clen = end - start;
    if size > inflated_bound(clen) {
        return Err(PackError::at(
            offset,
            InflateFailure::Impossible.describe(size),
        ));
    }
    // Large entries are inflated straight from the file, without a second (compressed)
    // copy of them in memory.
    if clen <= KEEP_BUFFER_LIMIT as u64 {
        READ_BUF.with(|rb| -> Result<()> {
            let mut rb = rb.borrow_mut();
            if rb.len() < clen as usize {
                rb.resize(clen as usize, 0);
            }
            pack.read_exact_at(&mut rb[..clen as usize], start)?;
            let used = INFLATER
                .with(|inf| {
                    inf.borrow_mut()
                        .inflate_into(&rb[..clen as usize], size as usize, out)
                })
                .map_err(|f| PackError::at(offset, f.describe(size)))?;
            if used as u64 != clen {
                return Err(PackError::at(
                    offset,
                    "entry changed since it was first read",
                ));
            }
            if rb.len() > KEEP_BUFFER_LIMIT {
                *rb = Vec::new();
            }
            Ok(())
        })
    } else {
        out.clear();
        out.try_reserve_exact(size as usize).map_err(|_| {
            PackError::at(
                offset,
                format!("cannot allocate {size} bytes for an object"),
            )
        })?;
        // The first pass inflated this entry to exactly `size` bytes: the size is true.
        inflate_streaming(pack, start, end, offset, size, out)
    }
}

/// Inflate an entry from the file into `out` (empty, with room for its size), in pieces.
fn inflate_streaming(
    pack: &PackFile,
    start: u64,
    end: u64,
    offset: u64,
    size: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut stream = flate2::Decompress::new(true);
    let mut input = vec![0u8; 1 << 20];
    let mut pos = start;
    while pos < end {
        let n = pack.read_upto(&mut input, pos, end)?;
        let mut taken = 0;
        while taken < n {
            let (in0, out0) = (stream.total_in(), stream.total_out() as usize);
            let status = stream
                .decompress_vec(&input[taken..n], out, flate2::FlushDecompress::None)
                .map_err(|e| PackError::at(offset, format!("corrupt zlib stream: {e}")))?;
            let took = (stream.total_in() - in0) as usize;
            taken += took;
            if status == flate2::Status::StreamEnd {
                break;
            }
            if took == 0 && stream.total_out() as usize == out0 {
                return Err(PackError::at(offset, "corrupt zlib stream"));
            }
        }
        pos += n as u64;
    }
    if out.len() as u64 != size || stream.total_in() != end - start {
        return Err(PackError::at(
            offset,
            "entry changed since it was first read",
        ));
    }
    Ok(())
}

/// The delta forest as chain links: a kept base's parent is its delta base.
struct ForestLinks<'r, 'a>(&'r Resolver<'a>);

impl ChainLinks for ForestLinks<'_, '_> {
    type Link = Arc<Base>;

    fn base(&self, link: &Arc<Base>) -> Result<Option<Arc<Base>>> {
        Ok(link.parent.clone())
    }

    fn inflate(&mut self, link: &Arc<Base>, out: &mut Vec<u8>) -> Result<()> {
        self.0.inflate_entry_into(link.entry as usize, out)
    }

    fn offset(&self, link: &Arc<Base>) -> u64 {
        self.0.table.entries.offsets[link.entry as usize]
    }

    fn object_limit(&self) -> u64 {
        self.0.opts.object_limit
    }

    fn max_chain(&self) -> usize {
        // Parents are made before their children: the links cannot form a cycle.
        usize::MAX
    }

    fn cycle(&self, link: &Arc<Base>) -> PackError {
        PackError::at(self.offset(link), "delta cycle")
    }
}

/// The resolver's policy: a base is kept while children still have to be applied to it.
struct PendingBases<'r>(&'r KeptBases);

impl BaseCache<Arc<Base>> for PendingBases<'_> {
    fn get(&mut self, link: &Arc<Base>) -> Option<Arc<Vec<u8>>> {
        link.data.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn offer(&mut self, link: &Arc<Base>, data: &Arc<Vec<u8>>) {
        if link.pending.load(Ordering::Relaxed) > 0 {
            self.0.keep(link, data.clone());
        }
    }
}
