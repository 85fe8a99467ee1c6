//! Git's `check_refname_format` with no flags, for the names tags carry.

/// Whether a component may not hold `c` at all (control characters, space and `~^:?[\*`, DEL).
fn forbidden(c: u8) -> bool {
    c < 0x20 || c == 0x7f || b" ~^:?[\\*".contains(&c)
}

/// The length of the component at the start of `name`, or None if it is not allowed.
fn component(name: &[u8]) -> Option<usize> {
    let mut last = 0u8;
    let mut len = 0;
    for &c in name {
        if c == b'/' {
            break;
        }
        if forbidden(c) || (c == b'.' && last == b'.') || (c == b'{' && last == b'@') {
            return None;
        }
        last = c;
        len += 1;
    }
    let part = &name[..len];
    if part.first() == Some(&b'.') || part.ends_with(b".lock") {
        return None;
    }
    Some(len)
}

pub fn is_valid_refname(name: &[u8]) -> bool {
    if name == b"@" {
        return false;
    }
    let mut rest = name;
    let mut components = 0;
    loop {
        match component(rest) {
            Some(0) | None => return false,
            Some(len) => {
                components += 1;
                if len == rest.len() {
                    if rest[len - 1] == b'.' {
                        return false;
                    }
                    break;
                }
                rest = &rest[len + 1..];
            }
        }
    }
    components >= 2
}

#[cfg(test)]
mod tests {
    use super::is_valid_refname;

    #[test]
    fn names_as_git_judges_them() {
        for good in [
            "refs/tags/v1.0",
            "refs/tags/a/b",
            "refs/tags/x@y",
            "refs/tags/\u{e9}",
        ] {
            assert!(is_valid_refname(good.as_bytes()), "{good}");
        }
        for bad in [
            "refs/tags/guten tag",
            "refs/tags/",
            "refs/tags/a..b",
            "refs/tags/.a",
            "refs/tags/a.lock",
            "refs/tags/a@{b",
            "refs/tags/a.",
            "refs/tags//a",
            "refs/tags/a*",
            "refs/tags/a\tb",
            "@",
            "tags",
        ] {
            assert!(!is_valid_refname(bad.as_bytes()), "{bad}");
        }
    }
}
