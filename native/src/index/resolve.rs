//! The second pass: resolve every delta from its base, in parallel.
//!
//! Each base with children is one node of the delta forest. Its data is kept exactly while
//! some child still has to be applied to it: a counter of pending children releases it on the
//! last one. Independently, a memory budget caps what all kept bases hold together; above it
//! the oldest kept bases are evicted (never the newest, so a single object larger than the
//! budget still works), and a child whose base was evicted rebuilds it from the nearest
//! ancestor that still has its data, or from the chain's root in the pack.
//!
//! Work is spread by rayon's work stealing at the granularity of one delta, so one huge delta
//! family does not serialize on one thread as it does in Git (which splits work by root).
//!
//! Large objects (a base or a result of at least `big_threshold` bytes) are admitted by a gate:
//! a thread may go on if kept bases plus the other admitted objects plus its own stay within
//! the budget plus the largest object seen, or if no other thread holds an admission (so one
//! always proceeds), and then makes room among the kept bases; otherwise it waits. An
//! admitted thread resolves the whole subtree below its large object itself, depth first, and
//! gives the admission back only then: two threads on sibling subtrees of one large family
//! would each keep a large base. What objects hold together thus stays within the budget
//! plus the largest object however many threads run, and large families still resolve in
//! parallel when the budget has room for them (small objects in flight add at most threads ×
//! 2 × big_threshold).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::error::{PackError, Result};
use crate::fsck::{Checker, Seen};
use crate::index::retain::{Base, Gate, KeptBases, Ticket};
use crate::index::table::{ref_children, Table};
use crate::pack::delta::{apply_delta_into, delta_sizes};
use crate::pack::entry_header::{is_delta, ObjectId};
use crate::pack::hash::object_id;
use crate::pack::source::PackFile;
use crate::progress::Progress;

mod disjoint;
mod read;

use disjoint::{Disjoint, DisjointIds};
pub(crate) use read::inflate_entry;
use read::{release_if_large, DELTA_BUF, RESULT_BUF};

pub struct ResolveOptions {
    /// Record the offset of every entry read, in the order reads happen (all threads).
    pub trace: bool,
    /// Bytes all kept bases may hold together.
    pub budget: u64,
    /// Largest object we agree to materialize (physical memory).
    pub object_limit: u64,
    /// Objects at least this large are resolved one at a time (see the module comment).
    pub big_threshold: u64,
    pub detect_collisions: bool,
    /// Record each delta's base entry (Table::shape), for --verify-stat.
    pub shape: bool,
}

#[derive(Default, Debug, Clone, Copy)]
pub struct ResolveStats {
    pub resolved: u64,
    pub base_inflations: u64,
    pub delta_inflations: u64,
    pub rebuilds: u64,
    pub evictions: u64,
    pub peak_kept: u64,
}

impl ResolveStats {
    /// Count `s` in too.
    pub fn add(&mut self, s: ResolveStats) {
        self.resolved += s.resolved;
        self.base_inflations += s.base_inflations;
        self.delta_inflations += s.delta_inflations;
        self.rebuilds += s.rebuilds;
        self.evictions += s.evictions;
        self.peak_kept = self.peak_kept.max(s.peak_kept);
    }
}

/// What resolving one delta left to do.
struct Resolved<'g> {
    /// Its large-object admission, if one was taken.
    ticket: Option<Ticket<'g>>,
    /// Itself as a kept base, with the children it was claimed for.
    next: Option<(Arc<Base>, Vec<u32>)>,
}

struct Resolver<'a> {
    pack: &'a PackFile,
    table: &'a Table,
    oids: DisjointIds,
    real_kinds: Disjoint<u8>,
    shape: Option<Disjoint<u32>>,
    claimed: Vec<AtomicBool>,
    child_start: &'a [u32],
    weight: &'a [u32],
    child_list: &'a [u32],
    refs: &'a [(ObjectId, u32)],
    kept: KeptBases,
    opts: &'a ResolveOptions,
    progress: &'a Progress,
    failure: Mutex<Option<PackError>>,
    failed: AtomicBool,
    base_inflations: AtomicU64,
    delta_inflations: AtomicU64,
    rebuilds: AtomicU64,
    resolved: AtomicU64,
    trace: Option<Mutex<Vec<u64>>>,
    gate: Gate,
    check: Option<&'a Checker>,
}

impl<'a> Resolver<'a> {
    fn fail(&self, e: PackError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(e);
        }
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Failed, cancelled, or an object failed Git's checks (Git dies at the first).
    fn stopped(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
            || self.progress.cancelled.load(Ordering::Relaxed)
            || self.check.is_some_and(|c| c.failed())
    }

    /// Claim the unresolved children of entry `i` (whose id is `id`), in the order they are
    /// to be resolved.
    fn claim_children(&self, i: usize, id: &ObjectId) -> Vec<u32> {
        let ofs = &self.child_list[self.child_start[i] as usize..self.child_start[i + 1] as usize];
        let refs = ref_children(self.refs, id);
        let mut children = Vec::new();
        for c in refs.iter().map(|&(_, c)| c).chain(ofs.iter().copied()) {
            if !self.claimed[c as usize].swap(true, Ordering::AcqRel) {
                children.push(c);
            }
        }
        // Smaller subtrees first: a base is released when its last child is applied, and each
        // child's subtree is resolved depth first before the next child is applied, so the base
        // is kept for all but the last child's subtree. On redis this took the kept bases' peak
        // from 7.0 to 2.1 MiB. Only OFS children are counted: a REF child's own children are
        // known once it is resolved.
        children.sort_by_key(|c| self.weight[*c as usize]);
        children
    }

    /// Queue the `children` of a base whose data is already kept.
    fn spawn_kept<'s>(&'s self, s: &rayon::Scope<'s>, base: Arc<Base>, children: Vec<u32>) {
        // rayon runs the last spawned first: spawn in reverse to resolve in pack order.
        for &c in children.iter().rev() {
            let b = base.clone();
            s.spawn(move |s| self.resolve_child(s, b, c));
        }
    }

    /// Apply delta `ci` to its base into this thread's result buffer; returns the new id and,
    /// for a large object when `admit` (the thread holds no admission yet), its admission.
    fn apply_child(
        &self,
        base: &Arc<Base>,
        ci: usize,
        admit: bool,
    ) -> Result<(ObjectId, Option<Ticket<'_>>)> {
        let offset = self.table.entries.offsets[ci];
        self.delta_inflations.fetch_add(1, Ordering::Relaxed);
        DELTA_BUF.with(|db| {
            RESULT_BUF.with(|rb| {
                let (mut db, mut rb) = (db.borrow_mut(), rb.borrow_mut());
                self.inflate_entry_into(ci, &mut db)?;
                let (_, result_size, _) = delta_sizes(&db, offset)?;
                let big =
                    (admit && base.size.max(result_size) >= self.opts.big_threshold).then(|| {
                        // A base evicted from memory is rebuilt first: count it (and the step
                        // before it) as in flight too.
                        let evicted = base
                            .data
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .is_none();
                        let rebuild = if evicted { 2 * base.size } else { 0 };
                        self.gate.admit(result_size + rebuild, &self.kept, base)
                    });
                let base_data = self.data_of(base)?;
                apply_delta_into(&base_data, &db, offset, self.opts.object_limit, &mut rb)?;
                drop(base_data);
                release_if_large(&mut db);
                let id = object_id(
                    self.pack.algo,
                    base.kind,
                    &rb,
                    self.opts.detect_collisions,
                    offset,
                )?;
                if let Some(c) = self.check {
                    c.check(
                        Seen {
                            delta: true,
                            offset,
                        },
                        base.kind,
                        &id,
                        &rb,
                    );
                }
                Ok((id, big))
            })
        })
    }

    /// Resolve delta `c` of `base`. Returns None if nothing more is to be done (stopped, or
    /// failed); else the large-object admission taken for it (only when `admit`) and, if it
    /// has children, itself as a kept base with the children it was claimed for.
    fn step(&self, base: &Arc<Base>, c: u32, admit: bool) -> Option<Resolved<'_>> {
        let ci = c as usize;
        let result = if self.stopped() {
            None
        } else {
            Some(self.apply_child(base, ci, admit))
        };
        if base.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.kept.release(base);
        }
        let (id, ticket) = match result {
            None => return None,
            Some(Err(e)) => {
                self.fail(e);
                return None;
            }
            Some(Ok(r)) => r,
        };
        self.oids.set(ci, id);
        self.real_kinds.set(ci, base.kind);
        if let Some(shape) = &self.shape {
            shape.set(ci, base.entry);
        }
        self.resolved.fetch_add(1, Ordering::Relaxed);
        self.progress.add(1);
        let children = self.claim_children(ci, &id);
        // A base to keep takes the buffer itself (the next result gets a new one) when the
        // buffer fits it; one with room to spare (left by a larger object before it) keeps a
        // copy instead, since a base holds its buffer's touched pages for as long as it is
        // kept. A leaf leaves the buffer for reuse.
        let data = RESULT_BUF.with(|rb| {
            let mut rb = rb.borrow_mut();
            if children.is_empty() {
                release_if_large(&mut rb);
                Vec::new()
            } else if rb.capacity() - rb.len() > rb.len() / 8 + 4096 {
                let copy = rb.to_vec();
                release_if_large(&mut rb);
                copy
            } else {
                std::mem::take(&mut *rb)
            }
        });
        let next = (!children.is_empty()).then(|| {
            let child = Arc::new(Base {
                entry: c,
                kind: base.kind,
                size: data.len() as u64,
                parent: Some(base.clone()),
                data: Mutex::new(None),
                pending: AtomicU32::new(children.len() as u32),
            });
            self.kept.keep(&child, Arc::new(data));
            (child, children)
        });
        Some(Resolved { ticket, next })
    }

    fn resolve_child<'s>(&'s self, s: &rayon::Scope<'s>, base: Arc<Base>, c: u32) {
        let Some(Resolved { ticket, next }) = self.step(&base, c, true) else {
            return;
        };
        let Some((child, children)) = next else {
            return;
        };
        self.descend(s, child, children, ticket);
    }

    /// Go on below a kept `base`: a large object's subtree stays on this thread, admitted as a
    /// whole, and the admission is given back when it is done (before the scope waits for the
    /// tasks spawned from it: a holder never waits); a small object's children go to the pool.
    fn descend<'s>(
        &'s self,
        s: &rayon::Scope<'s>,
        base: Arc<Base>,
        children: Vec<u32>,
        ticket: Option<Ticket<'s>>,
    ) {
        match ticket {
            Some(t) => {
                self.resolve_serially(s, base, children);
                drop(t);
            }
            None => self.spawn_kept(s, base, children),
        }
    }

    /// Resolve the subtree below a large kept `base` on this thread, which holds an admission
    /// for it: siblings one after the other, depth first, each large base kept only while its
    /// own children need it. Subtrees below small objects go back to the pool. One thread per
    /// large subtree is what keeps memory within the budget plus the largest object however
    /// many threads run (two threads on sibling subtrees of one family would each keep a base).
    fn resolve_serially<'s>(&'s self, s: &rayon::Scope<'s>, base: Arc<Base>, children: Vec<u32>) {
        let mut stack = vec![(base, children, 0usize)];
        while let Some((base, children, next)) = stack.last_mut() {
            let Some(&c) = children.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            let base = base.clone();
            let Some(Resolved {
                next: Some((child, grandchildren)),
                ..
            }) = self.step(&base, c, false)
            else {
                continue;
            };
            if child.size >= self.opts.big_threshold {
                stack.push((child, grandchildren, 0));
            } else {
                self.spawn_kept(s, child, grandchildren);
            }
        }
    }

    fn has_children(&self, i: usize, id: &ObjectId) -> bool {
        self.child_start[i] != self.child_start[i + 1] || !ref_children(self.refs, id).is_empty()
    }

    fn resolve_root(&self, r: usize) {
        if self.stopped() {
            return;
        }
        let id = self.oids.get(r);
        if !self.has_children(r, &id) {
            return;
        }
        let children = self.claim_children(r, &id);
        if children.is_empty() {
            return;
        }
        let size = self.table.entries.sizes[r];
        let base = Arc::new(Base {
            entry: r as u32,
            kind: self.real_kinds.get(r),
            size,
            parent: None,
            data: Mutex::new(None),
            pending: AtomicU32::new(0),
        });
        let big =
            (size >= self.opts.big_threshold).then(|| self.gate.admit(size, &self.kept, &base));
        let data = match self.inflate_entry(r) {
            Ok(d) => d,
            Err(e) => return self.fail(e),
        };
        self.base_inflations.fetch_add(1, Ordering::Relaxed);
        base.pending.store(children.len() as u32, Ordering::Relaxed);
        self.kept.keep(&base, Arc::new(data));
        rayon::scope(|s| self.descend(s, base, children, big));
    }
}

/// The delta forest's shape, computed once per pack.
pub struct Forest {
    pub child_start: Vec<u32>,
    pub child_list: Vec<u32>,
    /// Each entry's count of OFS descendants, itself included.
    pub weight: Vec<u32>,
    pub refs: Vec<(ObjectId, u32)>,
    /// Deltas already resolved (or being resolved) by some pass.
    pub claimed: Vec<bool>,
}

impl Forest {
    /// Build the forest; consumes the table's OFS base offsets, which it replaces.
    pub fn new(table: &mut Table) -> Result<Self> {
        let (child_start, child_list, weight) = table.ofs_children()?;
        table.ofs_bases = Vec::new();
        Ok(Forest {
            child_start,
            child_list,
            weight,
            refs: table.sorted_ref_bases(),
            claimed: vec![false; table.len()],
        })
    }
}

/// Resolve every delta reachable from `roots` (whole objects whose ids are known). With
/// `opts.trace`, the offsets read are appended to `trace`; `check` sees every object made.
#[allow(clippy::too_many_arguments)]
pub fn resolve(
    pack: &PackFile,
    table: &mut Table,
    forest: &mut Forest,
    roots: &[u32],
    opts: &ResolveOptions,
    progress: &Progress,
    pool: &rayon::ThreadPool,
    trace: &mut Vec<u64>,
    check: Option<&Checker>,
) -> Result<ResolveStats> {
    let mut oids = std::mem::take(&mut table.oids);
    let mut real_kinds = std::mem::take(&mut table.real_kinds);
    let mut shape = std::mem::take(&mut table.shape);
    if opts.shape {
        shape.resize(table.len(), u32::MAX);
    }
    let claimed: Vec<AtomicBool> = forest.claimed.iter().map(|&c| AtomicBool::new(c)).collect();
    let outcome = {
        let r = Resolver {
            pack,
            table,
            oids: DisjointIds::new(&mut oids),
            real_kinds: Disjoint::new(&mut real_kinds),
            shape: opts.shape.then(|| Disjoint::new(&mut shape)),
            claimed,
            child_start: &forest.child_start,
            weight: &forest.weight,
            child_list: &forest.child_list,
            refs: &forest.refs,
            kept: KeptBases::new(opts.budget),
            opts,
            progress,
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            base_inflations: AtomicU64::new(0),
            delta_inflations: AtomicU64::new(0),
            rebuilds: AtomicU64::new(0),
            resolved: AtomicU64::new(0),
            trace: opts.trace.then(|| Mutex::new(Vec::new())),
            gate: Gate::new(),
            check,
        };
        pool.install(|| {
            roots
                .par_iter()
                .with_max_len(64)
                .for_each(|&root| r.resolve_root(root as usize))
        });
        let stats = ResolveStats {
            resolved: r.resolved.load(Ordering::Relaxed),
            base_inflations: r.base_inflations.load(Ordering::Relaxed),
            delta_inflations: r.delta_inflations.load(Ordering::Relaxed),
            rebuilds: r.rebuilds.load(Ordering::Relaxed),
            evictions: r.kept.evictions.load(Ordering::Relaxed),
            peak_kept: r.kept.peak.load(Ordering::Relaxed),
        };
        let failure = r.failure.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = r.trace {
            trace.extend(t.into_inner().unwrap_or_else(|e| e.into_inner()));
        }
        for (flag, c) in forest.claimed.iter_mut().zip(r.claimed.iter()) {
            *flag = c.load(Ordering::Relaxed);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    };
    table.oids = oids;
    table.real_kinds = real_kinds;
    table.shape = shape;
    progress.check_cancelled()?;
    outcome
}

/// Deltas left unresolved (their base is neither in the pack nor was supplied).
pub fn unresolved(table: &Table) -> Vec<u32> {
    (0..table.len())
        .filter(|&i| is_delta(table.entries.kinds[i]) && table.real_kinds[i] == 0)
        .map(|i| i as u32)
        .collect()
}
