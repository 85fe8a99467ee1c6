//! Tags: what Git's parser needs of one (else "invalid tag"), and fsck's rules.

use crate::fsck::ident::{check_ident, headers_end_badly, id_line};
use crate::fsck::refname::is_valid_refname;
use crate::fsck::report::{name, oid_hex, Report};
use crate::fsck::rules::Msg;
use crate::pack::entry_header::{type_named, ObjectId};

/// Git's `parse_tag_buffer`: the tagged object and its type. Err is Git's error line, if it
/// prints one (the run then fails with "invalid tag").
pub fn parse(id: &ObjectId, data: &[u8]) -> Result<(ObjectId, u8), Option<String>> {
    let hexsz = id.algo().hexsz();
    if data.len() < hexsz + 24 || !data.starts_with(b"object ") || data[7 + hexsz] != b'\n' {
        return Err(None);
    }
    let target = oid_hex(id.algo(), &data[7..]).ok_or(None)?;
    if !data[8 + hexsz..].starts_with(b"type ") {
        return Err(None);
    }
    let start = 13 + hexsz;
    let nl = data[start..].iter().position(|&b| b == b'\n').ok_or(None)?;
    if nl >= 20 {
        return Err(None);
    }
    let type_name = &data[start..start + nl];
    let kind = type_named(type_name).ok_or_else(|| {
        Some(format!(
            "unknown tag type '{}' in {}",
            String::from_utf8_lossy(type_name),
            name(id)
        ))
    })?;
    let pos = start + nl + 1;
    if !(pos + 4 < data.len() && data[pos..].starts_with(b"tag ")) {
        return Err(None);
    }
    if !data[pos + 4..].contains(&b'\n') {
        return Err(None);
    }
    Ok((target, kind))
}

/// Git's `fsck_tag`; true when it fails the object. As in Git, a report after the tagger line
/// decides the result even when the tagger line failed (Git assigns, it does not add).
pub fn check(r: &mut Report, data: &[u8]) -> bool {
    if headers_end_badly(r, data) {
        return true;
    }
    let at = |pos: usize, prefix: &[u8]| pos < data.len() && data[pos..].starts_with(prefix);
    let eol = |pos: usize| data[pos..].iter().position(|&b| b == b'\n');
    if !at(0, b"object ") {
        return r.report(
            Msg::MissingObject,
            "invalid format - expected 'object' line",
        );
    }
    let (mut pos, ok) = id_line(r.algo, data, 7);
    if !ok
        && r.report(
            Msg::BadObjectSha1,
            "invalid 'object' line format - bad sha1",
        )
    {
        return true;
    }
    if !at(pos, b"type ") {
        return r.report(
            Msg::MissingTypeEntry,
            "invalid format - expected 'type' line",
        );
    }
    pos += 5;
    let Some(nl) = eol(pos) else {
        return r.report(
            Msg::MissingType,
            "invalid format - unexpected end after 'type' line",
        );
    };
    if type_named(&data[pos..pos + nl]).is_none() && r.report(Msg::BadType, "invalid 'type' value")
    {
        return true;
    }
    pos += nl + 1;
    if !at(pos, b"tag ") {
        return r.report(Msg::MissingTagEntry, "invalid format - expected 'tag' line");
    }
    pos += 4;
    let Some(nl) = eol(pos) else {
        return r.report(
            Msg::MissingTag,
            "invalid format - unexpected end after 'type' line",
        );
    };
    let tag_name = &data[pos..pos + nl];
    let mut full = b"refs/tags/".to_vec();
    full.extend_from_slice(tag_name);
    if !is_valid_refname(&full) {
        let text = format!("invalid 'tag' name: {}", String::from_utf8_lossy(tag_name));
        if r.report(Msg::BadTagName, &text) {
            return true;
        }
    }
    pos += nl + 1;
    let mut failed = false;
    if !at(pos, b"tagger ") {
        // Early tags have no tagger line: Git only warns.
        if r.report(
            Msg::MissingTaggerEntry,
            "invalid format - expected 'tagger' line",
        ) {
            return true;
        }
    } else {
        (pos, failed) = check_ident(r, data, pos + 7);
    }
    for prefix in [&b"gpgsig "[..], b"gpgsig-sha256 "] {
        if !at(pos, prefix) {
            continue;
        }
        let Some(nl) = eol(pos + prefix.len()) else {
            return r.report(
                Msg::BadGpgsig,
                "invalid format - unexpected end after 'gpgsig' or 'gpgsig-sha256' line",
            );
        };
        pos += prefix.len() + nl + 1;
        while at(pos, b" ") {
            let Some(nl) = eol(pos) else {
                return r.report(
                    Msg::BadHeaderContinuation,
                    "invalid format - unexpected end in 'gpgsig' or 'gpgsig-sha256' continuation line",
                );
            };
            pos += nl + 1;
        }
        break;
    }
    if pos < data.len() && data[pos] != b'\n' {
        failed = r.report(
            Msg::ExtraHeaderEntry,
            "invalid format - extra header(s) after 'tagger'",
        );
    }
    failed
}
