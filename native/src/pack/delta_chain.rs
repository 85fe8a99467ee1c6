//! Rebuilding one object from its delta chain, the one decoder every reader of packed
//! objects goes through: the resolver when a base it evicted is needed again, and the
//! object reader behind the delta search, the writer, the bitmap's graph read and the
//! object check.
//!
//! Walk from the wanted entry towards its chain's root until an entry whose object the cache
//! holds (or the root, inflated whole), then inflate each delta and apply it forward,
//! offering every object rebuilt on the way to the cache. What is kept, for how long and
//! under which budget is the caller's policy (`BaseCache`); how a link finds its base and
//! where its bytes are is the caller's pack (`ChainLinks`).

use std::sync::Arc;

use crate::error::{PackError, Result};
use crate::pack::delta::apply_delta_into;

/// An object's data, shared between the cache and its readers.
pub type Object = Arc<Vec<u8>>;

/// The entries of a chain: how a link finds its base, and its stored bytes.
pub trait ChainLinks {
    type Link: Clone;
    /// The base `link` is a delta against, or None for a whole object.
    fn base(&self, link: &Self::Link) -> Result<Option<Self::Link>>;
    /// Inflate what the entry stores (the object, or its delta) into `out`.
    fn inflate(&mut self, link: &Self::Link, out: &mut Vec<u8>) -> Result<()>;
    /// Where the entry starts, for errors in its delta.
    fn offset(&self, link: &Self::Link) -> u64;
    /// Largest object we agree to rebuild.
    fn object_limit(&self) -> u64;
    /// More links than any chain can have: a longer walk is a cycle, reported as `cycle`.
    fn max_chain(&self) -> usize;
    fn cycle(&self, start: &Self::Link) -> PackError;
    /// A buffer for the deltas of one decode, handed back by `keep_buffer` when it ends: a
    /// reader that decodes one object after another reuses its allocation.
    fn take_buffer(&mut self) -> Vec<u8> {
        Vec::new()
    }
    fn keep_buffer(&mut self, _buffer: Vec<u8>) {}
}

/// Which rebuilt objects are kept for later chains.
pub trait BaseCache<L> {
    fn get(&mut self, link: &L) -> Option<Object>;
    /// `data` was just rebuilt (or inflated) for `link`: keep it or not.
    fn offer(&mut self, link: &L, data: &Object);
}

/// A policy that keeps nothing.
pub struct NoCache;

impl<L> BaseCache<L> for NoCache {
    fn get(&mut self, _: &L) -> Option<Object> {
        None
    }
    fn offer(&mut self, _: &L, _: &Object) {}
}

#[derive(Default, Debug, Clone, Copy)]
pub struct ChainStats {
    pub cache_hits: u64,
    /// Whole objects inflated (chain roots).
    pub roots: u64,
    /// Deltas inflated and applied.
    pub applied: u64,
}

/// The object `start` stands for.
pub fn decode<L: ChainLinks>(
    links: &mut L,
    cache: &mut impl BaseCache<L::Link>,
    start: L::Link,
    stats: &mut ChainStats,
) -> Result<Object> {
    let mut chain = Vec::new();
    let mut cur = start;
    let mut data = loop {
        if let Some(hit) = cache.get(&cur) {
            stats.cache_hits += 1;
            break hit;
        }
        match links.base(&cur)? {
            Some(base) => {
                if chain.len() >= links.max_chain() {
                    return Err(links.cycle(&cur));
                }
                chain.push(cur);
                cur = base;
            }
            None => {
                let mut whole = Vec::new();
                links.inflate(&cur, &mut whole)?;
                stats.roots += 1;
                let whole = Arc::new(whole);
                cache.offer(&cur, &whole);
                break whole;
            }
        }
    };
    let mut delta = links.take_buffer();
    let applied = (|| {
        while let Some(link) = chain.pop() {
            links.inflate(&link, &mut delta)?;
            let mut next = Vec::new();
            apply_delta_into(
                &data,
                &delta,
                links.offset(&link),
                links.object_limit(),
                &mut next,
            )?;
            stats.applied += 1;
            data = Arc::new(next);
            cache.offer(&link, &data);
        }
        Ok(())
    })();
    links.keep_buffer(delta);
    applied.map(|()| data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A chain as plain vectors: entry i is whole if `bases[i]` is None.
    struct Plain {
        bases: Vec<Option<usize>>,
        stored: Vec<Vec<u8>>,
    }

    impl ChainLinks for Plain {
        type Link = usize;
        fn base(&self, link: &usize) -> Result<Option<usize>> {
            Ok(self.bases[*link])
        }
        fn inflate(&mut self, link: &usize, out: &mut Vec<u8>) -> Result<()> {
            out.clear();
            out.extend_from_slice(&self.stored[*link]);
            Ok(())
        }
        fn offset(&self, link: &usize) -> u64 {
            *link as u64
        }
        fn object_limit(&self) -> u64 {
            1 << 20
        }
        fn max_chain(&self) -> usize {
            self.bases.len()
        }
        fn cycle(&self, start: &usize) -> PackError {
            PackError::at(*start as u64, "delta cycle")
        }
    }

    struct Keep(HashMap<usize, Object>);

    impl BaseCache<usize> for Keep {
        fn get(&mut self, link: &usize) -> Option<Object> {
            self.0.get(link).cloned()
        }
        fn offer(&mut self, link: &usize, data: &Object) {
            self.0.insert(*link, data.clone());
        }
    }

    /// A delta that keeps the first `kept` bytes of its base and appends `tail`.
    fn keep_and_append(base_len: usize, kept: u8, tail: &[u8]) -> Vec<u8> {
        let target_len = kept as usize + tail.len();
        assert!(base_len < 128 && target_len < 128 && !tail.is_empty());
        // sizes (one-byte varints), copy `kept` bytes from offset 0, insert the tail
        let mut d = vec![
            base_len as u8,
            target_len as u8,
            0x90,
            kept,
            tail.len() as u8,
        ];
        d.extend_from_slice(tail);
        d
    }

    fn versions() -> (Vec<Vec<u8>>, Plain) {
        let objects: Vec<Vec<u8>> = (0..4u8)
            .map(|v| (0..100u8).map(|i| if i < 60 { i } else { i ^ v }).collect())
            .collect();
        let mut stored = vec![objects[0].clone()];
        for object in &objects[1..] {
            stored.push(keep_and_append(100, 60, &object[60..]));
        }
        let bases = vec![None, Some(0), Some(1), Some(2)];
        (objects, Plain { bases, stored })
    }

    #[test]
    fn rebuilds_every_link_and_uses_the_cache() {
        let (objects, mut links) = versions();
        let mut stats = ChainStats::default();
        let got = decode(&mut links, &mut NoCache, 3, &mut stats).unwrap();
        assert_eq!(*got, objects[3]);
        assert_eq!((stats.roots, stats.applied, stats.cache_hits), (1, 3, 0));

        let mut cache = Keep(HashMap::new());
        let mut stats = ChainStats::default();
        decode(&mut links, &mut cache, 2, &mut stats).unwrap();
        let got = decode(&mut links, &mut cache, 3, &mut stats).unwrap();
        assert_eq!(*got, objects[3]);
        // The second read starts from the cached entry 2: one more delta, no root.
        assert_eq!((stats.roots, stats.applied, stats.cache_hits), (1, 3, 1));
    }

    #[test]
    fn a_cycle_is_an_error() {
        let (_, mut links) = versions();
        links.bases[0] = Some(3);
        let mut stats = ChainStats::default();
        let err = decode(&mut links, &mut NoCache, 3, &mut stats).unwrap_err();
        assert!(err.to_string().contains("delta cycle"), "{err}");
    }
}
