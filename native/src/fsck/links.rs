//! Git's table of objects for the checks: every object linked to (by a commit, tree or tag)
//! or checked, with the type the link expects or the object has. Shared by the indexer's
//! threads; a tree links to what its previous version linked to, so each thread first asks
//! a small cache of what it recorded lately, and takes a shard's lock only for the rest.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::pack::object_id::{HashAlgo, ObjectId};

const SHARDS: usize = 64;
const RECENT_SLOTS: usize = 1 << 14;

/// One shard: open addressing over slots of id + type (the hash's length + 1 bytes, type 0
/// for an empty slot), filled to at most 7/8; a general map of ids took 33 bytes a slot for
/// SHA-1 (on git/git's pack, where the table holds every one of the 419,403 objects as Git's
/// does, the strict run's peak went from 77.7 to 69.9 MiB).
struct Shard {
    algo: HashAlgo,
    slots: Vec<u8>,
    len: usize,
}

impl Shard {
    fn stride(&self) -> usize {
        self.algo.rawsz() + 1
    }

    fn capacity(&self) -> usize {
        self.slots.len() / self.stride()
    }

    /// The type `id` has already, or None after recording it as `kind`.
    fn get_or_insert(&mut self, id: &[u8], kind: u8) -> Option<u8> {
        if (self.len + 1) * 8 > self.capacity() * 7 {
            self.grow();
        }
        let (n, mask) = (self.algo.rawsz(), self.capacity() - 1);
        let stride = self.stride();
        // Ids are uniformly distributed: their first bytes are a hash already.
        let mut at = u64::from_le_bytes(id[..8].try_into().unwrap()) as usize & mask;
        loop {
            let slot = &mut self.slots[at * stride..(at + 1) * stride];
            if slot[n] == 0 {
                slot[..n].copy_from_slice(id);
                slot[n] = kind;
                self.len += 1;
                return None;
            }
            if slot[..n] == *id {
                return Some(slot[n]);
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = (self.capacity() * 2).max(256);
        let bytes = size * self.stride();
        let old = std::mem::replace(&mut self.slots, vec![0u8; bytes]);
        self.len = 0;
        let n = self.algo.rawsz();
        for slot in old.chunks_exact(n + 1).filter(|s| s[n] != 0) {
            self.get_or_insert(&slot[..n], slot[n]);
        }
    }
}

/// Each table's own number: a thread's cache belongs to one table.
static SERIAL: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (table number, slots of id + type as in a shard): what this thread recorded lately in
    /// that table. Packed as the shards are: an `(ObjectId, u8)` pair takes 34 bytes a slot.
    static RECENT: RefCell<(u64, Vec<u8>)> = const { RefCell::new((0, Vec::new())) };
}

pub struct Links {
    serial: u64,
    /// Sharded by the id's last byte (the shards hash its first bytes).
    shards: Vec<Mutex<Shard>>,
}

impl Links {
    /// A table of ids of `algo`.
    pub fn new(algo: HashAlgo) -> Self {
        let shard = || {
            Mutex::new(Shard {
                algo,
                slots: Vec::new(),
                len: 0,
            })
        };
        Links {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| shard()).collect(),
        }
    }

    /// Record `id` as a `kind`; the other type it was recorded as, if so (it keeps that one).
    pub fn record(&self, id: ObjectId, kind: u8) -> Option<u8> {
        // Ids are uniformly distributed: two bytes of one pick its slot.
        let n = id.len();
        let slot = usize::from(u16::from_le_bytes([id[0], id[1]])) % RECENT_SLOTS * (n + 1);
        let known = RECENT.with(|r| {
            let mut r = r.borrow_mut();
            if r.0 != self.serial {
                // Type 0 marks an empty slot: links always name a type.
                *r = (self.serial, vec![0; RECENT_SLOTS * (n + 1)]);
            }
            let s = &r.1[slot..slot + n + 1];
            s[n] == kind && s[..n] == id[..]
        });
        if known {
            return None;
        }
        let shard = &self.shards[id[id.len() - 1] as usize % SHARDS];
        let had = shard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(&id, kind);
        match had {
            Some(k) if k != kind => Some(k),
            _ => {
                RECENT.with(|r| {
                    let s = &mut r.borrow_mut().1[slot..slot + n + 1];
                    s[..n].copy_from_slice(&id);
                    s[n] = kind;
                });
                None
            }
        }
    }

    /// Give back this thread's cache of the table (once it records no more here).
    pub fn forget_recent(&self) {
        RECENT.with(|r| {
            let mut r = r.borrow_mut();
            if r.0 == self.serial {
                *r = (0, Vec::new());
            }
        });
    }

    /// Call `f` with every object recorded and its type, each shard given back as it is done.
    pub fn drain(&self, mut f: impl FnMut(ObjectId, u8)) {
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            let (algo, slots) = (shard.algo, std::mem::take(&mut shard.slots));
            shard.len = 0;
            let n = algo.rawsz();
            for slot in slots.chunks_exact(n + 1).filter(|s| s[n] != 0) {
                f(ObjectId::of(algo, &slot[..n]), slot[n]);
            }
        }
    }
}
