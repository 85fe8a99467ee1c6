//! The contents of `.gitmodules` and `.gitattributes` blobs, as Git's fsck checks them: names,
//! URLs, paths and update commands a submodule may not have, and attribute lines too long.

use crate::fsck::config;
use crate::fsck::report::Report;
use crate::fsck::rules::Msg;

/// Git's attribute reader refuses larger files and longer lines.
const ATTR_MAX_FILE_SIZE: usize = 100 * 1024 * 1024;
const ATTR_MAX_LINE_LENGTH: usize = 2048;

fn is_sep(c: u8) -> bool {
    c == b'/' || c == b'\\'
}

fn looks_like_option(s: &[u8]) -> bool {
    s.first() == Some(&b'-')
}

/// A submodule name may not be empty nor hold a `..` component.
fn bad_name(name: &[u8]) -> bool {
    if name.is_empty() {
        return true;
    }
    let component_starts = std::iter::once(0).chain(
        name.iter()
            .enumerate()
            .filter(|&(_, &c)| is_sep(c))
            .map(|(i, _)| i + 1),
    );
    for start in component_starts {
        let rest = &name[start..];
        if rest.starts_with(b"..") && rest.get(2).is_none_or(|&c| is_sep(c)) {
            return true;
        }
    }
    false
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Whether `%XX` decoding (Git's url_decode) of `url` holds a newline.
fn decodes_to_newline(url: &[u8]) -> bool {
    url.contains(&b'\n')
        || url
            .windows(3)
            .any(|w| w[0] == b'%' && hex_value(w[1]) == Some(0) && hex_value(w[2]) == Some(10))
}

fn dot_slash(s: &[u8]) -> bool {
    s.first() == Some(&b'.') && s.get(1).is_some_and(|&c| is_sep(c))
}

fn dot_dot_slash(s: &[u8]) -> bool {
    s.starts_with(b"..") && s.get(2).is_some_and(|&c| is_sep(c))
}

/// Escapes in `part` are all `%` and two hex digits.
fn escapes_valid(part: &[u8]) -> bool {
    let mut i = 0;
    while i < part.len() {
        if part[i] == b'%' {
            if i + 3 > part.len() {
                return false;
            }
            if hex_value(part[i + 1]).is_none() || hex_value(part[i + 2]).is_none() {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// Whether Git's `url_normalize` accepts `url` (an http, https, ftp or ftps URL).
fn normalizes(url: &[u8]) -> bool {
    let scheme = url
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || b"+.-".contains(&c))
        .count();
    if scheme == 0 || !url[0].is_ascii_alphabetic() || !url[scheme..].starts_with(b"://") {
        return false;
    }
    let mut rest = &url[scheme + 3..];
    let slash = rest
        .iter()
        .position(|c| b"/?#".contains(c))
        .unwrap_or(rest.len());
    if let Some(at) = rest.iter().position(|&c| c == b'@').filter(|&a| a < slash) {
        if !escapes_valid(&rest[..at]) {
            return false;
        }
        rest = &rest[at + 1..];
    }
    let slash = rest
        .iter()
        .position(|c| b"/?#".contains(c))
        .unwrap_or(rest.len());
    if rest.is_empty() || b":/?#".contains(&rest[0]) {
        return false; // no host, and the scheme is not file:
    }
    let authority = &rest[..slash];
    let colon = authority
        .iter()
        .rposition(|&c| c == b':' || c == b']')
        .filter(|&i| authority[i] == b':' && i > 0);
    let host_end = colon.unwrap_or(authority.len());
    let host_ok = authority[..host_end]
        .iter()
        .all(|&c| c.is_ascii_alphanumeric() || b".-_[:]".contains(&c));
    if !host_ok {
        return false;
    }
    if let Some(c) = colon {
        // Leading zeros go, but a port of zeros only is port 0.
        let port = &authority[c + 1..];
        let zeros = port.iter().take_while(|&&d| d == b'0').count();
        let port = if zeros == port.len() && zeros > 0 {
            &port[zeros - 1..]
        } else {
            &port[zeros..]
        };
        if !port.is_empty() {
            let n: u32 = match std::str::from_utf8(port) {
                Ok(t) if port.len() <= 5 && port.iter().all(u8::is_ascii_digit) => {
                    t.parse().unwrap_or(0)
                }
                _ => return false,
            };
            if n == 0 || n > 65535 {
                return false;
            }
        }
    }
    // The path, segment by segment: escapes valid, and no ".." above the root.
    let tail = &rest[slash..];
    let path_end = tail
        .iter()
        .position(|c| b"?#".contains(c))
        .unwrap_or(tail.len());
    let path = tail.strip_prefix(b"/").unwrap_or(tail);
    let path = &path[..path_end.saturating_sub(tail.len() - path.len())];
    let mut depth = 0usize;
    for segment in path.split(|&c| c == b'/') {
        if !escapes_valid(segment) {
            return false;
        }
        match segment {
            b"." => {}
            b".." => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
            }
            _ => depth += 1,
        }
    }
    escapes_valid(&tail[path_end..])
}

/// Git's `check_submodule_url`: true when the URL is not allowed.
fn bad_url(url: &[u8]) -> bool {
    if looks_like_option(url) {
        return true;
    }
    if dot_slash(url) || dot_dot_slash(url) || url.starts_with(b"git://") {
        if decodes_to_newline(url) {
            return true;
        }
        // "../" runs that climb out of the remote's URL can rewrite its host.
        let mut rest = url;
        let mut climbs = 0;
        loop {
            if dot_dot_slash(rest) {
                climbs += 1;
                rest = &rest[3..];
            } else if dot_slash(rest) {
                rest = &rest[2..];
            } else {
                break;
            }
        }
        return climbs > 0 && matches!(rest.first(), Some(b':') | Some(b'/'));
    }
    let curl = [&b"http::"[..], b"https::", b"ftp::", b"ftps::"]
        .iter()
        .find_map(|p| url.strip_prefix(*p))
        .or_else(|| {
            [&b"http://"[..], b"https://", b"ftp://", b"ftps://"]
                .iter()
                .any(|p| url.starts_with(p))
                .then_some(url)
        });
    match curl {
        Some(u) => !normalizes(u) || decodes_to_newline(u),
        None => false,
    }
}

/// Check a `.gitmodules` blob; true when it fails the object.
pub fn check_gitmodules(r: &mut Report, data: &[u8]) -> bool {
    let mut failed = false;
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let parsed = config::parse(data, |var, value| {
        let Some(rest) = var.strip_prefix(b"submodule.") else {
            return;
        };
        let Some(dot) = rest.iter().rposition(|&c| c == b'.') else {
            return; // no subsection
        };
        let (name, key) = (&rest[..dot], &rest[dot + 1..]);
        // Git copies the name as a C string: it ends at a NUL.
        let name = name.split(|&c| c == 0).next().unwrap_or_default();
        if bad_name(name) {
            let t = format!("disallowed submodule name: {}", text(name));
            failed |= r.report(Msg::GitmodulesName, &t);
        }
        let Some(value) = value else { return };
        let value = value.split(|&c| c == 0).next().unwrap_or_default();
        if key == b"url" && bad_url(value) {
            let t = format!("disallowed submodule url: {}", text(value));
            failed |= r.report(Msg::GitmodulesUrl, &t);
        }
        if key == b"path" && looks_like_option(value) {
            let t = format!("disallowed submodule path: {}", text(value));
            failed |= r.report(Msg::GitmodulesPath, &t);
        }
        if key == b"update" && value.first() == Some(&b'!') {
            let t = format!("disallowed submodule update setting: {}", text(value));
            failed |= r.report(Msg::GitmodulesUpdate, &t);
        }
    });
    if !parsed {
        failed |= r.report(Msg::GitmodulesParse, "could not parse gitmodules blob");
    }
    failed
}

/// Check a `.gitattributes` blob; true when it fails the object.
pub fn check_gitattributes(r: &mut Report, data: &[u8]) -> bool {
    if data.len() > ATTR_MAX_FILE_SIZE {
        return r.report(Msg::GitattributesLarge, ".gitattributes too large to parse");
    }
    // Git reads it as a C string: the lines end at the first NUL.
    let text = data.split(|&c| c == 0).next().unwrap_or_default();
    if text
        .split(|&c| c == b'\n')
        .any(|line| line.len() >= ATTR_MAX_LINE_LENGTH)
    {
        return r.report(
            Msg::GitattributesLineLength,
            ".gitattributes has too long lines to parse",
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submodule_rules() {
        for bad in ["", "..", "a/../b", "..\\x", "a/.."] {
            assert!(bad_name(bad.as_bytes()), "{bad}");
        }
        for ok in ["a", "a..b", "...", "a/b"] {
            assert!(!bad_name(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "-u",
            "../:host/x",
            "./..//x",
            "git://host/%0a",
            "https://host/x\ny",
            "https:///x",
            "https://host:99999/",
            "https://host:000/",
            "https://host/%zz",
            "https://host/../..",
            "http::https://x%0Ay",
        ] {
            assert!(bad_url(bad.as_bytes()), "{bad}");
        }
        for ok in [
            "../sub.git",
            "https://host:443/a/./b/../c",
            "git://h/x",
            "/abs/path",
            "ssh://h/x",
        ] {
            assert!(!bad_url(ok.as_bytes()), "{ok}");
        }
    }
}
