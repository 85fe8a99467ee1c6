//! Git's config syntax, as Git parses a `.gitmodules` blob (config.c): sections, subsections,
//! keys and values with their quoting, escapes, comments and line continuations.

/// Git's `isspace` (sane ctype: space, tab, newline, carriage return).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// The characters of a blob as Git's reader returns them: CRLF read as LF, and a newline at
/// the end of input (with `eof` set).
struct Source<'a> {
    data: &'a [u8],
    pos: usize,
    eof: bool,
}

impl Source<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.data.get(self.pos) else {
            self.eof = true;
            return b'\n';
        };
        self.pos += 1;
        if c == b'\r' && self.data.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            return b'\n';
        }
        c
    }
}

fn parse_value(src: &mut Source) -> Option<Vec<u8>> {
    let (mut quote, mut comment) = (false, false);
    let mut value = Vec::new();
    let mut trim_len = 0;
    loop {
        let mut c = src.next();
        if c == b'\n' {
            if quote {
                return None;
            }
            if trim_len > 0 {
                value.truncate(trim_len);
            }
            return Some(value);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            if trim_len == 0 {
                trim_len = value.len();
            }
            if !value.is_empty() {
                value.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        trim_len = 0;
        if c == b'\\' {
            c = match src.next() {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 8,
                b'n' => b'\n',
                c @ (b'\\' | b'"') => c,
                _ => return None,
            };
            value.push(c);
            continue;
        }
        if c == b'"' {
            quote = !quote;
            continue;
        }
        value.push(c);
    }
}

/// `[section "subsection"]` after the section name and the space: appends ".subsection".
fn extended_section(src: &mut Source, name: &mut Vec<u8>, mut c: u8) -> Option<()> {
    loop {
        if c == b'\n' {
            return None;
        }
        c = src.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return None;
    }
    name.push(b'.');
    loop {
        let mut c = src.next();
        if c == b'\n' {
            return None;
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = src.next();
            if c == b'\n' {
                return None;
            }
        }
        name.push(c);
    }
    (src.next() == b']').then_some(())
}

fn section(src: &mut Source, name: &mut Vec<u8>) -> Option<()> {
    loop {
        let c = src.next();
        if src.eof {
            return None;
        }
        if c == b']' {
            return Some(());
        }
        if is_space(c) {
            return extended_section(src, name, c);
        }
        if !is_key_char(c) && c != b'.' {
            return None;
        }
        name.push(c.to_ascii_lowercase());
    }
}

/// Parse `data`, calling `entry(variable, value)` for each entry as it is read (a key with no
/// `=` has no value). False on a syntax error; the entries before it were still given.
pub fn parse(data: &[u8], mut entry: impl FnMut(&[u8], Option<&[u8]>)) -> bool {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    let mut src = Source {
        data,
        pos: 0,
        eof: false,
    };
    let mut bom = 0;
    let mut comment = false;
    let mut var: Vec<u8> = Vec::new();
    let mut base_len = 0;
    loop {
        let c = src.next();
        if bom < BOM.len() {
            if c == BOM[bom] && !src.eof {
                bom += 1;
                continue;
            }
            if bom > 0 {
                return false;
            }
            bom = BOM.len();
        }
        if c == b'\n' {
            if src.eof {
                return true;
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            var.clear();
            if section(&mut src, &mut var).is_none() || var.is_empty() {
                return false;
            }
            var.push(b'.');
            base_len = var.len();
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return false;
        }
        var.truncate(base_len);
        var.push(c.to_ascii_lowercase());
        let mut c;
        loop {
            c = src.next();
            if src.eof || !is_key_char(c) {
                break;
            }
            var.push(c.to_ascii_lowercase());
        }
        while c == b' ' || c == b'\t' {
            c = src.next();
        }
        if c == b'\n' {
            entry(&var, None);
            continue;
        }
        if c != b'=' {
            return false;
        }
        let Some(value) = parse_value(&mut src) else {
            return false;
        };
        entry(&var, Some(&value));
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn entries(text: &str) -> Option<Vec<(String, Option<String>)>> {
        let mut out = Vec::new();
        let ok = parse(text.as_bytes(), |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                v.map(|v| String::from_utf8_lossy(v).into_owned()),
            ))
        });
        ok.then_some(out)
    }

    #[test]
    fn reads_what_git_reads() {
        let got = entries(
            "\u{feff}[submodule \"a\\\"b\"]\n\tpath = x y ; comment\n\turl=\"q;#\"\\\n z\r\n\tflag\n[Core.Sub]\nK = v",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("submodule.a\"b.path".into(), Some("x y".into())),
                ("submodule.a\"b.url".into(), Some("q;# z".into())),
                ("submodule.a\"b.flag".into(), None),
                ("core.sub.k".into(), Some("v".into())),
            ]
        );
        for bad in [
            "[x",
            "[s]\n1 = v",
            "[s]\nk = \"open",
            "[s]\nk = a\\q",
            "[s \"x\" ]",
        ] {
            assert!(entries(bad).is_none(), "{bad}");
        }
    }
}
