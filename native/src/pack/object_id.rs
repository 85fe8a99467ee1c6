//! Object ids of either hash Git names objects by (gitformat-pack, hash-function-transition):
//! SHA-1 (20 bytes) or SHA-256 (32 bytes). The hash is chosen once, where a repository or a
//! pack is opened, and every length follows from it; nothing else writes 20 or 32.

use std::fmt;
use std::ops::Deref;

/// The hash of a repository's object names, with what follows from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    #[default]
    Sha1,
    Sha256,
}

/// The longest id of any hash: the room an `ObjectId` keeps.
pub const MAX_RAWSZ: usize = 32;

impl HashAlgo {
    /// Bytes in an id (Git's `rawsz`).
    pub const fn rawsz(self) -> usize {
        match self {
            HashAlgo::Sha1 => 20,
            HashAlgo::Sha256 => 32,
        }
    }

    /// Hex digits in an id (Git's `hexsz`).
    pub const fn hexsz(self) -> usize {
        2 * self.rawsz()
    }

    /// The name Git's configuration and options use (`extensions.objectFormat`).
    pub const fn name(self) -> &'static str {
        match self {
            HashAlgo::Sha1 => "sha1",
            HashAlgo::Sha256 => "sha256",
        }
    }

    pub fn named(name: &str) -> Option<Self> {
        match name {
            "sha1" => Some(HashAlgo::Sha1),
            "sha256" => Some(HashAlgo::Sha256),
            _ => None,
        }
    }

    /// The hash id of the .rev, .mtimes and .bitmap headers (1 for SHA-1, 2 for SHA-256).
    pub const fn format_id(self) -> u32 {
        match self {
            HashAlgo::Sha1 => 1,
            HashAlgo::Sha256 => 2,
        }
    }
}

/// An object id: as Git's `struct object_id`, room for the longest hash, of which the
/// first `rawsz` bytes are used (the rest stay zero, so ids of one hash compare and sort by
/// their bytes). It dereferences to those bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    bytes: [u8; MAX_RAWSZ],
    len: u8,
}

impl ObjectId {
    /// The id of all zero bytes (Git's null oid) of `algo`.
    pub const fn null(algo: HashAlgo) -> Self {
        ObjectId {
            bytes: [0; MAX_RAWSZ],
            len: algo.rawsz() as u8,
        }
    }

    /// `raw` as an id of `algo`; `raw` must be `algo.rawsz()` bytes long.
    pub fn of(algo: HashAlgo, raw: &[u8]) -> Self {
        let mut id = ObjectId::null(algo);
        id.bytes[..algo.rawsz()].copy_from_slice(raw);
        id
    }

    pub fn algo(&self) -> HashAlgo {
        if usize::from(self.len) == HashAlgo::Sha256.rawsz() {
            HashAlgo::Sha256
        } else {
            HashAlgo::Sha1
        }
    }

    /// All the room, the unused bytes zero: fixed-size words to compare or hash.
    pub fn padded(&self) -> &[u8; MAX_RAWSZ] {
        &self.bytes
    }

    pub fn is_null(&self) -> bool {
        self.bytes == [0; MAX_RAWSZ]
    }

    /// Ids of `algo`, one after another in `raw` (whose length must be a multiple of its size).
    pub fn column(algo: HashAlgo, raw: &[u8]) -> Vec<ObjectId> {
        raw.chunks_exact(algo.rawsz())
            .map(|c| ObjectId::of(algo, c))
            .collect()
    }
}

impl Deref for ObjectId {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl AsRef<[u8]> for ObjectId {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Any slice of an id's length (20 or 32 bytes) is that hash's id.
impl TryFrom<&[u8]> for ObjectId {
    type Error = ();

    fn try_from(raw: &[u8]) -> Result<Self, ()> {
        [HashAlgo::Sha1, HashAlgo::Sha256]
            .into_iter()
            .find(|a| a.rawsz() == raw.len())
            .map(|a| ObjectId::of(a, raw))
            .ok_or(())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A column of ids of one hash, each at its own size: a table of a pack's objects holds one
/// id an entry, and `ObjectId`'s room for the longest hash would add 13 bytes to every SHA-1
/// id (measured: 3-5 MiB more at index-pack's peak on libgit2, whose scan holds two copies
/// while it joins its threads' tables).
#[derive(Clone, Debug, Default)]
pub struct IdColumn {
    algo: HashAlgo,
    bytes: Vec<u8>,
}

impl IdColumn {
    pub fn new(algo: HashAlgo) -> Self {
        IdColumn {
            algo,
            bytes: Vec::new(),
        }
    }

    pub fn algo(&self) -> HashAlgo {
        self.algo
    }

    pub fn len(&self) -> usize {
        self.bytes.len() / self.algo.rawsz()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Id `i`'s bytes.
    pub fn raw(&self, i: usize) -> &[u8] {
        let n = self.algo.rawsz();
        &self.bytes[i * n..(i + 1) * n]
    }

    pub fn get(&self, i: usize) -> ObjectId {
        ObjectId::of(self.algo, self.raw(i))
    }

    /// Append `id`, an id of this column's hash.
    pub fn push(&mut self, id: &ObjectId) {
        debug_assert_eq!(id.algo(), self.algo);
        self.bytes.extend_from_slice(id);
    }

    pub fn reserve_exact(&mut self, n: usize) {
        self.bytes.reserve_exact(n * self.algo.rawsz());
    }

    pub fn truncate(&mut self, n: usize) {
        self.bytes.truncate(n * self.algo.rawsz());
    }

    /// Append the ids `from..` of `other`.
    pub fn extend_from(&mut self, other: &IdColumn, from: usize) {
        self.bytes
            .extend_from_slice(&other.bytes[from * other.algo.rawsz()..]);
    }

    /// Every id, one after another.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// Ids of `algo` given as concatenated bytes (Python's columns); None if the length is not a
/// whole number of them.
pub fn ids_of(algo: HashAlgo, raw: &[u8]) -> Option<Vec<ObjectId>> {
    raw.len()
        .is_multiple_of(algo.rawsz())
        .then(|| ObjectId::column(algo, raw))
}

/// Ids one after another (Python's columns): the way back of `ids_of`.
pub fn concat<'a>(ids: impl IntoIterator<Item = &'a ObjectId>) -> Vec<u8> {
    ids.into_iter().flat_map(|id| id.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_one_hash_sort_by_their_bytes() {
        let a = ObjectId::of(HashAlgo::Sha256, &[1; 32]);
        let mut raw = [1; 32];
        raw[31] = 2;
        let b = ObjectId::of(HashAlgo::Sha256, &raw);
        assert!(a < b);
        assert_eq!(a.len(), 32);
        assert_eq!(a.algo(), HashAlgo::Sha256);
        let c = ObjectId::of(HashAlgo::Sha1, &[1; 20]);
        assert_eq!(c.len(), 20);
        assert_eq!(ObjectId::try_from(&[1u8; 20][..]), Ok(c));
        assert!(ObjectId::try_from(&[1u8; 21][..]).is_err());
        assert!(ObjectId::null(HashAlgo::Sha1).is_null());
        assert_eq!(ids_of(HashAlgo::Sha1, &[0; 41]), None);
    }
}
