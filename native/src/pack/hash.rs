//! Object ids. Git names objects by the hash of `"<type> <size>\0" + content`: SHA-1 or
//! SHA-256, as the repository says. For SHA-1 it has, since 2.13, refused input that carries a
//! collision attack; we do the same with the `sha1dc` crate, which keeps collision detection
//! while using the CPU's SHA instructions (SHA-256 needs no such check). File trailers use the
//! plain hash: they guard against corruption, not attack.

use crate::error::{PackError, Result};
use crate::pack::entry_header::type_name;
use crate::pack::object_id::{HashAlgo, ObjectId};
use sha2::Digest;

/// Streaming object hasher, with collision detection for SHA-1 (unless asked not to).
pub enum ObjectHasher {
    Checked(sha1dc::Hasher),
    Plain(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl ObjectHasher {
    pub fn new(algo: HashAlgo, kind: u8, size: u64, detect_collisions: bool) -> Self {
        let mut h = match algo {
            HashAlgo::Sha1 if detect_collisions => ObjectHasher::Checked(sha1dc::Hasher::new()),
            HashAlgo::Sha1 => ObjectHasher::Plain(sha1::Sha1::new()),
            HashAlgo::Sha256 => ObjectHasher::Sha256(sha2::Sha256::new()),
        };
        h.update(object_header(kind, size).as_bytes());
        h
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            ObjectHasher::Checked(h) => h.update(data),
            ObjectHasher::Plain(h) => Digest::update(h, data),
            ObjectHasher::Sha256(h) => Digest::update(h, data),
        }
    }

    /// The object id; `offset` names the entry in the error when a collision attack is found.
    pub fn finish(self, offset: u64) -> Result<ObjectId> {
        match self {
            ObjectHasher::Checked(h) => match h.finalize() {
                Ok(d) => Ok(ObjectId::of(HashAlgo::Sha1, d.as_ref())),
                Err(_) => Err(PackError::at(
                    offset,
                    "SHA-1 collision attack detected in object",
                )),
            },
            ObjectHasher::Plain(h) => Ok(ObjectId::of(HashAlgo::Sha1, &h.finalize())),
            ObjectHasher::Sha256(h) => Ok(ObjectId::of(HashAlgo::Sha256, &h.finalize())),
        }
    }
}

pub fn object_header(kind: u8, size: u64) -> String {
    format!("{} {}\0", type_name(kind), size)
}

pub fn object_id(
    algo: HashAlgo,
    kind: u8,
    data: &[u8],
    detect_collisions: bool,
    offset: u64,
) -> Result<ObjectId> {
    let mut h = ObjectHasher::new(algo, kind, data.len() as u64, detect_collisions);
    h.update(data);
    h.finish(offset)
}

/// The plain hash of whole files (pack, idx, rev, bitmap and mtimes trailers).
#[derive(Clone)]
pub enum FileChecksum {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl FileChecksum {
    pub fn new(algo: HashAlgo) -> Self {
        match algo {
            HashAlgo::Sha1 => FileChecksum::Sha1(sha1::Sha1::new()),
            HashAlgo::Sha256 => FileChecksum::Sha256(sha2::Sha256::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            FileChecksum::Sha1(h) => Digest::update(h, data),
            FileChecksum::Sha256(h) => Digest::update(h, data),
        }
    }

    pub fn finish(self) -> ObjectId {
        match self {
            FileChecksum::Sha1(h) => ObjectId::of(HashAlgo::Sha1, &h.finalize()),
            FileChecksum::Sha256(h) => ObjectId::of(HashAlgo::Sha256, &h.finalize()),
        }
    }
}

pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The object id of `algo` written in lowercase hex digits (as Git prints them), if `text` is one.
pub fn parse_hex(algo: HashAlgo, text: &[u8]) -> Option<ObjectId> {
    parse_hex_digits(algo, text, false)
}

/// The object id of `algo` written in hex digits of either case, as Git's object parsers
/// read them (`get_oid_hex`).
pub fn parse_hex_any_case(algo: HashAlgo, text: &[u8]) -> Option<ObjectId> {
    parse_hex_digits(algo, text, true)
}

fn parse_hex_digits(algo: HashAlgo, text: &[u8], upper: bool) -> Option<ObjectId> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' if upper => Some(c - b'A' + 10),
        _ => None,
    };
    if text.len() != algo.hexsz() {
        return None;
    }
    let mut raw = [0u8; crate::pack::object_id::MAX_RAWSZ];
    for (byte, pair) in raw.iter_mut().zip(text.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(ObjectId::of(algo, &raw[..algo.rawsz()]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::entry_header::OBJ_BLOB;

    #[test]
    fn hex_round_trips_and_rejects_what_is_not_an_id() {
        let id = object_id(HashAlgo::Sha1, OBJ_BLOB, b"hello\n", false, 0).unwrap();
        assert_eq!(parse_hex(HashAlgo::Sha1, hex(&id).as_bytes()), Some(id));
        assert_eq!(parse_hex(HashAlgo::Sha1, b"ce01"), None);
        assert_eq!(parse_hex(HashAlgo::Sha1, &[b'C'; 40]), None);
        assert_eq!(parse_hex(HashAlgo::Sha1, &[b'g'; 40]), None);
    }

    #[test]
    fn sha256_ids_match_git() {
        // `printf 'hello\n' | git hash-object --object-format=sha256 --stdin`
        let id = object_id(HashAlgo::Sha256, OBJ_BLOB, b"hello\n", true, 0).unwrap();
        assert_eq!(
            hex(&id),
            "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
        );
        assert_eq!(parse_hex(HashAlgo::Sha256, hex(&id).as_bytes()), Some(id));
        assert_eq!(parse_hex(HashAlgo::Sha1, hex(&id).as_bytes()), None);
    }

    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        let id = object_id(HashAlgo::Sha1, OBJ_BLOB, b"hello\n", true, 0).unwrap();
        assert_eq!(hex(&id), "ce013625030ba8dba906f756967f9e9ca394464a");
        let plain = object_id(HashAlgo::Sha1, OBJ_BLOB, b"hello\n", false, 0).unwrap();
        assert_eq!(id, plain);
        // the empty blob
        assert_eq!(
            hex(&object_id(HashAlgo::Sha1, OBJ_BLOB, b"", true, 0).unwrap()),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
    }

    /// The first message of the SHA-mbles chosen-prefix collision (Leurent & Peyrin, 2020):
    /// public test data, here only as bytes that carry a collision attack.
    const SHAMBLES_1: [&str; 14] = [
        "99040d047fe81780012000ff4b65792069732070617274206f66206120636f6c6c6973696f6e21204974277320612074",
        "7261702179c61af0afcc054515d9274e7307624b1dc7fb23988bb8de8b575dba7b9eab31c1674b6d974378a827732ff5",
        "851c76a2e60772b5a47ce1eac40bb993c12d8c70e24a4f8d5fcdedc1b32c9cf19e31af2429759d42e4dfdb31719f5876",
        "23ee552939b6dcdc459fca53553b70f87ede30a247ea3af6c759a2f20b320d760db64ff479084fd3ccb3cdd48362d96a",
        "9c430617caff6c36c637e53fde28417f626fec54ed7943a46e5f5730f2bb38fb1df6e0090010d00e24ad78bf92641993",
        "608e8d158a789f34c46fe1e6027f35a4cbfb827076c50eca0e8b7cca69bb2c2b790259f9bf9570dd8d4437a3115faff7",
        "c3cac09ad25266055c27104755178eaeff825a2caa2acfb5de64ce7641dc59a541a9fc9c756756e2e23dc713c8c24c97",
        "90aa6b0e38a7f55f14452a1ca2850ddd9562fd9a18ad42496aa97008f74672f68ef461eb88b09933d626b4f918749cc0",
        "27fddd6c425fc4216835d0134d15285bab2cb784a4f7cbb4fb514d4bf0f6237cf00a9e9f132b9a066e6fd17f6c429874",
        "78586ff651af96747fb426b9872b9a88e4063f59bb334cc00650f83a80c42751b71974d300fc2819a2e8f1e32c1b51cb",
        "18e6bfc4db9baef675d4aaf5b1574a047f8f6dd2ec153a93412293974d928f88ced9363cfef97ce2e742bf34c96b8ef3",
        "875676fea5cca8e5f7dea0bab2413d4de00ee71ee01f162bdb6d1eafd925e6aebaae6a354ef17cf205a404fbdb12fc45",
        "4d41fdd95cf2459664a2ad032d1da60a73264075d7f1e0d6c1403ae7a0d861df3fe5707188dd5e07d1589b9f8b663055",
        "3f8fc352b3e0c27da80bddba4c64020d",
    ];

    #[test]
    fn collision_attacks_are_errors() {
        let data: Vec<u8> = (0..SHAMBLES_1.concat().len() / 2)
            .map(|i| u8::from_str_radix(&SHAMBLES_1.concat()[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(data.len(), 640);
        let mut checked = ObjectHasher::Checked(sha1dc::Hasher::new());
        checked.update(&data);
        let err = checked.finish(77).unwrap_err();
        assert_eq!(err.offset, Some(77));
        assert!(err.message.contains("collision"));
        let mut plain = ObjectHasher::Plain(sha1::Sha1::new());
        plain.update(&data);
        assert!(plain.finish(77).is_ok());
    }
}
