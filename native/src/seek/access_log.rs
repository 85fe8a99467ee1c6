//! Parsing Git's `GIT_TRACE_PACK_ACCESS` log (with `GIT_TRACE_BARE=1`): one `<pack path>
//! <offset>` line per object Git asks a pack for. A million-line log must parse in a small
//! fraction of the workload's own time, so this is one pass over the bytes; any line it
//! cannot vouch for (a trace prefix, no offset, an offset past 19 digits) makes it give up,
//! and the caller's exact line parser then reports the line.

use std::collections::HashMap;

/// A parsed log: the distinct pack paths in order of first appearance, each line's index
/// into them, and each line's offset.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AccessLog {
    pub paths: Vec<Vec<u8>>,
    pub index: Vec<i32>,
    pub offsets: Vec<u64>,
}

/// Whether a line may begin with Git's `HH:MM:SS.micro file.c:N` trace prefix. Such logs
/// (written without GIT_TRACE_BARE) are left to the exact parser.
fn may_have_prefix(line: &[u8]) -> bool {
    line.len() >= 3 && line[0].is_ascii_digit() && line[1].is_ascii_digit() && line[2] == b':'
}

/// Offset of `<path> <digits>`: the digits after the last space, 1 to 19 of them (an u64).
fn split_line(line: &[u8]) -> Option<(&[u8], u64)> {
    let space = line.iter().rposition(|&c| c == b' ')?;
    let (path, digits) = (&line[..space], &line[space + 1..]);
    if path.is_empty() || digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut value: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        // 19 decimal digits are below 10^19 < 2^64: no overflow.
        value = value * 10 + u64::from(c - b'0');
    }
    Some((path, value))
}

/// The log parsed, or None when some line is not a bare `<pack path> <offset>` line.
pub fn parse(data: &[u8]) -> Option<AccessLog> {
    let mut log = AccessLog::default();
    let mut known: HashMap<&[u8], i32> = HashMap::new();
    // A log names one pack or a few: remember the last one to skip most lookups.
    let mut last: Option<(&[u8], i32)> = None;
    for line in data.split(|&c| c == b'\n') {
        if line.is_empty() {
            continue;
        }
        if may_have_prefix(line) {
            return None;
        }
        let (path, offset) = split_line(line)?;
        let index = match last {
            Some((p, i)) if p == path => i,
            _ => {
                let next = known.len() as i32;
                let i = *known.entry(path).or_insert_with(|| {
                    log.paths.push(path.to_vec());
                    next
                });
                last = Some((path, i));
                i
            }
        };
        log.index.push(index);
        log.offsets.push(offset);
    }
    Some(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_paths_and_offsets() {
        let log = parse(b"/a/p.pack 12\n/b p.pack 7\n/a/p.pack 18446744073709551\n\n").unwrap();
        assert_eq!(
            log.paths,
            vec![b"/a/p.pack".to_vec(), b"/b p.pack".to_vec()]
        );
        assert_eq!(log.index, vec![0, 1, 0]);
        assert_eq!(log.offsets, vec![12, 7, 18446744073709551]);
        assert_eq!(parse(b"").unwrap(), AccessLog::default());
    }

    #[test]
    fn gives_up_on_what_it_cannot_vouch_for() {
        assert!(parse(b"/a/p.pack 12\nwarning: x\n").is_none());
        assert!(parse(b"/a/p.pack\n").is_none());
        assert!(parse(b" 12\n").is_none());
        assert!(parse(b"/a/p.pack 12345678901234567890\n").is_none());
        assert!(parse(b"/a/p.pack 12\r\n").is_none());
        assert!(parse(b"03:42:01.417535 packfile.c:1668  /a/p.pack 1\n").is_none());
    }
}
