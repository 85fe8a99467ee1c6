//! Object ids. Git names objects by SHA-1 of `"<type> <size>\0" + content` and, since 2.13,
//! refuses input that carries a SHA-1 collision attack; we do the same with the `sha1dc` crate,
//! which keeps collision detection while using the CPU's SHA instructions. File trailers use
//! plain SHA-1: they guard against corruption, not attack.

use crate::entry::{type_name, ObjectId, RAWSZ};
use crate::error::{PackError, Result};

/// Streaming object hasher with collision detection (or without, when asked).
pub enum ObjectHasher {
    Checked(sha1dc::Hasher),
    Plain(sha1::Sha1),
}

impl ObjectHasher {
    pub fn new(kind: u8, size: u64, detect_collisions: bool) -> Self {
        let mut h = if detect_collisions {
            ObjectHasher::Checked(sha1dc::Hasher::new())
        } else {
            use sha1::Digest;
            ObjectHasher::Plain(sha1::Sha1::new())
        };
        h.update(object_header(kind, size).as_bytes());
        h
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            ObjectHasher::Checked(h) => h.update(data),
            ObjectHasher::Plain(h) => sha1::Digest::update(h, data),
        }
    }

    /// The object id; `offset` names the entry in the error when a collision attack is found.
    pub fn finish(self, offset: u64) -> Result<ObjectId> {
        match self {
            ObjectHasher::Checked(h) => match h.finalize() {
                Ok(d) => {
                    let mut id = [0u8; RAWSZ];
                    id.copy_from_slice(d.as_ref());
                    Ok(id)
                }
                Err(_) => Err(PackError::at(offset, "SHA-1 collision attack detected in object")),
            },
            ObjectHasher::Plain(h) => {
                let d = sha1::Digest::finalize(h);
                let mut id = [0u8; RAWSZ];
                id.copy_from_slice(&d);
                Ok(id)
            }
        }
    }
}

pub fn object_header(kind: u8, size: u64) -> String {
    format!("{} {}\0", type_name(kind), size)
}

pub fn object_id(kind: u8, data: &[u8], detect_collisions: bool, offset: u64) -> Result<ObjectId> {
    let mut h = ObjectHasher::new(kind, data.len() as u64, detect_collisions);
    h.update(data);
    h.finish(offset)
}

/// Plain SHA-1 for checksums of whole files (pack, idx and rev trailers).
#[derive(Clone, Default)]
pub struct FileChecksum(sha1::Sha1);

impl FileChecksum {
    pub fn update(&mut self, data: &[u8]) {
        sha1::Digest::update(&mut self.0, data);
    }

    pub fn finish(self) -> ObjectId {
        let d = sha1::Digest::finalize(self.0);
        let mut id = [0u8; RAWSZ];
        id.copy_from_slice(&d);
        id
    }
}

pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::OBJ_BLOB;

    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        let id = object_id(OBJ_BLOB, b"hello\n", true, 0).unwrap();
        assert_eq!(hex(&id), "ce013625030ba8dba906f756967f9e9ca394464a");
        let plain = object_id(OBJ_BLOB, b"hello\n", false, 0).unwrap();
        assert_eq!(id, plain);
        // the empty blob
        assert_eq!(hex(&object_id(OBJ_BLOB, b"", true, 0).unwrap()), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }
}
