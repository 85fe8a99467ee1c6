//! Names that are `.git`, `.gitmodules` and the like on a case-folding (HFS+) or NTFS file
//! system, as Git's fsck recognises them (utf8.c, path.c).

/// The byte at `i`, or NUL past the end (the names are NUL-terminated C strings in Git).
fn at(name: &[u8], i: usize) -> u8 {
    name.get(i).copied().unwrap_or(0)
}

fn is_xplatform_dir_sep(c: u8) -> bool {
    c == b'/' || c == b'\\'
}

/// One UTF-8 character from the front of `s`: (code point, its length), None if malformed.
fn utf8_char(s: &[u8]) -> Option<(u32, usize)> {
    let b = |i: usize| u32::from(at(s, i));
    let cont = |i: usize| at(s, i) & 0xc0 == 0x80;
    let s0 = at(s, 0);
    if s0 < 0x80 {
        Some((u32::from(s0), 1))
    } else if s0 & 0xe0 == 0xc0 {
        (cont(1) && s0 & 0xfe != 0xc0).then(|| (((b(0) & 0x1f) << 6) | (b(1) & 0x3f), 2))
    } else if s0 & 0xf0 == 0xe0 {
        let s1 = at(s, 1);
        let bad = !cont(1)
            || !cont(2)
            || (s0 == 0xe0 && s1 & 0xe0 == 0x80)
            || (s0 == 0xed && s1 & 0xe0 == 0xa0)
            || (s0 == 0xef && s1 == 0xbf && at(s, 2) & 0xfe == 0xbe);
        (!bad).then(|| {
            let c = ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
            (c, 3)
        })
    } else if s0 & 0xf8 == 0xf0 {
        let s1 = at(s, 1);
        let bad = !cont(1)
            || !cont(2)
            || !cont(3)
            || (s0 == 0xf0 && s1 & 0xf0 == 0x80)
            || (s0 == 0xf4 && s1 > 0x8f)
            || s0 > 0xf4;
        (!bad).then(|| {
            let c = ((b(0) & 0x07) << 18)
                | ((b(1) & 0x3f) << 12)
                | ((b(2) & 0x3f) << 6)
                | (b(3) & 0x3f);
            (c, 4)
        })
    } else {
        None
    }
}

/// The next character HFS+ does not ignore; 0 at the end or on malformed UTF-8.
fn next_hfs_char(s: &mut &[u8]) -> u32 {
    loop {
        let Some((c, len)) = utf8_char(s) else {
            *s = &[];
            return 0;
        };
        *s = &s[len.min(s.len())..];
        if !matches!(c, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff) {
            return c;
        }
    }
}

/// `.<needle>` on HFS+: case-folded, with the characters it ignores left out.
fn is_hfs_dot(name: &[u8], needle: &str) -> bool {
    let mut s = name;
    if next_hfs_char(&mut s) != u32::from(b'.') {
        return false;
    }
    for &want in needle.as_bytes() {
        let c = next_hfs_char(&mut s);
        if c > 127 || (c as u8).to_ascii_lowercase() != want {
            return false;
        }
    }
    let c = next_hfs_char(&mut s);
    c == 0 || c == u32::from(b'/')
}

/// The rest of the name is only spaces and periods, up to its end or a ':' (an NTFS stream).
fn only_spaces_and_periods(name: &[u8], mut i: usize) -> bool {
    loop {
        match at(name, i) {
            0 | b':' => return true,
            b' ' | b'.' => i += 1,
            _ => return false,
        }
    }
}

/// `.<needle>` on NTFS, including its 8.3 short names (`short` is the hashed prefix).
fn is_ntfs_dot(name: &[u8], needle: &str, short: &str) -> bool {
    let needle = needle.as_bytes();
    let len = needle.len();
    let matches_at = |from: usize, n: usize| {
        (0..n).all(|k| at(name, from + k).to_ascii_lowercase() == needle[k])
    };
    if at(name, 0) == b'.' && matches_at(1, len) {
        return only_spaces_and_periods(name, len + 1);
    }
    if matches_at(0, 6) && at(name, 6) == b'~' && (b'1'..=b'4').contains(&at(name, 7)) {
        return only_spaces_and_periods(name, 8);
    }
    let short = short.as_bytes();
    let mut saw_tilde = false;
    let mut i = 0;
    while i < 8 {
        let c = at(name, i);
        if c == 0 {
            return false;
        } else if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            i += 1;
            if !(b'1'..=b'9').contains(&at(name, i)) {
                return false;
            }
            saw_tilde = true;
        } else if i >= 6 || c & 0x80 != 0 || c.to_ascii_lowercase() != short[i] {
            return false;
        }
        i += 1;
    }
    only_spaces_and_periods(name, 8)
}

/// `.git` on NTFS: `.git` or `git~1`, then only spaces and periods.
pub fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let lower = |i: usize| at(name, i).to_ascii_lowercase();
    let rest = if at(name, 0) == b'.' {
        if !(lower(1) == b'g' && lower(2) == b'i' && lower(3) == b't') {
            return false;
        }
        4
    } else if lower(0) == b'g' {
        if !(lower(1) == b'i' && lower(2) == b't' && at(name, 3) == b'~' && at(name, 4) == b'1') {
            return false;
        }
        5
    } else {
        return false;
    };
    let mut i = rest;
    loop {
        let c = at(name, i);
        if c == 0 || is_xplatform_dir_sep(c) || c == b':' {
            return true;
        }
        if c != b'.' && c != b' ' {
            return false;
        }
        i += 1;
    }
}

pub fn is_dotgit(name: &[u8]) -> bool {
    is_hfs_dot(name, "git") || is_ntfs_dotgit(name)
}

pub fn is_ntfs_dotgitmodules(name: &[u8]) -> bool {
    is_ntfs_dot(name, "gitmodules", "gi7eba")
}

pub fn is_dotgitmodules(name: &[u8]) -> bool {
    is_hfs_dot(name, "gitmodules") || is_ntfs_dotgitmodules(name)
}

pub fn is_dotgitattributes(name: &[u8]) -> bool {
    is_hfs_dot(name, "gitattributes") || is_ntfs_dot(name, "gitattributes", "gi7d29")
}

pub fn is_dotgitignore(name: &[u8]) -> bool {
    is_hfs_dot(name, "gitignore") || is_ntfs_dot(name, "gitignore", "gi250a")
}

pub fn is_dotmailmap(name: &[u8]) -> bool {
    is_hfs_dot(name, "mailmap") || is_ntfs_dot(name, "mailmap", "maba30")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotgit_spellings() {
        for yes in [
            ".git",
            ".GIT",
            "git~1",
            ".git. . ",
            ".git:stream",
            ".g\u{200c}it",
            ".gi\u{feff}t",
        ] {
            assert!(is_dotgit(yes.as_bytes()), "{yes}");
        }
        for no in ["git", ".gitx", ".git~1", "x.git", ".gi", ".g\u{e9}t"] {
            assert!(!is_dotgit(no.as_bytes()), "{no}");
        }
        for yes in [
            ".gitmodules",
            ".GITMODULES",
            "gitmod~1",
            "GI7EBA~1",
            ".gitmodules ...",
            "gi7eba~9",
        ] {
            assert!(is_dotgitmodules(yes.as_bytes()), "{yes}");
        }
        for no in [".gitmodulesx", "gitmod~5", "gi7eb~1x", ".gitmodule"] {
            assert!(!is_dotgitmodules(no.as_bytes()), "{no}");
        }
    }
}
