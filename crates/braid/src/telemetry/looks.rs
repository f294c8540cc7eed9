//! Looks at a session's streams between its steer's ticks, each stream's
//! taken by its own sender between two writes.
//!
//! A steer's thread that woke for each look would spend more on the wake
//! than on the look (a wake costs tens of µs of CPU, reading a socket's
//! TCP_INFO a quarter of one); and a thread that reads every stream's
//! socket waits on each one a sender is writing to (the kernel reads
//! TCP_INFO under the socket's lock). A stream's sender is awake anyway,
//! each time an ACK frees room in its socket's buffer, and reads its own
//! socket between its writes, when nobody holds it: the look costs the
//! read alone. The steer's thread takes the looks at its next tick. A
//! stream whose sender is not writing (nothing left to send, a stalled
//! path) is not looked at; the tick's own reading sees it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::proto::steer::Looks;

/// A stream's `due` when no look is asked of it.
const NONE: u64 = u64::MAX;

/// Looks kept for the steer at most: more than a tick asks of every stream
/// auto may carry (8 looks of 32 streams). A steer's thread late by many
/// ticks loses the oldest, which its tick would not read (it reads the
/// round trip before it).
pub const KEPT: usize = 1024;

/// The steer's plan of looks and the looks taken: each a `T` of one stream,
/// with when it was taken.
pub struct LookPlan<T> {
    epoch: Instant,
    /// When each stream's next look falls due, ns from `epoch`; or NONE.
    due: Vec<AtomicU64>,
    every: AtomicU64,
    /// The next tick (ns from `epoch`): the looks it asked end there.
    until: AtomicU64,
    taken: Mutex<VecDeque<(Instant, usize, T)>>,
}

impl<T> LookPlan<T> {
    /// A plan for streams `0..streams`.
    pub fn new(epoch: Instant, streams: usize) -> Self {
        LookPlan {
            epoch,
            due: (0..streams).map(|_| AtomicU64::new(NONE)).collect(),
            every: AtomicU64::new(0),
            until: AtomicU64::new(0),
            taken: Mutex::new(VecDeque::new()),
        }
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Asks each stream for looks from `first`, one every `every`, until
    /// `until` (the next tick); None asks for none. It replaces the plan
    /// before it.
    pub fn plan(&self, looks: Option<(Instant, Duration)>, until: Instant) {
        let first = match looks.filter(|(f, e)| *f < until && !e.is_zero()) {
            Some((first, every)) => {
                self.every.store(every.as_nanos() as u64, Ordering::Relaxed);
                self.until.store(self.ns(until), Ordering::Relaxed);
                self.ns(first)
            }
            None => NONE,
        };
        for d in &self.due {
            d.store(first, Ordering::Release);
        }
    }

    /// Takes stream `stream`'s look if one is due: `read` reads it (None:
    /// it could not). Whether one was due. Cheap when none is: an atomic
    /// load and (when one is planned) the clock.
    pub fn take_if_due(&self, stream: usize, read: impl FnOnce() -> Option<T>) -> bool {
        let Some(slot) = self.due.get(stream) else {
            return false;
        };
        let due = slot.load(Ordering::Acquire);
        if due == NONE {
            return false;
        }
        let now = self.ns(Instant::now());
        if now < due {
            return false;
        }
        // The next on the plan's grid after now: a sender that came late
        // does not move the looks off the round trip the tick reads.
        let until = self.until.load(Ordering::Relaxed);
        let next = Looks::next_on_grid(due, self.every.load(Ordering::Relaxed), now);
        // A sender late past the tick has no look before it to take.
        let late = now >= until;
        let next = if next >= until { NONE } else { next };
        // Claimed before it is read: a stream's old connection's sender and
        // its new one's take it once; a plan made meanwhile (a tick) stands.
        if slot
            .compare_exchange(due, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
            || late
        {
            return false;
        }
        if let Some(seen) = read() {
            let at = Instant::now();
            let mut taken = self.taken.lock().unwrap();
            if taken.len() == KEPT {
                taken.pop_front();
            }
            taken.push_back((at, stream, seen));
        }
        true
    }

    /// The looks taken since the last call, oldest first.
    pub fn take(&self) -> Vec<(Instant, usize, T)> {
        let mut taken: Vec<_> = self.taken.lock().unwrap().drain(..).collect();
        taken.sort_by_key(|(at, _, _)| *at);
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const LONG: Duration = Duration::from_secs(100);

    #[test]
    fn a_streams_look_is_taken_once_when_due_and_then_on_the_grid() {
        let p = LookPlan::new(Instant::now(), 2);
        assert!(!p.take_if_due(0, || Some(0)), "none asked for");
        let now = Instant::now();
        p.plan(Some((now + 400 * MS, 100 * MS)), now + LONG);
        assert!(!p.take_if_due(0, || Some(1)), "not due yet");
        p.plan(Some((now, 100 * MS)), now + LONG);
        assert!(p.take_if_due(0, || Some(2)));
        assert!(
            !p.take_if_due(0, || Some(3)),
            "taken once: the next is a grid step on"
        );
        assert!(p.take_if_due(1, || Some(4)), "each stream has its own");
        std::thread::sleep(120 * MS);
        assert!(
            p.take_if_due(0, || Some(5)),
            "a late sender takes the one due"
        );
        assert!(
            !p.take_if_due(0, || Some(6)),
            "and not the one it was late past"
        );
        assert!(p.take_if_due(1, || None), "one that could not be read");
        assert!(!p.take_if_due(2, || Some(7)), "no such stream");
        let taken = p.take();
        let seen: Vec<_> = taken.iter().map(|t| (t.1, t.2)).collect();
        assert_eq!(seen, vec![(0, 2), (1, 4), (0, 5)]);
        assert!(taken.windows(2).all(|w| w[0].0 <= w[1].0), "oldest first");
        assert!(p.take().is_empty(), "each look is told once");
    }

    #[test]
    fn looks_end_at_the_next_tick_and_a_new_plan_replaces_the_old() {
        let p = LookPlan::new(Instant::now(), 1);
        let now = Instant::now();
        p.plan(Some((now, 5 * MS)), now + 5 * MS);
        assert!(p.take_if_due(0, || Some(1)));
        std::thread::sleep(10 * MS);
        assert!(!p.take_if_due(0, || Some(2)), "none at or after the tick");
        p.plan(Some((now, 20 * MS)), now + 5 * MS);
        assert!(
            !p.take_if_due(0, || Some(3)),
            "not one due before the tick, taken after it"
        );
        p.plan(Some((now + 5 * MS, 5 * MS)), now + 5 * MS);
        assert!(
            !p.take_if_due(0, || Some(3)),
            "a first look at the tick is none"
        );
        p.plan(Some((Instant::now(), 5 * MS)), Instant::now() + LONG);
        p.plan(None, Instant::now() + LONG);
        assert!(!p.take_if_due(0, || Some(4)), "no looks asked: none taken");
        assert_eq!(p.take().len(), 1);
    }

    #[test]
    fn the_looks_kept_are_bounded_and_the_newest() {
        let p = LookPlan::new(Instant::now(), 1);
        for i in 0..KEPT + 10 {
            p.plan(Some((Instant::now(), MS)), Instant::now() + LONG);
            assert!(p.take_if_due(0, || Some(i)));
        }
        let taken = p.take();
        assert_eq!(taken.len(), KEPT);
        assert_eq!(taken[0].2, 10, "the oldest went first");
    }

    #[test]
    fn two_senders_of_one_stream_take_each_look_once() {
        let p = std::sync::Arc::new(LookPlan::new(Instant::now(), 1));
        let now = Instant::now();
        p.plan(Some((now, 2 * MS)), now + 60 * MS);
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let p = std::sync::Arc::clone(&p);
                std::thread::spawn(move || {
                    let end = Instant::now() + 80 * MS;
                    while Instant::now() < end {
                        p.take_if_due(0, || Some(()));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // At most one a grid step (2 ms) over the 60 ms the plan runs: a
        // look taken twice would be more.
        let taken = p.take().len();
        assert!(
            (10..=30).contains(&taken),
            "{taken} looks over 30 grid steps"
        );
    }
}
