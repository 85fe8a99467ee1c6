//! The header checks commits and tags share: where the headers end, and author, committer and
//! tagger lines, with Git's fsck rules and messages.

use crate::fsck::report::{oid_hex, Report};
use crate::fsck::rules::Msg;
use crate::pack::object_id::HashAlgo;

/// Git's `verify_headers`: the headers end with a blank line, or at least with a newline, and
/// hold no NUL. True when the check must stop (the rest relies on it).
pub fn headers_end_badly(r: &mut Report, data: &[u8]) -> bool {
    for (i, &b) in data.iter().enumerate() {
        if b == 0 {
            return r.report(
                Msg::NulInHeader,
                &format!("unterminated header: NUL at offset {i}"),
            );
        }
        if b == b'\n' && data.get(i + 1) == Some(&b'\n') {
            return false;
        }
    }
    if data.last() == Some(&b'\n') {
        return false;
    }
    r.report(Msg::UnterminatedHeader, "unterminated header")
}

/// Where the line starting at `pos` ends (its newline, which the header check guarantees).
pub fn line_end(data: &[u8], pos: usize) -> usize {
    data[pos..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(data.len(), |n| pos + n)
}

/// An id line's value at `pos` (of a commit or tag): an id in hex and a newline. Returns
/// where the next line starts and whether the id was well formed.
pub fn id_line(algo: HashAlgo, data: &[u8], pos: usize) -> (usize, bool) {
    let end = pos + algo.hexsz();
    if oid_hex(algo, &data[pos..]).is_some() && data.get(end) == Some(&b'\n') {
        (end + 1, true)
    } else {
        ((line_end(data, pos) + 1).min(data.len()), false)
    }
}

/// Seconds since the epoch that do not fit Git's timestamps: more than 23 digits, or above
/// what a signed 64-bit time holds.
fn date_overflows(digits: &[u8]) -> bool {
    if digits.len() > 23 {
        return true;
    }
    let value = digits
        .iter()
        .fold(0u128, |v, &d| v * 10 + u128::from(d - b'0'));
    value > i64::MAX as u128
}

/// Check the identity line starting at `pos` (after "author ", "committer " or "tagger ").
/// Returns where the next line starts, and whether an error stops the check.
pub fn check_ident(r: &mut Report, data: &[u8], pos: usize) -> (usize, bool) {
    let end = line_end(data, pos);
    let line = &data[pos..end];
    // Past the line's end reads as its newline, as Git's scan meets it.
    let c = |k: usize| line.get(k).copied().unwrap_or(b'\n');
    let next = (end + 1).min(data.len());
    let fail = |r: &mut Report, msg: Msg, what: &str| {
        let stop = r.report(msg, &format!("invalid author/committer line - {what}"));
        (next, stop)
    };
    if c(0) == b'<' {
        return fail(r, Msg::MissingNameBeforeEmail, "missing space before email");
    }
    let mut p = 0;
    loop {
        match c(p) {
            b'\n' => return fail(r, Msg::MissingEmail, "missing email"),
            b'>' => return fail(r, Msg::BadName, "bad name"),
            b'<' => break,
            _ => p += 1,
        }
    }
    if line[p - 1] != b' ' {
        return fail(
            r,
            Msg::MissingSpaceBeforeEmail,
            "missing space before email",
        );
    }
    p += 1;
    loop {
        match c(p) {
            b'<' | b'\n' => return fail(r, Msg::BadEmail, "bad email"),
            b'>' => break,
            _ => p += 1,
        }
    }
    p += 1;
    if c(p) != b' ' {
        return fail(r, Msg::MissingSpaceBeforeDate, "missing space before date");
    }
    p += 1;
    while c(p) == b' ' || c(p) == b'\t' {
        p += 1;
    }
    if !c(p).is_ascii_digit() {
        return fail(r, Msg::BadDate, "bad date");
    }
    if c(p) == b'0' && c(p + 1) != b' ' {
        return fail(r, Msg::ZeroPaddedDate, "zero-padded date");
    }
    let digits = line[p..].iter().take_while(|b| b.is_ascii_digit()).count();
    if date_overflows(&line[p..p + digits]) {
        return fail(r, Msg::BadDateOverflow, "date causes integer overflow");
    }
    p += digits;
    if c(p) != b' ' {
        return fail(r, Msg::BadDate, "bad date");
    }
    p += 1;
    let zone_ok = matches!(c(p), b'+' | b'-')
        && (1..=4).all(|k| c(p + k).is_ascii_digit())
        && p + 5 == line.len();
    if !zone_ok {
        return fail(r, Msg::BadTimezone, "bad time zone");
    }
    (next, false)
}
