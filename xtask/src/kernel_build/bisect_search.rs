//! Which states of a patch series `patches size-bisect` measures, and the
//! steps the measured sizes show.
//!
//! State `k` of a range of `n` patches is the base with the range's first
//! `k` patches applied (0 ≤ k ≤ n). Both ends are measured first; then,
//! while the build budget lasts, the segment between two measured states
//! with the largest size change (in bytes, either sign) that still holds
//! more than one patch is halved at its middle state. So the budget goes
//! to the largest steps, as a binary search would find one step: with
//! `n` patches and one patch causing the growth, `2 + ceil(log2 n)` builds
//! name it. A segment whose patches cancel out (+X and −X) shows no change
//! and is split last: bisection cannot see inside it until the budget
//! reaches it.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

/// The measured states of one bisection and what to measure next.
#[derive(Debug, Clone)]
pub struct Search {
    patches: usize,
    builds: usize,
    sizes: BTreeMap<usize, u64>,
}

/// The patches between two measured states and the size change across
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The first patch of the segment, as an index into the range (state
    /// `from` is measured).
    pub from: usize,
    /// One past its last patch (state `to` is measured).
    pub to: usize,
    /// Size of state `to` minus size of state `from`, in bytes.
    pub delta: i64,
}

impl Segment {
    /// How many patches the segment holds (at least 1).
    pub fn patches(&self) -> usize {
        self.to - self.from
    }

    /// Whether it is one patch: its change is that patch's.
    pub fn is_one_patch(&self) -> bool {
        self.patches() == 1
    }
}

impl Search {
    /// A bisection of `patches` patches (at least 1) with at most `builds`
    /// measured states (at least 2: both ends). More than `patches + 1`
    /// is allowed and measures every state.
    ///
    /// Errors: no patch, or a budget below 2.
    pub fn new(patches: usize, builds: usize) -> Result<Search> {
        if patches == 0 {
            bail!("the range to bisect has no patch");
        }
        if builds < 2 {
            bail!("--builds {builds}: a bisection measures at least both ends (--builds 2)");
        }
        Ok(Search {
            patches,
            builds,
            sizes: BTreeMap::new(),
        })
    }

    /// The number of patches in the range.
    pub fn patches(&self) -> usize {
        self.patches
    }

    /// The state to measure next: 0, then `n`, then the middle of the
    /// segment with the largest change (ties: the longer, then the
    /// earlier); `None` when the budget is spent or every segment is one
    /// patch.
    pub fn next(&self) -> Option<usize> {
        for end in [0, self.patches] {
            if !self.sizes.contains_key(&end) {
                return Some(end);
            }
        }
        if self.sizes.len() >= self.builds {
            return None;
        }
        self.segments()
            .into_iter()
            .filter(|s| !s.is_one_patch())
            .max_by(|a, b| {
                (a.delta.unsigned_abs(), a.patches())
                    .cmp(&(b.delta.unsigned_abs(), b.patches()))
                    .then(b.from.cmp(&a.from))
            })
            .map(|s| s.from + s.patches() / 2)
    }

    /// Records state `k`'s size in bytes.
    pub fn record(&mut self, k: usize, size: u64) {
        assert!(k <= self.patches, "state {k} of {} patches", self.patches);
        self.sizes.insert(k, size);
    }

    /// The measured states and their sizes, in order.
    pub fn sizes(&self) -> &BTreeMap<usize, u64> {
        &self.sizes
    }

    /// The segments between consecutive measured states, in series order;
    /// their changes add up to the whole range's.
    pub fn segments(&self) -> Vec<Segment> {
        let points: Vec<(usize, u64)> = self.sizes.iter().map(|(k, s)| (*k, *s)).collect();
        points
            .windows(2)
            .map(|w| Segment {
                from: w[0].0,
                to: w[1].0,
                delta: w[1].1 as i64 - w[0].1 as i64,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search over `effects` (each patch's change in bytes) with
    /// `builds`, from a base of 1,000,000 bytes; returns the states
    /// measured in order and the final segments.
    fn run(effects: &[i64], builds: usize) -> (Vec<usize>, Vec<Segment>) {
        let mut search = Search::new(effects.len(), builds).unwrap();
        let mut order = Vec::new();
        while let Some(k) = search.next() {
            assert!(!order.contains(&k), "state {k} measured twice");
            order.push(k);
            let size = 1_000_000 + effects[..k].iter().sum::<i64>();
            search.record(k, size as u64);
        }
        (order, search.segments())
    }

    #[test]
    fn one_growing_patch_is_named_in_two_plus_log2_builds() {
        // 16 patches, the 11th (index 10) grows the image by 4 KiB.
        let mut effects = vec![0; 16];
        effects[10] = 4096;
        let (order, segments) = run(&effects, 2 + 4);
        assert_eq!(order, vec![0, 16, 8, 12, 10, 11]);
        let step = segments.iter().find(|s| s.delta == 4096).unwrap();
        assert_eq!((step.from, step.to), (10, 11));
    }

    #[test]
    fn the_budget_goes_to_the_largest_segment_first() {
        // Two growers of different size in different halves.
        let effects = [0, 0, 100, 0, 0, 0, 5000, 0];
        let (order, segments) = run(&effects, 5);
        // After 0, 8: [0,8] (+5100) → 4; [4,8] (+5000) beats [0,4] (+100) → 6;
        // [6,8] (+5000) → 7. Budget spent: [0,4] stays whole.
        assert_eq!(order, vec![0, 8, 4, 6, 7]);
        assert_eq!(
            segments,
            vec![
                Segment {
                    from: 0,
                    to: 4,
                    delta: 100
                },
                Segment {
                    from: 4,
                    to: 6,
                    delta: 0
                },
                Segment {
                    from: 6,
                    to: 7,
                    delta: 5000
                },
                Segment {
                    from: 7,
                    to: 8,
                    delta: 0
                },
            ]
        );
    }

    #[test]
    fn segment_changes_add_up_to_the_whole_range() {
        let effects = [12, -40, 7, 300, -300, 1, 0, 9, -2];
        for builds in 2..=12 {
            let (order, segments) = run(&effects, builds);
            assert_eq!(order.len(), builds.min(effects.len() + 1));
            let total: i64 = segments.iter().map(|s| s.delta).sum();
            assert_eq!(total, effects.iter().sum::<i64>(), "builds {builds}");
            assert_eq!(segments.first().unwrap().from, 0);
            assert_eq!(segments.last().unwrap().to, effects.len());
        }
    }

    #[test]
    fn enough_builds_measure_every_patch() {
        let effects = [3, -1, 4, 1, -5];
        let (order, segments) = run(&effects, 100);
        assert_eq!(order.len(), 6);
        let deltas: Vec<i64> = segments.iter().map(|s| s.delta).collect();
        assert_eq!(deltas, effects);
    }

    #[test]
    fn a_cancelling_segment_is_split_after_the_changing_ones() {
        // [0,2] cancels out (+500 −500); [2,4] changes by 10.
        let effects = [500, -500, 10, 0];
        let (order, _) = run(&effects, 4);
        assert_eq!(order, vec![0, 4, 2, 3]);
    }

    #[test]
    fn one_patch_needs_only_its_two_ends() {
        let (order, segments) = run(&[77], 10);
        assert_eq!(order, vec![0, 1]);
        assert_eq!(
            segments,
            vec![Segment {
                from: 0,
                to: 1,
                delta: 77
            }]
        );
    }

    #[test]
    fn a_budget_below_two_or_an_empty_range_is_refused() {
        let err = Search::new(3, 1).unwrap_err().to_string();
        assert!(err.contains("--builds 1"), "{err}");
        assert!(Search::new(0, 5).is_err());
    }
}
