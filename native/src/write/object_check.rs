//! Proof that chosen entries of a pack hold the objects planned for them: each is read back
//! from the pack (inflated, its delta chain applied, with a cache of bases as the delta
//! search reads objects), hashed under its type, and compared with the planned id.
//!
//! A repack checks this way every entry whose bytes it produced (new deltas, loose objects,
//! objects rebuilt from a chain); copied entries are proven by their CRCs instead. Entries
//! are split among threads in pack order, so a thread's cache holds the bases its entries
//! come after.

use crate::error::{PackError, Result};
use crate::pack::entry_header::ObjectId;
use crate::pack::hash::ObjectHasher;
use crate::pack::object_read::{Reader, Store};
use crate::progress::Progress;

/// Check that entry `targets[k]` of `store`'s only pack is object `ids[k]` of type
/// `kinds[k]`, for every k; the first that is not is an error naming its offset.
pub fn check_objects(
    store: &Store,
    targets: &[u64],
    ids: &[ObjectId],
    kinds: &[u8],
    threads: usize,
    budget: u64,
    progress: &Progress,
) -> Result<()> {
    if targets.len() != ids.len() || targets.len() != kinds.len() {
        return Err(PackError::general("check columns differ in length"));
    }
    let pack = store
        .packs
        .first()
        .ok_or_else(|| PackError::general("no pack to check"))?;
    if targets
        .iter()
        .any(|&t| t as usize >= pack.entries.offsets.len())
    {
        return Err(PackError::general("an entry to check is out of range"));
    }
    let threads = threads.clamp(1, targets.len().max(1));
    let per = targets.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = targets
            .chunks(per)
            .zip(ids.chunks(per))
            .zip(kinds.chunks(per))
            .map(|((t, i), k)| {
                scope.spawn(move || check_range(store, t, i, k, budget / threads as u64, progress))
            })
            .collect();
        let mut first: Option<PackError> = None;
        for w in workers {
            let outcome = w
                .join()
                .unwrap_or_else(|_| Err(PackError::general("a check thread failed")));
            if let Err(e) = outcome {
                // Report the error nearest the start of the pack, whichever thread found it.
                if first.as_ref().is_none_or(|f| e.offset < f.offset) {
                    first = Some(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    })
}

fn check_range(
    store: &Store,
    targets: &[u64],
    ids: &[ObjectId],
    kinds: &[u8],
    budget: u64,
    progress: &Progress,
) -> Result<()> {
    let pack = &store.packs[0];
    let mut reader = Reader::new(store, budget);
    for (k, &pos) in targets.iter().enumerate() {
        if k % 256 == 0 {
            progress.check_cancelled()?;
        }
        let offset = pack.entries.offsets[pos as usize];
        let data = reader.read_entry(0, pos as usize)?;
        let mut hasher = ObjectHasher::new(pack.pack.algo, kinds[k], data.len() as u64, false);
        hasher.update(&data);
        if hasher.finish(offset)? != ids[k] {
            return Err(PackError::not_planned(
                offset,
                format!(
                    "{}: the entry is not the object planned for it",
                    pack.path.display()
                ),
            ));
        }
        progress.add(1);
    }
    Ok(())
}
