//! What a walk records of the path each tree and blob was found at: Git's two name hashes
//! (version 1, `pack_name_hash`, which the bitmap's hash cache stores and the delta search
//! sorts by; version 2, `pack_name_hash_v2`, `--name-hash-version=2`), and a hash of the
//! whole path, which tells one path from another for the search by path (the version-1
//! hash puts every `Makefile` or `package.json` together, wherever it is).

/// C's isspace(): Rust's is_ascii_whitespace() leaves out the vertical tab.
fn is_space(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

/// Git's pack_name_hash: a sortable number from the last sixteen non-whitespace characters,
/// so that paths with the same ending (`.c`, the same file name) sort together.
pub fn name_hash(name: &[u8]) -> u32 {
    let mut hash: u32 = 0;
    for &c in name {
        if is_space(c) {
            continue;
        }
        hash = (hash >> 2).wrapping_add(u32::from(c) << 24);
    }
    hash
}

/// Git's pack_name_hash_v2: the file name's characters, bit-reversed, as in version 1, mixed
/// with a hash of the directories, so that same-named files of different directories part.
pub fn name_hash_v2(name: &[u8]) -> u32 {
    let (mut hash, mut base) = (0u32, 0u32);
    for &c in name {
        if is_space(c) {
            continue;
        }
        if c == b'/' {
            base = (base >> 6) ^ hash;
            hash = 0;
        } else {
            hash = (hash >> 2).wrapping_add(u32::from(c.reverse_bits()) << 24);
        }
    }
    (base >> 6) ^ hash
}

/// A 64-bit hash of the whole path (FNV-1a); 0 is kept for "no path" (commits, tags).
pub fn path_hash(name: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in name {
        hash ^= u64::from(c);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

/// The three hashes of each object's path, in the walk's order.
#[derive(Default, Clone)]
pub struct PathNames {
    pub v1: Vec<u32>,
    pub v2: Vec<u32>,
    pub paths: Vec<u64>,
}

impl PathNames {
    /// The next object's path (None: a commit or tag, which has none). rev-list prints a
    /// name up to its first newline, and Git hashes what it printed: so does this.
    pub fn push(&mut self, name: Option<&[u8]>) {
        match name {
            Some(n) => {
                let n = n.split(|&c| c == b'\n').next().unwrap_or(n);
                self.v1.push(name_hash(n));
                self.v2.push(name_hash_v2(n));
                self.paths.push(path_hash(n));
            }
            None => self.push_none(),
        }
    }

    pub fn push_none(&mut self) {
        self.v1.push(0);
        self.v2.push(0);
        self.paths.push(0);
    }

    /// Object `j` of `other`'s, appended.
    pub fn push_from(&mut self, other: &PathNames, j: usize) {
        self.v1.push(other.v1[j]);
        self.v2.push(other.v2[j]);
        self.paths.push(other.paths[j]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_2_parts_same_named_files_that_version_1_puts_together() {
        assert_eq!(name_hash(b"a/package.json"), name_hash(b"b/package.json"));
        assert_ne!(
            name_hash_v2(b"a/package.json"),
            name_hash_v2(b"b/package.json")
        );
        assert_ne!(path_hash(b"a/package.json"), path_hash(b"b/package.json"));
    }

    #[test]
    fn version_2_is_gits() {
        // Git's pack_name_hash_v2, worked by hand: one name, no directory, is version 1 of
        // the bit-reversed characters.
        let reversed: Vec<u8> = b"ab".iter().map(|c| c.reverse_bits()).collect();
        assert_eq!(name_hash_v2(b"ab"), name_hash(&reversed));
        // A directory: base = (0 >> 6) ^ hash("d"), then the name's hash xor base >> 6.
        let d = name_hash_v2(b"d");
        assert_eq!(name_hash_v2(b"d/ab"), (d >> 6) ^ name_hash_v2(b"ab"));
        assert_eq!(name_hash_v2(b" d/a b"), name_hash_v2(b"d/ab"));
    }

    #[test]
    fn no_path_is_zero_and_the_root_is_not() {
        let mut names = PathNames::default();
        names.push(None);
        names.push(Some(b""));
        names.push(Some(b"src/x.c\nrest"));
        assert_eq!((names.v1[0], names.paths[0]), (0, 0));
        assert_ne!(names.paths[1], 0);
        assert_eq!(names.paths[2], path_hash(b"src/x.c"));
    }
}
