//! Whole objects for the delta search, read from existing packs and loose files.
//!
//! A packed object stored as a delta is rebuilt from its chain: walk the chain towards its
//! root until an entry whose object is cached (or the root itself), then inflate and apply
//! the deltas forward. Every object rebuilt on the way that is itself a delta base in its
//! pack is kept in a cache bounded in bytes; the least recently used objects leave first.
//! The search asks for objects sorted by type, path and size, not in pack order, so versions
//! of one file come together and one kept base usually serves the next request.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;

use crate::delta::apply_delta_into;
use crate::error::{PackError, Result};
use crate::inflate::Inflater;
use crate::pack_entries::PackEntries;

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
            let n = p.offsets.len();
            let mut flags = vec![false; n];
            for &b in &p.bases {
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
                .is_some_and(|p| (loc.pos as usize) < p.offsets.len())
        }
    }
}

/// (pack, position) of a cached object.
type Key = (u32, u64);

#[derive(Default, Debug, Clone, Copy)]
pub struct ReadStats {
    pub objects: u64,
    pub inflated: u64,
    pub applied: u64,
    pub cache_hits: u64,
    pub evictions: u64,
}

/// One thread's reader: an inflater, scratch buffers and its own cache of bases.
pub struct Reader<'a> {
    store: &'a Store,
    inflater: Inflater,
    raw: Vec<u8>,
    delta: Vec<u8>,
    budget: u64,
    used: u64,
    clock: u64,
    /// (source, pos) -> (object, last use)
    cache: HashMap<Key, (Rc<Vec<u8>>, u64)>,
    /// Uses in time order, stale ones (older than the entry's last use) skipped on eviction.
    uses: VecDeque<(u64, Key)>,
    pub stats: ReadStats,
}

impl<'a> Reader<'a> {
    pub fn new(store: &'a Store, budget: u64) -> Reader<'a> {
        Reader {
            store,
            inflater: Inflater::new(),
            raw: Vec::new(),
            delta: Vec::new(),
            budget,
            used: 0,
            clock: 0,
            cache: HashMap::new(),
            uses: VecDeque::new(),
            stats: ReadStats::default(),
        }
    }

    /// The object at `loc`, which must have `size` bytes.
    pub fn read(&mut self, loc: Locator, size: u64) -> Result<Rc<Vec<u8>>> {
        self.stats.objects += 1;
        let data = if loc.source == LOOSE {
            let path = self
                .store
                .loose
                .get(loc.pos as usize)
                .ok_or_else(|| PackError::general("bad loose index"))?;
            Rc::new(crate::loose::read_loose(path, self.store.object_limit)?.1)
        } else {
            self.read_packed(loc.source, loc.pos as usize)?
        };
        if data.len() as u64 != size {
            return Err(PackError::general(format!(
                "object of {} bytes was expected to have {size} bytes; the repository changed during the repack",
                data.len()
            )));
        }
        Ok(data)
    }

    fn source(&self, s: u32) -> Result<&'a PackEntries> {
        self.store
            .packs
            .get(s as usize)
            .ok_or_else(|| PackError::general("bad pack index"))
    }

    /// Inflate entry `pos` of source `s` (object data or, `into_delta`, delta data).
    fn inflate(&mut self, s: u32, pos: usize, into_delta: bool) -> Result<Vec<u8>> {
        let src = self.source(s)?;
        let mut out = if into_delta {
            std::mem::take(&mut self.delta)
        } else {
            Vec::new()
        };
        src.inflate(
            pos,
            &mut self.inflater,
            &mut self.raw,
            &mut out,
            self.store.object_limit,
        )?;
        self.stats.inflated += 1;
        if self.raw.capacity() > 1 << 22 {
            self.raw = Vec::new();
        }
        Ok(out)
    }

    /// The object entry `pos` of pack `s` stands for, whatever its size.
    pub fn read_entry(&mut self, s: u32, pos: usize) -> Result<Rc<Vec<u8>>> {
        self.stats.objects += 1;
        self.read_packed(s, pos)
    }

    fn read_packed(&mut self, s: u32, pos: usize) -> Result<Rc<Vec<u8>>> {
        let src = self.source(s)?;
        // The chain from `pos` down to the first entry we have (or can inflate whole).
        let mut chain = Vec::new();
        let mut cur = pos;
        let start: Rc<Vec<u8>> = loop {
            if let Some(hit) = self.touch(s, cur as u64) {
                self.stats.cache_hits += 1;
                break hit;
            }
            let b = src.bases[cur];
            if b < 0 {
                if crate::entry::is_delta(src.kinds[cur]) {
                    return Err(src.corrupt(cur, "delta whose base is not in its pack"));
                }
                let data = Rc::new(self.inflate(s, cur, false)?);
                self.keep(s, cur, &data);
                break data;
            }
            chain.push(cur);
            if chain.len() > src.offsets.len() {
                return Err(src.corrupt(pos, "delta cycle"));
            }
            cur = b as usize;
        };
        let mut data = start;
        while let Some(i) = chain.pop() {
            let delta = self.inflate(s, i, true)?;
            let mut next = Vec::new();
            apply_delta_into(
                &data,
                &delta,
                src.offsets[i],
                self.store.object_limit,
                &mut next,
            )?;
            self.delta = delta;
            self.stats.applied += 1;
            data = Rc::new(next);
            self.keep(s, i, &data);
        }
        if self.delta.capacity() > 1 << 22 {
            self.delta = Vec::new();
        }
        Ok(data)
    }

    fn touch(&mut self, s: u32, pos: u64) -> Option<Rc<Vec<u8>>> {
        self.clock += 1;
        let now = self.clock;
        let (data, used) = self.cache.get_mut(&(s, pos))?;
        *used = now;
        self.uses.push_back((now, (s, pos)));
        Some(data.clone())
    }

    /// Keep `data` (entry `pos` of `s`) if other entries are deltas against it.
    fn keep(&mut self, s: u32, pos: usize, data: &Rc<Vec<u8>>) {
        if !self.store.is_base[s as usize][pos] || data.len() as u64 > self.budget {
            return;
        }
        self.clock += 1;
        let now = self.clock;
        if self
            .cache
            .insert((s, pos as u64), (data.clone(), now))
            .is_none()
        {
            self.used += data.len() as u64;
        }
        self.uses.push_back((now, (s, pos as u64)));
        while self.used > self.budget {
            let Some((when, key)) = self.uses.pop_front() else {
                break;
            };
            if self.cache.get(&key).is_some_and(|(_, last)| *last == when) {
                if let Some((d, _)) = self.cache.remove(&key) {
                    self.used -= d.len() as u64;
                    self.stats.evictions += 1;
                }
            }
        }
        if self.uses.len() > 4 * self.cache.len() + 1024 {
            let cache = &self.cache;
            self.uses
                .retain(|(when, key)| cache.get(key).is_some_and(|(_, last)| last == when));
        }
    }
}
