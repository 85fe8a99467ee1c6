//! A pack and its `.idx` (versions 2 and 1, gitformat-pack), for finding objects by id:
//! the ids sorted, each one's offset, and the offsets sorted (an entry ends where the next
//! one starts).

use std::path::{Path, PathBuf};

use crate::error::{PackError, Result};
use crate::pack::entry_header::{HashAlgo, ObjectId};
use crate::pack::source::PackFile;

/// One pack and its index: ids sorted, the offset of each, and the offsets sorted (an entry
/// ends where the next one starts).
pub struct IndexedPack {
    pub(super) path: PathBuf,
    pub(super) pack: PackFile,
    pub(super) fanout: [u32; 256],
    pub(super) ids: Vec<ObjectId>,
    /// The first eight bytes of each id, as a number: searched instead of the ids.
    pub(super) keys: Vec<u64>,
    pub(super) offsets: Vec<u64>,
    pub(super) sorted_offsets: Vec<u64>,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Read a pack's `.idx`, version 2 or 1 (gitformat-pack).
fn read_idx(idx: &Path, algo: HashAlgo) -> Result<([u32; 256], Vec<ObjectId>, Vec<u64>)> {
    let rawsz = algo.rawsz();
    let data =
        std::fs::read(idx).map_err(|e| PackError::io(&format!("reading {}", idx.display()), e))?;
    let bad = |what: &str| PackError::general(format!("{} is corrupt: {what}", idx.display()));
    let v2 = data.len() >= 8 && data[..4] == [0xff, b't', b'O', b'c'];
    let fan_at = if v2 {
        if be32(&data[4..8]) != 2 {
            return Err(bad("unknown index version"));
        }
        8
    } else {
        0
    };
    if data.len() < fan_at + 1024 + 2 * rawsz {
        return Err(bad("too short"));
    }
    let mut fanout = [0u32; 256];
    for (i, f) in fanout.iter_mut().enumerate() {
        *f = be32(&data[fan_at + 4 * i..]);
    }
    let n = fanout[255] as usize;
    let mut ids = Vec::with_capacity(n);
    let mut offsets = Vec::with_capacity(n);
    let body = fan_at + 1024;
    if v2 {
        let (names, crcs) = (body, body + n * rawsz);
        let small = crcs + 4 * n;
        let large = small + 4 * n;
        if data.len() < large + 2 * rawsz {
            return Err(bad("too short"));
        }
        for i in 0..n {
            ids.push(ObjectId::of(
                algo,
                &data[names + i * rawsz..names + (i + 1) * rawsz],
            ));
            let o = be32(&data[small + 4 * i..]);
            offsets.push(if o & 0x8000_0000 == 0 {
                u64::from(o)
            } else {
                let at = large + 8 * (o & 0x7fff_ffff) as usize;
                let b = data
                    .get(at..at + 8)
                    .ok_or_else(|| bad("large offset out of range"))?;
                u64::from_be_bytes(b.try_into().unwrap())
            });
        }
    } else {
        if data.len() < body + n * (4 + rawsz) + 2 * rawsz {
            return Err(bad("too short"));
        }
        for i in 0..n {
            let e = body + i * (4 + rawsz);
            offsets.push(u64::from(be32(&data[e..])));
            ids.push(ObjectId::of(algo, &data[e + 4..e + 4 + rawsz]));
        }
    }
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("object names not sorted"));
    }
    Ok((fanout, ids, offsets))
}

fn key_of(id: &ObjectId) -> u64 {
    u64::from_be_bytes(id[..8].try_into().unwrap())
}

impl IndexedPack {
    pub fn open(path: &Path, algo: HashAlgo) -> Result<Self> {
        let (fanout, ids, offsets) = read_idx(&path.with_extension("idx"), algo)?;
        let mut sorted_offsets = offsets.clone();
        sorted_offsets.sort_unstable();
        let keys = ids.iter().map(key_of).collect();
        Ok(IndexedPack {
            path: path.to_path_buf(),
            pack: PackFile::open(path, false, algo)?,
            fanout,
            ids,
            keys,
            offsets,
            sorted_offsets,
        })
    }

    /// Ids are uniformly distributed: a guess from where the key lies between the first and
    /// the last of its fanout bucket lands within a few places of it, and the search goes on
    /// from there in a window that doubles.
    pub fn find(&self, id: &ObjectId) -> Option<u64> {
        self.position(id).map(|i| self.offsets[i])
    }

    /// Where `id` is in the sorted ids.
    pub fn position(&self, id: &ObjectId) -> Option<usize> {
        let b = id[0] as usize;
        let lo = if b == 0 {
            0
        } else {
            self.fanout[b - 1] as usize
        };
        let hi = (self.fanout[b] as usize).min(self.keys.len());
        if lo >= hi {
            return None;
        }
        let key = key_of(id);
        let (first, last) = (self.keys[lo], self.keys[hi - 1]);
        if key < first || key > last {
            return None;
        }
        let span = u128::from(last - first);
        let guess = lo
            + (u128::from(key - first) * (hi - lo - 1) as u128)
                .checked_div(span)
                .unwrap_or(0) as usize;
        let mut step = 8;
        let mut a = guess.saturating_sub(step).max(lo);
        while a > lo && self.keys[a] > key {
            step *= 2;
            a = guess.saturating_sub(step).max(lo);
        }
        let mut step = 8;
        let mut z = (guess + step).min(hi);
        while z < hi && self.keys[z - 1] < key {
            step *= 2;
            z = (guess + step).min(hi);
        }
        let mut i = a + self.keys[a..z].partition_point(|&k| k < key);
        while i < hi && self.keys[i] == key {
            if &self.ids[i] == id {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// Where the entry at `offset` ends: the next entry, or the trailer.
    pub fn end_of(&self, offset: u64) -> u64 {
        let i = self.sorted_offsets.partition_point(|&o| o <= offset);
        self.sorted_offsets
            .get(i)
            .copied()
            .unwrap_or(self.pack.len.saturating_sub(self.pack.trailer_len()))
    }

    pub fn corrupt(&self, offset: u64, what: &str) -> PackError {
        PackError::at(
            offset,
            format!("{} is corrupt: {what}", self.path.display()),
        )
    }
}
