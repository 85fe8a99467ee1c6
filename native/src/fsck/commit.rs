//! Commits: what Git's parser needs of one (else "invalid commit"), and fsck's rules.

use crate::fsck::ident::{check_ident, headers_end_badly, id_line};
use crate::fsck::report::{name, oid_hex, Report};
use crate::fsck::rules::Msg;
use crate::pack::entry_header::ObjectId;

/// What a commit links to.
pub struct Parsed {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
}

/// Git's `parse_commit_buffer`: the tree line, then each parent line, at fixed widths. Err is
/// Git's error line (the run then fails with "invalid commit").
pub fn parse(id: &ObjectId, data: &[u8]) -> Result<Parsed, String> {
    let algo = id.algo();
    let tree_line = 5 + algo.hexsz();
    let parent_line = 7 + algo.hexsz();
    if data.len() <= tree_line + 1 || !data.starts_with(b"tree ") || data[tree_line] != b'\n' {
        return Err(format!("bogus commit object {}", name(id)));
    }
    let tree = oid_hex(algo, &data[5..])
        .ok_or_else(|| format!("bad tree pointer in commit {}", name(id)))?;
    let mut parents = Vec::new();
    let mut pos = tree_line + 1;
    while pos + parent_line < data.len() && data[pos..].starts_with(b"parent ") {
        let parent = (data.len() > pos + parent_line + 1 && data[pos + parent_line] == b'\n')
            .then(|| oid_hex(algo, &data[pos + 7..]))
            .flatten()
            .ok_or_else(|| format!("bad parents in commit {}", name(id)))?;
        parents.push(parent);
        pos += parent_line + 1;
    }
    Ok(Parsed { tree, parents })
}

/// Git's `fsck_commit`; true when it fails the object.
pub fn check(r: &mut Report, data: &[u8]) -> bool {
    if headers_end_badly(r, data) {
        return true;
    }
    let at = |pos: usize, prefix: &[u8]| pos < data.len() && data[pos..].starts_with(prefix);
    if !at(0, b"tree ") {
        return r.report(Msg::MissingTree, "invalid format - expected 'tree' line");
    }
    let (mut pos, ok) = id_line(r.algo, data, 5);
    if !ok && r.report(Msg::BadTreeSha1, "invalid 'tree' line format - bad sha1") {
        return true;
    }
    while at(pos, b"parent ") {
        let (next, ok) = id_line(r.algo, data, pos + 7);
        if !ok
            && r.report(
                Msg::BadParentSha1,
                "invalid 'parent' line format - bad sha1",
            )
        {
            return true;
        }
        pos = next;
    }
    let mut authors = 0;
    while at(pos, b"author ") {
        authors += 1;
        let (next, stop) = check_ident(r, data, pos + 7);
        if stop {
            return true;
        }
        pos = next;
    }
    let stop = match authors {
        0 => r.report(
            Msg::MissingAuthor,
            "invalid format - expected 'author' line",
        ),
        1 => false,
        _ => r.report(
            Msg::MultipleAuthors,
            "invalid format - multiple 'author' lines",
        ),
    };
    if stop {
        return true;
    }
    if !at(pos, b"committer ") {
        return r.report(
            Msg::MissingCommitter,
            "invalid format - expected 'committer' line",
        );
    }
    if check_ident(r, data, pos + 10).1 {
        return true;
    }
    data.contains(&0) && r.report(Msg::NulInCommit, "NUL byte in the commit object body")
}
