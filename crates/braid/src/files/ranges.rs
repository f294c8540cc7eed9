//! Sets of byte ranges: what a receiver holds of a file.
//!
//! A peer chooses the ranges (a resuming receiver's `Ranges`, a sender's
//! blocks in any order), so every operation is logarithmic in the ranges
//! held, whatever their order: a tree keyed by start, not a sorted vector
//! that shifts on each insert.

use std::collections::BTreeMap;

/// Disjoint, sorted, non-adjacent half-open ranges [start, end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end.
    v: BTreeMap<u64, u64>,
    /// Bytes covered, kept as ranges come and merge.
    covered: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds [a, b), merging with whatever it touches: O(log n) and the
    /// ranges it swallows.
    pub fn insert(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        let (mut start, mut end) = (a, b);
        // The ranges that touch [a, b]: those starting at most b, back to the
        // first whose end falls before a.
        while let Some((&s, &e)) = self.v.range(..=end).next_back() {
            if e < start {
                break;
            }
            self.v.remove(&s);
            self.covered -= e - s;
            start = start.min(s);
            end = end.max(e);
        }
        self.v.insert(start, end);
        self.covered += end - start;
    }

    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// Bytes covered.
    pub fn covered(&self) -> u64 {
        self.covered
    }

    /// Whether [0, size) is wholly held.
    pub fn is_complete(&self, size: u64) -> bool {
        size == 0
            || self
                .v
                .first_key_value()
                .is_some_and(|(&a, &b)| a == 0 && b >= size)
    }

    /// The parts of [0, size) not held.
    pub fn missing(&self, size: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = 0;
        for (&a, &b) in &self.v {
            if a >= size {
                break;
            }
            if a > at {
                out.push((at, a));
            }
            at = at.max(b);
        }
        if at < size {
            out.push((at, size));
        }
        out
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.v.iter().map(|(&a, &b)| (a, b)).collect()
    }

    pub fn from_ranges(ranges: &[(u64, u64)]) -> Self {
        let mut s = Self::new();
        for &(a, b) in ranges {
            s.insert(a, b);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_overlapping_and_adjacent() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 30);
        assert_eq!(s.ranges(), [(10, 40)]);
        s.insert(0, 5);
        s.insert(50, 60);
        s.insert(3, 55);
        assert_eq!(s.ranges(), [(0, 60)]);
        s.insert(7, 7);
        assert_eq!(s.covered(), 60);
    }

    #[test]
    fn missing_is_the_complement_within_the_size() {
        let s = RangeSet::from_ranges(&[(10, 20), (30, 40), (90, 200)]);
        assert_eq!(s.missing(100), vec![(0, 10), (20, 30), (40, 90)]);
        assert_eq!(s.missing(15), vec![(0, 10)]);
        assert!(!s.is_complete(100));
        assert!(RangeSet::from_ranges(&[(0, 100)]).is_complete(100));
        assert!(RangeSet::new().is_complete(0));
        assert_eq!(RangeSet::new().missing(7), vec![(0, 7)]);
    }

    /// Ranges arriving in descending order (a resuming peer's, or blocks
    /// sent back to front) merge in time linear in their number, not
    /// quadratic: 1e6 of them in well under a second.
    #[test]
    fn descending_ranges_cost_no_more_than_ascending_ones() {
        let n = 1_000_000u64;
        let t = std::time::Instant::now();
        let mut s = RangeSet::new();
        for i in (0..n).rev() {
            s.insert(2 * i, 2 * i + 1);
        }
        assert_eq!(s.covered(), n);
        for i in (0..n).rev() {
            s.insert(2 * i + 1, 2 * i + 2);
        }
        assert!(s.is_complete(2 * n));
        assert_eq!(s.ranges(), [(0, 2 * n)]);
        // Generous: a vector that shifts on each insert takes minutes here.
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t.elapsed()
        );
    }

    proptest! {
        #[test]
        fn agrees_with_a_bitmap(ops in proptest::collection::vec((0u64..200, 0u64..40), 0..30)) {
            let mut s = RangeSet::new();
            let mut bits = [false; 240];
            for (a, l) in ops {
                s.insert(a, a + l);
                for b in &mut bits[a as usize..(a + l) as usize] { *b = true; }
            }
            prop_assert_eq!(s.covered(), bits.iter().filter(|b| **b).count() as u64);
            for w in s.ranges().windows(2) {
                prop_assert!(w[0].1 < w[1].0, "ranges must stay disjoint and apart: {:?}", s);
            }
            let missing: u64 = s.missing(240).iter().map(|(a, b)| b - a).sum();
            prop_assert_eq!(missing + s.covered(), 240);
        }
    }
}
