//! Completing a thin pack: bases that REF_DELTA entries name but the pack lacks are appended as
//! whole objects, then the header's object count and the trailer are rewritten.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::FileExt;

use crate::error::{PackError, Result};
use crate::fsck::Checker;
use crate::index::resolve::{resolve, Forest, ResolveOptions, ResolveStats};
use crate::index::table::Table;
use crate::pack::entry_header::{encode_type_size, ObjectId, OBJ_COMMIT, OBJ_TAG};
use crate::pack::hash::{object_id, FileChecksum};
use crate::pack::source::PackFile;
use crate::progress::Progress;

/// What resolving the deltas an appended base unlocks needs.
pub struct Resolving<'a> {
    pub forest: &'a mut Forest,
    pub opts: &'a ResolveOptions,
    pub progress: &'a Progress,
    pub pool: &'a rayon::ThreadPool,
    pub trace: &'a mut Vec<u64>,
    pub check: Option<&'a Checker>,
}

/// Append each (id, type, data) of `bases` (read from the repository, in the order of the
/// missing bases) that an unresolved entry still wants (`wanting`: the entries naming each
/// base), as a whole object, and resolve what it unlocks, as Git completes a thin pack: one
/// base resolved may make a later one unneeded. Returns (appended, None), or (appended so
/// far, k) when `bases[k]` does not hash to its id, nothing of it written; and what resolving
/// did.
pub fn append_bases(
    pack: &mut PackFile,
    table: &mut Table,
    to: Resolving,
    wanting: &HashMap<ObjectId, Vec<u32>>,
    bases: &[(Vec<u8>, u8, Vec<u8>)],
    level: u32,
    detect_collisions: bool,
) -> Result<(u32, Option<usize>, ResolveStats)> {
    let mut stats = ResolveStats::default();
    let mut appended = 0u32;
    for (k, (id, kind, data)) in bases.iter().enumerate() {
        to.progress.check_cancelled()?;
        if !(OBJ_COMMIT..=OBJ_TAG).contains(kind) {
            return Err(PackError::general(format!("bad object type {kind}")));
        }
        let still_wanted = ObjectId::try_from(id.as_slice())
            .ok()
            .and_then(|id| wanting.get(&id))
            .is_some_and(|entries| entries.iter().any(|&i| table.real_kinds[i as usize] == 0));
        if !still_wanted {
            continue;
        }
        let at = table.entries.data_end;
        let oid = object_id(pack.algo, *kind, data, detect_collisions, at)?;
        if oid[..] != id[..] {
            return Ok((appended, Some(k), stats));
        }
        let idx = append_object(pack, table, *kind, data, oid, level)?;
        let last = *to.forest.child_start.last().unwrap_or(&0);
        to.forest.child_start.push(last);
        to.forest.claimed.push(false);
        stats.add(resolve(
            pack,
            table,
            to.forest,
            &[idx],
            to.opts,
            to.progress,
            to.pool,
            to.trace,
            to.check,
        )?);
        appended += 1;
    }
    Ok((appended, None, stats))
}

/// Append one whole object, whose id is `oid`, at the end of the entries (over the old
/// trailer). Returns its index.
pub fn append_object(
    pack: &mut PackFile,
    table: &mut Table,
    kind: u8,
    data: &[u8],
    oid: ObjectId,
    level: u32,
) -> Result<u32> {
    let offset = table.entries.data_end;
    let mut entry = Vec::with_capacity(data.len() / 2 + 32);
    encode_type_size(kind, data.len() as u64, &mut entry);
    let header_len = entry.len();
    let mut z = flate2::write::ZlibEncoder::new(entry, flate2::Compression::new(level.min(9)));
    z.write_all(data)
        .map_err(|e| PackError::io("cannot compress a base", e))?;
    let entry = z
        .finish()
        .map_err(|e| PackError::io("cannot compress a base", e))?;
    pack.file
        .write_all_at(&entry, offset)
        .map_err(|e| PackError::at(offset, format!("cannot append a base to the pack: {e}")))?;
    let idx = table.len() as u32;
    table.entries.offsets.push(offset);
    table.entries.kinds.push(kind);
    table.entries.header_lens.push(header_len as u8);
    table.entries.sizes.push(data.len() as u64);
    table.entries.crcs.push(crc32fast::hash(&entry));
    table.oids.push(&oid);
    table.real_kinds.push(kind);
    table.entries.data_end = offset + entry.len() as u64;
    pack.len = table.entries.data_end;
    Ok(idx)
}

/// Rewrite the object count and the trailer after appending; returns the new checksum.
pub fn finish(pack: &mut PackFile, table: &Table) -> Result<ObjectId> {
    let count = u32::try_from(table.len())
        .map_err(|_| PackError::general("too many objects for one pack"))?;
    pack.file
        .write_all_at(&count.to_be_bytes(), 8)
        .map_err(|e| PackError::io("cannot rewrite the pack header", e))?;
    pack.file
        .set_len(table.entries.data_end)
        .map_err(|e| PackError::io("cannot truncate the pack", e))?;
    let mut sum = FileChecksum::new(pack.algo);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < table.entries.data_end {
        let n = pack.read_upto(&mut buf, at, table.entries.data_end)?;
        sum.update(&buf[..n]);
        at += n as u64;
    }
    let checksum = sum.finish();
    pack.file
        .write_all_at(&checksum, table.entries.data_end)
        .map_err(|e| PackError::io("cannot write the pack trailer", e))?;
    pack.file
        .sync_all()
        .map_err(|e| PackError::io("cannot sync the pack", e))?;
    pack.len = table.entries.data_end + pack.trailer_len();
    Ok(checksum)
}
