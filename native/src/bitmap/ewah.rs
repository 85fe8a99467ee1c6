//! EWAH-compressed bitmaps in the form Git's `.bitmap` files store them (JavaEWAH's format,
//! Git's Documentation/technical/bitmap-format): chunks of one run-length word (RLW) and the
//! literal words after it. An RLW holds, from its lowest bit: the bit a run repeats, the run's
//! length in 64-bit words (32 bits), and how many literal words follow (31 bits).

/// Longest run and literal stretch one RLW can describe.
const MAX_RUN: usize = (1 << 32) - 1;
const MAX_LITERALS: usize = (1 << 31) - 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ewah {
    /// Bits described: 64 per word up to the last non-zero one, as Git's own writer counts.
    pub bit_size: u32,
    pub words: Vec<u64>,
    /// Index in `words` of the last RLW (the format stores it).
    pub last_rlw: u32,
}

fn rlw(bit: bool, run: usize, literals: usize) -> u64 {
    u64::from(bit) | ((run as u64) << 1) | ((literals as u64) << 33)
}

impl Ewah {
    /// Compress a plain bitmap (bit i of the stream is bit i % 64 of word i / 64).
    pub fn compress(dense: &[u64]) -> Ewah {
        // Trailing zero words are not stored; an empty bitmap is one run of one zero word.
        let used = dense.iter().rposition(|&w| w != 0).map_or(1, |p| p + 1);
        let word = |i: usize| dense.get(i).copied().unwrap_or(0);
        let mut words = Vec::new();
        let mut i = 0;
        let last_rlw = loop {
            let ones = word(i) == u64::MAX;
            let clean = if ones { u64::MAX } else { 0 };
            let run_start = i;
            while i < used && word(i) == clean && i - run_start < MAX_RUN {
                i += 1;
            }
            let run = i - run_start;
            let lit_start = i;
            while i < used && word(i) != 0 && word(i) != u64::MAX && i - lit_start < MAX_LITERALS {
                i += 1;
            }
            let at = words.len();
            words.push(rlw(ones && run > 0, run, i - lit_start));
            words.extend((lit_start..i).map(word));
            if i >= used {
                break at;
            }
        };
        Ewah {
            bit_size: (used * 64) as u32,
            words,
            last_rlw: last_rlw as u32,
        }
    }

    /// Bytes of the serialized form.
    pub fn serialized_len(&self) -> usize {
        12 + 8 * self.words.len()
    }

    /// Append the serialized form: bit count, word count, words, last RLW's index (big-endian).
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bit_size.to_be_bytes());
        out.extend_from_slice(&(self.words.len() as u32).to_be_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out.extend_from_slice(&self.last_rlw.to_be_bytes());
    }

    /// OR this bitmap into a plain one (which must be long enough for it).
    pub fn or_into(&self, dense: &mut [u64]) {
        let mut pos = 0usize;
        let mut k = 0usize;
        while k < self.words.len() {
            let h = self.words[k];
            let run = ((h >> 1) & 0xffff_ffff) as usize;
            let literals = (h >> 33) as usize;
            if h & 1 == 1 {
                dense[pos..pos + run].fill(u64::MAX);
            }
            pos += run;
            for (d, &w) in dense[pos..pos + literals]
                .iter_mut()
                .zip(&self.words[k + 1..k + 1 + literals])
            {
                *d |= w;
            }
            pos += literals;
            k += 1 + literals;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(dense: &[u64]) -> Vec<u64> {
        let e = Ewah::compress(dense);
        let mut out = vec![0u64; dense.len().max(1)];
        e.or_into(&mut out);
        out.truncate(dense.len());
        out
    }

    #[test]
    fn runs_and_literals_round_trip() {
        let cases: Vec<Vec<u64>> = vec![
            vec![],
            vec![0, 0, 0],
            vec![u64::MAX; 5],
            vec![1, 2, 3],
            vec![0, 0, 5, u64::MAX, u64::MAX, 7, 0, 0, 9, 0],
            vec![u64::MAX, 0, u64::MAX, 3],
        ];
        for dense in cases {
            assert_eq!(roundtrip(&dense), dense, "{dense:?}");
        }
    }

    #[test]
    fn layout_is_rlw_then_literals() {
        let e = Ewah::compress(&[0, 0, 5, 6, u64::MAX, 0]);
        // run of two zero words with two literals; then a run of one all-ones word.
        assert_eq!(e.words, vec![rlw(false, 2, 2), 5, 6, rlw(true, 1, 0)]);
        assert_eq!(e.last_rlw, 3);
        assert_eq!(e.bit_size, 5 * 64);
        let empty = Ewah::compress(&[]);
        assert_eq!(empty.words, vec![rlw(false, 1, 0)]);
        assert_eq!(empty.bit_size, 64);
    }

    #[test]
    fn serialized_form_is_big_endian() {
        let e = Ewah::compress(&[3]);
        let mut out = Vec::new();
        e.serialize(&mut out);
        assert_eq!(out.len(), e.serialized_len());
        assert_eq!(&out[..8], &[0, 0, 0, 64, 0, 0, 0, 2]);
        assert_eq!(&out[8..16], &rlw(false, 0, 1).to_be_bytes());
        assert_eq!(&out[16..24], &3u64.to_be_bytes());
        assert_eq!(&out[24..], &[0, 0, 0, 0]);
    }
}
