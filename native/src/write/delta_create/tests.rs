//! Tests of delta creation: deltas apply back to their targets, stay small for similar
//! inputs, and respect the opcodes' limits.

use super::*;
use crate::pack::delta::apply_delta;

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn text(seed: &mut u64, lines: usize) -> Vec<u8> {
    let words = [
        "alpha", "beta", "gamma", "delta", "pack", "tree", "blob", "index", "seek",
    ];
    let mut out = Vec::new();
    for _ in 0..lines {
        for _ in 0..8 {
            out.extend_from_slice(words[(lcg(seed) % words.len() as u64) as usize].as_bytes());
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out
}

fn roundtrip(base: &[u8], target: &[u8]) -> Vec<u8> {
    let d = create_delta(base, target);
    assert_eq!(apply_delta(base, &d, 0, u64::MAX).unwrap(), target);
    d
}

#[test]
fn edge_cases_apply() {
    roundtrip(b"", b"");
    roundtrip(b"", b"abc");
    roundtrip(b"abc", b"");
    roundtrip(b"short", b"short");
    let zeros = vec![0u8; 300_000];
    let d = roundtrip(&zeros, &zeros);
    assert!(
        d.len() < 40,
        "a long run copies in 0x10000-byte ops: {}",
        d.len()
    );
    let mut seed = 1;
    let noise: Vec<u8> = (0..200_000).map(|_| lcg(&mut seed) as u8).collect();
    roundtrip(&noise, &noise);
    roundtrip(&noise[..1000], &noise[500..]);
    let period: Vec<u8> = (0..100_000)
        .map(|i| b"0123456789abcdefghijklmnopqrstuv"[i % 32])
        .collect();
    roundtrip(&period, &period[7..]);
}

#[test]
fn similar_texts_make_small_deltas() {
    let mut seed = 7;
    let base = text(&mut seed, 400);
    let mut target = base.clone();
    target.splice(1000..1010, b"EDITED LINE\n".iter().copied());
    target.extend_from_slice(b"appended\n");
    let d = roundtrip(&base, &target);
    assert!(d.len() < 60, "delta of a small edit is {} bytes", d.len());
}

#[test]
fn max_size_is_honoured() {
    let mut seed = 3;
    let base = text(&mut seed, 200);
    let target = text(&mut seed, 200);
    let full = create_delta(&base, &target);
    let index = DeltaIndex::new(&base);
    assert_eq!(
        index.encode(&base, &target, full.len()).as_deref(),
        Some(full.as_slice())
    );
    assert!(index.encode(&base, &target, full.len() - 1).is_none());
    assert!(index.encode(&base, &target, 10).is_none());
}

#[test]
fn opcode_limits() {
    let mut out = Vec::new();
    put_copy(0, MAX_COPY * 2 + 5, &mut out);
    assert_eq!(out, vec![0x80, 0x84, 0x01, 0x94, 0x02, 0x05]);
    out.clear();
    put_insert(&[7u8; 300], &mut out);
    assert_eq!((out[0], out[128], out[256], out.len()), (127, 127, 46, 303));
}
