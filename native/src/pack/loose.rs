//! Loose objects: one zlib stream per file holding `"<type> <size>\0" + content`.

use std::path::Path;

use crate::error::{PackError, Result};
use crate::pack::entry_header::type_named;

fn bad(path: &Path, what: &str) -> PackError {
    PackError::general(format!(
        "loose object {} is corrupt: {what}",
        path.display()
    ))
}

/// Parse `"<type> <size>\0"` at the start of `head`; returns (kind, size, header length).
fn parse_loose_header(head: &[u8], path: &Path) -> Result<(u8, u64, usize)> {
    let nul = head
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| bad(path, "no header"))?;
    let text = &head[..nul];
    let sp = text
        .iter()
        .position(|&c| c == b' ')
        .ok_or_else(|| bad(path, "bad header"))?;
    let kind = type_named(&text[..sp]).ok_or_else(|| bad(path, "unknown object type"))?;
    let digits = &text[sp + 1..];
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad(path, "bad size in header"));
    }
    let size = digits
        .iter()
        .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
    Ok((kind, size, nul + 1))
}

/// Type and size of a loose object, inflating only its first bytes.
pub fn loose_header(path: &Path) -> Result<(u8, u64)> {
    let raw = std::fs::read(path)
        .map_err(|e| PackError::io(&format!("cannot read {}", path.display()), e))?;
    let mut z = flate2::Decompress::new(true);
    let mut head = [0u8; 64];
    let _ = z
        .decompress(&raw, &mut head, flate2::FlushDecompress::Sync)
        .map_err(|_| bad(path, "bad zlib"))?;
    let made = z.total_out() as usize;
    let (kind, size, _) = parse_loose_header(&head[..made], path)?;
    Ok((kind, size))
}

/// Type and content of a loose object, checked against its declared size.
pub fn read_loose(path: &Path, limit: u64) -> Result<(u8, Vec<u8>)> {
    let raw = std::fs::read(path)
        .map_err(|e| PackError::io(&format!("cannot read {}", path.display()), e))?;
    let mut z = flate2::Decompress::new(true);
    let mut head = [0u8; 64];
    z.decompress(&raw, &mut head, flate2::FlushDecompress::Sync)
        .map_err(|_| bad(path, "bad zlib"))?;
    let made = z.total_out() as usize;
    let (kind, size, hlen) = parse_loose_header(&head[..made], path)?;
    if size > limit {
        return Err(bad(
            path,
            &format!("object of {size} bytes does not fit in memory"),
        ));
    }
    if size > crate::pack::inflate::inflated_bound(raw.len() as u64) {
        return Err(bad(
            path,
            &format!("declares {size} bytes, more than its file can hold"),
        ));
    }
    // The buffer grows as the object inflates (to its declared size and one byte more, to
    // see a longer stream), so a lying header costs no more memory than the data it has.
    let want = size as usize + 1;
    let mut data = Vec::new();
    data.extend_from_slice(&head[hlen..made]);
    loop {
        if data.len() == data.capacity() {
            let more = data
                .capacity()
                .max(64 << 10)
                .min(want - data.len().min(want));
            data.try_reserve_exact(more.max(1))
                .map_err(|_| bad(path, "cannot allocate"))?;
        }
        let (in0, out0) = (z.total_in() as usize, z.total_out());
        let status = z
            .decompress_vec(&raw[in0..], &mut data, flate2::FlushDecompress::Finish)
            .map_err(|_| bad(path, "bad zlib"))?;
        if data.len() > size as usize {
            return Err(bad(path, "longer than its declared size"));
        }
        if status == flate2::Status::StreamEnd {
            break;
        }
        if z.total_out() == out0 && z.total_in() as usize == in0 && data.len() < data.capacity() {
            return Err(bad(path, "truncated"));
        }
    }
    if data.len() != size as usize {
        return Err(bad(path, "size does not match its header"));
    }
    Ok((kind, data))
}
