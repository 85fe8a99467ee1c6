//! Traversals over delta forests given as arrays, for the write orders (packorder/orders/):
//! the policy (which phase, which roots, in which order) stays in Python; these are the loops
//! over millions of nodes that Python cannot run fast.

/// Append the families rooted at `roots` (in that order) to `out`, skipping nodes already
/// `filled`: each root, then each group of siblings whole, depth first (the children of `v`
/// are `child[start[v]..start[v + 1]]`, in the order siblings are to be written). This is Git's
/// add_descendants_to_write_order.
pub fn add_families(
    roots: &[i64],
    start: &[i64],
    child: &[i64],
    filled: &mut [bool],
    out: &mut Vec<i64>,
) {
    let mut stack: Vec<i64> = Vec::new();
    let add = |v: i64, filled: &mut [bool], out: &mut Vec<i64>| {
        let f = &mut filled[v as usize];
        if !*f {
            *f = true;
            out.push(v);
        }
    };
    for &root in roots {
        add(root, filled, out);
        stack.push(root);
        while let Some(node) = stack.pop() {
            let group = &child[start[node as usize] as usize..start[node as usize + 1] as usize];
            for &c in group {
                add(c, filled, out);
            }
            stack.extend(group.iter().rev());
        }
    }
}

/// `order` with each delta's base moved just before the delta if it came later, following
/// chains to their root (Git's write_one). None if the bases form a cycle.
pub fn bases_first(order: &[i64], base: &[i64]) -> Option<Vec<i64>> {
    let n = base.len();
    let mut written = vec![false; n];
    let mut out = Vec::with_capacity(order.len());
    let mut chain = Vec::new();
    for &i in order {
        if written[i as usize] {
            continue;
        }
        chain.clear();
        chain.push(i);
        let mut b = base[i as usize];
        while b >= 0 && !written[b as usize] {
            chain.push(b);
            if chain.len() > n {
                return None;
            }
            b = base[b as usize];
        }
        for &j in chain.iter().rev() {
            written[j as usize] = true;
            out.push(j);
        }
    }
    Some(out)
}

/// The root of each node's delta chain (itself for a whole object) and its depth (links to
/// the root), for a forest given as `base` (-1 for a root). One pass: a chain is walked up
/// to the first node already known, then filled in on the way back, so each node is
/// visited a bounded number of times however deep the chains. None if the bases form a
/// cycle (or point outside the forest).
pub fn roots_and_depths(base: &[i64]) -> Option<(Vec<i64>, Vec<i64>)> {
    let n = base.len();
    const UNKNOWN: i64 = -1;
    let mut root = vec![UNKNOWN; n];
    let mut depth = vec![0i64; n];
    let mut path: Vec<usize> = Vec::new();
    for start in 0..n {
        if root[start] != UNKNOWN {
            continue;
        }
        path.clear();
        let mut v = start;
        // Climb until a root or a node whose answer is known.
        let (top_root, top_depth) = loop {
            if root[v] != UNKNOWN {
                break (root[v], depth[v]);
            }
            path.push(v);
            if path.len() > n {
                return None;
            }
            let b = base[v];
            if b < 0 {
                let top = path.pop()?;
                root[top] = top as i64;
                depth[top] = 0;
                break (top as i64, 0);
            }
            if b as usize >= n {
                return None;
            }
            v = b as usize;
        };
        let mut d = top_depth;
        while let Some(u) = path.pop() {
            d += 1;
            root[u] = top_root;
            depth[u] = d;
        }
    }
    Some((root, depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_write_sibling_groups_depth_first() {
        // 0 -> {1, 2}; 1 -> {3}; 2 -> {4, 5}
        let start = [0, 2, 3, 5, 5, 5, 5];
        let child = [1, 2, 3, 4, 5];
        let mut filled = vec![false; 6];
        filled[2] = true;
        let mut out = Vec::new();
        add_families(&[0], &start, &child, &mut filled, &mut out);
        assert_eq!(out, vec![0, 1, 3, 4, 5]);
    }

    #[test]
    fn bases_move_before_their_deltas() {
        let base = [-1, 0, 1, -1];
        assert_eq!(bases_first(&[2, 3, 0, 1], &base).unwrap(), vec![0, 1, 2, 3]);
        assert!(bases_first(&[0], &[1, 0]).is_none());
    }

    #[test]
    fn roots_and_depths_of_chains_and_cycles() {
        // 0 <- 1 <- 2, 3 alone, 4 <- 5 with 5 listed before its base's base.
        let base = [-1, 0, 1, -1, -1, 4];
        let (roots, depths) = roots_and_depths(&base).unwrap();
        assert_eq!(roots, vec![0, 0, 0, 3, 4, 4]);
        assert_eq!(depths, vec![0, 1, 2, 0, 0, 1]);
        let deep: Vec<i64> = (-1..99_999).collect(); // one chain 100,000 deep
        let (roots, depths) = roots_and_depths(&deep).unwrap();
        assert!(roots.iter().all(|&r| r == 0) && depths[99_999] == 99_999);
        assert!(roots_and_depths(&[1, 0]).is_none());
        assert!(roots_and_depths(&[2]).is_none());
    }
}
