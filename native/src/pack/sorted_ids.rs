//! Object ids as sorted arrays: the sorting and look-ups repack's enumeration does on every
//! object (about 0.2 s on libgit2 through numpy's 20-byte strings, a few ms here).

use crate::pack::entry_header::ObjectId;

fn prefix(id: &ObjectId) -> u64 {
    u64::from_be_bytes([id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7]])
}

/// The permutation that sorts `ids`; equal ids keep their order.
pub fn sort_order(ids: &[ObjectId]) -> Vec<u32> {
    // Sorting (prefix, index) pairs is the fast path; ids that share a prefix are put in
    // order by their full bytes afterwards (a stable sort keeps equal ids in input order).
    let mut keyed: Vec<(u64, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (prefix(id), i as u32))
        .collect();
    keyed.sort_unstable();
    let mut order: Vec<u32> = keyed.iter().map(|&(_, i)| i).collect();
    let mut start = 0;
    while start < keyed.len() {
        let mut end = start + 1;
        while end < keyed.len() && keyed[end].0 == keyed[start].0 {
            end += 1;
        }
        if end - start > 1 {
            order[start..end].sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        }
        start = end;
    }
    order
}

/// Whether `ids` is in ascending order (equal neighbours allowed).
pub fn is_sorted(ids: &[ObjectId]) -> bool {
    ids.windows(2).all(|w| w[0] <= w[1])
}

/// Look-ups in a sorted array of ids.
pub struct Finder<'a> {
    sorted: &'a [ObjectId],
    /// Each id's first eight bytes: searched as integers, so that a look-up compares whole
    /// ids (a libc memcmp call each) only for the one candidate left.
    prefixes: Vec<u64>,
    /// A fan-out table on the first two bytes: each search is narrowed to a handful of ids.
    fan: Vec<u32>,
}

impl<'a> Finder<'a> {
    pub fn new(sorted: &'a [ObjectId]) -> Self {
        let mut fan = vec![0u32; (1 << 16) + 1];
        for id in sorted {
            fan[usize::from(u16::from_be_bytes([id[0], id[1]])) + 1] += 1;
        }
        for b in 1..fan.len() {
            fan[b] += fan[b - 1];
        }
        Finder {
            sorted,
            prefixes: sorted.iter().map(prefix).collect(),
            fan,
        }
    }

    /// The position of the first copy of `w`, if there is one.
    pub fn at(&self, w: &ObjectId) -> Option<usize> {
        let b = usize::from(u16::from_be_bytes([w[0], w[1]]));
        let (lo, hi) = (self.fan[b] as usize, self.fan[b + 1] as usize);
        let p = prefix(w);
        let mut at = lo + self.prefixes[lo..hi].partition_point(|&x| x < p);
        while at < hi && self.prefixes[at] == p {
            if self.sorted[at] == *w {
                return Some(at);
            }
            at += 1;
        }
        None
    }
}

/// For each of `want`, the position of its first copy in `sorted`, or -1.
pub fn find(sorted: &[ObjectId], want: &[ObjectId]) -> Vec<i64> {
    let finder = Finder::new(sorted);
    want.iter()
        .map(|w| finder.at(w).map_or(-1, |p| p as i64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(bytes: &[u8]) -> ObjectId {
        let mut out = [0u8; 20];
        out[..bytes.len()].copy_from_slice(bytes);
        ObjectId::of(crate::pack::object_id::HashAlgo::Sha1, &out)
    }

    #[test]
    fn sort_order_is_stable_and_orders_ids_sharing_a_prefix_by_all_their_bytes() {
        let ids = vec![
            id(&[9]),
            id(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            id(&[1, 2, 3, 4, 5, 6, 7, 8, 2]),
            id(&[0, 0xff]),
            id(&[9]),
        ];
        let order = sort_order(&ids);
        assert_eq!(order, vec![3, 2, 1, 0, 4]);
        let sorted: Vec<ObjectId> = order.iter().map(|&i| ids[i as usize]).collect();
        assert!(is_sorted(&sorted));
    }

    #[test]
    fn find_gives_the_first_copy_and_minus_one_for_absent_ids() {
        let sorted = vec![
            id(&[0]),
            id(&[1, 5]),
            id(&[1, 5]),
            id(&[1, 5, 1]),
            id(&[0xff, 0xff, 1]),
        ];
        assert!(is_sorted(&sorted));
        let want = vec![
            id(&[1, 5]),
            id(&[0xff, 0xff, 1]),
            id(&[1, 5, 0, 1]),
            id(&[0]),
            id(&[0xff, 0xff, 2]),
        ];
        assert_eq!(find(&sorted, &want), vec![1, 4, -1, 0, -1]);
        assert_eq!(find(&[], &want), vec![-1; 5]);
    }
}
