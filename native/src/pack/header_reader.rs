//! Entry headers at known offsets, without inflating anything: the shape of a pack (types,
//! sizes, delta bases) as its index and a sequential read of the headers give it.

use crate::error::{PackError, Result};
use crate::pack::delta::delta_sizes;
use crate::pack::entries::Entries;
use crate::pack::entry_header::{
    is_delta, parse_header, BaseRef, EntryHeader, ObjectId, MAX_HEADER_LEN,
};
use crate::pack::source::PackFile;

/// The entries (no CRCs, no base positions) with their delta bases as the headers name them.
pub struct Headers {
    pub entries: Entries,
    /// OFS_DELTA base offset, else 0.
    pub ofs_bases: Vec<u64>,
    /// REF_DELTA base id, else zeros.
    pub ref_ids: Vec<ObjectId>,
    /// Size of the object an entry stands for: the entry size for whole objects, the result
    /// size from the delta's header for deltas (found by inflating its first bytes only).
    /// All zero unless asked for.
    pub object_sizes: Vec<u64>,
}

const CHUNK: usize = 4 << 20;

/// Parse the entry headers at `offsets` (ascending).
pub fn read_headers(
    pack: &PackFile,
    offsets: Vec<u64>,
    with_object_sizes: bool,
) -> Result<Headers> {
    let n = offsets.len();
    let limit = pack.len.saturating_sub(pack.trailer_len());
    let mut h = Headers {
        entries: Entries {
            kinds: Vec::with_capacity(n),
            sizes: Vec::with_capacity(n),
            header_lens: Vec::with_capacity(n),
            data_end: limit,
            ..Entries::default()
        },
        ofs_bases: Vec::with_capacity(n),
        ref_ids: Vec::with_capacity(n),
        object_sizes: Vec::with_capacity(n),
    };
    let mut stream = flate2::Decompress::new(true);
    each_header(pack, &offsets, |off, head| {
        let object_size = if !with_object_sizes {
            0
        } else if is_delta(head.kind) {
            delta_result_size(pack, &mut stream, off + head.header_len as u64, limit, off)?
        } else {
            head.size
        };
        h.object_sizes.push(object_size);
        h.entries.kinds.push(head.kind);
        h.entries.sizes.push(head.size);
        h.entries.header_lens.push(head.header_len as u8);
        match head.base {
            BaseRef::Offset(b) => {
                h.ofs_bases.push(b);
                h.ref_ids.push(ObjectId::null(pack.algo));
            }
            BaseRef::Id(id) => {
                h.ofs_bases.push(0);
                h.ref_ids.push(id);
            }
            BaseRef::None => {
                h.ofs_bases.push(0);
                h.ref_ids.push(ObjectId::null(pack.algo));
            }
        }
        Ok(())
    })?;
    h.entries.offsets = offsets;
    Ok(h)
}

/// The entries at `offsets` (ascending) as stored, with no CRCs and no bases: what reading
/// an entry needs, and no more (the bitmap reads a new pack's whole graph with these beside
/// everything else it holds).
pub fn read_entries(pack: &PackFile, offsets: Vec<u64>, data_end: u64) -> Result<Entries> {
    let n = offsets.len();
    let mut e = Entries {
        kinds: Vec::with_capacity(n),
        sizes: Vec::with_capacity(n),
        header_lens: Vec::with_capacity(n),
        data_end,
        ..Entries::default()
    };
    each_header(pack, &offsets, |_, head| {
        e.kinds.push(head.kind);
        e.sizes.push(head.size);
        e.header_lens.push(head.header_len as u8);
        Ok(())
    })?;
    e.offsets = offsets;
    Ok(e)
}

/// Call `f` with the header of each entry at `offsets` (ascending). Reads the pack in large
/// chunks, skipping none of it in between: one sequential pass is faster than a positioned
/// read per entry.
fn each_header(
    pack: &PackFile,
    offsets: &[u64],
    mut f: impl FnMut(u64, &EntryHeader) -> Result<()>,
) -> Result<()> {
    let limit = pack.len.saturating_sub(pack.trailer_len());
    let mut buf = vec![0u8; CHUNK + MAX_HEADER_LEN];
    let mut start = u64::MAX;
    let mut filled = 0usize;
    let mut prev = 0u64;
    for &off in offsets {
        if off < prev {
            return Err(PackError::at(
                off,
                "entry offsets are not in ascending order",
            ));
        }
        prev = off;
        if off < 12 || off >= limit {
            return Err(PackError::at(
                off,
                "entry offset lies outside the pack's entries",
            ));
        }
        let have = start != u64::MAX
            && off >= start
            && off + MAX_HEADER_LEN as u64 <= start + filled as u64;
        let at_end = start != u64::MAX && off >= start && start + filled as u64 == limit;
        if !have && !at_end {
            start = off;
            filled = pack.read_upto(&mut buf, off, limit)?;
        }
        let from = (off - start) as usize;
        let head = parse_header(&buf[from..filled], off, pack.algo)?
            .ok_or_else(|| PackError::at(off, "entry header is cut off by the end of the pack"))?;
        f(off, &head)?;
    }
    Ok(())
}

/// The result size a delta declares, from the first inflated bytes of its zlib stream.
fn delta_result_size(
    pack: &PackFile,
    stream: &mut flate2::Decompress,
    data_at: u64,
    limit: u64,
    offset: u64,
) -> Result<u64> {
    stream.reset(true);
    // The two size varints take at most 20 bytes; a dynamic Huffman block header comes first.
    let mut out = [0u8; 20];
    let mut input = [0u8; 512];
    let mut at = data_at;
    loop {
        let got = pack.read_upto(&mut input, at, limit)?;
        let made0 = stream.total_out() as usize;
        let in0 = stream.total_in();
        let status = stream
            .decompress(
                &input[..got],
                &mut out[made0..],
                flate2::FlushDecompress::None,
            )
            .map_err(|e| PackError::at(offset, format!("corrupt zlib stream: {e}")))?;
        let made = stream.total_out() as usize;
        at += stream.total_in() - in0;
        if made == out.len() || status == flate2::Status::StreamEnd || got == 0 {
            let (_, result, _) = delta_sizes(&out[..made], offset)?;
            return Ok(result);
        }
        if stream.total_in() == in0 && made == made0 {
            return Err(PackError::at(offset, "corrupt zlib stream"));
        }
    }
}
