//! Git's table of objects for the checks: every object linked to (by a commit, tree or tag)
//! or checked, with the type the link expects or the object has. Shared by the indexer's
//! threads; a tree links to what its previous version linked to, so each thread first asks
//! a small cache of what it recorded lately, and takes a shard's lock only for the rest.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::pack::entry::ObjectId;

const SHARDS: usize = 64;
const RECENT_SLOTS: usize = 1 << 14;

/// One shard: open addressing over slots of id + type (21 bytes, type 0 for an empty slot),
/// filled to at most 7/8; a general map of ids took 33 bytes a slot (on git/git's pack, where
/// the table holds every one of the 419,403 objects as Git's does, the strict run's peak went
/// from 77.7 to 69.9 MiB).
#[derive(Default)]
struct Shard {
    slots: Vec<[u8; 21]>,
    len: usize,
}

impl Shard {
    fn home(&self, id: &ObjectId) -> usize {
        // Ids are uniformly distributed: their first bytes are a hash already.
        u64::from_le_bytes(id[..8].try_into().unwrap()) as usize & (self.slots.len() - 1)
    }

    /// The type `id` has already, or None after recording it as `kind`.
    fn get_or_insert(&mut self, id: ObjectId, kind: u8) -> Option<u8> {
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(&id);
        loop {
            let slot = &mut self.slots[at];
            if slot[20] == 0 {
                slot[..20].copy_from_slice(&id);
                slot[20] = kind;
                self.len += 1;
                return None;
            }
            if slot[..20] == id {
                return Some(slot[20]);
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(256);
        let old = std::mem::replace(&mut self.slots, vec![[0u8; 21]; size]);
        self.len = 0;
        for slot in old.into_iter().filter(|s| s[20] != 0) {
            self.get_or_insert(slot[..20].try_into().unwrap(), slot[20]);
        }
    }
}

/// Each table's own number: a thread's cache belongs to one table.
static SERIAL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (table number, slots of id + type): what this thread recorded lately in that table.
    static RECENT: RefCell<(u64, Vec<[u8; 21]>)> = const { RefCell::new((0, Vec::new())) };
}

pub struct Links {
    serial: u64,
    /// Sharded by the id's last byte (the shards hash its first bytes).
    shards: Vec<Mutex<Shard>>,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
        }
    }
}

impl Links {
    /// Record `id` as a `kind`; the other type it was recorded as, if so (it keeps that one).
    pub fn record(&self, id: ObjectId, kind: u8) -> Option<u8> {
        // Ids are uniformly distributed: two bytes of one pick its slot.
        let slot = usize::from(u16::from_le_bytes([id[0], id[1]])) % RECENT_SLOTS;
        let mut key = [0u8; 21];
        key[..20].copy_from_slice(&id);
        key[20] = kind;
        let known = RECENT.with(|r| {
            let mut r = r.borrow_mut();
            if r.0 != self.serial {
                *r = (self.serial, vec![[0u8; 21]; RECENT_SLOTS]);
            }
            r.1[slot] == key
        });
        if known {
            return None;
        }
        let shard = &self.shards[id[19] as usize % SHARDS];
        let had = shard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(id, kind);
        match had {
            Some(k) if k != kind => Some(k),
            _ => {
                RECENT.with(|r| r.borrow_mut().1[slot] = key);
                None
            }
        }
    }

    /// Call `f` with every object recorded and its type, each shard given back as it is done.
    pub fn drain(&self, mut f: impl FnMut(ObjectId, u8)) {
        for shard in &self.shards {
            let shard = std::mem::take(&mut *shard.lock().unwrap_or_else(|e| e.into_inner()));
            for slot in shard.slots.iter().filter(|s| s[20] != 0) {
                f(slot[..20].try_into().unwrap(), slot[20]);
            }
        }
    }
}
