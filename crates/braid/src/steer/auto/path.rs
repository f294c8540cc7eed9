//! What auto knows of the path, from its streams' TCP_INFO on each tick:
//! pure estimators, each with its own tests.
//!
//! - [`Delay`]: the propagation delay (the smallest RTT any stream saw) and
//!   the queue (the lowest smoothed RTT above it of the streams acknowledged
//!   at the tick: a queue at the bottleneck is in all of them; and the least
//!   of that over the last round trip, looked at eight times a tick: what
//!   drained within a round trip was a burst's, CoDel's reading of a
//!   standing queue); a queue
//!   *stands* when it is above the threshold Linux's HyStart uses to call a
//!   queue grown (an eighth of the base RTT, within 4..16 ms), or above half
//!   the deepest queue seen, if that is less (a buffer shallower than
//!   HyStart's threshold never holds that much), and never below 2 ms. It
//!   *rises* above half that, measured above the floor the path showed
//!   while it had room (others left a margin the group gave up untaken):
//!   short flows' bursts into a shallow buffer, an AQM's few packets.
//! - [`Delivered`]: the group's payload acknowledged, summed over streams
//!   whose connections may be replaced (a new connection's counter starts
//!   at zero), and its rate over a span of ticks.
//! - [`Spread`]: how much the group's rate varies from tick to tick, as a
//!   coefficient of variation: how far below what it measures a cap must be
//!   to stay clear of the path's own noise.
//! - [`Held`]: how much of what the streams moved at a tick their own
//!   buffers (the sending socket's, or the receiver's window) held rather
//!   than their congestion windows, from the kernel's chronographs and from
//!   windows the streams do not fill: streams so held move what the hosts
//!   let them, not what the path would.

use std::collections::VecDeque;
use std::time::Duration;

use crate::proto::steer::StreamView;

/// HyStart's queue threshold: base / 8, within these (Linux tcp_cubic.c).
const STANDING_MIN: Duration = Duration::from_millis(4);
const STANDING_MAX: Duration = Duration::from_millis(16);
/// Below this a smoothed RTT's rise is a host's scheduling and a link's
/// jitter, not a queue.
pub const NOISE: Duration = Duration::from_millis(1);
/// A standing queue is twice the noise at least.
const STANDING_FLOOR: Duration = Duration::from_millis(2);
/// Looks at the streams' RTTs a tick (`Delay::sample`), as Linux HyStart
/// takes the least of eight RTT samples for a round trip's delay
/// (HYSTART_MIN_SAMPLES, tcp_cubic.c).
pub const LOOKS_PER_TICK: u32 = 8;

/// The base RTT and the queue above it.
#[derive(Clone, Debug, Default)]
pub struct Delay {
    base_us: Option<u32>,
    /// The queue at the last tick, µs.
    pub queue_us: u32,
    /// The deepest queue seen before the last tick, µs: what the
    /// bottleneck's buffer holds, at least.
    deepest_us: u32,
    /// The threshold at the last tick.
    threshold: Duration,
    /// The queue the path shows while it has room (`set_floor`), µs: what a
    /// rising queue is measured above.
    floor_us: u32,
    /// Per stream: what it had acknowledged at the last look (a tick's or a
    /// sample's), bytes: an RTT with nothing acknowledged since is not new.
    seen: Vec<u64>,
    /// The samples since the last tick that read a new RTT: when, and the
    /// lowest of the streams' RTTs, µs. Only the last round trip's are kept.
    looks: VecDeque<(Duration, u32)>,
}

impl Delay {
    /// Reads one tick's streams (`acked`: whether stream `i` had anything
    /// acknowledged since the tick before): the base RTT can only fall.
    pub fn note(&mut self, streams: &[StreamView], acked: impl Fn(usize) -> bool) {
        let carrying: Vec<_> = streams
            .iter()
            .filter(|s| s.wanted)
            .filter_map(|s| s.info.as_ref().map(|i| (s.stream, i)))
            .filter(|(_, i)| i.srtt_us > 0)
            .collect();
        for (_, i) in &carrying {
            let m = if i.min_rtt_us > 0 {
                i.min_rtt_us
            } else {
                i.srtt_us
            };
            self.base_us = Some(self.base_us.map_or(m, |b| b.min(m)));
        }
        let Some(base) = self.base_us else { return };
        // The lowest smoothed RTT of the streams acknowledged at this tick: a
        // queue at the bottleneck is in every stream's RTT, and what one stream
        // has above the lowest is its own (a receiver's stall; a sparse stream's
        // delayed ACKs, which wait for a second packet, and Linux times a
        // cumulative ACK from the oldest packet it covers). A stream with
        // nothing acknowledged since the tick before has no new sample: its RTT
        // is of the path as it was. With none acknowledged, nothing is new.
        //
        // And the least of that over the last round trip's looks (`sample`):
        // a queue that drained within a round trip was a burst's (the
        // hosts' scheduling, a stream's recovery, ACKs that came bunched),
        // which the bottleneck sent at the rate it came and left behind; the
        // queue that stood through it is the one that holds the path (CoDel's
        // standing queue, the least sojourn over an interval of a round trip).
        let sampled = self.looks.drain(..).map(|(_, us)| us).min();
        self.look(streams);
        let now = carrying
            .iter()
            .filter(|(s, _)| acked(*s))
            .map(|(_, i)| i.srtt_us)
            .min();
        let Some(lowest) = now.into_iter().chain(sampled).min() else {
            return;
        };
        self.queue_us = lowest.saturating_sub(base);
        // Against what was seen before: a queue is not measured by itself.
        self.threshold = self.threshold_now();
        // What the buffer holds at least is the deepest queue any reading
        // showed, a burst's too: the tick's own reading, not the least.
        let deepest = now.map_or(self.queue_us, |n| n.saturating_sub(base));
        self.deepest_us = self.deepest_us.max(deepest);
    }

    /// One look (`LOOKS_PER_TICK` a tick, the tick's own the last), `at` the time
    /// since the session began: the lowest smoothed RTT of the carrying
    /// streams acknowledged since the last look. A tick reads the least of
    /// the looks over the round trip before the last of them: on a path
    /// shorter than a tick, a queue that stood through a round trip is not
    /// a burst's, whether it drained later in the tick or not.
    pub fn sample(&mut self, at: Duration, streams: &[StreamView]) {
        if let Some(l) = self.look(streams) {
            self.looks.push_back((at, l));
        }
        let span = self.base().unwrap_or(Duration::ZERO);
        while self
            .looks
            .front()
            .is_some_and(|(t, _)| at.saturating_sub(*t) > span)
        {
            self.looks.pop_front();
        }
    }

    /// Notes what each stream had acknowledged; the lowest smoothed RTT of
    /// the carrying streams that had anything acknowledged since the last
    /// look (a new connection's counter, lower than the old one's, is new).
    fn look(&mut self, streams: &[StreamView]) -> Option<u32> {
        let mut lowest = None::<u32>;
        for s in streams {
            let Some(i) = &s.info else { continue };
            if self.seen.len() <= s.stream {
                self.seen.resize(s.stream + 1, 0);
            }
            let new = i.bytes_acked != self.seen[s.stream];
            self.seen[s.stream] = i.bytes_acked;
            if new && s.wanted && i.srtt_us > 0 {
                lowest = Some(lowest.map_or(i.srtt_us, |l| l.min(i.srtt_us)));
            }
        }
        lowest
    }

    fn threshold_now(&self) -> Duration {
        let hystart =
            (self.base().unwrap_or(STANDING_MIN * 8) / 8).clamp(STANDING_MIN, STANDING_MAX);
        if self.deepest_us == 0 {
            return hystart;
        }
        let half_deepest = Duration::from_micros(self.deepest_us as u64 / 2);
        hystart.min(half_deepest.max(STANDING_FLOOR))
    }

    pub fn base(&self) -> Option<Duration> {
        self.base_us.map(|b| Duration::from_micros(b as u64))
    }

    /// The queue above which it stands, for this path (at the last tick).
    pub fn threshold(&self) -> Duration {
        if self.threshold.is_zero() {
            self.threshold_now()
        } else {
            self.threshold
        }
    }

    /// The queue at the last tick.
    pub fn queue(&self) -> Duration {
        Duration::from_micros(self.queue_us as u64)
    }

    /// Whether a queue stands at the last tick.
    pub fn standing(&self) -> bool {
        self.base_us.is_some() && self.queue() > self.threshold()
    }

    /// Whether a queue rises at the last tick: above half the threshold
    /// (and the RTT's noise), as a full path under an AQM, or under a steer
    /// like auto's, holds it; and by that much above the queue the path
    /// shows while it has room (`set_floor`).
    pub fn rising(&self) -> bool {
        self.queue() > (self.threshold() / 2 + self.floor()).max(NOISE)
    }

    /// The queue the path showed while it had room (others left untaken a
    /// margin the group gave up): short flows' bursts into a shallow buffer,
    /// an AQM's few packets, the hosts' own scheduling. None of it says the
    /// path is full, and the rise of a queue that does is measured above it.
    /// At most half the threshold: a queue above that at most of the ticks
    /// would have been a rising one, the room taken.
    pub fn set_floor(&mut self, floor: Duration) {
        let most = self.threshold() / 2;
        self.floor_us = floor.min(most).as_micros() as u32;
    }

    /// The queue the path showed while it had room, as last measured; within
    /// half the threshold as it is now, which falls with the base RTT, so
    /// that a standing queue always rises.
    pub fn floor(&self) -> Duration {
        Duration::from_micros(self.floor_us as u64).min(self.threshold() / 2)
    }
}

/// The group's payload delivered, through replaced connections: the
/// packets the receiver has, by the kernel's count (`tcpi_delivered`: those
/// selectively acknowledged as they are, those acknowledged cumulatively
/// that were not), at the stream's MSS.
///
/// Not the bytes acknowledged cumulatively: after a loss those stop at the
/// hole until its retransmission is answered, a round trip or more, while
/// the bottleneck goes on sending the packets behind it. On a long path with
/// many streams in recovery (the drops new streams' slow start brings) the
/// acknowledged bytes fall short of the bottleneck's rate (µ) for round
/// trips on end, a queue standing all the while, then run ahead of it when
/// the holes fill; what the receiver has is what µ measures.
#[derive(Clone, Debug, Default)]
pub struct Delivered {
    /// Per stream: its current connection's count of packets delivered at the last tick.
    last: Vec<u32>,
    /// Per stream: what it delivered over the last tick, bytes (None: it
    /// said nothing, or delivered nothing: no data of it is in flight).
    moved: Vec<Option<u64>>,
    total: u64,
    /// (elapsed, total) at each tick of the last spans asked for.
    history: VecDeque<(Duration, u64)>,
    keep: Duration,
}

impl Delivered {
    /// Keeps enough ticks to answer for spans up to `keep`.
    pub fn new(keep: Duration) -> Self {
        Delivered {
            keep,
            ..Default::default()
        }
    }

    pub fn note(&mut self, now: Duration, streams: &[StreamView]) {
        self.moved.iter_mut().for_each(|m| *m = None);
        for s in streams {
            if self.last.len() <= s.stream {
                self.last.resize(s.stream + 1, 0);
                self.moved.resize(s.stream + 1, None);
            }
            let Some(info) = &s.info else { continue };
            let delivered = info.delivered;
            let before = self.last[s.stream];
            // A counter that went down is a new connection's: all it says is
            // new. (A 32-bit count of one connection's packets wraps after
            // some 6 TB: that tick's count is short, once.)
            let packets = if delivered >= before {
                delivered - before
            } else {
                delivered
            };
            let new = packets as u64 * info.mss as u64;
            self.total += new;
            self.moved[s.stream] = (new > 0).then_some(new);
            self.last[s.stream] = delivered;
        }
        self.history.push_back((now, self.total));
        while self
            .history
            .front()
            .is_some_and(|(t, _)| now.saturating_sub(*t) > self.keep)
        {
            self.history.pop_front();
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether stream `i` had anything delivered over the last tick.
    pub fn acked(&self, i: usize) -> bool {
        self.moved(i).is_some()
    }

    /// What stream `i` had delivered over the last tick, bytes (None:
    /// nothing).
    pub fn moved(&self, i: usize) -> Option<u64> {
        self.moved.get(i).copied().flatten()
    }

    /// What each of the first `n` streams moved over the last tick, bytes a
    /// second (None: nothing of it was acknowledged, so none is in flight).
    pub fn last_tick(&self, n: usize) -> Vec<Option<f64>> {
        let mut ticks = self.history.iter().rev();
        let secs = match (ticks.next(), ticks.next()) {
            (Some((now, _)), Some((then, _))) => now.saturating_sub(*then).as_secs_f64(),
            _ => 0.0,
        };
        (0..n)
            .map(|i| {
                let b = self.moved(i)?;
                (secs > 0.0).then(|| b as f64 / secs)
            })
            .collect()
    }

    /// The most it moved, bytes per second, over any `window` within the
    /// last `span` (ticks apart by `window` at least).
    pub fn most(&self, span: Duration, window: Duration) -> Option<f64> {
        let &(now, _) = self.history.back()?;
        let within: Vec<&(Duration, u64)> = self
            .history
            .iter()
            .filter(|(t, _)| now.saturating_sub(*t) <= span)
            .collect();
        within
            .iter()
            .enumerate()
            .filter_map(|(i, &&(end, total))| {
                let &&(start, before) = within[..i]
                    .iter()
                    .rev()
                    .find(|(t, _)| end.saturating_sub(*t) >= window)?;
                let secs = (end - start).as_secs_f64();
                (secs > 0.0).then(|| (total - before) as f64 / secs)
            })
            .reduce(f64::max)
    }

    /// Bytes per second over the last `span` (or as much of it as is known).
    pub fn rate(&self, span: Duration) -> Option<f64> {
        let &(now, total) = self.history.back()?;
        let &(then, before) = self
            .history
            .iter()
            .find(|(t, _)| now.saturating_sub(*t) <= span)?;
        let secs = (now - then).as_secs_f64();
        (secs > 0.0).then(|| (total - before) as f64 / secs)
    }
}

/// How much a rate varies from one sample to the next, over its mean: the
/// Allan deviation (half the mean square of successive differences, rooted),
/// which a slow drift of the rate (a source beside it that varies, a cap that
/// follows the path) leaves out, where a standard deviation would count it.
#[derive(Clone, Debug)]
pub struct Spread {
    samples: VecDeque<f64>,
    keep: usize,
}

impl Spread {
    pub fn new(keep: usize) -> Self {
        Spread {
            samples: VecDeque::new(),
            keep,
        }
    }

    pub fn note(&mut self, rate: f64) {
        self.samples.push_back(rate);
        if self.samples.len() > self.keep {
            self.samples.pop_front();
        }
    }

    /// The Allan deviation over the mean; None until there are a few samples.
    pub fn cv(&self) -> Option<f64> {
        if self.samples.len() < 4 {
            return None;
        }
        let n = self.samples.len() as f64;
        let mean = self.samples.iter().sum::<f64>() / n;
        if mean <= 0.0 {
            return None;
        }
        let (a, b) = self.samples.as_slices();
        let all: Vec<f64> = a.iter().chain(b).copied().collect();
        let sq: f64 = all.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
        Some((sq / (2.0 * (n - 1.0))).sqrt() / mean)
    }
}

/// More than half of what the group moves: the buffers, not the congestion
/// windows, hold the streams that carry most of it.
const HELD: f64 = 0.5;

/// A window a stream keeps less than this share of in flight is not what
/// holds it. One that fills its window keeps all of it in flight but the
/// few packets an ACK has just freed (the kernel sends into the room at
/// once, paced at 1.2 windows a round trip in congestion avoidance and 2 in
/// slow start); Linux's slow start stops growing a window its stream does
/// not fill to half (tcp_is_cwnd_limited), so a stream its send buffer held
/// there keeps about half of it in flight, and one held later keeps the
/// window it had when the buffer began to hold it, full or not. Three
/// quarters sits between the two, as far from either.
const WINDOW_USED: f64 = 0.75;

/// How much of what the streams moved at each of the last two ticks the
/// hosts held rather than the congestion windows: the sending socket's
/// buffer, or the receiver's window.
///
/// Two readings of each stream. The kernel's chronographs count the time
/// its buffer or the receiver's window held it, but a send buffer holds a
/// stream only while the application waits for room, and the kernel wakes
/// the application as soon as a third of the buffer is free: a stream that
/// its buffer holds all the time is counted held for a part of it. So a
/// stream that keeps less than `WINDOW_USED` of its window in flight is held
/// by something else than its window, at this tick: not while the group's
/// cap paces it (the cap holds it then), nor while it recovers from a loss
/// (recovery sets what it sends). Each stream counts by what it moved at the
/// tick: a stream that crawls back from a timeout is busy all the time and
/// carries little, and more streams are worth opening when the ones that
/// carry the group are held.
#[derive(Clone, Debug, Default)]
pub struct Held {
    /// Per stream: its connection's (busy, held) chronographs at the last
    /// tick (µs).
    last: Vec<(u64, u64)>,
    /// The share at the last tick and the one before (None: no stream moved).
    shares: [Option<f64>; 2],
}

impl Held {
    /// One tick's streams; `moved_by(i)`: the bytes stream `i` had acknowledged
    /// over the tick (as [`Delivered::moved`] says); `paced(i)`: stream `i`
    /// is capped by the group's pacing.
    pub fn note(
        &mut self,
        streams: &[StreamView],
        moved_by: impl Fn(usize) -> Option<u64>,
        paced: impl Fn(usize) -> bool,
    ) {
        let (mut moved, mut held) = (0.0, 0.0);
        for s in streams {
            if self.last.len() <= s.stream {
                self.last.resize(s.stream + 1, (0, 0));
            }
            let Some(info) = &s.info else { continue };
            let now = (info.busy_us, info.sndbuf_limited_us + info.rwnd_limited_us);
            let (b0, h0) = self.last[s.stream];
            // Chronographs that went back are a new connection's: all they say is new.
            let (db, dh) = if now.0 >= b0 && now.1 >= h0 {
                (now.0 - b0, now.1 - h0)
            } else {
                now
            };
            self.last[s.stream] = now;
            let Some(da) = moved_by(s.stream).filter(|_| s.wanted) else {
                continue;
            };
            let open = info.ca_state == 0 && !paced(s.stream);
            let window_unused = open
                && info.cwnd > 0
                && info.unacked > 0
                && (info.unacked as f64) < WINDOW_USED * info.cwnd as f64;
            let share = if window_unused {
                1.0
            } else if db > 0 {
                dh.min(db) as f64 / db as f64
            } else {
                0.0
            };
            moved += da as f64;
            held += da as f64 * share;
        }
        self.shares = [(moved > 0.0).then(|| held / moved), self.shares[0]];
    }

    /// The share at the last tick.
    pub fn share(&self) -> Option<f64> {
        self.shares[0]
    }

    /// Whether the hosts held more than half of what the streams moved at
    /// the last tick and the one before (one tick may be a loss's recovery,
    /// or a burst of the application's).
    pub fn holds(&self) -> bool {
        self.shares.iter().all(|s| s.is_some_and(|x| x > HELD))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_cc::TcpInfo;

    /// A stream of packets of one byte each, so that what it delivered
    /// (`acked`) reads in bytes as in packets.
    pub(crate) fn view(stream: usize, srtt_ms: f64, min_ms: f64, acked: u64) -> StreamView {
        StreamView {
            stream,
            wanted: true,
            bytes: acked,
            info: Some(TcpInfo {
                srtt_us: (srtt_ms * 1000.0) as u32,
                min_rtt_us: (min_ms * 1000.0) as u32,
                bytes_acked: acked,
                delivered: acked as u32,
                mss: 1,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_queue_stands_above_an_eighth_of_the_base_rtt_within_4_to_16_ms() {
        for (base, queue, stands) in [
            (10.0, 3.9, false),
            (10.0, 4.1, true),
            (80.0, 9.9, false),
            (80.0, 10.1, true),
            (200.0, 15.9, false),
            (200.0, 16.1, true),
        ] {
            let mut d = Delay::default();
            d.note(&[view(0, base, base, 0)], |_| true);
            // A buffer seen to hold 50 ms.
            d.note(&[view(0, base + 50.0, base, 0)], |_| true);
            d.note(
                &[
                    view(0, base + queue, base, 0),
                    view(1, base + queue, base + 1.0, 0),
                ],
                |_| true,
            );
            assert_eq!(d.standing(), stands, "base {base} ms, queue {queue} ms");
        }
        // A buffer seen to hold no more than 5 ms: half of that stands.
        let mut d = Delay::default();
        d.note(&[view(0, 40.0, 40.0, 0)], |_| true);
        d.note(&[view(0, 45.0, 40.0, 0)], |_| true);
        d.note(&[view(0, 42.6, 40.0, 0)], |_| true);
        assert!(d.standing());
        d.note(&[view(0, 42.4, 40.0, 0)], |_| true);
        assert!(!d.standing());
        // Never below two milliseconds.
        let mut d = Delay::default();
        d.note(&[view(0, 40.0, 40.0, 0)], |_| true);
        d.note(&[view(0, 41.0, 40.0, 0)], |_| true);
        d.note(&[view(0, 41.9, 40.0, 0)], |_| true);
        assert!(!d.standing());
        // The lowest stream's: one stream's spike is no queue.
        let mut d = Delay::default();
        d.note(
            &[
                view(0, 50.0, 40.0, 0),
                view(1, 41.0, 40.0, 0),
                view(2, 41.0, 40.0, 0),
            ],
            |_| true,
        );
        assert!(!d.standing());
        // Of two, the lower: nor there.
        let mut d = Delay::default();
        d.note(&[view(0, 50.0, 40.0, 0), view(1, 41.0, 40.0, 0)], |_| true);
        assert!(!d.standing());
        d.note(&[view(0, 50.0, 40.0, 0), view(1, 50.0, 40.0, 0)], |_| true);
        assert!(d.standing());
    }

    #[test]
    fn a_queue_that_drained_at_one_look_of_the_tick_did_not_stand() {
        let ms = Duration::from_millis;
        // A 67 ms path (8 ms threshold) whose two streams' bursts fill and
        // drain the buffer within a round trip: at the tick the RTTs read a
        // 12 ms queue, but one look between read none.
        let mut d = Delay::default();
        d.note(
            &[view(0, 67.0, 67.0, 100), view(1, 67.0, 67.0, 100)],
            |_| true,
        );
        d.sample(
            ms(25),
            &[view(0, 77.0, 67.0, 200), view(1, 79.0, 67.0, 200)],
        );
        d.sample(
            ms(50),
            &[view(0, 67.4, 67.0, 300), view(1, 68.0, 67.0, 300)],
        );
        d.sample(
            ms(75),
            &[view(0, 80.0, 67.0, 400), view(1, 75.0, 67.0, 400)],
        );
        d.note(
            &[view(0, 79.0, 67.0, 500), view(1, 80.0, 67.0, 500)],
            |_| true,
        );
        assert!(!d.rising(), "{:?}", d.queue());
        assert_eq!(d.queue(), Duration::from_micros(400));
        // The buffer holds what the tick's own reading showed, at least.
        assert_eq!(d.deepest_us, 12_000);
        // Only this tick's looks: at the next, the queue stood through all of them.
        for (at, acked) in [(125, 600), (150, 700), (175, 800)] {
            d.sample(
                ms(at),
                &[view(0, 79.0, 67.0, acked), view(1, 78.0, 67.0, acked)],
            );
        }
        d.note(
            &[view(0, 80.0, 67.0, 900), view(1, 80.0, 67.0, 900)],
            |_| true,
        );
        assert!(d.standing(), "{:?}", d.queue());
        assert_eq!(d.queue(), Duration::from_millis(11));
        // A look at a stream with nothing acknowledged since the last look
        // reads an RTT of the path as it was: it is not the tick's.
        d.sample(
            ms(225),
            &[view(0, 67.0, 67.0, 900), view(1, 79.0, 67.0, 1000)],
        );
        d.note(
            &[view(0, 80.0, 67.0, 1000), view(1, 80.0, 67.0, 1100)],
            |_| true,
        );
        assert_eq!(d.queue(), Duration::from_millis(12));
        // Nor a stream that carries no blocks now.
        let mut parked = view(0, 67.0, 67.0, 1200);
        parked.wanted = false;
        d.sample(ms(325), &[parked, view(1, 79.0, 67.0, 1200)]);
        d.note(
            &[view(0, 80.0, 67.0, 1300), view(1, 80.0, 67.0, 1300)],
            |_| true,
        );
        assert_eq!(d.queue(), Duration::from_millis(12));
        // On a path shorter than the tick, only the last round trip's looks:
        // a queue that stood through a round trip of 10 ms stood, whatever
        // it did earlier in the tick.
        let mut d = Delay::default();
        d.note(&[view(0, 10.0, 10.0, 100)], |_| true);
        d.sample(ms(20), &[view(0, 10.0, 10.0, 200)]);
        d.sample(ms(80), &[view(0, 16.0, 10.0, 300)]);
        d.sample(ms(90), &[view(0, 15.0, 10.0, 400)]);
        d.note(&[view(0, 16.0, 10.0, 500)], |_| true);
        assert_eq!(d.queue(), Duration::from_millis(5));
        // A tick is itself a look (`Auto::tick` samples before it notes): a
        // look more than a round trip before it is not read.
        d.sample(ms(120), &[view(0, 10.0, 10.0, 600)]);
        d.sample(ms(140), &[view(0, 16.0, 10.0, 700)]);
        d.note(&[view(0, 16.0, 10.0, 700)], |_| true);
        assert_eq!(d.queue(), Duration::from_millis(6));
    }

    #[test]
    fn a_queue_rises_above_the_floor_the_path_shows_while_it_has_room() {
        // A 10 ms path whose buffer held 2.5 ms: the threshold is its 2 ms floor,
        // and a queue rises above 1 ms, the RTT's noise.
        let mut d = Delay::default();
        d.note(&[view(0, 10.0, 10.0, 0)], |_| true);
        d.note(&[view(0, 12.5, 10.0, 0)], |_| true);
        d.note(&[view(0, 11.2, 10.0, 0)], |_| true);
        assert!(d.rising());
        // The path showed 0.8 ms while it had room: a rise is 1 ms above that.
        d.set_floor(Duration::from_micros(800));
        assert_eq!(d.floor(), Duration::from_micros(800));
        assert!(!d.rising());
        d.note(&[view(0, 11.7, 10.0, 0)], |_| true);
        assert!(!d.rising());
        d.note(&[view(0, 11.9, 10.0, 0)], |_| true);
        assert!(d.rising());
        // No floor above half the threshold: a queue that high at most ticks
        // would have been a rising one.
        d.set_floor(Duration::from_millis(5));
        assert_eq!(d.floor(), d.threshold() / 2);
        assert!(!d.standing());
        d.note(&[view(0, 12.1, 10.0, 0)], |_| true);
        assert!(d.rising() && d.standing());
        // A floor of half an 80 ms base's threshold (10 ms), then a lower base
        // (40 ms: 5 ms): a queue that stands there rises too.
        let mut d = Delay::default();
        d.note(&[view(0, 80.0, 80.0, 0)], |_| true);
        d.note(&[view(0, 130.0, 80.0, 0)], |_| true);
        d.set_floor(Duration::from_millis(5));
        d.note(&[view(0, 46.0, 40.0, 0)], |_| true);
        assert!(d.standing() && d.rising());
    }

    #[test]
    fn the_queue_is_the_lowest_rtt_of_the_streams_acknowledged_at_the_tick() {
        // Sparse streams under a cap: most wait for their delayed ACKs (16-32
        // ms above a 150 ms base) while one reads the base: no queue at the link.
        let mut d = Delay::default();
        let mut got = Delivered::new(Duration::from_secs(10));
        let tick = |d: &mut Delay, got: &mut Delivered, ms: u64, v: &[StreamView]| {
            got.note(Duration::from_millis(ms), v);
            d.note(v, |i| got.acked(i));
        };
        let sparse = |extra: [f64; 4], acked: [u64; 4]| -> Vec<StreamView> {
            (0..4)
                .map(|i| view(i, 150.0 + extra[i], 150.0, acked[i]))
                .collect()
        };
        tick(&mut d, &mut got, 0, &sparse([0.0; 4], [1000; 4]));
        tick(
            &mut d,
            &mut got,
            150,
            &sparse([16.0, 32.0, 20.0, 1.5], [2000; 4]),
        );
        assert!(!d.rising(), "{:?}", d.queue());
        // Stream 3 has had nothing acknowledged since: its RTT is of the path
        // as it was, and a queue that rose since is in all the others.
        tick(
            &mut d,
            &mut got,
            300,
            &sparse([30.0, 40.0, 30.0, 1.5], [3000, 3000, 3000, 2000]),
        );
        assert_eq!(d.queue(), Duration::from_millis(30));
        assert!(d.standing());
        // Nothing acknowledged at all: nothing new is known, the reading stays.
        tick(
            &mut d,
            &mut got,
            450,
            &sparse([0.0; 4], [3000, 3000, 3000, 2000]),
        );
        assert_eq!(d.queue(), Duration::from_millis(30));
        // Acknowledged again, all at the base: the queue went.
        tick(&mut d, &mut got, 600, &sparse([0.5; 4], [4000; 4]));
        assert!(!d.rising());
    }

    /// One tick at `ms` of streams (number, bytes acknowledged) on a clean 10 ms path.
    fn acked(d: &mut Delivered, ms: u64, streams: &[(usize, u64)]) {
        let views: Vec<StreamView> = streams
            .iter()
            .map(|&(s, b)| view(s, 10.0, 10.0, b))
            .collect();
        d.note(Duration::from_millis(ms), &views);
    }

    #[test]
    fn what_the_receiver_has_counts_while_the_cumulative_acknowledgement_waits_on_a_hole() {
        // A 1448-byte MSS; a loss at 1000 packets: the cumulative count stops
        // there for the round trip its retransmission takes, and the packets
        // behind the hole, selectively acknowledged, are delivered all the same.
        let at = |packets: u32, acked_packets: u64| {
            let mut v = view(0, 200.0, 200.0, 0);
            let i = v.info.as_mut().unwrap();
            i.mss = 1448;
            i.delivered = packets;
            i.bytes_acked = acked_packets * 1448;
            vec![v]
        };
        let mut d = Delivered::new(Duration::from_secs(10));
        d.note(Duration::ZERO, &at(0, 0));
        d.note(Duration::from_millis(500), &at(1000, 1000));
        d.note(Duration::from_millis(1000), &at(2000, 1000));
        assert_eq!(
            d.rate(Duration::from_millis(500)),
            Some(1000.0 * 1448.0 / 0.5)
        );
        assert_eq!(d.moved(0), Some(1000 * 1448));
    }

    #[test]
    fn delivered_bytes_go_on_through_a_new_connection() {
        let mut d = Delivered::new(Duration::from_secs(10));
        acked(&mut d, 0, &[(0, 1000), (1, 500)]);
        acked(&mut d, 1000, &[(0, 3000), (1, 1500)]);
        // Stream 1 connects again: its counter starts from zero.
        acked(&mut d, 2000, &[(0, 5000), (1, 400)]);
        assert_eq!(d.total(), 5000 + 1500 + 400);
        let ms = Duration::from_millis;
        assert_eq!(d.rate(ms(1000)), Some(2400.0));
        assert_eq!(d.rate(ms(2000)), Some((6900.0 - 1500.0) / 2.0));
    }

    #[test]
    fn the_most_it_moved_is_over_the_best_window_within_the_span() {
        let mut d = Delivered::new(Duration::from_secs(10));
        // 1000 bytes a tick of 100 ms, then 3000 for three ticks, then 1000 again.
        let mut total = 0;
        for (i, per) in [1000, 1000, 1000, 3000, 3000, 3000, 1000, 1000]
            .iter()
            .enumerate()
        {
            total += per;
            acked(&mut d, 100 * (i as u64 + 1), &[(0, total)]);
        }
        let ms = Duration::from_millis;
        assert_eq!(d.most(ms(800), ms(300)), Some(30000.0));
        // The last 300 ms hold one tick of the fast three only.
        assert_eq!(d.most(ms(300), ms(300)), Some(50000.0 / 3.0));
        assert_eq!(d.most(ms(200), ms(300)), None, "no window fits");
    }

    #[test]
    fn each_streams_last_tick_is_what_it_acknowledged_since_the_tick_before() {
        let mut d = Delivered::new(Duration::from_secs(10));
        acked(&mut d, 0, &[(0, 1000), (1, 500)]);
        // Stream 1 says nothing this tick; stream 2 is new.
        acked(&mut d, 500, &[(0, 2000), (2, 100)]);
        assert_eq!(d.last_tick(3), vec![Some(2000.0), None, Some(200.0)]);
        // Back, stream 1 counts from what it said last, not from zero; stream 0
        // acknowledged nothing: none of it is in flight.
        acked(&mut d, 1000, &[(0, 2000), (1, 800), (2, 100)]);
        assert_eq!(d.last_tick(2), vec![None, Some(600.0)]);
        assert_eq!(d.last_tick(4)[2..], [None, None]);
    }

    #[test]
    fn the_spread_is_the_rates_allan_deviation_over_its_mean() {
        let mut s = Spread::new(8);
        for _ in 0..3 {
            s.note(100.0);
        }
        assert_eq!(s.cv(), None, "too few samples");
        s.note(100.0);
        assert_eq!(s.cv(), Some(0.0));
        // Noise from sample to sample: +-10 around 100.
        for x in [90.0, 110.0, 90.0, 110.0] {
            s.note(x);
        }
        let noise = s.cv().unwrap();
        assert!((0.08..0.11).contains(&noise), "{noise}");
        // A steady climb of the same spread is a drift, far less noise.
        let mut s = Spread::new(8);
        for x in [85.0, 90.0, 95.0, 100.0, 105.0, 110.0, 115.0, 120.0] {
            s.note(x);
        }
        let drift = s.cv().unwrap();
        assert!(drift < 0.4 * noise, "{drift}");
    }

    /// A stream whose chronographs read `busy` and `held` (by its send
    /// buffer) ms, having moved a kB for each ms busy.
    fn chrono(stream: usize, busy: u64, held: u64) -> StreamView {
        let mut v = view(stream, 10.0, 10.0, busy * 1000);
        let info = v.info.as_mut().unwrap();
        info.busy_us = busy * 1000;
        info.sndbuf_limited_us = held * 1000;
        v
    }

    /// One tick of `h`, each stream's bytes taken from a [`Delivered`] as the
    /// controller takes them.
    fn tick(
        h: &mut Held,
        d: &mut Delivered,
        streams: &[StreamView],
        paced: impl Fn(usize) -> bool,
    ) {
        d.note(Duration::ZERO, streams);
        h.note(streams, |i| d.moved(i), paced);
    }

    #[test]
    fn streams_are_held_by_their_buffers_more_than_half_of_two_ticks_running() {
        let (mut h, mut d) = (Held::default(), Delivered::default());
        let unpaced = |_| false;
        tick(&mut h, &mut d, &[chrono(0, 0, 0), chrono(1, 0, 0)], unpaced);
        assert_eq!(h.share(), None, "nothing moved yet");
        // 100 ms busy each; one held 90 ms, the other 30: 60 % of what the group moved.
        tick(
            &mut h,
            &mut d,
            &[chrono(0, 100, 90), chrono(1, 100, 30)],
            unpaced,
        );
        assert!((h.share().unwrap() - 0.6).abs() < 1e-9);
        assert!(!h.holds(), "one tick only");
        tick(
            &mut h,
            &mut d,
            &[chrono(0, 200, 180), chrono(1, 200, 60)],
            unpaced,
        );
        assert!(h.holds());
        // Held half the time is not more often than not.
        tick(
            &mut h,
            &mut d,
            &[chrono(0, 300, 280), chrono(1, 300, 60)],
            unpaced,
        );
        assert_eq!(h.share(), Some(0.5));
        assert!(!h.holds());
        // The receiver's window holds a stream too.
        let mut v = chrono(0, 400, 310);
        v.info.as_mut().unwrap().rwnd_limited_us = 70_000;
        tick(&mut h, &mut d, &[v, chrono(1, 400, 130)], unpaced);
        assert!((h.share().unwrap() - 0.85).abs() < 1e-9);
        // A new connection's chronographs start from zero; a stream the group
        // does not want is not counted.
        let mut quiet = chrono(1, 500, 230);
        quiet.wanted = false;
        tick(&mut h, &mut d, &[chrono(0, 50, 45), quiet], unpaced);
        assert!((h.share().unwrap() - 0.9).abs() < 1e-9);
        assert!(h.holds());
    }

    /// A stream that has moved `total_kb` kB so far (and been busy as many
    /// ms) with `unacked` of its `cwnd` packets in flight, its chronographs
    /// counting nothing held.
    fn windowed(stream: usize, total_kb: u64, unacked: u32, cwnd: u32) -> StreamView {
        let mut v = view(stream, 10.0, 10.0, total_kb * 1000);
        let info = v.info.as_mut().unwrap();
        info.busy_us = total_kb * 1000;
        info.unacked = unacked;
        info.cwnd = cwnd;
        v
    }

    #[test]
    fn a_stream_that_leaves_a_quarter_of_its_window_unused_is_held_by_something_else() {
        let (mut h, mut d) = (Held::default(), Delivered::default());
        let unpaced = |_| false;
        // Slow start stopped at twice what the send buffer lets it keep in flight.
        tick(
            &mut h,
            &mut d,
            &[windowed(0, 100, 2900, 5800), windowed(1, 100, 2900, 5800)],
            unpaced,
        );
        tick(
            &mut h,
            &mut d,
            &[windowed(0, 200, 2900, 5800), windowed(1, 200, 2900, 5800)],
            unpaced,
        );
        assert_eq!(h.share(), Some(1.0));
        assert!(h.holds());
        // Windows in use (all but the packets an ACK just freed) hold them.
        tick(
            &mut h,
            &mut d,
            &[windowed(0, 300, 5700, 5800), windowed(1, 300, 5790, 5800)],
            unpaced,
        );
        assert_eq!(h.share(), Some(0.0));
        // Paced by the group's cap: the cap holds it, whatever its window.
        tick(
            &mut h,
            &mut d,
            &[windowed(0, 400, 2900, 5800), windowed(1, 400, 2900, 5800)],
            |_| true,
        );
        assert_eq!(h.share(), Some(0.0));
        // In recovery the window is recovery's to set.
        let mut r = windowed(0, 500, 100, 5800);
        r.info.as_mut().unwrap().ca_state = 3;
        tick(&mut h, &mut d, &[r, windowed(1, 500, 5800, 5800)], unpaced);
        assert_eq!(h.share(), Some(0.0));
    }

    #[test]
    fn streams_count_by_what_they_moved() {
        let (mut h, mut d) = (Held::default(), Delivered::default());
        let unpaced = |_| false;
        tick(
            &mut h,
            &mut d,
            &[chrono(0, 0, 0), windowed(1, 0, 51, 51)],
            unpaced,
        );
        // One stream held by its buffer all the tick moves 900 kB; one that
        // crawls back from a timeout, its small window full, moves 100.
        let mut carrier = chrono(0, 1000, 1000);
        carrier.info.as_mut().unwrap().delivered = 900_000;
        let mut crawler = windowed(1, 0, 51, 51);
        let c = crawler.info.as_mut().unwrap();
        c.busy_us = 1_000_000;
        c.delivered = 100_000;
        tick(&mut h, &mut d, &[carrier, crawler], unpaced);
        assert!((h.share().unwrap() - 0.9).abs() < 1e-9);
        // A stream that moved nothing at the tick says nothing of it.
        let mut still = chrono(0, 2000, 2000);
        still.info.as_mut().unwrap().delivered = 900_000;
        tick(&mut h, &mut d, &[still, windowed(1, 200, 51, 51)], unpaced);
        assert_eq!(h.share(), Some(0.0));
    }
}
