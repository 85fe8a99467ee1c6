//! The indexer: pass 1 (scan every entry), the entry table, pass 2 (resolve every delta in
//! parallel, with the bases it keeps), completing a thin pack, and Git's object checks.

pub mod checks;
pub(crate) mod entry_scanner;
pub mod first_pass;
pub mod indexer;
pub mod received;
pub mod reread;
pub mod resolve;
pub(crate) mod retain;
pub mod stream;
pub mod table;
pub mod thin;

/// An eighth of the memory budget a thread: above it objects are streamed in pass 1 and
/// resolved one at a time in pass 2, so per-thread buffers together stay within a quarter of
/// the budget.
pub fn per_thread_share(budget: u64, threads: usize) -> u64 {
    (budget / (8 * threads.max(1) as u64)).clamp(1 << 20, 64 << 20)
}
