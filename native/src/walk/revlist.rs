//! Parsing `git rev-list --objects` output into arrays: object ids in discovery order and the
//! hashes of the path each tree and blob was found at (walk/path_names.rs). Fed in chunks, so
//! the output is never held whole.

use crate::error::{PackError, Result};
use crate::pack::object_id::{HashAlgo, ObjectId};
use crate::walk::path_names::PathNames;

pub struct RevListParser {
    /// The hash of the ids listed.
    pub algo: HashAlgo,
    pending: Vec<u8>,
    pub oids: Vec<ObjectId>,
    /// The hashes of each object's path (none for commits and tag objects).
    pub names: PathNames,
    /// Ids rev-list reported missing (`?<id>` with --missing=print).
    pub missing: Vec<ObjectId>,
    line: u64,
}

fn parse_hex(algo: HashAlgo, hex: &[u8], line: u64) -> Result<ObjectId> {
    crate::pack::hash::parse_hex(algo, hex)
        .ok_or_else(|| PackError::general(format!("rev-list output line {line}: not an object id")))
}

impl RevListParser {
    pub fn new(algo: HashAlgo) -> Self {
        RevListParser {
            algo,
            pending: Vec::new(),
            oids: Vec::new(),
            names: PathNames::default(),
            missing: Vec::new(),
            line: 0,
        }
    }

    fn parse_line(&mut self, line: &[u8]) -> Result<()> {
        self.line += 1;
        if line.is_empty() {
            return Ok(());
        }
        if line[0] == b'?' {
            let id = parse_hex(self.algo, &line[1..], self.line)?;
            self.missing.push(id);
            return Ok(());
        }
        let (hex, name) = match line.iter().position(|&c| c == b' ') {
            Some(sp) => (&line[..sp], Some(&line[sp + 1..])),
            None => (line, None),
        };
        self.oids.push(parse_hex(self.algo, hex, self.line)?);
        self.names.push(name);
        Ok(())
    }

    pub fn feed(&mut self, data: &[u8]) -> Result<()> {
        let mut rest = data;
        if !self.pending.is_empty() {
            match rest.iter().position(|&c| c == b'\n') {
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.extend_from_slice(&rest[..nl]);
                    self.parse_line(&line)?;
                    rest = &rest[nl + 1..];
                }
                None => {
                    self.pending.extend_from_slice(rest);
                    return Ok(());
                }
            }
        }
        while let Some(nl) = rest.iter().position(|&c| c == b'\n') {
            self.parse_line(&rest[..nl])?;
            rest = &rest[nl + 1..];
        }
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// Feed everything `input` yields until its end.
    pub fn feed_from(&mut self, input: &mut impl std::io::Read) -> Result<()> {
        let mut buf = vec![0u8; 256 << 10];
        loop {
            match input.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => self.feed(&buf[..n])?,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(crate::error::PackError::io(
                        "reading git rev-list's output",
                        e,
                    ))
                }
            }
        }
    }

    pub fn finish(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.parse_line(&line)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::path_names::{name_hash, path_hash};

    #[test]
    fn parses_lines_split_across_chunks() {
        let text = b"0123456789abcdef0123456789abcdef01234567\n\
                     89abcdef0123456789abcdef0123456789abcdef src/main.c\n\
                     ?ffffffffffffffffffffffffffffffffffffffff\n";
        let mut p = RevListParser::new(HashAlgo::Sha1);
        for chunk in text.chunks(7) {
            p.feed(chunk).unwrap();
        }
        p.finish().unwrap();
        assert_eq!(p.oids.len(), 2);
        assert_eq!(p.names.paths[0], 0);
        assert_eq!(p.names.v1[1], name_hash(b"src/main.c"));
        assert_eq!(p.names.paths[1], path_hash(b"src/main.c"));
        assert_eq!(p.missing, vec![ObjectId::of(HashAlgo::Sha1, &[0xff; 20])]);
    }

    #[test]
    fn sha256_ids_are_read_as_such() {
        let mut p = RevListParser::new(HashAlgo::Sha256);
        p.feed(&[b'a'; 64]).unwrap();
        p.feed(b" dir/file\n").unwrap();
        p.finish().unwrap();
        assert_eq!(p.oids, vec![ObjectId::of(HashAlgo::Sha256, &[0xaa; 32])]);
        let mut short = RevListParser::new(HashAlgo::Sha256);
        assert!(short
            .feed(&[b'a'; 41])
            .and_then(|_| short.finish())
            .is_err());
    }

    #[test]
    fn name_hash_skips_whitespace_and_weights_the_end() {
        assert_eq!(name_hash(b"a b"), name_hash(b"ab"));
        assert_eq!(name_hash(b""), 0);
        // Same last characters, same high bits.
        assert_eq!(name_hash(b"x/foo.c") >> 24, name_hash(b"y/bar.c") >> 24);
    }
}
