//! Objects kept under a byte budget, the least recently used out first: the policy behind
//! the object reader's cache of delta bases (object_read.rs) and the walk's cache of the
//! objects it rebuilt (walk/odb.rs).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

pub struct Lru<K, V> {
    budget: u64,
    used: u64,
    clock: u64,
    /// key -> (value, its size, last use)
    map: HashMap<K, (V, u64, u64)>,
    /// Uses in time order, stale ones (older than the entry's last use) skipped on eviction.
    uses: VecDeque<(u64, K)>,
    pub evictions: u64,
}

impl<K: Copy + Eq + Hash, V> Lru<K, V> {
    pub fn new(budget: u64) -> Self {
        Lru {
            budget,
            used: 0,
            clock: 0,
            map: HashMap::new(),
            uses: VecDeque::new(),
            evictions: 0,
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The value of `key`, now its most recent use.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.clock += 1;
        let now = self.clock;
        let (value, _, used) = self.map.get_mut(key)?;
        *used = now;
        self.uses.push_back((now, *key));
        Some(value)
    }

    /// The value of `key`, to change, without counting as a use.
    pub fn peek_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key).map(|(value, _, _)| value)
    }

    /// Keep `value` (`size` bytes) for `key`, evicting the least recently used over budget.
    pub fn insert(&mut self, key: K, value: V, size: u64) {
        self.clock += 1;
        let now = self.clock;
        if let Some((_, old, _)) = self.map.insert(key, (value, size, now)) {
            self.used -= old;
        }
        self.used += size;
        self.uses.push_back((now, key));
        while self.used > self.budget {
            let Some((when, old)) = self.uses.pop_front() else {
                break;
            };
            if self.map.get(&old).is_some_and(|e| e.2 == when) {
                if let Some((_, size, _)) = self.map.remove(&old) {
                    self.used -= size;
                    self.evictions += 1;
                }
            }
        }
        if self.uses.len() > 4 * self.map.len() + 1024 {
            let map = &self.map;
            self.uses
                .retain(|(when, key)| map.get(key).is_some_and(|e| e.2 == *when));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_leave_first() {
        let mut lru = Lru::new(30);
        lru.insert(1, "a", 10);
        lru.insert(2, "b", 10);
        lru.insert(3, "c", 10);
        assert_eq!(lru.get(&1), Some(&"a"));
        lru.insert(4, "d", 10);
        // 2 was used least recently.
        assert!(lru.get(&2).is_none());
        assert_eq!(lru.get(&1), Some(&"a"));
        assert_eq!(lru.get(&3), Some(&"c"));
        assert_eq!(lru.get(&4), Some(&"d"));
        assert_eq!(lru.evictions, 1);
        *lru.peek_mut(&3).unwrap() = "C";
        assert_eq!(lru.get(&3), Some(&"C"));
    }
}
