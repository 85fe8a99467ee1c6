//! The sliding-window delta search of `git pack-objects`, run on a list the caller has already
//! chosen and sorted (packorder/repacking/deltas.py: which objects are candidates, the sort by type,
//! path-name hash and size, the chunks threads take, and each object's depth allowance).
//!
//! Within one chunk, objects are taken in list order. The window holds up to `window - 1`
//! earlier objects. Each object is tried as a delta against the window's objects, most
//! recent first, stopping at the first object of another type. A try is skipped when:
//! - the target is stored whole in the same pack as the candidate base and the caller asked
//!   to skip such pairs (`same_pack`: with delta reuse, Git assumes the pack's writer already
//!   tried them);
//! - the base is already at the target's depth limit (`max_depth`, which the caller lowers
//!   by the height of deltas that are reused against the target);
//! - Git's size heuristics rule it out: the delta may be at most `size/2 - 20` bytes for a
//!   first delta, or the best delta so far; that bound is scaled by
//!   `(max_depth - base_depth) / (max_depth - ref_depth + 1)` (`ref_depth` 1 for a first delta,
//!   else the target's current depth) so that deep bases must do better; the try is skipped
//!   when the bound is 0, when the target is larger than the base by at least the bound,
//!   or when the target is smaller than 1/32 of the base.
//!
//! A delta no longer than the bound replaces the best one so far, except that a delta of
//! the same size only wins if it makes a shallower chain. Objects are read, and bases
//! indexed, only when a try needs them.
//!
//! After its tries, an object joins the window as its most recent entry, and the oldest
//! entry leaves when the window is full. If it became a delta, its base is moved to the
//! most recent position (after it), so good bases stay longer and are tried first; an
//! object that became a delta at its depth limit cannot serve as a base and does not join.
//! An object whose depth allowance is 0 joins without being tried.
//!
//! Chunks are independent; `threads` threads take them largest first. Progress counts objects
//! done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::{PackError, Result};
use crate::pack::delta_chain::Object;
use crate::pack::object_read::{Locator, ReadStats, Reader, Store};
use crate::progress::Progress;
use crate::write::delta_create::DeltaIndex;

/// One object of the sorted list.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub kind: u8,
    pub size: u64,
    pub loc: Locator,
    /// Longest chain allowed from this object up (its depth limit), 0 for "do not try".
    pub max_depth: u32,
    /// Whether tries against objects of the pack it is stored whole in are skipped.
    pub same_pack: bool,
    /// Only candidates of no higher rank may be its base (all 0: no constraint). Used to
    /// re-pick deltas whose stored base would be written after them.
    pub rank: u32,
}

pub struct Options {
    pub window: usize,
    /// Bytes of cached delta bases each thread may hold.
    pub cache_budget: u64,
}

/// The search's outcome, per candidate: the candidate it is a delta against and the delta.
pub struct Found {
    pub base: Vec<i64>,
    pub deltas: Vec<Option<Vec<u8>>>,
    pub stats: ReadStats,
    pub tries: u64,
}

struct Slot {
    cand: usize,
    data: Option<Object>,
    index: Option<DeltaIndex>,
    depth: u32,
}

struct Best {
    slot: usize,
    delta: Vec<u8>,
}

enum Try {
    /// Another type: no older window entry can serve either.
    Stop,
    Skip,
    Better,
}

struct ChunkSearch<'a, 'r> {
    cands: &'a [Candidate],
    reader: &'r mut Reader<'a>,
    scratch: Vec<u8>,
    tries: u64,
}

impl<'a> ChunkSearch<'a, '_> {
    fn load(&mut self, slot: &mut Slot) -> Result<Object> {
        if let Some(d) = &slot.data {
            return Ok(d.clone());
        }
        let c = &self.cands[slot.cand];
        let d = self.reader.read(c.loc, c.size)?;
        slot.data = Some(d.clone());
        Ok(d)
    }

    fn try_delta(&mut self, trg: &mut Slot, src: &mut Slot, best: &Option<Best>) -> Result<Try> {
        let (t, s) = (&self.cands[trg.cand], &self.cands[src.cand]);
        if t.kind != s.kind {
            return Ok(Try::Stop);
        }
        if t.same_pack && t.loc.source == s.loc.source {
            return Ok(Try::Skip);
        }
        if s.rank > t.rank {
            return Ok(Try::Skip);
        }
        let max_depth = u64::from(t.max_depth);
        let src_depth = u64::from(src.depth);
        if src_depth >= max_depth {
            return Ok(Try::Skip);
        }
        let (bound, ref_depth) = match best {
            None => ((t.size / 2).saturating_sub(20), 1),
            Some(b) => (b.delta.len() as u64, u64::from(trg.depth)),
        };
        let max_size = bound * (max_depth - src_depth) / (max_depth - ref_depth + 1);
        if max_size == 0 {
            return Ok(Try::Skip);
        }
        if t.size.saturating_sub(s.size) >= max_size || t.size < s.size / 32 {
            return Ok(Try::Skip);
        }
        let target = self.load(trg)?;
        let base = self.load(src)?;
        let index = src.index.get_or_insert_with(|| DeltaIndex::new(&base));
        self.tries += 1;
        let max_size = usize::try_from(max_size).unwrap_or(usize::MAX);
        if !index.encode_into(&base, &target, max_size, &mut self.scratch) {
            return Ok(Try::Skip);
        }
        if best
            .as_ref()
            .is_some_and(|b| b.delta.len() == self.scratch.len())
            && src.depth + 1 >= trg.depth
        {
            return Ok(Try::Skip);
        }
        Ok(Try::Better)
    }

    fn run(
        &mut self,
        range: std::ops::Range<usize>,
        window: usize,
        progress: &Progress,
        found: &mut ChunkFound,
    ) -> Result<()> {
        let keep = window.saturating_sub(1);
        let mut win: VecDeque<Slot> = VecDeque::with_capacity(keep + 2);
        for (k, t) in range.enumerate() {
            if k % 64 == 63 {
                progress.add(64);
                progress.check_cancelled()?;
            }
            let mut trg = Slot {
                cand: t,
                data: None,
                index: None,
                depth: 0,
            };
            if self.cands[t].max_depth == 0 {
                push_window(&mut win, trg, keep);
                continue;
            }
            let mut best: Option<Best> = None;
            for w in (0..win.len()).rev() {
                match self.try_delta(&mut trg, &mut win[w], &best)? {
                    Try::Stop => break,
                    Try::Skip => {}
                    Try::Better => {
                        // An exact copy: the scratch buffer has room for much longer deltas.
                        let delta = self.scratch.clone();
                        trg.depth = win[w].depth + 1;
                        best = Some(Best { slot: w, delta });
                    }
                }
            }
            match best {
                None => push_window(&mut win, trg, keep),
                Some(b) => {
                    let base = win[b.slot].cand;
                    found.items.push((t, base, b.delta));
                    if trg.depth >= self.cands[t].max_depth {
                        continue;
                    }
                    // The base moves to the most recent place, just after the target.
                    if let Some(base_slot) = win.remove(b.slot) {
                        win.push_back(trg);
                        push_window(&mut win, base_slot, keep);
                    }
                }
            }
        }
        Ok(())
    }
}

fn push_window(win: &mut VecDeque<Slot>, slot: Slot, keep: usize) {
    win.push_back(slot);
    while win.len() > keep {
        win.pop_front();
    }
}

#[derive(Default)]
struct ChunkFound {
    items: Vec<(usize, usize, Vec<u8>)>,
    stats: ReadStats,
    tries: u64,
}

/// Work of a chunk for scheduling: bytes to encode plus a fixed cost an object.
const OBJECT_WORK: u64 = 4096;

/// Search deltas for `cands`, split at `chunks` (ascending boundaries from 0 to the length),
/// on `threads` threads. Chunks are taken largest first (by their objects' sizes), so that a
/// long one (a file with many large versions, which cannot be split) does not start last.
pub fn search(
    store: &Store,
    cands: &[Candidate],
    chunks: &[usize],
    opts: &Options,
    progress: &Progress,
    threads: usize,
) -> Result<Found> {
    let n = cands.len();
    if chunks.first() != Some(&0)
        || chunks.last() != Some(&n)
        || chunks.windows(2).any(|w| w[0] > w[1])
    {
        return Err(PackError::general(
            "delta search: chunk boundaries do not cover the list",
        ));
    }
    if let Some(c) = cands.iter().find(|c| !store.valid(c.loc)) {
        return Err(PackError::general(format!(
            "delta search: no object at {:?}",
            c.loc
        )));
    }
    let ranges: Vec<std::ops::Range<usize>> = chunks.windows(2).map(|w| w[0]..w[1]).collect();
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    let work = |r: &std::ops::Range<usize>| {
        cands[r.clone()]
            .iter()
            .map(|c| c.size + OBJECT_WORK)
            .sum::<u64>()
    };
    order.sort_by_cached_key(|&k| std::cmp::Reverse(work(&ranges[k])));
    let failed = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<ChunkFound>>>> =
        ranges.iter().map(|_| Mutex::new(None)).collect();
    let worker = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&c) = order.get(k) else { break };
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let range = ranges[c].clone();
        let mut reader = Reader::new(store, opts.cache_budget);
        let mut found = ChunkFound::default();
        let len = range.len() as u64;
        let mut search = ChunkSearch {
            cands,
            reader: &mut reader,
            scratch: Vec::new(),
            tries: 0,
        };
        let r = search.run(range, opts.window, progress, &mut found);
        found.tries = search.tries;
        progress.add(len % 64);
        found.stats = reader.stats();
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        *results[c].lock().unwrap_or_else(|e| e.into_inner()) = Some(r.map(|()| found));
    };
    std::thread::scope(|scope| -> Result<()> {
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let h = std::thread::Builder::new()
                .name(format!("packorder-deltas-{i}"))
                .spawn_scoped(scope, worker)
                .map_err(|e| PackError::io("cannot start a thread", e))?;
            handles.push(h);
        }
        for h in handles {
            if h.join().is_err() {
                return Err(PackError::general("a delta search thread panicked"));
            }
        }
        Ok(())
    })?;
    // The first error in list order; chunks not run because of it have no result.
    let mut chunk_results = Vec::with_capacity(results.len());
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Err(e)) => return Err(e),
            Some(Ok(f)) => chunk_results.push(f),
            None if failed.load(Ordering::Relaxed) => {}
            None => return Err(PackError::general("delta search: a chunk was not searched")),
        }
    }
    let mut out = Found {
        base: vec![-1; n],
        deltas: (0..n).map(|_| None).collect(),
        stats: ReadStats::default(),
        tries: 0,
    };
    for f in chunk_results {
        for (t, b, d) in f.items {
            out.base[t] = b as i64;
            out.deltas[t] = Some(d);
        }
        out.tries += f.tries;
        let s = &mut out.stats;
        s.objects += f.stats.objects;
        s.inflated += f.stats.inflated;
        s.applied += f.stats.applied;
        s.cache_hits += f.stats.cache_hits;
        s.evictions += f.stats.evictions;
    }
    Ok(out)
}
