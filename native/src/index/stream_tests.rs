//! PackStream against what Git's reads would be.

use super::*;
use std::io::Write;

fn entry(kind: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    crate::pack::entry_header::encode_type_size(kind, data.len() as u64, &mut out);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(data).unwrap();
    out.extend(z.finish().unwrap());
    out
}

fn pack(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut p = b"PACK".to_vec();
    p.extend(2u32.to_be_bytes());
    p.extend((entries.len() as u32).to_be_bytes());
    for e in entries {
        p.extend(e);
    }
    let mut sum = crate::pack::hash::FileChecksum::new(HashAlgo::Sha1);
    sum.update(&p);
    p.extend_from_slice(&sum.finish());
    p
}

/// Feed `input` as a pipe holding all of it answers every read; returns bytes read.
fn run(s: &mut PackStream, input: &[u8]) -> Result<u64> {
    Ok(run_reads(s, input, usize::MAX)?.0)
}

/// Feed `input` in reads of at most `most` bytes; returns bytes read and the reads made.
fn run_reads(s: &mut PackStream, input: &[u8], most: usize) -> Result<(u64, usize)> {
    let (mut at, mut reads) = (0, 0);
    while s.want() > 0 {
        let n = s.want().min(input.len() - at).min(most);
        assert!(n > 0, "early EOF");
        s.feed(&input[at..at + n])?;
        at += n;
        reads += 1;
    }
    Ok((at as u64, reads))
}

#[test]
fn stops_at_the_trailer_and_keeps_what_it_read_past_it() {
    let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    let p = pack(&[entry(3, b"hello\n"), entry(3, &big), entry(1, b"x")]);
    let mut input = p.clone();
    input.extend(std::iter::repeat_n(b'j', 10_000));
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    let read = run(&mut s, &input).unwrap();
    assert!(s.done());
    let c = s.counts();
    assert_eq!(
        (c.entries_read, c.entries_declared, c.bytes_used),
        (3, 3, p.len() as u64)
    );
    // Every read asked for a whole buffer: the reads end at a multiple of 4096.
    assert_eq!(read, (p.len() as u64).div_ceil(4096) * 4096);
    assert_eq!(s.rest(), &input[p.len()..read as usize]);
}

/// A blob entry of exactly `len` bytes (incompressible content, so that each byte more
/// of content is a byte more of entry).
fn blob_entry_of(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    (1..len)
        .map(|n| entry(3, &noise[..n]))
        .find(|e| e.len() == len)
        .expect("a blob entry of that length")
}

#[test]
fn a_base_id_across_the_buffers_end_is_read_whole() {
    // A REF_DELTA whose base id starts 5 bytes before the first buffer's end: Git keeps
    // those 5 and asks for 4091 more, so the next read ends at 4091 + 4096.
    let filler = blob_entry_of(4096 - 5 - 1 - 12);
    let mut delta = Vec::new();
    crate::pack::entry_header::encode_type_size(OBJ_REF_DELTA, 4, &mut delta);
    assert_eq!(delta.len(), 1);
    delta.extend([9u8; 20]);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(&[1, 1, 0x90, 1]).unwrap();
    delta.extend(z.finish().unwrap());
    let p = pack(&[filler, delta]);
    let mut input = p.clone();
    input.extend(std::iter::repeat_n(b'j', 9000));
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    let read = run(&mut s, &input).unwrap();
    assert_eq!(s.counts().bytes_used, p.len() as u64);
    assert_eq!(read, 4091 + 4096);
    assert_eq!(s.rest(), &input[p.len()..read as usize]);
}

#[test]
fn a_header_given_is_used_before_the_first_read() {
    let p = pack(&[entry(3, b"hello\n")]);
    let s = PackStream::new(HashAlgo::Sha1, &p[..12], 0, true, 1 << 20, BUFFER).unwrap();
    assert_eq!(
        (s.want(), s.counts().bytes_used, s.counts().bytes_git_read),
        (BUFFER, 12, 12)
    );
    assert!(s.in_entries());
    let bad = PackStream::new(
        HashAlgo::Sha1,
        b"PACK\0\0\0\x05\0\0\0\x01",
        0,
        true,
        1 << 20,
        BUFFER,
    );
    assert_eq!(bad.err().unwrap().offset, Some(4));
}

#[test]
fn a_limit_stops_the_parse() {
    let p = pack(&[entry(3, b"hello\n")]);
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 20, true, 1 << 20, BUFFER).unwrap();
    let mut input = p.clone();
    input.extend([0u8; 100]);
    s.feed(&input[..s.want().min(input.len())]).unwrap();
    assert!(s.over_limit() && s.want() == 0);
}

#[test]
fn broken_entries_are_errors_at_their_offset() {
    let mut bad = pack(&[entry(3, b"hello\n")]);
    bad[12] = 0x50; // type 5
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    let e = s.feed(&bad).unwrap_err();
    assert_eq!(e.offset, Some(12));
    let mut long = pack(&[entry(3, b"hello\n")]);
    long[12] = 0x34; // declares 4 bytes, inflates to 6
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    assert!(s.feed(&long).unwrap_err().message.contains("more bytes"));
}

#[test]
fn the_first_pass_is_the_scans() {
    use crate::index::first_pass::{scan, ScanOptions};
    use crate::pack::source::PackFile;
    use crate::progress::Progress;
    let base: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 31 % 253) as u8).collect();
    let tree = b"100644 a\0aaaaaaaaaaaaaaaaaaaa".to_vec();
    let mut entries = vec![entry(3, &base), entry(2, &tree), entry(3, &big)];
    // A REF_DELTA on the first blob: 100 bytes copied from its start.
    let delta = [0x88, 0x27, 0x64, 0x90, 0x64];
    let base_id = crate::pack::hash::object_id(HashAlgo::Sha1, 3, &base, true, 0).unwrap();
    let mut ref_delta = Vec::new();
    crate::pack::entry_header::encode_type_size(OBJ_REF_DELTA, delta.len() as u64, &mut ref_delta);
    ref_delta.extend_from_slice(&base_id);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(&delta).unwrap();
    ref_delta.extend(z.finish().unwrap());
    entries.push(ref_delta);
    entries.push(entry(
        1,
        b"tree 0000000000000000000000000000000000000000\n\nx\n",
    ));
    let p = pack(&entries);
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    run(&mut s, &p).unwrap();
    let got = s.take_indexed().expect("a whole pack");
    let dir = std::env::temp_dir().join(format!("packorder-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.pack");
    std::fs::write(&path, &p).unwrap();
    let file = PackFile::open(&path, false, HashAlgo::Sha1).unwrap();
    let opts = ScanOptions {
        threads: 1,
        detect_collisions: true,
        split_min_bytes: u64::MAX,
        whole_limit: 1 << 20,
        check: None,
    };
    let want = scan(&file, &opts, &Progress::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let (a, b) = (&got.table, &want.table);
    assert_eq!(a.entries.offsets, b.entries.offsets);
    assert_eq!(a.entries.kinds, b.entries.kinds);
    assert_eq!(a.entries.header_lens, b.entries.header_lens);
    assert_eq!(a.entries.sizes, b.entries.sizes);
    assert_eq!(a.entries.crcs, b.entries.crcs);
    assert_eq!(a.entries.data_end, b.entries.data_end);
    assert_eq!(a.ofs_bases, b.ofs_bases);
    assert_eq!(a.ref_bases, b.ref_bases);
    assert_eq!(a.real_kinds, b.real_kinds);
    assert_eq!(a.oids.as_bytes(), b.oids.as_bytes());
    assert_eq!(got.checksum, want.checksum);
    assert_eq!((got.header.version, got.header.count), (2, 5));
}

/// One entry of a generated pack: its bytes, and for Git's reads its parts' lengths.
struct Part {
    bytes: Vec<u8>,
    /// Type and size bytes, and an OFS_DELTA's offset bytes: read a byte at a time.
    by_byte: usize,
    /// A REF_DELTA's base id: read at once.
    base_id: usize,
}

/// Entries of every kind and of sizes from a few bytes to tens of KiB, some incompressible.
fn varied_entries(n: usize) -> Vec<Part> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parts: Vec<Part> = Vec::new();
    let mut at = 12u64;
    for i in 0..n {
        let r = next();
        let len = match r % 10 {
            0 => (r >> 8) as usize % 20_000,
            1..=3 => (r >> 8) as usize % 1500,
            _ => (r >> 8) as usize % 150,
        };
        let noisy = r & 0x100 != 0;
        let data: Vec<u8> = (0..len)
            .map(|j| if noisy { next() as u8 } else { (j % 7) as u8 })
            .collect();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        z.write_all(&data).unwrap();
        let stream = z.finish().unwrap();
        let mut bytes = Vec::new();
        let kind = [3, 3, 2, 1, OBJ_OFS_DELTA, OBJ_REF_DELTA][(r >> 40) as usize % 6];
        let kind = if i == 0 && kind == OBJ_OFS_DELTA {
            3
        } else {
            kind
        };
        crate::pack::entry_header::encode_type_size(kind, len as u64, &mut bytes);
        let mut base_id = 0;
        if kind == OBJ_OFS_DELTA {
            let back = parts.last().map_or(1, |p| p.bytes.len() as u64);
            crate::pack::entry_header::encode_ofs(back, &mut bytes);
        } else if kind == OBJ_REF_DELTA {
            bytes.extend([7u8; 20]);
            base_id = 20;
        }
        let by_byte = bytes.len() - base_id;
        bytes.extend(stream);
        at += bytes.len() as u64;
        parts.push(Part {
            bytes,
            by_byte,
            base_id,
        });
    }
    assert!(at > 1 << 20, "reads ahead of Git's many times");
    parts
}

/// Where Git's last read ends, each of its reads getting all it asks for, and how many
/// reads it makes: a model of index-pack's fill(), apart from the parser.
fn git_reads(parts: &[Part], rawsz: u64, buffer: u64) -> (u64, usize) {
    let (mut pos, mut end) = (0u64, 0u64);
    let reads = std::cell::Cell::new(0);
    let at_once = |pos: u64, end: &mut u64, n: u64| {
        if *end < pos + n {
            *end = pos + buffer;
            reads.set(reads.get() + 1);
        }
    };
    let by_byte = |pos: &mut u64, end: &mut u64, n: u64| {
        for _ in 0..n {
            if *end <= *pos {
                *end = *pos + buffer;
                reads.set(reads.get() + 1);
            }
            *pos += 1;
        }
    };
    at_once(pos, &mut end, 12);
    pos = 12;
    for p in parts {
        by_byte(&mut pos, &mut end, p.by_byte as u64);
        if p.base_id > 0 {
            at_once(pos, &mut end, p.base_id as u64);
            pos += p.base_id as u64;
        }
        let data = (p.bytes.len() - p.by_byte - p.base_id) as u64;
        by_byte(&mut pos, &mut end, data);
    }
    at_once(pos, &mut end, rawsz);
    (end, reads.get())
}

/// A pack of `varied_entries`, and it followed by 10,000 bytes, as a pipe would hold them.
fn varied_input() -> (Vec<Part>, Vec<u8>, Vec<u8>) {
    let parts = varied_entries(6000);
    let entries: Vec<Vec<u8>> = parts.iter().map(|p| p.bytes.clone()).collect();
    let p = pack(&entries);
    let mut input = p.clone();
    input.extend(std::iter::repeat_n(b'j', 10_000));
    (parts, p, input)
}

#[test]
fn reading_ahead_ends_where_git_s_reads_end() {
    let (parts, p, input) = varied_input();
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    let (at, reads) = run_reads(&mut s, &input, usize::MAX).unwrap();
    assert!(s.done());
    assert_eq!(s.counts().bytes_used, p.len() as u64);
    let (git, git_reads) = git_reads(&parts, 20, BUFFER as u64);
    assert_eq!((at, s.counts().bytes_git_read), (git, git));
    assert_eq!(s.rest(), &input[p.len()..at as usize]);
    // Far fewer reads than Git's (read ahead at most 9 bytes an entry left: 54 KB here).
    assert!(reads * 2 < git_reads, "{reads} reads, Git's {git_reads}");
}

#[test]
fn reading_ahead_ends_where_the_reads_of_git_2_55_end() {
    // Git 2.55's buffer of 128 KiB: its last read ends up to 128 KiB past the pack.
    let buffer = 128 << 10;
    let (parts, p, mut input) = varied_input();
    input.extend(std::iter::repeat_n(b'k', buffer));
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, buffer).unwrap();
    let at = run_reads(&mut s, &input, usize::MAX).unwrap().0;
    assert!(s.done());
    let (git, _) = git_reads(&parts, 20, buffer as u64);
    assert_eq!((at, s.counts().bytes_git_read), (git, git));
    assert_eq!(s.rest(), &input[p.len()..at as usize]);
}

#[test]
fn short_reads_stop_within_a_buffer_past_the_pack() {
    let (_, p, input) = varied_input();
    for most in [1, 700, 5000] {
        let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
        let at = run_reads(&mut s, &input, most).unwrap().0;
        assert_eq!(s.counts().bytes_used, p.len() as u64);
        let past = at - p.len() as u64;
        assert!(past <= 4096, "read {past} past the pack");
        assert_eq!(s.counts().bytes_git_read, at);
        assert_eq!(s.rest(), &input[p.len()..at as usize]);
    }
}

#[test]
fn an_input_that_ends_early_is_parsed_to_its_end() {
    // The pack declares more entries than it holds: the parse reads ahead for the second
    // entry to inflate whole, the input ends, and the broken entry is the error, as in Git.
    let mut bad = entry(3, &[5u8; 3000]);
    let n = bad.len();
    bad[n - 1] ^= 0xff; // its Adler-32
    let p = pack(&[entry(3, b"hello\n"), bad, entry(3, b"x"), entry(3, b"y")]);
    let cut = &p[..p.len() - 20 - 2 * entry(3, b"x").len()];
    let mut s = PackStream::new(HashAlgo::Sha1, &[], 0, true, 1 << 20, BUFFER).unwrap();
    let mut at = 0;
    let mut failed = None;
    while s.want() > 0 && failed.is_none() {
        let n = s.want().min(cut.len() - at).min(20);
        if n == 0 {
            failed = s.end_of_input().err();
            break;
        }
        failed = s.feed(&cut[at..at + n]).err();
        at += n;
    }
    let e = failed.expect("the broken entry's error");
    assert_eq!(e.offset, Some(12 + entry(3, b"hello\n").len() as u64));
}
