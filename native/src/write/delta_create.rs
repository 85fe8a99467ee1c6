//! Creating Git deltas: index a base once, then encode any number of targets against it.
//!
//! The format is the one `delta.rs` applies: `varint(base size) varint(target size)`, then
//! copy opcodes (high bit set; bits 0-3 select offset bytes, bits 4-6 size bytes, no size
//! bytes meaning 0x10000) and insert opcodes (1..=127 literal bytes follow).
//!
//! The index records, for every `BLOCK`-byte block of the base starting at a multiple of
//! `STRIDE`, its position under a hash of its bytes, and sets a presence bit for that hash
//! (eight bits a bucket), so that most positions of a target without a match cost one load.
//! A block equal to the block just before it is left out (in a run of repeated data, the
//! first block reaches the whole run by extending forward), and a bucket holding more than
//! `BUCKET_LIMIT` blocks keeps an evenly spread subset of them, so repetitive bases cannot
//! make encoding quadratic.
//!
//! Encoding walks the target. At a position it hashes the next `BLOCK` bytes (two 8-byte
//! loads and one wide multiplication; no rolling hash is needed) and looks at the blocks of
//! that bucket whose bytes are equal. Each is extended forward as far as base and target
//! agree, and backward over the literal bytes not yet emitted; the longest match (the first
//! of at least `GOOD_ENOUGH` bytes ends the search) becomes copy opcodes of at most 0x10000
//! bytes each. Right after a copy (and at the start), the next copy is sought as the longest
//! match that starts exactly where the copy ended, among the blocks that overlap the bytes
//! just copied and the block starting there: a copy can so switch to another part of the base
//! after as few as `MIN_MATCH` new bytes, without literals between. When none is found, the
//! walk goes on one byte at a time, the bytes passed becoming literals (insert opcodes of at
//! most 127 bytes) unless the next match's backward extension takes them. Any common run of
//! `BLOCK + STRIDE - 1` bytes or more contains an indexed block, so it is seen.
//!
//! `max_size` bounds the delta's length: encoding stops and returns `None` as soon as the
//! delta is certain to exceed it. Bytes waiting to be emitted as literals count towards that
//! bound minus the most a later backward extension can take back without passing an indexed
//! block (`BLOCK + STRIDE - 1`), so the early stop only happens when the final delta would be
//! too long anyway (barring buckets that were thinned out).

/// Bytes hashed at each position, and the length of an indexed block.
pub const BLOCK: usize = 16;
/// Distance between the starts of two indexed blocks of the base.
pub const STRIDE: usize = 16;
/// Most blocks kept under one hash bucket.
pub const BUCKET_LIMIT: usize = 64;
/// Shortest copy worth an opcode (a copy opcode takes 3 to 8 bytes).
pub const MIN_MATCH: usize = 4;
/// A match this long ends the search among the other blocks of its bucket.
pub const GOOD_ENOUGH: usize = 4096;
/// Longest copy one opcode can express.
pub const MAX_COPY: usize = 0x10000;
/// Longest insert one opcode can express.
pub const MAX_INSERT: usize = 127;
/// How many literal bytes a backward extension can reclaim without containing an indexed block.
const RECLAIMABLE: usize = BLOCK + STRIDE - 1;

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;

#[inline(always)]
fn load(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// A hash of 16 bytes (as two words) whose every bit depends on every input bit: the high
/// bits choose the bucket, the low 32 bits are kept to rule out most false candidates
/// without reading the base.
#[inline(always)]
fn block_hash(lo: u64, hi: u64) -> u64 {
    let m = u128::from(lo ^ K1) * u128::from(hi ^ K2);
    (m as u64) ^ ((m >> 64) as u64)
}

/// How many leading bytes `a` and `b` share.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    // 32 bytes a step while they agree (long copies are the common case), then 8.
    while i + 32 <= n {
        let x = (load(a, i) ^ load(b, i))
            | (load(a, i + 8) ^ load(b, i + 8))
            | (load(a, i + 16) ^ load(b, i + 16))
            | (load(a, i + 24) ^ load(b, i + 24));
        if x != 0 {
            break;
        }
        i += 32;
    }
    while i + 8 <= n {
        let x = load(a, i) ^ load(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// How many trailing bytes `a` and `b` share.
#[inline]
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut k = 0;
    while k < n && a[n - 1 - k] == b[n - 1 - k] {
        k += 1;
    }
    k
}

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Insert opcodes for `data`, at most `MAX_INSERT` bytes each.
fn put_insert(data: &[u8], out: &mut Vec<u8>) {
    for chunk in data.chunks(MAX_INSERT) {
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
}

/// Copy opcodes for `len` bytes of the base from `from`, at most `MAX_COPY` bytes each.
fn put_copy(mut from: usize, mut len: usize, out: &mut Vec<u8>) {
    while len > 0 {
        let n = len.min(MAX_COPY);
        let at = out.len();
        out.push(0x80);
        let mut cmd = 0x80u8;
        for i in 0..4 {
            let b = (from >> (8 * i)) as u8;
            if b != 0 {
                cmd |= 1 << i;
                out.push(b);
            }
        }
        // A size of exactly 0x10000 is written with no size bytes at all.
        if n != MAX_COPY {
            for i in 0..2 {
                let b = (n >> (8 * i)) as u8;
                if b != 0 {
                    cmd |= 0x10 << i;
                    out.push(b);
                }
            }
        }
        out[at] = cmd;
        from += n;
        len -= n;
    }
}

/// A copy: `len` bytes of the target from `at` equal the base's from `from`.
#[derive(Default, Clone, Copy)]
struct Match {
    at: usize,
    from: usize,
    len: usize,
}

/// The blocks of one base, by hash. Holds positions only: `encode` is given the base bytes.
pub struct DeltaIndex {
    base_len: usize,
    /// Bucket of a hash: its top bits.
    shift: u32,
    /// Presence bit of a hash (its top bits, 3 more than the bucket's): eight bits a bucket,
    /// so that most positions without a match cost one load.
    bit_shift: u32,
    bits: Vec<u64>,
    /// `entries[heads[h]..heads[h + 1]]` are the blocks of bucket `h`, by ascending
    /// position, each as `(low 32 bits of its hash) << 32 | position`.
    heads: Vec<u32>,
    entries: Vec<u64>,
}

impl DeltaIndex {
    /// Index `base`. Bases shorter than `BLOCK` bytes or longer than 4 GiB get an empty index
    /// (every target is then encoded as literals).
    pub fn new(base: &[u8]) -> DeltaIndex {
        let n = base.len();
        if n < BLOCK || n > u32::MAX as usize {
            return DeltaIndex {
                base_len: n,
                shift: 63,
                bit_shift: 63,
                bits: vec![0],
                heads: vec![0; 3],
                entries: Vec::new(),
            };
        }
        let nblocks = (n - BLOCK) / STRIDE + 1;
        let order = (usize::BITS - nblocks.leading_zeros()).clamp(4, 31);
        let nbuckets = 1usize << order;
        let shift = 64 - order;
        let bit_shift = shift - 3;
        let mut bits = vec![0u64; (nbuckets * 8) / 64];
        // Counting sort. Each block's hash (SKIP for a block repeating the one before it) is
        // counted into heads[bucket]; summed up, heads[b] ends bucket b; filling each bucket
        // from its end, walking the blocks backwards, leaves heads[b] at its start with the
        // positions ascending.
        const SKIP: u64 = u64::MAX;
        let mut hashes = Vec::with_capacity(nblocks);
        let mut heads = vec![0u32; nbuckets + 1];
        let mut prev = (!load(base, 0), 0);
        for k in 0..nblocks {
            let p = k * STRIDE;
            let word = (load(base, p), load(base, p + 8));
            if word == prev {
                hashes.push(SKIP);
                continue;
            }
            prev = word;
            let h = block_hash(word.0, word.1);
            hashes.push(h);
            heads[(h >> shift) as usize] += 1;
            let bit = (h >> bit_shift) as usize;
            bits[bit >> 6] |= 1 << (bit & 63);
        }
        let mut crowded = false;
        for b in 1..nbuckets {
            crowded |= heads[b] as usize > BUCKET_LIMIT;
            heads[b] += heads[b - 1];
        }
        crowded |= heads[0] as usize > BUCKET_LIMIT;
        let total = heads[nbuckets - 1] as usize;
        heads[nbuckets] = total as u32;
        let mut entries = vec![0u64; total];
        for (k, &h) in hashes.iter().enumerate().rev() {
            if h != SKIP {
                let end = &mut heads[(h >> shift) as usize];
                *end -= 1;
                entries[*end as usize] = (h << 32) | (k * STRIDE) as u64;
            }
        }
        drop(hashes);
        // Thin out crowded buckets to an evenly spread subset.
        if crowded {
            let mut thin_heads = Vec::with_capacity(nbuckets + 1);
            let mut thin = Vec::with_capacity(total);
            thin_heads.push(0u32);
            for b in 0..nbuckets {
                let list = &entries[heads[b] as usize..heads[b + 1] as usize];
                if list.len() > BUCKET_LIMIT {
                    thin.extend((0..BUCKET_LIMIT).map(|j| list[j * list.len() / BUCKET_LIMIT]));
                } else {
                    thin.extend_from_slice(list);
                }
                thin_heads.push(thin.len() as u32);
            }
            heads = thin_heads;
            entries = thin;
        }
        DeltaIndex {
            base_len: n,
            shift,
            bit_shift,
            bits,
            heads,
            entries,
        }
    }

    pub fn base_len(&self) -> usize {
        self.base_len
    }

    /// Bytes the index occupies.
    pub fn memory(&self) -> usize {
        self.heads.len() * 4 + self.entries.len() * 8 + self.bits.len() * 8
    }

    /// The longest match longer than `beat` bytes through the block of the target starting at
    /// `i` (which must have `BLOCK` bytes), counting only bytes from `lit` on: extended
    /// backward down to `lit` when the block starts there or later, cut at `lit` when it
    /// overlaps bytes already emitted. A match of length 0 when there is none.
    #[inline(always)]
    fn match_at(&self, base: &[u8], target: &[u8], i: usize, lit: usize, beat: usize) -> Match {
        let (lo, hi) = (load(target, i), load(target, i + 8));
        let h = block_hash(lo, hi);
        let bit = (h >> self.bit_shift) as usize;
        if self.bits[bit >> 6] & (1 << (bit & 63)) == 0 {
            return Match::default();
        }
        let b = (h >> self.shift) as usize;
        let bucket = &self.entries[self.heads[b] as usize..self.heads[b + 1] as usize];
        let mut best = Match {
            at: 0,
            from: 0,
            len: beat,
        };
        for &e in bucket {
            if (e ^ (h << 32)) >> 32 != 0 {
                continue;
            }
            let p = (e as u32) as usize;
            if load(base, p) != lo || load(base, p + 8) != hi {
                continue;
            }
            // The match is `fwd` bytes from i, plus `back` bytes before i, minus `skip` bytes
            // already emitted. To beat the best it must reach byte `need`: test that first.
            let (back, skip) = if i >= lit {
                let reach = p.min(i - lit);
                (common_suffix(&base[p - reach..p], &target[i - reach..i]), 0)
            } else {
                (0, lit - i)
            };
            let need = (best.len + skip).saturating_sub(back);
            if need >= BLOCK
                && (i + need >= target.len()
                    || p + need >= base.len()
                    || target[i + need] != base[p + need])
            {
                continue;
            }
            let fwd = BLOCK + common_prefix(&base[p + BLOCK..], &target[i + BLOCK..]);
            let len = fwd + back - skip;
            if len > best.len {
                best = Match {
                    at: i + skip - back,
                    from: p + skip - back,
                    len,
                };
                if len >= GOOD_ENOUGH {
                    break;
                }
            }
        }
        if best.len == beat {
            Match::default()
        } else {
            best
        }
    }

    /// A delta turning `base` (the bytes this index was built from) into `target`, or `None`
    /// if it would be longer than `max_size` bytes.
    pub fn encode(&self, base: &[u8], target: &[u8], max_size: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(base, target, max_size, &mut out)
            .then_some(out)
    }

    /// `encode` into `out` (cleared first); returns false when the delta exceeds `max_size`.
    pub fn encode_into(
        &self,
        base: &[u8],
        target: &[u8],
        max_size: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        assert_eq!(
            base.len(),
            self.base_len,
            "a delta index is used with another base"
        );
        out.clear();
        out.reserve(target.len().min(max_size).saturating_add(32).min(1 << 20));
        put_varint(base.len() as u64, out);
        put_varint(target.len() as u64, out);
        let limit = max_size.saturating_add(RECLAIMABLE);
        let tlen = target.len();
        // `lit`: where the bytes not yet emitted start; `i`: the start of the next block hashed.
        let (mut i, mut lit) = (0usize, 0usize);
        if !self.entries.is_empty() && tlen >= BLOCK {
            let last = tlen - BLOCK;
            while i <= last {
                if out.len() + i.saturating_sub(lit) > limit {
                    return false;
                }
                let m = if i <= lit {
                    // Right after a copy (or at the start): the longest copy starting exactly at
                    // `lit`, from the blocks overlapping the bytes just copied and the one at `lit`.
                    let end = lit.min(last);
                    let mut best = Match::default();
                    for w in i..=end {
                        let m = self.match_at(base, target, w, lit, best.len.max(MIN_MATCH - 1));
                        if m.len > best.len {
                            best = m;
                            if best.len >= GOOD_ENOUGH {
                                break;
                            }
                        }
                    }
                    i = end;
                    best
                } else {
                    self.match_at(base, target, i, lit, 0)
                };
                if m.len < MIN_MATCH {
                    i += 1;
                    continue;
                }
                put_insert(&target[lit..m.at], out);
                put_copy(m.from, m.len, out);
                lit = m.at + m.len;
                i = lit.saturating_sub(BLOCK - 1);
            }
        }
        put_insert(&target[lit..], out);
        out.len() <= max_size
    }
}

/// A delta from `base` to `target` with no size bound (indexes `base` for this one call).
pub fn create_delta(base: &[u8], target: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    DeltaIndex::new(base).encode_into(base, target, usize::MAX, &mut out);
    out
}

#[cfg(test)]
mod tests;
