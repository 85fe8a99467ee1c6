//! The cache-aware statistic of `seekstats`: for each access, whether an entry read earlier
//! from the same pack lies within `near` bytes of its entry. A model of the page cache: data
//! next to what was read is likely cached already (readahead, shared pages).
//!
//! Offline, per pack: the distinct entries in offset order, each with the time it was first
//! read. An access is near when it repeats an entry, or when a neighbour within reach was
//! first read before it. The neighbours within `near` bytes are few (entries are at least a
//! few bytes each), so each is scanned outward, stopping at the first earlier one.

/// Flags (one per access) for accesses `(pack, start, end)` in time order. Entries of one
/// pack must not overlap.
pub fn near_read(packs: &[i32], starts: &[u64], ends: &[u64], near: u64) -> Vec<bool> {
    let n = packs.len();
    let mut flags = vec![false; n];
    // Accesses sorted by (pack, start, time): each run of one (pack, start) is one entry,
    // its first access being the first read.
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&i| (packs[i as usize], starts[i as usize], i));
    // Distinct entries: (pack, start, end, first read).
    let mut entries: Vec<(i32, u64, u64, u32)> = Vec::new();
    for &i in &order {
        let i = i as usize;
        match entries.last() {
            Some(&(p, s, _, _)) if p == packs[i] && s == starts[i] => flags[i] = true,
            _ => entries.push((packs[i], starts[i], ends[i], i as u32)),
        }
    }
    for u in 0..entries.len() {
        let (pack, start, end, first) = entries[u];
        let reach_left = start.saturating_sub(near);
        let reach_right = end.saturating_add(near);
        let mut earlier = false;
        for &(p, _, e, f) in entries[..u].iter().rev() {
            if p != pack || e < reach_left {
                break;
            }
            if f < first {
                earlier = true;
                break;
            }
        }
        if !earlier {
            for &(p, s, _, f) in &entries[u + 1..] {
                if p != pack || s > reach_right {
                    break;
                }
                if f < first {
                    earlier = true;
                    break;
                }
            }
        }
        flags[first as usize] = earlier;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_and_neighbours() {
        // 0:[100,200) 1:[5000,5100) 2:[210,300) 3:[100,200) again 4: other pack [220,230)
        let packs = [0, 0, 0, 0, 1];
        let starts = [100, 5000, 210, 100, 220];
        let ends = [200, 5100, 300, 200, 230];
        let got = near_read(&packs, &starts, &ends, 16);
        assert_eq!(got, vec![false, false, true, true, false]);
        // Reach counts from the entry's ends: 210 - 200 = 10 bytes apart.
        assert_eq!(
            near_read(&packs, &starts, &ends, 9),
            vec![false, false, false, true, false]
        );
    }
}
