//! The objects a walk reads, by id: a repository's packs (through their `.idx`, entries read
//! at their offsets as needed, nothing listed ahead) and its loose objects. Packed objects
//! are rebuilt by the shared chain decoder (pack/delta_chain.rs) with the walk's own policy:
//! every object rebuilt is kept, least recently used out first, under a byte budget (the
//! role of Git's core.deltaBaseCacheLimit), since the versions of one tree delta against
//! each other and come close together in a walk.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{PackError, Result};
use crate::pack::delta::{copied_ranges, Copied};
use crate::pack::delta_chain::{decode, BaseCache, ChainLinks, ChainStats, Object};
use crate::pack::entry_header::{
    is_delta, parse_header, BaseRef, EntryHeader, HashAlgo, ObjectId, MAX_HEADER_LEN,
};
use crate::pack::inflate::Inflater;
use crate::pack::lru::Lru;
use crate::walk::numbers::Numbering;
use crate::walk::pack_index::IndexedPack;

/// Where an object is: entry `offset` of pack `pack`.
type Link = (u32, u64);

/// Entries up to this size are read whole when their header is asked for: the decode
/// inflates the entry it asked about next, nearly always (a tree's delta, whose base is
/// cached), and one read then serves both.
const READ_WHOLE: u64 = 64 << 10;

/// The header of the entry at `offset` of `pack`, from `bytes` read there.
fn header_in(pack: &IndexedPack, bytes: &[u8], offset: u64) -> Result<EntryHeader> {
    parse_header(bytes, offset, pack.pack.algo)?
        .ok_or_else(|| pack.corrupt(offset, "entry header cut off"))
}

/// The packs as chain links; remembers the type of the chain root it last reached.
struct PackLinks<'a> {
    packs: &'a [IndexedPack],
    bufs: Buffers,
    object_limit: u64,
    longest: usize,
    root_kind: u8,
    /// The entry asked for, and the base it is a delta against once found.
    start: Link,
    start_base: Option<Link>,
    /// The entry `bufs.ahead` holds whole, read for its header.
    ahead_of: Cell<Option<Link>>,
}

/// What a reader reuses from one read to the next.
#[derive(Default)]
struct Buffers {
    inflater: Inflater,
    raw: Vec<u8>,
    delta: Vec<u8>,
    /// An entry read whole for its header (`base` takes `&self`).
    ahead: RefCell<Vec<u8>>,
}

impl<'a> PackLinks<'a> {
    /// `limits`: the largest object to rebuild, and the longest chain there can be.
    fn new(
        packs: &'a [IndexedPack],
        bufs: Buffers,
        (object_limit, longest): (u64, usize),
        start: Link,
    ) -> Self {
        PackLinks {
            packs,
            bufs,
            object_limit,
            longest,
            root_kind: 0,
            start,
            start_base: None,
            ahead_of: Cell::new(None),
        }
    }

    fn header(&self, (p, offset): Link) -> Result<EntryHeader> {
        let pack = &self.packs[p as usize];
        let mut buf = [0u8; MAX_HEADER_LEN];
        let n = pack.pack.read_upto(&mut buf, offset, pack.end_of(offset))?;
        header_in(pack, &buf[..n], offset)
    }

    /// The entry the header of `(p, offset)` names as its base.
    fn base_link(&self, (p, offset): Link, base: BaseRef) -> Result<Option<Link>> {
        match base {
            BaseRef::None => Ok(None),
            BaseRef::Offset(b) => Ok(Some((p, b))),
            BaseRef::Id(id) => {
                // A pack in a repository holds the bases of its REF_DELTAs (thin packs are
                // completed when they arrive).
                let pack = &self.packs[p as usize];
                match pack.find(&id) {
                    Some(b) => Ok(Some((p, b))),
                    None => Err(pack.corrupt(offset, "delta base not in the pack")),
                }
            }
        }
    }
}

impl ChainLinks for PackLinks<'_> {
    type Link = Link;

    fn base(&self, &(p, offset): &Link) -> Result<Option<Link>> {
        let pack = &self.packs[p as usize];
        let end = pack.end_of(offset);
        if end <= offset || end - offset > READ_WHOLE {
            return self.base_link((p, offset), self.header((p, offset))?.base);
        }
        let mut ahead = self.bufs.ahead.borrow_mut();
        ahead.resize((end - offset) as usize, 0);
        pack.pack.read_exact_at(&mut ahead, offset)?;
        self.ahead_of.set(Some((p, offset)));
        self.base_link((p, offset), header_in(pack, &ahead, offset)?.base)
    }

    fn take_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bufs.delta)
    }

    fn inflate(&mut self, &(p, offset): &Link, out: &mut Vec<u8>) -> Result<()> {
        let pack = &self.packs[p as usize];
        if self.ahead_of.take() == Some((p, offset)) {
            std::mem::swap(&mut self.bufs.raw, self.bufs.ahead.get_mut());
        } else {
            let end = pack.end_of(offset);
            if end <= offset {
                return Err(pack.corrupt(offset, "entry outside the pack"));
            }
            self.bufs.raw.resize((end - offset) as usize, 0);
            pack.pack.read_exact_at(&mut self.bufs.raw, offset)?;
        }
        let head = header_in(pack, &self.bufs.raw, offset)?;
        if !is_delta(head.kind) {
            self.root_kind = head.kind;
        } else if (p, offset) == self.start {
            self.start_base = self.base_link((p, offset), head.base)?;
        }
        if head.size > self.object_limit {
            return Err(pack.corrupt(
                offset,
                &format!("an entry of {} bytes does not fit in memory", head.size),
            ));
        }
        self.bufs
            .inflater
            .inflate_into(&self.bufs.raw[head.header_len..], head.size as usize, out)
            .map_err(|f| pack.corrupt(offset, &f.describe(head.size)))?;
        if self.bufs.raw.capacity() > 1 << 22 {
            self.bufs.raw = Vec::new();
        }
        Ok(())
    }

    fn offset(&self, link: &Link) -> u64 {
        link.1
    }

    fn object_limit(&self) -> u64 {
        self.object_limit
    }

    fn max_chain(&self) -> usize {
        self.longest
    }

    fn cycle(&self, &(p, offset): &Link) -> PackError {
        self.packs[p as usize].corrupt(offset, "delta cycle")
    }

    fn keep_buffer(&mut self, buffer: Vec<u8>) {
        if buffer.capacity() <= 1 << 22 {
            self.bufs.delta = buffer;
        }
    }
}

/// Every object rebuilt, kept with its type, least recently used out first.
struct RecentObjects {
    kept: Lru<Link, (Object, u8)>,
    /// Set by a hit: the type of the chain being decoded.
    hit_kind: u8,
    /// Offered during the current decode, their type known only once it ends.
    untyped: Vec<Link>,
}

impl RecentObjects {
    fn new(budget: u64) -> Self {
        RecentObjects {
            kept: Lru::new(budget),
            hit_kind: 0,
            untyped: Vec::new(),
        }
    }
}

impl BaseCache<Link> for RecentObjects {
    fn get(&mut self, link: &Link) -> Option<Object> {
        let (data, kind) = self.kept.get(link)?;
        self.hit_kind = *kind;
        Some(data.clone())
    }

    fn offer(&mut self, link: &Link, data: &Object) {
        if data.len() as u64 <= self.kept.budget() / 4 {
            self.kept
                .insert(*link, (data.clone(), 0), data.len() as u64);
            self.untyped.push(*link);
        }
    }
}

/// A repository's objects for one walking thread.
pub struct ObjectDb {
    loose_paths: Arc<Vec<PathBuf>>,
    bufs: Option<Buffers>,
    cache: RecentObjects,
    object_limit: u64,
    /// The most entries of one pack: no chain is longer.
    longest: usize,
    /// The objects by number; its packs are the ones read.
    numbering: Arc<Numbering>,
    pub stats: ChainStats,
}

/// Where an id was found.
#[derive(Clone, Copy)]
pub enum Found {
    Packed(u32, u64),
    Loose(usize),
}

/// An entry of a pack: (pack, offset).
pub type EntryLink = Link;

/// An object read, and, when it was just rebuilt from a delta, that delta's base and the
/// ranges it copied from it.
pub struct Read {
    pub kind: u8,
    pub data: Object,
    pub delta: Option<(EntryLink, Vec<Copied>)>,
}

impl ObjectDb {
    /// `loose`: (id, path) sorted by id; the objects are named by `algo`.
    pub fn open(
        packs: &[PathBuf],
        loose: Vec<(ObjectId, PathBuf)>,
        budget: u64,
        object_limit: u64,
        algo: HashAlgo,
    ) -> Result<Self> {
        let packs = packs
            .iter()
            .map(|p| IndexedPack::open(p, algo))
            .collect::<Result<Vec<_>>>()?;
        let (loose_ids, loose_paths): (Vec<_>, Vec<_>) = loose.into_iter().unzip();
        let longest = packs.iter().map(|p| p.ids.len()).max().unwrap_or(0);
        let numbering = Numbering::new(Arc::new(packs), loose_ids)?;
        Ok(ObjectDb {
            longest,
            numbering: Arc::new(numbering),
            loose_paths: Arc::new(loose_paths),
            bufs: Some(Buffers::default()),
            cache: RecentObjects::new(budget),
            object_limit,
            stats: ChainStats::default(),
        })
    }

    /// Another reader of the same objects (for another thread), with a cache of its own, of
    /// a `share` of this one's budget (walkers of one walk share its memory).
    pub fn sibling(&self, share: usize) -> ObjectDb {
        ObjectDb {
            longest: self.longest,
            numbering: self.numbering.clone(),
            loose_paths: self.loose_paths.clone(),
            bufs: Some(Buffers::default()),
            cache: RecentObjects::new(self.cache.kept.budget() / share.max(1) as u64),
            object_limit: self.object_limit,
            stats: ChainStats::default(),
        }
    }

    /// How many objects the packs hold.
    pub fn packed_objects(&self) -> usize {
        self.numbering.packs().iter().map(|p| p.ids.len()).sum()
    }

    pub fn find(&self, id: &ObjectId) -> Option<Found> {
        self.number(id).map(|n| self.place(n))
    }

    /// The number of `id`, if the repository has it: each object has one, below `objects()`,
    /// so that a walk can mark what it has seen in a bitmap instead of a set of ids.
    pub fn number(&self, id: &ObjectId) -> Option<u32> {
        self.numbering.number(id)
    }

    /// Start loading what `number` will read for an id starting with `head`.
    pub fn prefetch(&self, head: &[u8]) {
        self.numbering.prefetch(head);
    }

    /// Where object `n` is.
    pub fn place(&self, n: u32) -> Found {
        match self.numbering.split(n) {
            (p, at) if p < self.numbering.packs().len() => {
                Found::Packed(p as u32, self.numbering.packs()[p].offsets[at])
            }
            (_, at) => Found::Loose(at),
        }
    }

    /// How many numbers `number` gives.
    pub fn objects(&self) -> usize {
        self.numbering.objects()
    }

    /// The numbering of the objects, for what outlives the walk.
    pub fn numbering(&self) -> Arc<Numbering> {
        self.numbering.clone()
    }

    /// The type and data of the object `at`.
    pub fn read(&mut self, at: Found) -> Result<(u8, Object)> {
        let r = self.read_with_delta(at)?;
        Ok((r.kind, r.data))
    }

    fn links(&mut self, start: EntryLink) -> PackLinks<'_> {
        let bufs = self.bufs.take().unwrap_or_default();
        PackLinks::new(
            self.numbering.packs(),
            bufs,
            (self.object_limit, self.longest),
            start,
        )
    }

    /// The base of entry `link` and what its delta copies from it, read again (the object
    /// itself came from the cache); None for a whole object.
    pub fn delta_of(&mut self, (p, offset): EntryLink) -> Result<Option<(EntryLink, Vec<Copied>)>> {
        let mut links = self.links((p, offset));
        let result = (|| {
            if !is_delta(links.header((p, offset))?.kind) {
                return Ok(None);
            }
            let mut delta = std::mem::take(&mut links.bufs.delta);
            let read = links.inflate(&(p, offset), &mut delta);
            let copies = read.and_then(|()| copied_ranges(&delta, u64::MAX, offset));
            links.bufs.delta = delta;
            Ok(links.start_base.zip(Some(copies?)))
        })();
        self.bufs = Some(links.bufs);
        result
    }

    /// The object `at`, with the delta it was just rebuilt from (if it was).
    pub fn read_with_delta(&mut self, at: Found) -> Result<Read> {
        match at {
            Found::Loose(i) => {
                let (kind, data) =
                    crate::pack::loose::read_loose(&self.loose_paths[i], self.object_limit)?;
                Ok(Read {
                    kind,
                    data: Object::new(data),
                    delta: None,
                })
            }
            Found::Packed(p, offset) => {
                // Not self.links(): decode borrows the cache beside the packs.
                let mut links = PackLinks::new(
                    self.numbering.packs(),
                    self.bufs.take().unwrap_or_default(),
                    (self.object_limit, self.longest),
                    (p, offset),
                );
                self.cache.hit_kind = 0;
                self.cache.untyped.clear();
                let roots = self.stats.roots;
                let result = decode(&mut links, &mut self.cache, (p, offset), &mut self.stats);
                let kind = if self.stats.roots > roots {
                    links.root_kind
                } else {
                    self.cache.hit_kind
                };
                let start_base = links.start_base;
                let bufs = links.bufs;
                let data = result;
                for link in self.cache.untyped.drain(..) {
                    if let Some(e) = self.cache.kept.peek_mut(&link) {
                        e.1 = kind;
                    }
                }
                // The start was rebuilt last: the delta buffer holds its delta.
                let delta = match start_base {
                    Some(base) if !bufs.delta.is_empty() => {
                        copied_ranges(&bufs.delta, u64::MAX, offset).map(|c| Some((base, c)))
                    }
                    _ => Ok(None),
                };
                self.bufs = Some(bufs);
                Ok(Read {
                    kind,
                    data: data?,
                    delta: delta?,
                })
            }
        }
    }
}
