//! Pack entry headers: the type/size varint, the OFS_DELTA negative offset and the REF_DELTA id.
//! Pure functions over byte slices; see gitformat-pack.

use crate::error::{PackError, Result};

pub const OBJ_COMMIT: u8 = 1;
pub const OBJ_TREE: u8 = 2;
pub const OBJ_BLOB: u8 = 3;
pub const OBJ_TAG: u8 = 4;
pub const OBJ_OFS_DELTA: u8 = 6;
pub const OBJ_REF_DELTA: u8 = 7;

pub use crate::pack::object_id::{HashAlgo, ObjectId, MAX_RAWSZ};

/// The longest header an entry can have: 10 bytes of size varint plus 10 of OFS offset, or
/// 10 plus a raw id of the longest hash. Used to size reads before parsing.
pub const MAX_HEADER_LEN: usize = 10 + MAX_RAWSZ;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseRef {
    None,
    /// Absolute offset of the base entry (already subtracted from the entry's own offset).
    Offset(u64),
    Id(ObjectId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    pub kind: u8,
    /// Inflated size of the entry's data (the object, or the delta).
    pub size: u64,
    /// Bytes from the entry start to the first byte of its zlib stream.
    pub header_len: usize,
    pub base: BaseRef,
}

pub fn is_delta(kind: u8) -> bool {
    kind == OBJ_OFS_DELTA || kind == OBJ_REF_DELTA
}

pub fn type_name(kind: u8) -> &'static str {
    match kind {
        OBJ_COMMIT => "commit",
        OBJ_TREE => "tree",
        OBJ_BLOB => "blob",
        OBJ_TAG => "tag",
        OBJ_OFS_DELTA => "ofs-delta",
        OBJ_REF_DELTA => "ref-delta",
        _ => "bad",
    }
}

/// The object type a name stands for (in a tag's `type` line): commit, tree, blob or tag.
pub fn type_named(name: &[u8]) -> Option<u8> {
    match name {
        b"commit" => Some(OBJ_COMMIT),
        b"tree" => Some(OBJ_TREE),
        b"blob" => Some(OBJ_BLOB),
        b"tag" => Some(OBJ_TAG),
        _ => None,
    }
}

/// Parse the header of the entry at `offset`, whose bytes start at `buf[0]`, in a pack whose
/// REF_DELTA bases are ids of `algo`.
/// Returns `Ok(None)` when `buf` ends before the header does (the caller reads more, or, at the
/// end of the pack, reports truncation).
pub fn parse_header(buf: &[u8], offset: u64, algo: HashAlgo) -> Result<Option<EntryHeader>> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let kind = (first >> 4) & 7;
    if !matches!(
        kind,
        OBJ_COMMIT | OBJ_TREE | OBJ_BLOB | OBJ_TAG | OBJ_OFS_DELTA | OBJ_REF_DELTA
    ) {
        return Err(PackError::at(
            offset,
            format!("bad object type {kind} in entry header"),
        ));
    }
    let mut size = u64::from(first & 0x0f);
    let mut shift = 4u32;
    let mut pos = 1usize;
    let mut byte = first;
    while byte & 0x80 != 0 {
        let Some(&b) = buf.get(pos) else {
            return Ok(None);
        };
        pos += 1;
        if shift > 63 || (shift > 57 && u64::from(b & 0x7f) >> (64 - shift) != 0) {
            return Err(PackError::at(
                offset,
                "object size in entry header overflows 64 bits",
            ));
        }
        size |= u64::from(b & 0x7f) << shift;
        shift += 7;
        byte = b;
    }
    let base = match kind {
        OBJ_OFS_DELTA => {
            let Some(&b0) = buf.get(pos) else {
                return Ok(None);
            };
            pos += 1;
            let mut rel = u64::from(b0 & 0x7f);
            let mut byte = b0;
            while byte & 0x80 != 0 {
                let Some(&b) = buf.get(pos) else {
                    return Ok(None);
                };
                pos += 1;
                rel += 1;
                if rel == 0 || rel >> 57 != 0 {
                    return Err(PackError::at(offset, "delta base offset overflows"));
                }
                rel = (rel << 7) | u64::from(b & 0x7f);
                byte = b;
            }
            if rel == 0 || rel >= offset || offset - rel < 12 {
                return Err(PackError::at(
                    offset,
                    format!("delta base offset {rel} points outside the pack before this entry"),
                ));
            }
            BaseRef::Offset(offset - rel)
        }
        OBJ_REF_DELTA => {
            let Some(raw) = buf.get(pos..pos + algo.rawsz()) else {
                return Ok(None);
            };
            pos += algo.rawsz();
            BaseRef::Id(ObjectId::of(algo, raw))
        }
        _ => BaseRef::None,
    };
    Ok(Some(EntryHeader {
        kind,
        size,
        header_len: pos,
        base,
    }))
}

/// Encode the type/size varint as Git writes it (minimal, no padding).
pub fn encode_type_size(kind: u8, mut size: u64, out: &mut Vec<u8>) {
    let mut c = (kind << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size != 0 {
        out.push(c | 0x80);
        c = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(c);
}

/// Encode an OFS_DELTA distance (entry offset minus base offset, > 0).
pub fn encode_ofs(mut rel: u64, out: &mut Vec<u8>) {
    let mut tmp = [0u8; 10];
    let mut pos = tmp.len() - 1;
    tmp[pos] = (rel & 0x7f) as u8;
    rel >>= 7;
    while rel != 0 {
        rel -= 1;
        pos -= 1;
        tmp[pos] = 0x80 | (rel & 0x7f) as u8;
        rel >>= 7;
    }
    out.extend_from_slice(&tmp[pos..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_varint_round_trips() {
        for &size in &[
            0u64,
            15,
            16,
            127,
            128,
            1 << 20,
            u32::MAX as u64,
            u64::MAX >> 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            encode_type_size(OBJ_BLOB, size, &mut out);
            let h = parse_header(&out, 100, HashAlgo::Sha1).unwrap().unwrap();
            assert_eq!((h.kind, h.size, h.header_len), (OBJ_BLOB, size, out.len()));
        }
    }

    #[test]
    fn ofs_round_trips() {
        for &rel in &[1u64, 127, 128, 16511, 16512, 1 << 40] {
            let offset = rel + 12;
            let mut out = Vec::new();
            encode_type_size(OBJ_OFS_DELTA, 5, &mut out);
            encode_ofs(rel, &mut out);
            let h = parse_header(&out, offset, HashAlgo::Sha1).unwrap().unwrap();
            assert_eq!(h.base, BaseRef::Offset(12));
        }
    }

    #[test]
    fn rejects_bad_type_and_forward_offsets() {
        assert!(parse_header(&[0x50], 12, HashAlgo::Sha1).is_err());
        assert!(parse_header(&[0x00], 12, HashAlgo::Sha1).is_err());
        let mut out = Vec::new();
        encode_type_size(OBJ_OFS_DELTA, 5, &mut out);
        encode_ofs(20, &mut out);
        assert!(parse_header(&out, 20, HashAlgo::Sha1).is_err());
        assert!(parse_header(&out, 31, HashAlgo::Sha1).is_err());
        assert!(parse_header(&out, 32, HashAlgo::Sha1).is_ok());
    }

    #[test]
    fn ref_bases_are_ids_of_the_packs_hash() {
        let mut out = Vec::new();
        encode_type_size(OBJ_REF_DELTA, 5, &mut out);
        out.extend([7u8; 32]);
        let h = parse_header(&out, 12, HashAlgo::Sha256).unwrap().unwrap();
        assert_eq!(
            h.base,
            BaseRef::Id(ObjectId::of(HashAlgo::Sha256, &[7; 32]))
        );
        assert_eq!(h.header_len, out.len());
        // A SHA-256 base cut at 20 of its 32 bytes is a header cut short, not a SHA-1 id.
        assert_eq!(
            parse_header(&out[..21], 12, HashAlgo::Sha256).unwrap(),
            None
        );
        let sha1 = parse_header(&out, 12, HashAlgo::Sha1).unwrap().unwrap();
        assert_eq!(sha1.header_len, 21);
    }

    #[test]
    fn short_buffers_ask_for_more() {
        assert_eq!(parse_header(&[0x95], 12, HashAlgo::Sha1).unwrap(), None);
        assert_eq!(parse_header(&[0x75], 12, HashAlgo::Sha1).unwrap(), None);
    }
}
