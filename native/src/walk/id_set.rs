//! Sets the walk asks tens of millions of times: object ids, and pack entries by offset.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use crate::pack::entry_header::ObjectId;

/// An object id as four words (room for a SHA-256 id; a SHA-1 id's last bytes are zero),
/// compared inline (a set of ids is asked tens of millions of times in a walk); ids are
/// uniformly distributed, so the first word is a hash already.
#[derive(Clone, Copy)]
struct IdKey([u64; 4]);

// Written out: a derived comparison of the words is merged into a call of memcmp.
impl PartialEq for IdKey {
    fn eq(&self, o: &Self) -> bool {
        let (a, b) = (&self.0, &o.0);
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0
    }
}

impl Eq for IdKey {}

impl IdKey {
    fn of(id: &ObjectId) -> Self {
        let raw = id.padded();
        IdKey(std::array::from_fn(|k| {
            u64::from_ne_bytes(raw[8 * k..8 * k + 8].try_into().unwrap())
        }))
    }
}

impl std::hash::Hash for IdKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0[0]);
    }
}

#[derive(Default)]
struct FirstWord(u64);

impl Hasher for FirstWord {
    fn finish(&self) -> u64 {
        self.0
    }
    // IdKey hashes its first word only (write_u64); anything else is folded in.
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A set of object ids.
#[derive(Default)]
pub struct IdSet(HashSet<IdKey, BuildHasherDefault<FirstWord>>);

impl IdSet {
    /// Whether `id` was not in the set (and now is).
    pub fn insert(&mut self, id: ObjectId) -> bool {
        self.0.insert(IdKey::of(&id))
    }
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.0.contains(&IdKey::of(id))
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Objects marked by their numbers (ObjectDb::number): a bit each.
#[derive(Default)]
pub struct Marks(Vec<u64>);

impl Marks {
    pub fn new(objects: usize) -> Self {
        Marks(vec![0; objects.div_ceil(64)])
    }

    /// Whether `n` was not marked (and now is).
    pub fn insert(&mut self, n: u32) -> bool {
        let (word, bit) = (n as usize / 64, 1u64 << (n % 64));
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }
}

/// Pack offsets are distinct enough to be their own hash.
#[derive(Default)]
pub struct LinkHasher(u64);

impl Hasher for LinkHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = self.0.rotate_left(32) ^ u64::from(n);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}
