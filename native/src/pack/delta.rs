//! Git's delta format: `varint(base size) varint(result size)` then copy and insert opcodes.
//! A copy (high bit set) selects offset bytes with bits 0-3 and size bytes with bits 4-6, size 0
//! meaning 0x10000; an insert (1..=127) is followed by that many literal bytes; opcode 0 is
//! invalid. Every check is made before the result is allocated, so a hostile delta cannot make
//! us allocate what it declares.

use crate::error::{PackError, Result};

/// Read one delta-header varint (7-bit little-endian groups).
fn read_varint(delta: &[u8], pos: &mut usize, offset: u64) -> Result<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&b) = delta.get(*pos) else {
            return Err(PackError::at(offset, "delta header is truncated"));
        };
        *pos += 1;
        if shift > 63 || (shift > 56 && u64::from(b & 0x7f) >> (64 - shift) != 0) {
            return Err(PackError::at(offset, "delta header size overflows 64 bits"));
        }
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// The base and result sizes a delta declares, and where its opcodes start.
pub fn delta_sizes(delta: &[u8], offset: u64) -> Result<(u64, u64, usize)> {
    let mut pos = 0;
    let base = read_varint(delta, &mut pos, offset)?;
    let result = read_varint(delta, &mut pos, offset)?;
    Ok((base, result, pos))
}

enum Op {
    Copy { from: usize, len: usize },
    Insert { at: usize, len: usize },
}

/// Decode the opcode at `pos`, checking it against the base; returns the op and the next position.
#[inline]
fn next_op(delta: &[u8], pos: usize, base_len: u64, offset: u64) -> Result<(Op, usize)> {
    let cmd = delta[pos];
    let mut p = pos + 1;
    if cmd & 0x80 != 0 {
        let mut from = 0u64;
        let mut len = 0u64;
        for i in 0..4 {
            if cmd & (1 << i) != 0 {
                let Some(&b) = delta.get(p) else {
                    return Err(PackError::at(offset, "delta copy opcode is truncated"));
                };
                from |= u64::from(b) << (8 * i);
                p += 1;
            }
        }
        for i in 0..3 {
            if cmd & (0x10 << i) != 0 {
                let Some(&b) = delta.get(p) else {
                    return Err(PackError::at(offset, "delta copy opcode is truncated"));
                };
                len |= u64::from(b) << (8 * i);
                p += 1;
            }
        }
        if len == 0 {
            len = 0x10000;
        }
        if from + len > base_len {
            return Err(PackError::at(
                offset,
                format!(
                    "delta copies bytes {from}..{} from a base of {base_len} bytes",
                    from + len
                ),
            ));
        }
        Ok((
            Op::Copy {
                from: from as usize,
                len: len as usize,
            },
            p,
        ))
    } else if cmd != 0 {
        let len = usize::from(cmd);
        if p + len > delta.len() {
            return Err(PackError::at(
                offset,
                "delta insert runs past the end of the delta",
            ));
        }
        Ok((Op::Insert { at: p, len }, p + len))
    } else {
        Err(PackError::at(offset, "delta has the invalid opcode 0"))
    }
}

/// A range of a delta's result copied from its base: `len` bytes at `at` in the result,
/// from `from` in the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    pub at: usize,
    pub from: usize,
    pub len: usize,
}

/// The copied ranges of a delta (already applied, so checked) against a base of
/// `base_len` bytes, in result order.
pub fn copied_ranges(delta: &[u8], base_len: u64, offset: u64) -> Result<Vec<Copied>> {
    let (_, _, mut pos) = delta_sizes(delta, offset)?;
    let mut at = 0;
    let mut out = Vec::new();
    while pos < delta.len() {
        let (op, next) = next_op(delta, pos, base_len, offset)?;
        match op {
            Op::Copy { from, len } => {
                out.push(Copied { at, from, len });
                at += len;
            }
            Op::Insert { len, .. } => at += len,
        }
        pos = next;
    }
    Ok(out)
}

/// Validate a delta against a base of `base_len` bytes; returns the result size.
pub fn check_delta(delta: &[u8], base_len: u64, offset: u64) -> Result<u64> {
    let (declared_base, result, mut pos) = delta_sizes(delta, offset)?;
    if declared_base != base_len {
        return Err(PackError::at(
            offset,
            format!("delta expects a base of {declared_base} bytes, but its base has {base_len}"),
        ));
    }
    let mut produced = 0u64;
    while pos < delta.len() {
        let (op, next) = next_op(delta, pos, base_len, offset)?;
        produced += match op {
            Op::Copy { len, .. } | Op::Insert { len, .. } => len as u64,
        };
        if produced > result {
            return Err(PackError::at(
                offset,
                format!("delta produces more than its declared {result} bytes"),
            ));
        }
        pos = next;
    }
    if produced != result {
        return Err(PackError::at(
            offset,
            format!("delta produces {produced} bytes, not its declared {result}"),
        ));
    }
    Ok(result)
}

/// Apply a checked delta. `limit` bounds the size of what may be allocated (physical memory).
pub fn apply_delta(base: &[u8], delta: &[u8], offset: u64, limit: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    apply_delta_into(base, delta, offset, limit, &mut out)?;
    Ok(out)
}

/// Apply a checked delta into `out` (cleared first), reusing its allocation.
pub fn apply_delta_into(
    base: &[u8],
    delta: &[u8],
    offset: u64,
    limit: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    let result_len = check_delta(delta, base.len() as u64, offset)?;
    if result_len > limit {
        return Err(PackError::at(
            offset,
            format!("object of {result_len} bytes does not fit in memory"),
        ));
    }
    out.clear();
    out.try_reserve_exact(result_len as usize).map_err(|_| {
        PackError::at(
            offset,
            format!("cannot allocate {result_len} bytes for an object"),
        )
    })?;
    let (_, _, mut pos) = delta_sizes(delta, offset)?;
    while pos < delta.len() {
        let (op, next) = next_op(delta, pos, base.len() as u64, offset)?;
        match op {
            Op::Copy { from, len } => out.extend_from_slice(&base[from..from + len]),
            Op::Insert { at, len } => out.extend_from_slice(&delta[at..at + len]),
        }
        pos = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn applies_copy_and_insert() {
        let base = b"0123456789abcdef";
        let mut d = Vec::new();
        varint(16, &mut d);
        varint(9, &mut d);
        d.extend_from_slice(&[0x91, 10, 4]); // copy offset 10, size 4: "abcd"
        d.extend_from_slice(&[3, b'X', b'Y', b'Z']);
        d.extend_from_slice(&[0x90, 2]); // copy offset 0, size 2
        assert_eq!(apply_delta(base, &d, 0, u64::MAX).unwrap(), b"abcdXYZ01");
    }

    #[test]
    fn rejects_bad_deltas() {
        let base = b"0123456789abcdef";
        let mk = |ops: &[u8], base_size: u64, result: u64| {
            let mut d = Vec::new();
            varint(base_size, &mut d);
            varint(result, &mut d);
            d.extend_from_slice(ops);
            d
        };
        assert!(apply_delta(base, &mk(&[0x91, 14, 4], 16, 4), 0, u64::MAX).is_err()); // out of range
        assert!(apply_delta(base, &mk(&[0], 16, 0), 0, u64::MAX).is_err()); // opcode 0
        assert!(apply_delta(base, &mk(&[2, b'a'], 16, 2), 0, u64::MAX).is_err()); // truncated insert
        assert!(apply_delta(base, &mk(&[1, b'a'], 15, 1), 0, u64::MAX).is_err()); // wrong base size
        assert!(apply_delta(base, &mk(&[1, b'a'], 16, 2), 0, u64::MAX).is_err()); // short result
        assert!(apply_delta(base, &mk(&[0x80], 16, 0x10000), 0, u64::MAX).is_err()); // 0x10000 > base
        assert!(apply_delta(base, &mk(&[1, b'a'], 16, 1 << 60), 0, u64::MAX).is_err());
    }
}
