//! Git's object checks (`index-pack --strict` / `--fsck-objects`): every commit, tree and tag
//! checked by fsck's rules as the indexer hashes it, on the indexer's threads; the objects
//! they link to gathered for the connectivity check; the `.gitmodules` and `.gitattributes`
//! blobs trees name, checked once the whole pack is known.
//!
//! The checks are pure functions of one object's bytes (commit.rs, tag.rs, tree.rs,
//! gitmodules.rs) writing to a Report; this module collects what they find.

mod commit;
mod config;
mod gitmodules;
mod ident;
mod links;
mod names;
mod refname;
pub mod report;
pub mod rules;
mod tag;
pub mod tree;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use links::Links;

use crate::pack::entry_header::{
    type_name, HashAlgo, ObjectId, OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE,
};
use crate::pack::hash::hex;
use report::{Report, PLAIN_ERROR};
use rules::Rules;
pub use tree::Special;

/// Where Git checks an object: whole objects in pack order as the first pass reads them,
/// then deltas as they are resolved. Findings are reported in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seen {
    pub delta: bool,
    pub offset: u64,
}

impl Seen {
    /// After every object of the pack: the checks Git makes once the pack is written.
    pub const AFTER: Seen = Seen {
        delta: true,
        offset: u64::MAX,
    };
}

/// What one object's check found: lines to print, and the reason the run fails, if it does.
pub struct Finding {
    pub seen: Seen,
    pub id: ObjectId,
    /// (report::WARNING, ERROR or PLAIN_ERROR, text), as Git prints them.
    pub lines: Vec<(u8, String)>,
    pub fatal: Option<String>,
}

/// A `.gitmodules` or `.gitattributes` blob a tree names, and where the first tree naming it
/// was checked.
pub type SpecialBlob = (ObjectId, Special, Seen);

pub struct Checker {
    pub algo: HashAlgo,
    /// Check objects by fsck's rules (`--fsck-objects`, `--strict`).
    pub objects: bool,
    /// Gather links for the connectivity check (`--strict`, `--check-self-contained-...`).
    pub links: bool,
    /// Git's strict index too: no object may appear twice.
    pub strict: bool,
    pub rules: Rules,
    findings: Mutex<Vec<Finding>>,
    failed: AtomicBool,
    /// Every object linked to or checked (Git's table of objects).
    linked: Links,
    specials: Mutex<Vec<SpecialBlob>>,
    /// Offsets of entries too large to hold while scanning, checked once the pack is resolved.
    deferred: Mutex<Vec<u64>>,
}

/// Git's object lookup refusing an id it knows as another type.
fn clash(id: &ObjectId, known: u8, kind: u8) -> String {
    format!(
        "object {} is a {}, not a {}",
        hex(id),
        type_name(known),
        type_name(kind)
    )
}

fn plain(lines: Vec<String>) -> Vec<(u8, String)> {
    lines.into_iter().map(|l| (PLAIN_ERROR, l)).collect()
}

impl Checker {
    /// A checker of objects named by `algo`.
    pub fn new(algo: HashAlgo, objects: bool, links: bool, strict: bool, rules: Rules) -> Self {
        Checker {
            algo,
            objects,
            links,
            strict,
            rules,
            findings: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            linked: Links::new(algo),
            specials: Mutex::new(Vec::new()),
            deferred: Mutex::new(Vec::new()),
        }
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Forget everything checked so far (the first pass read objects of no pack: see
    /// index::checks::check_again).
    pub fn reset(&mut self) {
        let rules = std::mem::take(&mut self.rules);
        *self = Checker::new(self.algo, self.objects, self.links, self.strict, rules);
    }

    fn record(&self, seen: Seen, id: &ObjectId, lines: Vec<(u8, String)>, fatal: Option<String>) {
        if lines.is_empty() && fatal.is_none() {
            return;
        }
        if fatal.is_some() {
            self.failed.store(true, Ordering::Relaxed);
        }
        let finding = Finding {
            seen,
            id: *id,
            lines,
            fatal,
        };
        self.findings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(finding);
    }

    /// Check the entry at `offset` later (it was streamed, not held).
    pub fn defer(&self, offset: u64) {
        self.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(offset);
    }

    pub fn take_deferred(&self) -> Vec<u64> {
        std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// This thread checks no more objects: its cache of recent links is given back.
    pub fn done_on_this_thread(&self) {
        self.linked.forget_recent();
    }

    /// Record that `from` links to `to`, which must be a `kind`. Another link expecting
    /// another type is what Git's object lookup refuses: the error it prints, and what
    /// `from`'s parse or walk then dies with. False when so.
    fn link(&self, seen: Seen, from: &ObjectId, from_kind: u8, to: ObjectId, kind: u8) -> bool {
        let Some(known) = self.linked.record(to, kind) else {
            return true;
        };
        let mut lines = vec![clash(&to, known, kind)];
        let fatal = match from_kind {
            OBJ_COMMIT => {
                let what = if kind == OBJ_TREE {
                    "tree pointer"
                } else {
                    "parent"
                };
                lines.push(format!("bad {what} {} in commit {}", hex(&to), hex(from)));
                "invalid commit".to_string()
            }
            OBJ_TAG => {
                lines.push(format!("bad tag pointer to {} in {}", hex(&to), hex(from)));
                "invalid tag".to_string()
            }
            _ => format!("Not all child objects of {} are reachable", hex(from)),
        };
        self.record(seen, from, plain(lines), Some(fatal));
        false
    }

    /// Whether the object `id` of type `kind` is not what a link to it expected (Git's
    /// lookup of the object then fails, and the run with it); records it if so.
    fn is_a(&self, seen: Seen, id: &ObjectId, kind: u8) -> bool {
        let Some(known) = self.linked.record(*id, kind) else {
            return true;
        };
        let line = clash(id, known, kind);
        let fatal = if kind == OBJ_BLOB {
            format!("invalid blob object {}", hex(id))
        } else {
            format!("invalid {}", type_name(kind))
        };
        self.record(seen, id, plain(vec![line]), Some(fatal));
        false
    }

    /// Check one object of the pack, as Git's index-pack does when it has hashed it: parse it
    /// (else "invalid <type>"), check it by fsck's rules, then note what it links to.
    pub fn check(&self, seen: Seen, kind: u8, id: &ObjectId, data: &[u8]) {
        let mut links: Vec<(ObjectId, u8)> = Vec::new();
        let parsed = match kind {
            OBJ_COMMIT => commit::parse(id, data)
                .map(|c| {
                    links.push((c.tree, OBJ_TREE));
                    links.extend(c.parents.into_iter().map(|p| (p, OBJ_COMMIT)));
                })
                .map_err(Some),
            OBJ_TAG => tag::parse(id, data).map(|(target, k)| links.push((target, k))),
            _ => Ok(()),
        };
        if !self.is_a(seen, id, kind) {
            return;
        }
        if let Err(line) = parsed {
            let fatal = format!("invalid {}", type_name(kind));
            return self.record(seen, id, plain(line.into_iter().collect()), Some(fatal));
        }
        // Git looks up a commit's tree and parents, and a tag's target, as it parses them.
        if kind != OBJ_TREE {
            for &(to, k) in &links {
                if !self.link(seen, id, kind, to, k) {
                    return;
                }
            }
        }
        // A tree checked by fsck's rules is walked by the same decoding.
        let mut walked = Vec::new();
        if self.objects {
            let mut r = Report::new(&self.rules, id);
            let mut found = Vec::new();
            let failed = match kind {
                OBJ_COMMIT => commit::check(&mut r, data),
                OBJ_TAG => tag::check(&mut r, data),
                OBJ_TREE => tree::check(&mut r, &self.rules, data, &mut found, &mut walked),
                _ => false,
            };
            if !found.is_empty() {
                let mut specials = self.specials.lock().unwrap_or_else(|e| e.into_inner());
                specials.extend(found.into_iter().map(|(blob, s)| (blob, s, seen)));
            }
            let fatal = failed.then(|| "fsck error in packed object".to_string());
            self.record(seen, id, r.lines, fatal);
            if failed {
                return;
            }
        }
        if !self.links || kind != OBJ_TREE {
            return;
        }
        // Git's walk prints the error of a malformed entry again: a tree the rules decoded
        // to its end (`walked`) is walked as it is, any other is decoded by the walk itself
        // (only a downgraded badTree gets here with a malformed one).
        let (entries, error) = if walked.is_empty() {
            match tree::entries(self.algo, data) {
                Ok(decoded) => decoded,
                Err(error) => {
                    let fatal = format!("Not all child objects of {} are reachable", hex(id));
                    return self.record(seen, id, plain(vec![error.to_string()]), Some(fatal));
                }
            }
        } else {
            (walked, None)
        };
        for e in entries {
            if let Some(k) = tree::link_kind(e.mode) {
                if !self.link(seen, id, kind, e.id, k) {
                    return;
                }
            }
        }
        let lines = plain(error.into_iter().map(String::from).collect());
        self.record(seen, id, lines, None);
    }

    /// Check the contents of a blob a tree named `.gitmodules` or `.gitattributes`; `seen`:
    /// where Git checks it (as it reads the blob, when the tree came first; else once the
    /// pack is written, Seen::AFTER).
    pub fn check_special(&self, seen: Seen, id: &ObjectId, special: Special, data: &[u8]) {
        let mut r = Report::new(&self.rules, id);
        let failed = match special {
            Special::Gitmodules => gitmodules::check_gitmodules(&mut r, data),
            Special::Gitattributes => gitmodules::check_gitattributes(&mut r, data),
        };
        let fatal = failed.then(|| {
            if seen == Seen::AFTER {
                "fsck error in pack objects"
            } else {
                "fsck error in packed object"
            }
            .to_string()
        });
        self.record(seen, id, r.lines, fatal);
    }

    /// Report on a special blob that is not a blob (`found` its type), or that nobody has.
    pub fn special_not_blob(&self, id: &ObjectId, special: Special, found: Option<u8>) {
        let (file, blob_msg, missing_msg) = match special {
            Special::Gitmodules => (
                ".gitmodules",
                rules::Msg::GitmodulesBlob,
                rules::Msg::GitmodulesMissing,
            ),
            Special::Gitattributes => (
                ".gitattributes",
                rules::Msg::GitattributesBlob,
                rules::Msg::GitattributesMissing,
            ),
        };
        let mut r = Report::new(&self.rules, id);
        let failed = match found {
            Some(_) => r.report(blob_msg, &format!("non-blob found at {file}")),
            None => r.report(missing_msg, &format!("unable to read {file} blob")),
        };
        let fatal = failed.then(|| "fsck error in pack objects".to_string());
        self.record(Seen::AFTER, id, r.lines, fatal);
    }

    /// The blobs trees named `.gitmodules` or `.gitattributes`, each once, with where the
    /// first tree naming it was checked.
    pub fn specials(&self) -> Vec<SpecialBlob> {
        let mut s = std::mem::take(&mut *self.specials.lock().unwrap_or_else(|e| e.into_inner()));
        s.sort_unstable_by_key(|&(id, k, seen)| (id, k as u8, seen));
        s.dedup_by_key(|&mut (id, k, _)| (id, k as u8));
        s
    }

    /// Call `f` with every linked object and the type its links expect, each shard given
    /// back as it is done (the table is as large as the pack's object count).
    pub fn drain_linked(&self, f: impl FnMut(ObjectId, u8)) {
        self.linked.drain(f)
    }

    /// What was found, in the order Git checks the objects.
    pub fn take_findings(&self) -> Vec<Finding> {
        let mut f = std::mem::take(&mut *self.findings.lock().unwrap_or_else(|e| e.into_inner()));
        f.sort_by_key(|f| f.seen);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsck::rules::{Severity, MESSAGES};

    /// Pieces objects are made of, so that random inputs reach every branch of the parsers.
    const PIECES: &[&[u8]] = &[
        b"tree ",
        b"parent ",
        b"author ",
        b"committer ",
        b"tagger ",
        b"object ",
        b"type ",
        b"tag ",
        b"gpgsig ",
        b"commit",
        b"blob",
        b"\n",
        b"\n\n",
        b"\0",
        b" ",
        b"<",
        b">",
        b"a@b",
        b"Name",
        b"0",
        b"1234567890",
        b"99999999999999999999999",
        b"+0000",
        b"-12",
        b"4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        b"4B825DC642CB6EB9A060E54BF8D69288FBEE4904",
        b"100644 ",
        b"40000 ",
        b"120000 ",
        b"0100644 ",
        b".git",
        b".gitmodules",
        b"GIT~1",
        b"gi7eba~1",
        b"\\",
        b"/",
        b".",
        b"..",
        b"\xe2\x80\x8c",
        b"\xff",
        b"[submodule \"",
        b"\"]",
        b"url = ",
        b"path = -x",
        b"update = !x",
        b"../",
        b"https://",
        b"%0a",
        b":",
        b"\t",
        b"#",
        b";",
        b"\\\n",
        b"\xef\xbb\xbf",
    ];

    fn random_object(state: &mut u64) -> Vec<u8> {
        let mut next = || {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state
        };
        let n = (next() % 24) as usize;
        let mut out = Vec::new();
        for _ in 0..n {
            match next() % 8 {
                // Raw bytes too, and ids of 20 random bytes where a tree wants them.
                0 => out.extend((0..(next() % 24)).map(|_| next() as u8)),
                _ => out.extend_from_slice(PIECES[(next() as usize) % PIECES.len()]),
            }
        }
        out
    }

    #[test]
    fn hostile_objects_are_reported_never_a_panic() {
        let rules = Rules {
            severities: vec![Severity::Warn; MESSAGES.len()],
            skip: Vec::new(),
            max_tree_entry_len: 4096,
        };
        let check = Checker::new(HashAlgo::Sha1, true, true, true, rules);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..200_000u64 {
            let data = random_object(&mut state);
            let raw: [u8; 20] = std::array::from_fn(|k| (i >> (k % 8)) as u8 ^ k as u8);
            let id = ObjectId::of(HashAlgo::Sha1, &raw);
            for kind in [OBJ_COMMIT, OBJ_TREE, OBJ_TAG] {
                check.check(
                    Seen {
                        delta: false,
                        offset: i,
                    },
                    kind,
                    &id,
                    &data,
                );
            }
            check.check_special(Seen::AFTER, &id, Special::Gitmodules, &data);
            check.check_special(Seen::AFTER, &id, Special::Gitattributes, &data);
        }
        assert!(!check.take_findings().is_empty());
    }
}
