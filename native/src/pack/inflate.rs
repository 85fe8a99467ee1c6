//! zlib inflate for pack entries. Whole-buffer inflate (libdeflate) when the entry's inflated
//! size is known and small enough to hold; a streaming inflater (zlib-rs) for the rest.

use libdeflate_sys::{
    libdeflate_alloc_decompressor, libdeflate_decompressor, libdeflate_free_decompressor,
    libdeflate_zlib_decompress_ex,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InflateFailure {
    /// Not a valid zlib stream, or it runs past the end of the input given.
    Corrupt,
    /// The stream ended before producing the declared number of bytes.
    Short,
    /// The stream produces more than the declared number of bytes.
    Long,
    /// The declared size is more than a stream of the entry's compressed length can hold.
    Impossible,
    /// The declared size could not be allocated.
    NoMemory,
}

/// The most bytes a zlib stream of `compressed` bytes can inflate to. Deflate's best case
/// codes a 258-byte match in one bit of a block (zlib documents 1032:1); the slack covers
/// the stream's header and a block's. A larger declared size is a lie that must not decide
/// how much memory is asked for.
pub fn inflated_bound(compressed: u64) -> u64 {
    compressed.saturating_mul(1032).saturating_add(1024)
}

/// zlib's compressBound: no stream a zlib deflater writes for `size` bytes is longer.
pub fn deflated_bound(size: u64) -> u64 {
    size + (size >> 12) + (size >> 14) + (size >> 25) + 13
}

impl InflateFailure {
    pub fn describe(self, declared: u64) -> String {
        match self {
            InflateFailure::Corrupt => "corrupt or truncated zlib stream".to_string(),
            InflateFailure::Short => {
                format!("zlib stream inflates to fewer bytes than the declared size {declared}")
            }
            InflateFailure::Long => {
                format!("zlib stream inflates to more bytes than the declared size {declared}")
            }
            InflateFailure::Impossible => {
                format!(
                    "declared size {declared} is more than the entry's compressed bytes can hold"
                )
            }
            InflateFailure::NoMemory => format!("cannot allocate the declared size {declared}"),
        }
    }
}

pub struct Inflater {
    whole: *mut libdeflate_decompressor,
    pub stream: flate2::Decompress,
}

// The decompressor is owned by one Inflater and only used through &mut self.
unsafe impl Send for Inflater {}

impl Default for Inflater {
    fn default() -> Self {
        Self::new()
    }
}

impl Inflater {
    pub fn new() -> Self {
        // SAFETY: plain allocation. A null one (out of memory) makes every whole-buffer
        // inflate fail with NoMemory instead of aborting here.
        let whole = unsafe { libdeflate_alloc_decompressor() };
        Inflater {
            whole,
            stream: flate2::Decompress::new(true),
        }
    }

    /// Inflate the zlib stream at the start of `input` into exactly `out.len()` bytes.
    /// Returns how many input bytes the stream occupies.
    pub fn inflate_exact(&mut self, input: &[u8], out: &mut [u8]) -> Result<usize, InflateFailure> {
        // SAFETY: `out` is valid for writes of out.len() bytes.
        unsafe { self.decompress(input, out.as_mut_ptr(), out.len()) }
    }

    /// Inflate the zlib stream at the start of `input` into `out`, which becomes exactly
    /// `size` bytes; returns how many input bytes the stream occupies. The buffer is not
    /// zero-filled first (libdeflate writes every byte or fails), and a size no stream of
    /// `input.len()` bytes can reach is refused before anything is allocated.
    pub fn inflate_into(
        &mut self,
        input: &[u8],
        size: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, InflateFailure> {
        if size as u64 > inflated_bound(input.len() as u64) {
            return Err(InflateFailure::Impossible);
        }
        out.clear();
        out.try_reserve_exact(size)
            .map_err(|_| InflateFailure::NoMemory)?;
        // SAFETY: `out` has room for `size` bytes.
        let consumed = unsafe { self.decompress(input, out.as_mut_ptr(), size)? };
        // SAFETY: decompress succeeded, so it wrote all `size` bytes.
        unsafe { out.set_len(size) };
        Ok(consumed)
    }

    /// libdeflate's whole-buffer inflate of `input` into `len` bytes at `out`. Without
    /// actual_out_nbytes_ret it succeeds only when it wrote exactly `len` bytes.
    ///
    /// # Safety
    /// `out` must be valid for writes of `len` bytes.
    unsafe fn decompress(
        &mut self,
        input: &[u8],
        out: *mut u8,
        len: usize,
    ) -> Result<usize, InflateFailure> {
        if self.whole.is_null() {
            return Err(InflateFailure::NoMemory);
        }
        let mut consumed = 0usize;
        // SAFETY: libdeflate reads at most input.len() bytes and writes at most `len`.
        let rc = unsafe {
            libdeflate_zlib_decompress_ex(
                self.whole,
                input.as_ptr().cast(),
                input.len(),
                out.cast(),
                len,
                &mut consumed,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => Ok(consumed),
            2 => Err(InflateFailure::Short),
            3 => Err(InflateFailure::Long),
            _ => Err(InflateFailure::Corrupt),
        }
    }

    /// Inflate into a new vector of exactly `size` bytes.
    pub fn inflate_to_vec(
        &mut self,
        input: &[u8],
        size: usize,
    ) -> Result<(Vec<u8>, usize), InflateFailure> {
        let mut out = Vec::new();
        let used = self.inflate_into(input, size, &mut out)?;
        Ok((out, used))
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        if !self.whole.is_null() {
            // SAFETY: allocated in new() and freed exactly once.
            unsafe { libdeflate_free_decompressor(self.whole) };
        }
    }
}

/// Whether `input` starts like a zlib stream Git would write (deflate, no preset dictionary,
/// valid header check bits). Cheap filter before attempting to inflate at a guessed offset.
pub fn looks_like_zlib(input: &[u8]) -> bool {
    match input {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8
                && cmf >> 4 <= 7
                && flg & 0x20 == 0
                && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn exact_sizes_and_failures() {
        let data = b"hello hello hello hello".repeat(10);
        let mut z = deflate(&data);
        let zlen = z.len();
        z.extend_from_slice(b"trailing bytes of the next entry");
        let mut inf = Inflater::new();
        let (out, used) = inf.inflate_to_vec(&z, data.len()).unwrap();
        assert_eq!((out.as_slice(), used), (data.as_slice(), zlen));
        assert_eq!(
            inf.inflate_to_vec(&z, data.len() + 1).unwrap_err(),
            InflateFailure::Short
        );
        assert_eq!(
            inf.inflate_to_vec(&z, data.len() - 1).unwrap_err(),
            InflateFailure::Long
        );
        assert_eq!(
            inf.inflate_to_vec(&z[..zlen - 3], data.len()).unwrap_err(),
            InflateFailure::Corrupt
        );
        assert!(looks_like_zlib(&z));
        assert!(!looks_like_zlib(b"PACK"));
    }
}
