//! The indexer of one pack file, step by step: scan (or take over what the stream parser
//! found), resolve, complete a thin pack, end the object checks, give the index table. Each
//! step checks that the steps it needs were made; the caller only takes the lock and runs the
//! long steps on a thread of its choosing (python/index.rs releases the GIL for them).

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use crate::error::PackError;
use crate::fsck::{Checker, Finding, Seen, Special};
use crate::index::checks::{self, RunsChecks};
use crate::index::first_pass::{scan, PackHeader, ScanOptions, DEFAULT_SPLIT_MIN_BYTES};
use crate::index::received::Indexed;
use crate::index::resolve::{resolve, unresolved, Forest, ResolveOptions, ResolveStats};
use crate::index::table::Table;
use crate::index::{per_thread_share, thin};
use crate::pack::entry_header::{is_delta, ObjectId, OBJ_BLOB};
use crate::pack::object_id::HashAlgo;
use crate::pack::source::PackFile;
use crate::progress::{Progress, PHASE_RESOLVING};

/// Why a step failed: the pack (or the system) said no, or the step came out of order.
#[derive(Debug)]
pub enum StepError {
    Pack(PackError),
    /// A step asked for before the ones it needs, or a pool that could not start.
    Order(String),
}

impl From<PackError> for StepError {
    fn from(e: PackError) -> Self {
        StepError::Pack(e)
    }
}

pub type StepResult<T> = std::result::Result<T, StepError>;

fn not_scanned() -> StepError {
    StepError::Order("the pack has not been scanned yet".into())
}

fn not_checking() -> StepError {
    StepError::Order("no object checks were asked for".into())
}

/// How to index: threads, the memory budget and the largest object, whether to detect SHA-1
/// collisions, whether the pack is opened to be completed (a thin pack), the smallest entry
/// split between threads in pass 1 (None: the default), and whether to trace pass 2's reads.
pub struct IndexerOptions {
    pub threads: usize,
    pub budget: u64,
    pub object_limit: u64,
    pub detect_collisions: bool,
    pub writable: bool,
    pub split_min_bytes: Option<u64>,
    pub trace: bool,
}

pub struct Indexer {
    pack: PackFile,
    threads: usize,
    split_min_bytes: u64,
    detect_collisions: bool,
    resolve_opts: ResolveOptions,
    pool: rayon::ThreadPool,
    header: Option<PackHeader>,
    checksum: Option<ObjectId>,
    table: Option<Table>,
    forest: Option<Forest>,
    stats: ResolveStats,
    /// For each missing base, the REF_DELTA entries that name it (missing_bases).
    wanting: HashMap<ObjectId, Vec<u32>>,
    appended: u32,
    /// Offsets of the entries read while resolving, in order, when tracing.
    trace: Vec<u64>,
    /// Git's object checks, when asked for (set_checks).
    check: Option<Checker>,
}

impl Indexer {
    pub fn open(path: &Path, algo: HashAlgo, o: &IndexerOptions) -> StepResult<Self> {
        let threads = o.threads.max(1);
        let pack = PackFile::open(path, o.writable, algo)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("packorder-resolve-{i}"))
            .build()
            .map_err(|e| StepError::Order(e.to_string()))?;
        Ok(Indexer {
            pack,
            threads,
            split_min_bytes: o.split_min_bytes.unwrap_or(DEFAULT_SPLIT_MIN_BYTES),
            detect_collisions: o.detect_collisions,
            resolve_opts: ResolveOptions {
                trace: o.trace,
                budget: o.budget,
                object_limit: o.object_limit,
                big_threshold: per_thread_share(o.budget, threads),
                detect_collisions: o.detect_collisions,
                shape: false,
            },
            pool,
            header: None,
            checksum: None,
            table: None,
            forest: None,
            stats: ResolveStats::default(),
            wanting: HashMap::new(),
            appended: 0,
            trace: Vec::new(),
            check: None,
        })
    }

    pub fn algo(&self) -> HashAlgo {
        self.pack.algo
    }

    /// Pass 1: read every entry.
    pub fn scan(&mut self, progress: &Progress) -> StepResult<()> {
        let opts = ScanOptions {
            threads: self.threads,
            detect_collisions: self.detect_collisions,
            split_min_bytes: self.split_min_bytes,
            whole_limit: per_thread_share(self.resolve_opts.budget, self.threads),
            check: self.check.as_ref(),
        };
        let mut r = scan(&self.pack, &opts, progress)?;
        let forest = Forest::new(&mut r.table)?;
        if let Some(check) = self.check.as_mut().filter(|_| r.false_entries) {
            checks::check_again(&self.pack, &r.table, check, self.resolve_opts.object_limit)?;
        }
        crate::trim_heap();
        self.header = Some(r.header);
        self.checksum = Some(r.checksum);
        self.table = Some(r.table);
        self.forest = Some(forest);
        Ok(())
    }

    /// Pass 1 as made while the pack arrived (the stream parser's findings, the object checks
    /// included), taken over as scan() would have found them.
    pub fn adopt(&mut self, indexed: Indexed) -> StepResult<()> {
        let Indexed {
            header,
            mut table,
            checksum,
            check,
        } = indexed;
        if table.entries.data_end != self.pack.len - self.pack.trailer_len() {
            return Err(StepError::Order("the stream read another pack".into()));
        }
        let forest = Forest::new(&mut table)?;
        crate::trim_heap();
        self.header = Some(header);
        self.checksum = Some(checksum);
        self.table = Some(table);
        self.forest = Some(forest);
        self.check = check;
        Ok(())
    }

    /// Pass 2: resolve every delta whose base is in the pack.
    pub fn resolve(&mut self, progress: &Progress) -> StepResult<()> {
        let (Some(table), Some(forest)) = (self.table.as_mut(), self.forest.as_mut()) else {
            return Err(not_scanned());
        };
        progress.start(PHASE_RESOLVING, table.delta_count() as u64);
        let roots: Vec<u32> = (0..table.len())
            .filter(|&i| !is_delta(table.entries.kinds[i]))
            .map(|i| i as u32)
            .collect();
        let stats = resolve(
            &self.pack,
            table,
            forest,
            &roots,
            &self.resolve_opts,
            progress,
            &self.pool,
            &mut self.trace,
            self.check.as_ref(),
        );
        crate::trim_heap();
        self.stats.add(stats?);
        Ok(())
    }

    /// Whether an object failed the checks (resolving then stopped early).
    pub fn checks_failed(&self) -> bool {
        self.check.as_ref().is_some_and(|c| c.failed())
    }

    /// End the object checks (after resolving and completing).
    pub fn finish_checks(&self) -> StepResult<checks::Outcome> {
        let check = self.check.as_ref().ok_or_else(not_checking)?;
        let table = self.table.as_ref().ok_or_else(not_scanned)?;
        Ok(checks::finish(
            &self.pack,
            table,
            check,
            self.resolve_opts.object_limit,
        )?)
    }

    /// Check a `.gitmodules` or `.gitattributes` blob the repository holds (`kind` its type,
    /// None if missing); its findings.
    pub fn check_special_blob(
        &self,
        id: &ObjectId,
        special: Special,
        kind: Option<u8>,
        data: &[u8],
    ) -> StepResult<Vec<Finding>> {
        let check = self.check.as_ref().ok_or_else(not_checking)?;
        match kind {
            Some(OBJ_BLOB) => check.check_special(Seen::AFTER, id, special, data),
            other => check.special_not_blob(id, special, other),
        }
        Ok(check.take_findings())
    }

    /// Record each delta's base from the next resolve on (for --verify-stat).
    pub fn record_shape(&mut self) {
        self.resolve_opts.shape = true;
    }

    /// In pack order: (base entries, delta depths); a whole object's base is 2**32-1 and its
    /// depth 0.
    pub fn delta_shape(&self) -> StepResult<(&[u32], Vec<u32>)> {
        let table = self.table()?;
        Ok((&table.shape, table.delta_depths()))
    }

    /// Offsets of the deltas still unresolved, in pack order.
    pub fn unresolved_offsets(&self) -> StepResult<Vec<u64>> {
        let table = self.table()?;
        Ok(unresolved(table)
            .into_iter()
            .map(|i| table.entries.offsets[i as usize])
            .collect())
    }

    /// The ids that unresolved REF_DELTA entries name, each once, in the pack order of the
    /// first entry naming it: the order in which Git asks the repository for a thin pack's
    /// bases. Remembers which entries want each, for append_bases.
    pub fn missing_bases(&mut self) -> StepResult<Vec<ObjectId>> {
        let table = self.table.as_ref().ok_or_else(not_scanned)?;
        let mut by_entry: Vec<(u32, ObjectId)> = table
            .ref_bases
            .iter()
            .filter(|&&(_, i)| table.real_kinds[i as usize] == 0)
            .map(|&(id, i)| (i, id))
            .collect();
        by_entry.sort_unstable();
        self.wanting.clear();
        let mut order = Vec::new();
        for (entry, id) in by_entry {
            let wanting = self.wanting.entry(id).or_default();
            if wanting.is_empty() {
                order.push(id);
            }
            wanting.push(entry);
        }
        Ok(order)
    }

    /// Append each (id, type, data) of `bases` (in missing_bases' order) that an unresolved
    /// entry still wants, and resolve what it unlocks: thin::append_bases. Returns (appended,
    /// None), or (appended so far, k) when `bases[k]` does not hash to its id.
    pub fn append_bases(
        &mut self,
        bases: &[(Vec<u8>, u8, Vec<u8>)],
        level: u32,
        progress: &Progress,
    ) -> StepResult<(u32, Option<usize>)> {
        let (Some(table), Some(forest)) = (self.table.as_mut(), self.forest.as_mut()) else {
            return Err(not_scanned());
        };
        let to = thin::Resolving {
            forest,
            opts: &self.resolve_opts,
            progress,
            pool: &self.pool,
            trace: &mut self.trace,
            check: self.check.as_ref(),
        };
        let (appended, bad, stats) = thin::append_bases(
            &mut self.pack,
            table,
            to,
            &self.wanting,
            bases,
            level,
            self.detect_collisions,
        )?;
        self.stats.add(stats);
        self.appended += appended;
        Ok((appended, bad))
    }

    /// After appending bases: rewrite the header count and trailer; returns the new checksum.
    pub fn finish_thin(&mut self) -> StepResult<ObjectId> {
        let table = self.table.as_ref().ok_or_else(not_scanned)?;
        let sum = thin::finish(&mut self.pack, table)?;
        self.checksum = Some(sum);
        Ok(sum)
    }

    /// The entries in the order of the index's names: by id, ties by pack offset. Ends
    /// resolution: the delta forest is dropped first, to keep the peak memory low.
    pub fn name_order(&mut self) -> StepResult<Vec<u32>> {
        self.forest = None;
        let table = self.table()?;
        crate::trim_heap();
        let mut order: Vec<u32> = (0..table.len() as u32).collect();
        order.par_sort_unstable_by(|&a, &b| {
            table
                .oids
                .raw(a as usize)
                .cmp(table.oids.raw(b as usize))
                .then(a.cmp(&b))
        });
        Ok(order)
    }

    /// The entry table, once the pack is scanned.
    pub fn table(&self) -> StepResult<&Table> {
        self.table.as_ref().ok_or_else(not_scanned)
    }

    /// Offsets of the entries pass 2 read, in the order the reads happened across threads;
    /// empty unless tracing.
    pub fn trace_offsets(&self) -> &[u64] {
        &self.trace
    }

    pub fn checksum(&self) -> Option<ObjectId> {
        self.checksum
    }

    pub fn version(&self) -> Option<u32> {
        self.header.map(|h| h.version)
    }

    pub fn pack_size(&self) -> u64 {
        self.pack.len
    }

    /// What the indexer did, by name: the objects and deltas once scanned, then the bases
    /// appended and what resolving did.
    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        let mut out = Vec::new();
        if let Some(t) = self.table.as_ref() {
            out.push(("objects", t.len() as u64));
            out.push(("deltas", t.delta_count() as u64));
        }
        let s = &self.stats;
        out.extend([
            ("appended_bases", u64::from(self.appended)),
            ("resolved_deltas", s.resolved),
            ("base_inflations", s.base_inflations),
            ("delta_inflations", s.delta_inflations),
            ("rebuilds", s.rebuilds),
            ("evictions", s.evictions),
            ("peak_kept_bytes", s.peak_kept),
        ]);
        out
    }
}

impl RunsChecks for Indexer {
    fn algo(&self) -> HashAlgo {
        Indexer::algo(self)
    }

    /// Checks run on every object as it is hashed.
    fn set_checks(&mut self, check: Checker) {
        self.check = Some(check);
    }
}
