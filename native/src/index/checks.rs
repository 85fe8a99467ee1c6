//! The indexer's part of Git's object checks once both passes are done: objects that were
//! too large to check while scanning, the `.gitmodules` and `.gitattributes` blobs trees
//! named, links checked against the pack (types; what the pack lacks is left to the
//! repository), and Git's strict rule that no object appears twice.

use crate::error::Result;
use crate::fsck::{Checker, Finding, Seen, Special};
use crate::index::reread::Entries;
use crate::index::resolve::inflate_entry;
use crate::index::table::Table;
use crate::pack::entry_header::{is_delta, type_name, ObjectId, OBJ_BLOB};
use crate::pack::hash::hex;
use crate::pack::object_id::HashAlgo;
use crate::pack::source::PackFile;

/// What runs Git's object checks on the objects it hashes: the indexer, and the parser of a
/// pack read from a stream.
pub trait RunsChecks {
    /// The hash of the ids it checks.
    fn algo(&self) -> HashAlgo;
    /// Run `check` on every object from now on.
    fn set_checks(&mut self, check: Checker);
}

pub struct Outcome {
    pub findings: Vec<Finding>,
    /// Links to objects the pack lacks, with the type each link expects: the repository must
    /// have them.
    pub foreign: Vec<(ObjectId, u8)>,
    /// Special blobs the pack lacks: the repository's copies are checked by the caller.
    pub outside: Vec<(ObjectId, Special)>,
}

fn fatal(seen: Seen, id: ObjectId, text: String) -> Finding {
    Finding {
        seen,
        id,
        lines: Vec::new(),
        fatal: Some(text),
    }
}

/// Check again, from a fresh start, every whole object the first pass found: when a thread of
/// that pass read entries from a false boundary (first_pass.rs), the checks it made saw objects of
/// no pack, whose links must not count. Rare: such entries must inflate as two whole entries
/// in a row (a stored blob that holds a pack).
pub fn check_again(
    pack: &PackFile,
    table: &Table,
    check: &mut Checker,
    object_limit: u64,
) -> Result<()> {
    check.reset();
    let mut data = Vec::new();
    for i in 0..table.len() {
        let kind = table.entries.kinds[i];
        if is_delta(kind) || kind == OBJ_BLOB {
            continue;
        }
        inflate_entry(pack, table, object_limit, i, &mut data)?;
        let seen = Seen {
            delta: false,
            offset: table.entries.offsets[i],
        };
        check.check(seen, kind, &table.oids.get(i), &data);
    }
    Ok(())
}

pub fn finish(
    pack: &PackFile,
    table: &Table,
    check: &Checker,
    object_limit: u64,
) -> Result<Outcome> {
    let mut entries = Entries::new(pack, table, object_limit);
    let offsets = &table.entries.offsets;
    let seen_at = |i: usize| Seen {
        delta: is_delta(table.entries.kinds[i]),
        offset: offsets[i],
    };
    for offset in check.take_deferred() {
        if let Ok(i) = offsets.binary_search(&offset) {
            let data = entries.read(i as u32)?;
            check.check(seen_at(i), table.real_kinds[i], &table.oids.get(i), &data);
        }
    }
    let mut outside = Vec::new();
    for (id, special, named) in check.specials() {
        match entries.find(&id).map(|i| i as usize) {
            Some(i) if table.real_kinds[i] == OBJ_BLOB => {
                let data = entries.read(i as u32)?;
                // Git checks it as it reads it if a tree named it first, else at the end.
                let seen = if seen_at(i) > named {
                    seen_at(i)
                } else {
                    Seen::AFTER
                };
                check.check_special(seen, &id, special, &data);
            }
            Some(i) => check.special_not_blob(&id, special, Some(table.real_kinds[i])),
            None => outside.push((id, special)),
        }
    }
    let mut extra = Vec::new();
    let mut foreign = Vec::new();
    if check.links {
        check.drain_linked(|id, kind| match entries.find(&id) {
            Some(i) if table.real_kinds[i as usize] != kind => extra.push(fatal(
                seen_at(i as usize),
                id,
                format!(
                    "object {}: expected type {}, found {}",
                    hex(&id),
                    type_name(kind),
                    type_name(table.real_kinds[i as usize])
                ),
            )),
            Some(_) => {}
            None => foreign.push((id, kind)),
        });
        foreign.sort_unstable();
    }
    if let Some(id) = entries.duplicate().filter(|_| check.strict) {
        extra.push(fatal(
            Seen::AFTER,
            id,
            format!("The same object {} appears twice in the pack", hex(&id)),
        ));
    }
    // Entries scanned twice (where the first pass's threads met) are reported once; entries
    // a thread read from a false boundary are no entries of the pack.
    let mut findings = check.take_findings();
    findings.extend(extra);
    findings.retain(|f| f.seen == Seen::AFTER || offsets.binary_search(&f.seen.offset).is_ok());
    findings.sort_by(|a, b| (a.seen, &a.fatal, &a.lines).cmp(&(b.seen, &b.fatal, &b.lines)));
    findings.dedup_by(|a, b| (a.seen, &a.fatal, &a.lines) == (b.seen, &b.fatal, &b.lines));
    Ok(Outcome {
        findings,
        foreign,
        outside,
    })
}
