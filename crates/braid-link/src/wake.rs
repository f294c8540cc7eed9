//! How late the machine wakes braid-link from a timed sleep, and from it how
//! soon a frame must be due for braid-link to poll for it rather than sleep.
//!
//! braid-link sleeps until its next frame is due; a frame leaves as late as
//! the wake. Where the scheduler wakes within microseconds that is nothing,
//! but a virtual machine's timer can oversleep by tens to hundreds of them,
//! and that oversleep is the link's lateness. With `--busy-wait` braid-link
//! sleeps only until the next frame's due time less the margin this module
//! keeps, and polls the rest of the way: a core spent for accuracy, as
//! DPDK-based emulators spend theirs.
//!
//! The margin is the 99th percentile of the recent oversleeps, the machine's
//! own measured variability at the percentile lateness is judged at: a wait
//! longer than it ends in time 99 times in 100. Recent, because a machine's
//! wake latency follows its load; enough of them that the percentile rests on
//! about ten samples above it.

use crate::hist::Hist;

/// Oversleeps the margin is read from: the percentile below rests on the
/// largest hundredth of them, ten samples.
const WINDOW: usize = 1024;
/// The percentile of oversleeps a wait must beat.
const QUANTILE: f64 = 0.99;
/// Oversleeps recorded between two readings of the margin: it moves with the
/// machine's load, which changes over many sleeps, not every one.
const REFRESH: usize = WINDOW / 8;

#[derive(Clone, Debug)]
pub struct Wake {
    recent: Vec<u64>,
    scratch: Vec<u64>,
    next: usize,
    since: usize,
    margin: u64,
    all: Hist,
}

impl Default for Wake {
    fn default() -> Self {
        Wake {
            recent: Vec::with_capacity(WINDOW),
            scratch: Vec::with_capacity(WINDOW),
            next: 0,
            since: 0,
            margin: 0,
            all: Hist::default(),
        }
    }
}

impl Wake {
    /// One timed sleep ended `overslept_ns` after it was asked to.
    pub fn record(&mut self, overslept_ns: u64) {
        self.all.record(overslept_ns);
        if self.recent.len() < WINDOW {
            self.recent.push(overslept_ns);
        } else {
            self.recent[self.next] = overslept_ns;
        }
        self.next = (self.next + 1) % WINDOW;
        self.since += 1;
        // Until the window first fills, every sleep refreshes it: the first
        // oversleeps are all there is to go by.
        if self.since >= REFRESH || self.recent.len() < WINDOW {
            self.since = 0;
            // Read in a scratch copy kept from the last reading: no allocation
            // and no full sort on braid-link's loop, one selection.
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.recent);
            let n = self.scratch.len();
            let at = ((n as f64 * QUANTILE).ceil() as usize).clamp(1, n);
            self.margin = *self.scratch.select_nth_unstable(at - 1).1;
        }
    }

    /// How long before a frame is due braid-link stops sleeping and polls:
    /// the recent oversleeps' 99th percentile (0 before the first).
    pub fn margin(&self) -> u64 {
        self.margin
    }

    /// How long to sleep when the next frame is due in `due_in_ns`: `None`
    /// to poll instead (it is due sooner than the machine reliably wakes).
    pub fn sleep_for(&self, due_in_ns: u64) -> Option<u64> {
        (due_in_ns > self.margin).then(|| due_in_ns - self.margin)
    }

    /// Every oversleep recorded, for the stats.
    pub fn hist(&self) -> &Hist {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_margin_before_any_sleep() {
        let w = Wake::default();
        assert_eq!(w.margin(), 0);
        assert_eq!(w.sleep_for(5_000), Some(5_000));
        assert_eq!(w.sleep_for(0), None);
    }

    #[test]
    fn margin_is_the_recent_ninety_ninth_percentile() {
        let mut w = Wake::default();
        // 990 quick wakes and 34 slow ones: the slow tail is above 1 %.
        for i in 0..WINDOW as u64 {
            w.record(if i % 30 == 0 { 200_000 } else { 40_000 });
        }
        assert_eq!(w.margin(), 200_000);
        // The same with the slow ones under 1 %: the margin is a quick wake.
        let mut w = Wake::default();
        for i in 0..WINDOW as u64 {
            w.record(if i % 200 == 0 { 200_000 } else { 40_000 });
        }
        assert_eq!(w.margin(), 40_000);
    }

    #[test]
    fn margin_follows_the_machine() {
        let mut w = Wake::default();
        for _ in 0..WINDOW {
            w.record(150_000);
        }
        assert_eq!(w.margin(), 150_000);
        // The machine quietens: once a window of quick wakes has passed
        // the slow ones no longer set the margin.
        for _ in 0..WINDOW {
            w.record(5_000);
        }
        assert_eq!(w.margin(), 5_000);
        // Every oversleep stays in the histogram.
        assert!(w.hist().quantile(1.0) >= 150_000);
    }

    #[test]
    fn sleeps_until_the_margin_before_the_frame() {
        let mut w = Wake::default();
        w.record(30_000);
        assert_eq!(w.margin(), 30_000);
        assert_eq!(w.sleep_for(100_000), Some(70_000));
        assert_eq!(w.sleep_for(30_000), None);
        assert_eq!(w.sleep_for(10_000), None);
    }
}
