//! Whole objects read from existing packs and loose files, for the delta search, the writer,
//! the bitmap's graph read and the object check.
//!
//! A packed object stored as a delta is rebuilt by the shared chain decoder (delta_chain.rs).
//! This reader's policy: every object rebuilt on the way that is itself a delta base in its
//! pack is kept in a cache bounded in bytes, and the least recently used objects leave first.
//! The search asks for objects sorted by type, path and size, not in pack order, so versions
//! of one file come together and one kept base usually serves the next request.

use std::path::PathBuf;

use crate::error::{PackError, Result};
use crate::pack::delta_chain::{decode, BaseCache, ChainLinks, ChainStats, Object};
use crate::pack::entries::PackEntries;
use crate::pack::inflate::Inflater;
use crate::pack::lru::Lru;

/// Where an object is: `(source, pos)` with `source` an index into the packs, or `LOOSE` and
/// `pos` an index into the loose paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Locator {
    pub source: u32,
    pub pos: u64,
}

pub const LOOSE: u32 = u32::MAX;

/// Read-only inputs shared by every reader.
pub struct Store {
    pub packs: Vec<PackEntries>,
    /// Per pack and position: whether some entry of the pack is a delta against it.
    pub is_base: Vec<Vec<bool>>,
    pub loose: Vec<PathBuf>,
    /// Largest object we agree to hold (physical memory).
    pub object_limit: u64,
}

impl Store {
    pub fn new(packs: Vec<PackEntries>, loose: Vec<PathBuf>, object_limit: u64) -> Result<Store> {
        let mut is_base = Vec::with_capacity(packs.len());
        for p in &packs {
            let n = p.entries.offsets.len();
            let mut flags = vec![false; n];
            for &b in &p.entries.bases {
                if b >= n as i64 {
                    return Err(PackError::general(format!(
                        "{}: delta base out of range",
                        p.path.display()
                    )));
                }
                if b >= 0 {
                    flags[b as usize] = true;
                }
            }
            is_base.push(flags);
        }
        Ok(Store {
            packs,
            is_base,
            loose,
            object_limit,
        })
    }

    /// Whether `loc` names an existing entry or loose path.
    pub fn valid(&self, loc: Locator) -> bool {
        if loc.source == LOOSE {
            (loc.pos as usize) < self.loose.len()
        } else {
            self.packs
                .get(loc.source as usize)
                .is_some_and(|p| (loc.pos as usize) < p.entries.offsets.len())
        }
    }
}

/// (pack, position) of an entry.
type Key = (u32, usize);

#[derive(Default, Debug, Clone, Copy)]
pub struct ReadStats {
    pub objects: u64,
    pub inflated: u64,
    pub applied: u64,
    pub cache_hits: u64,
    pub evictions: u64,
}

/// The packs of a store as chain links, with one thread's inflater and read buffer.
struct StoreLinks<'a> {
    store: &'a Store,
    inflater: Inflater,
    raw: Vec<u8>,
    delta: Vec<u8>,
    /// The most entries of one pack: no chain is longer.
    longest: usize,
}

impl StoreLinks<'_> {
    fn pack(&self, s: u32) -> Result<&PackEntries> {
        self.store
            .packs
            .get(s as usize)
            .ok_or_else(|| PackError::general("bad pack index"))
    }
}

impl ChainLinks for StoreLinks<'_> {
    type Link = Key;

    fn base(&self, &(s, pos): &Key) -> Result<Option<Key>> {
        let src = self.pack(s)?;
        let b = src.entries.bases[pos];
        if b >= 0 {
            Ok(Some((s, b as usize)))
        } else if crate::pack::entry_header::is_delta(src.entries.kinds[pos]) {
            Err(src.corrupt(pos, "delta whose base is not in its pack"))
        } else {
            Ok(None)
        }
    }

    fn inflate(&mut self, &(s, pos): &Key, out: &mut Vec<u8>) -> Result<()> {
        let src = self
            .store
            .packs
            .get(s as usize)
            .ok_or_else(|| PackError::general("bad pack index"))?;
        src.inflate(
            pos,
            &mut self.inflater,
            &mut self.raw,
            out,
            self.store.object_limit,
        )?;
        if self.raw.capacity() > 1 << 22 {
            self.raw = Vec::new();
        }
        Ok(())
    }

    fn offset(&self, &(s, pos): &Key) -> u64 {
        self.store.packs[s as usize].entries.offsets[pos]
    }

    fn object_limit(&self) -> u64 {
        self.store.object_limit
    }

    fn max_chain(&self) -> usize {
        self.longest
    }

    fn cycle(&self, &(s, pos): &Key) -> PackError {
        self.store.packs[s as usize].corrupt(pos, "delta cycle")
    }

    fn take_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.delta)
    }

    fn keep_buffer(&mut self, buffer: Vec<u8>) {
        if buffer.capacity() <= 1 << 22 {
            self.delta = buffer;
        }
    }
}

/// Delta bases kept under a byte budget, least recently used out first.
pub struct RecentBases<'a> {
    is_base: &'a [Vec<bool>],
    kept: Lru<Key, Object>,
}

impl<'a> RecentBases<'a> {
    pub fn new(store: &'a Store, budget: u64) -> Self {
        RecentBases {
            is_base: &store.is_base,
            kept: Lru::new(budget),
        }
    }
}

impl BaseCache<Key> for RecentBases<'_> {
    fn get(&mut self, key: &Key) -> Option<Object> {
        self.kept.get(key).cloned()
    }

    /// Kept only if other entries are deltas against it.
    fn offer(&mut self, &key: &Key, data: &Object) {
        if self.is_base[key.0 as usize][key.1] && data.len() as u64 <= self.kept.budget() {
            self.kept.insert(key, data.clone(), data.len() as u64);
        }
    }
}

/// One thread's reader: its links into the store and its own cache of bases.
pub struct Reader<'a> {
    links: StoreLinks<'a>,
    cache: RecentBases<'a>,
    chain: ChainStats,
    objects: u64,
}

impl<'a> Reader<'a> {
    pub fn new(store: &'a Store, budget: u64) -> Reader<'a> {
        Reader {
            links: StoreLinks {
                store,
                inflater: Inflater::new(),
                raw: Vec::new(),
                delta: Vec::new(),
                longest: store
                    .packs
                    .iter()
                    .map(|p| p.entries.offsets.len())
                    .max()
                    .unwrap_or(0),
            },
            cache: RecentBases::new(store, budget),
            chain: ChainStats::default(),
            objects: 0,
        }
    }

    pub fn stats(&self) -> ReadStats {
        ReadStats {
            objects: self.objects,
            inflated: self.chain.roots + self.chain.applied,
            applied: self.chain.applied,
            cache_hits: self.chain.cache_hits,
            evictions: self.cache.kept.evictions,
        }
    }

    /// The object at `loc`, which must have `size` bytes.
    pub fn read(&mut self, loc: Locator, size: u64) -> Result<Object> {
        let data = if loc.source == LOOSE {
            self.objects += 1;
            let store = self.links.store;
            let path = store
                .loose
                .get(loc.pos as usize)
                .ok_or_else(|| PackError::general("bad loose index"))?;
            Object::new(crate::pack::loose::read_loose(path, store.object_limit)?.1)
        } else {
            self.read_entry(loc.source, loc.pos as usize)?
        };
        if data.len() as u64 != size {
            return Err(PackError::general(format!(
                "object of {} bytes was expected to have {size} bytes; the repository changed during the repack",
                data.len()
            )));
        }
        Ok(data)
    }

    /// The object entry `pos` of pack `s` stands for, whatever its size.
    pub fn read_entry(&mut self, s: u32, pos: usize) -> Result<Object> {
        self.objects += 1;
        self.links.pack(s)?;
        decode(&mut self.links, &mut self.cache, (s, pos), &mut self.chain)
    }
}
