//! Every object of a repository numbered, and found by id in one look: a walk asks for each
//! tree entry it cannot pass over whether it has seen the object, and a search of each
//! pack's sorted ids (several cache misses an entry) was a sixth of its time. The table
//! holds each id's first 20 bytes beside its number (a cache line at most); a longer id is
//! confirmed against the rest of it by the caller.

use std::sync::Arc;

use crate::error::{PackError, Result};
use crate::pack::entry_header::ObjectId;
use crate::walk::pack_index::IndexedPack;

/// The bytes of an id kept in the table.
const HEAD: usize = 20;
const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy)]
#[repr(C)]
struct Slot {
    head: [u8; HEAD],
    number: u32,
}

pub struct ObjectNumbers {
    slots: Vec<Slot>,
}

impl ObjectNumbers {
    /// The table of the `count` `ids`, numbered in order; an id met twice keeps its first
    /// number.
    pub fn new<'a>(count: usize, ids: impl Iterator<Item = &'a ObjectId>) -> Self {
        // Linear probing stays short at three quarters full.
        let len = (count * 4 / 3).max(1) + 1;
        let mut table = ObjectNumbers {
            slots: vec![
                Slot {
                    head: [0; HEAD],
                    number: EMPTY,
                };
                len
            ],
        };
        for (number, id) in ids.enumerate() {
            let head = head_of(id);
            let mut i = table.home(&head);
            loop {
                let slot = &mut table.slots[i];
                if slot.number == EMPTY {
                    *slot = Slot {
                        head,
                        number: number as u32,
                    };
                    break;
                }
                if slot.head == head {
                    // The same object again: the first is the one found. (Two SHA-256 ids
                    // sharing 160 bits would be too; nobody can make such a pair.)
                    break;
                }
                i = if i + 1 == table.slots.len() { 0 } else { i + 1 };
            }
        }
        table
    }

    /// The number of the object whose id starts like `id`, if there is one.
    pub fn get(&self, id: &ObjectId) -> Option<u32> {
        let head = head_of(id);
        let mut i = self.home(&head);
        loop {
            let slot = &self.slots[i];
            if slot.number == EMPTY {
                return None;
            }
            if slot.head == head {
                return Some(slot.number);
            }
            i = if i + 1 == self.slots.len() { 0 } else { i + 1 };
        }
    }

    /// Start loading the slot where `head` would be, for a `get` shortly after: the table
    /// is far larger than the caches, so each look-up is a miss otherwise.
    pub fn prefetch(&self, head: &[u8; HEAD]) {
        let slot = &self.slots[self.home(head)];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch only hints the cache; the address is a valid slot.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (slot as *const Slot).cast::<i8>(),
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Ids are uniformly distributed: eight of their bytes, scaled to the table, place them.
    fn home(&self, head: &[u8; HEAD]) -> usize {
        let h = u64::from_le_bytes(head[4..12].try_into().unwrap());
        ((u128::from(h) * self.slots.len() as u128) >> 64) as usize
    }
}

fn head_of(id: &ObjectId) -> [u8; HEAD] {
    id[..HEAD].try_into().unwrap()
}

/// Every object of a repository numbered: its packs' objects pack after pack in index order,
/// then its loose ones. The walk's readers share it, and the graph the walk records
/// (edges.rs) keeps it to name the objects its numbers stand for.
pub struct Numbering {
    table: ObjectNumbers,
    packs: Arc<Vec<IndexedPack>>,
    /// The number of each pack's first object, and of the first loose one.
    first_numbers: Vec<u32>,
    loose_ids: Vec<ObjectId>,
}

/// Numbers no object has: a tree entry that is a gitlink, and one naming an object the
/// repository lacks.
pub const GITLINK: u32 = u32::MAX - 1;
pub const MISSING: u32 = u32::MAX;

impl Numbering {
    pub fn new(packs: Arc<Vec<IndexedPack>>, loose_ids: Vec<ObjectId>) -> Result<Self> {
        let mut first_numbers = Vec::with_capacity(packs.len() + 1);
        let mut packed = 0usize;
        for p in packs.iter() {
            first_numbers.push(packed as u32);
            packed += p.ids.len();
        }
        first_numbers.push(packed as u32);
        let count = packed + loose_ids.len();
        if count >= GITLINK as usize {
            return Err(PackError::general(
                "more than 4 billion objects".to_string(),
            ));
        }
        let all_ids = packs
            .iter()
            .flat_map(|p| p.ids.iter())
            .chain(loose_ids.iter());
        let table = ObjectNumbers::new(count, all_ids);
        Ok(Numbering {
            table,
            packs,
            first_numbers,
            loose_ids,
        })
    }

    /// The number of `id`, if the repository has it (an object in two packs has the first
    /// one's).
    pub fn number(&self, id: &ObjectId) -> Option<u32> {
        let n = self.table.get(id)?;
        // The table holds 20 bytes of an id: a longer one is confirmed whole.
        (id.len() <= HEAD || self.id_of(n) == id).then_some(n)
    }

    /// Start loading what `number` will read for an id starting with `head`.
    pub fn prefetch(&self, head: &[u8]) {
        if let Some(head) = head.get(..HEAD) {
            self.table.prefetch(head.try_into().unwrap());
        }
    }

    pub fn id_of(&self, n: u32) -> &ObjectId {
        match self.split(n) {
            (p, at) if p < self.packs.len() => &self.packs[p].ids[at],
            (_, at) => &self.loose_ids[at],
        }
    }

    /// Object `n` as (its pack, or the pack count for the loose objects; its place there).
    pub fn split(&self, n: u32) -> (usize, usize) {
        let p = self.first_numbers.partition_point(|&f| f <= n) - 1;
        (p, (n - self.first_numbers[p]) as usize)
    }

    /// The packs the numbers run over, in order.
    pub fn packs(&self) -> &[IndexedPack] {
        &self.packs
    }

    /// How many numbers there are.
    pub fn objects(&self) -> usize {
        *self.first_numbers.last().unwrap() as usize + self.loose_ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::entry_header::HashAlgo;

    #[test]
    fn finds_every_id_and_no_other() {
        let ids: Vec<ObjectId> = (0u32..5000)
            .map(|i| {
                let mut b = [0u8; 20];
                b[..4].copy_from_slice(&i.to_be_bytes());
                b[4..8].copy_from_slice(&i.wrapping_mul(2_654_435_761).to_le_bytes());
                ObjectId::of(HashAlgo::Sha1, &b)
            })
            .collect();
        let mut with_twice = ids.clone();
        with_twice.push(ids[7]);
        let table = ObjectNumbers::new(with_twice.len(), with_twice.iter());
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(table.get(id), Some(n as u32));
        }
        let mut other = [0u8; 20];
        other[0] = 0xff;
        assert_eq!(table.get(&ObjectId::of(HashAlgo::Sha1, &other)), None);
    }
}
