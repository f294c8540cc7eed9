//! `--mode auto` (braid's default): streams of CUBIC, Linux's default
//! congestion control (`session::auto_control`), as many as the path rewards while nobody else
//! is on it, and as many as `--fair-share` ordinary flows once others are
//! (`--fair-share 0`: none, a scavenger's yield, one stream kept at a few
//! packets a round trip while they are there).
//!
//! Why: parallel streams help where random loss, not congestion, holds each
//! stream below its share of the path (Hacker and Athey 2002: throughput
//! grows with the streams up to a knee); once the bottleneck is congested, a
//! stream more takes from whoever else is there. CUBIC streams fill a long
//! fat path that Reno's one packet per round trip cannot (the problem seed
//! 001 studies); and a group that is k ordinary CUBIC flows
//! while others share the path moves what k ordinary transfers would move
//! there, beside flows of any kind. Nothing here needs braid's eBPF
//! controls: the steer changes how many streams carry and caps their rate
//! (SO_MAX_PACING_RATE), which any user may do, so auto runs the same with
//! and without root. The kernel paces the streams once the receiving end
//! has told µ, each later one from its first tick (`Steer::paces`), so
//! that what the RTTs read is the path's queue, not the bursts of unpaced
//! windows.
//!
//! The path's state comes from the streams' TCP_INFO (`path`): the base RTT
//! and the queue above it (the lowest RTT of the streams acknowledged at a
//! tick: a shared queue is in all of them; the least of it over the last
//! round trip, looked at on a grid of eight a tick, the tick's own the last
//! and none before that round trip, so that a queue the group's own
//! bursts fill and drain within a round trip, the bottleneck idle between
//! them, is not read as a full path's),
//! which *stands* above an eighth of
//! the base RTT (4..16 ms, Linux HyStart's threshold) or half the deepest
//! queue seen if the buffer is shallower (2 ms at least), and *rises* above
//! half that (1 ms at least) over the floor the path showed while an ask left
//! room untaken (the least queue of the ask's second half, no more than half
//! the threshold: short flows' bursts into a shallow buffer, an AQM's few
//! packets, none of them a full path); the group's delivered rate (what the
//! receiver has, selectively acknowledged packets too: `path::Delivered`);
//! how much that rate varies from one sample to the next; how much of what the
//! streams move the hosts' buffers hold (the sending socket's, or the
//! receiver's window; Linux caps both at a few MiB by default, a few hundred
//! Mb/s a stream at 100 ms), by the kernel's chronographs or a window the
//! stream does not fill, which says at once that more streams move more.
//! Durations count in base RTTs with floors in seconds, so a long path is
//! given the round trips it needs (SETTLE 10, MEASURE 5, DRAIN 5, ASK 15,
//! FREE 25).
//!
//! Whose queue it is, auto asks as Nimbus asks whether cross traffic is
//! elastic: it caps the group a margin below what it moves (`Ask`). Flows
//! that back off and grow back take that room and the queue stays; a queue
//! of the group's own, or one a stiff source makes beside it, drains. While
//! the group has the path (`Full`) its cap follows the room the path leaves,
//! by the queue, so that a queue of its own never stands.
//!
//! | phase | streams | leaves when | to |
//! |---|---|---|---|
//! | `Start` | 2 (or `-n`, if fewer), uncapped | the streams held by their own buffers (`path::Held`) at two ticks running, no queue rising, the group short of µ: the hosts, not the path, hold the rate | `Grow`, doubled, or as many as µ needs at what each moves if more |
//! | | | one leaves slow start, a queue stands two ticks, or SETTLE passes | `Grow` |
//! | `Grow` | uncapped, doubled at each step | held by their buffers as in `Start`, after SETTLE if the last step paid | `Grow`, as from `Start` |
//! | | | after SETTLE + MEASURE: a queue rose for half of MEASURE and the group moves the bottleneck's rate (µ, the receiving end's word) within µ's error, over the MEASURE or a few ticks of it: the queue is its own | `Full`, capped below what it moved as far as drains the queue in a DRAIN (a margin at most); back to the streams before the doubling if they carried µ too and it bought no more than the rate's noise |
//! | | | a queue rose for half of MEASURE, and µ is not known or the group moves less (the path is full, of the group or of others) | `Ask` (`--fair-share 0`, told µ: `Fair` at once, where its ask would end) |
//! | | | the rate rose less than half of what a doubling of loss-limited streams gives, within the room µ leaves (the knee), the group moves µ within its error (the path holds it), or `-n` is reached | `Full`, uncapped; back to the streams before the doubling if it bought no more than the rate's noise (a margin) and they carried µ, where it is known |
//! | | | else | `Grow`, doubled |
//! | `Ask` | as they were, capped a margin below what they moved | after ASK, the queue rose for half of its second half, the first time: once more, a margin below what the group moves now | `Ask` |
//! | | | ... and the second time: others fill the path | `Fair` |
//! | | | else (the room untaken: the least queue of its second half is the path's floor from now), from `Grow` after a doubling that paid, µ not told: the new streams' slow start | `Grow`, doubled |
//! | | | else, told µ, the group moved less than µ and yields entirely (`--fair-share 0`): someone else is there, and it yields to a stiff source too | `Fair` |
//! | | | else: the group's queue, or a stiff source's (told µ, a group in `Grow` asks only while it moves less: someone else is there, a stiff source or a group that asks too, and more streams would find only the queue; one more stiff finding, k, where the group moved less than µ) | `Full`, capped a margin below what the path gave |
//! | `Full` | as found; the cap (if any) follows the path: down to half a margin below the most the group moved while a queue rises at two ticks running (one tick's is a host's stall; at one the cap stops climbing) (moving µ: as far below as drains the queue in a DRAIN), up in doubling steps (an eighth of a margin to a margin of µ a tick, or of the cap where µ is not known) while none does, to a margin (of µ, or of what the group moves) above what the group moves at most, never above µ within its error, and never down | a queue rose at every tick of a DRAIN and did not fall, and the group moved less than µ over it or µ is not known (someone came, or the path gives less) | `Ask` (`--fair-share 0`, told µ: `Fair` at once); but after asks that found a stiff source (k running, µ told), only one such rise in 2^k (at most 8): the others are the source's rise, and the cap follows it down as far below what the group moves as drains the queue in a DRAIN | `Ask`, or `Full` capped below |
//! | | | ... and the group moved µ over it: the queue is its own | `Full`, capped a margin below what it moves |
//! | | | held by their buffers as in `Start` (the cap holds nothing: they have nothing unsent) | `Grow`, uncapped, as from `Start` |
//! | | | the cap a margin above what the group moves, less than µ, and no queue for MEASURE: the streams, not the path, hold the rate | `Grow`, doubled; at `-n`, `Full` uncapped |
//! | | | uncapped (a knee) and no queue at two ticks running for FREE (twice as long for each time running the same knee was measured, to 8 FREEs), the group short of µ: the path is not full, whatever one doubling measured | `Grow`, doubled |
//! | `Fair` | `--fair-share`, uncapped: ordinary flows (`--fair-share 0`: one, paced to two packets a base RTT) | after FREE, no queue stood for FREE (the others left, or are held elsewhere; a group that yields entirely: for 2^(j-1) FREEs, j the times running it stepped aside, to 8), or the group moves what it moved alone | `Grow`, from the streams the path needed (`--fair-share 0`: from one stream, and until it moves µ alone more only by doubling, none for the hosts' buffers at once) |
//!
//! The margin is twice the rate's Allan deviation over its mean (a cap that
//! far below what the path gives is clear of its own noise 95 % of the
//! time), within 5..25 %.
//!
//! Where the receiving end tells the bottleneck's rate µ, these rules read
//! it. A queue that rises while the group moves all of µ holds nobody else's
//! packets, so growth stops there without an ask, `Full` drains it without
//! one, and the cap steps only as far below µ as empties it in a DRAIN; a
//! doubling, whatever it bought, is kept unless the streams before it carried
//! µ too (a few seconds after it, the drops its slow start brought may hold
//! every stream, and fewer streams leave the room unused longer). A group
//! that moves µ is held by the path, not by its streams, so it does not add
//! streams (where its buffers hold its streams, after a doubling that paid,
//! or after a FREE without a queue: a doubling more finds only the queue, and
//! its streams' slow start overshoots it); a cap never climbs above µ (within
//! its error), where it would only let the streams fill the queue; and a rate
//! the sender counts above µ (acknowledgements that arrive bunched) is read
//! as µ. A doubling pays by half of the room µ leaves
//! above the rate before it, if that is less than the rate before
//! (`Auto::paid`). And the cap climbs in fractions of µ, the same for every
//! group on the path, rather than of itself: two autos that step down
//! together by fractions of their caps and climb by the same amounts converge
//! on equal caps (Chiu and Jain's additive increase, multiplicative
//! decrease), where climbing by fractions of their own caps keeps whatever
//! ratio they started from. A queue that stands through a drain in `Full`
//! while the group moves less than µ is still asked about: the cap's step
//! down would have let a queue of the group's own go.
//!
//! The group's cap is shared among the streams that have data in flight,
//! and what one of them does not use goes to the others (`share`): at a
//! transfer's end the last blocks are on a few streams, and those few may
//! move the whole cap; a stream whose loss halved its window leaves its
//! room to the rest. Short of its part means short by more than the
//! margin: streams scattered around their parts by the tick's noise share
//! the cap, and no more.

pub mod path;
pub mod share;

use std::collections::VecDeque;
use std::time::Duration;

use crate::proto::steer::{Looks, Steer, SteerState, Steering, StreamView};
use path::{Delay, Delivered, Held, Spread};

/// The first streams.
const FIRST_STREAMS: usize = 2;
/// The most times running one finding (a knee; a source found stiff)
/// doubles the wait before it is tried again: 2^3 FREEs for a knee, 200
/// base RTTs (or 40 s), still within a long transfer.
const BACKOFF_MAX: u32 = 4;
/// A doubling of streams that each random loss holds below the path doubles
/// what they move, within the room the path has; one that brings less than
/// this share of that found the knee: the path, not the streams' losses, is
/// the limit (`Auto::paid`).
const DOUBLING_WORTH: f64 = 0.5;
/// The margin below what the path gives, as a multiple of the rate's
/// coefficient of variation (about 95 % of a normal's mass), and its bounds.
const MARGIN_CV: f64 = 2.0;
const MARGIN_MIN: f64 = 0.05;
const MARGIN_MAX: f64 = 0.25;
/// How closely the receiving end's word on the bottleneck's rate (µ) is
/// known: within 5 % of the path's rate on every path it was measured on
/// where the word was good (docs/auto.md). A group that moves less than
/// that below µ leaves room that may be someone else's; the rule that
/// reads it errs towards asking, which is what auto does without µ.
pub const MU_WITHIN: f64 = 0.05;
/// A stream taken out on an end that cannot close and dial streams (a
/// sending server) is paced to a trickle instead: a few packets a second.
const TRICKLE: u64 = 4 * MSS as u64;
/// The payload of a full-sized packet on an Ethernet path.
const MSS: f64 = 1448.0;
/// A group that yields entirely (`--fair-share 0`) keeps one stream paced to
/// this many packets a base RTT while others share the path: LEDBAT's least
/// window (RFC 6817's min_cwnd of two), which a delayed ACK answers once a
/// round trip, so the queue is still read at every tick and the path is
/// found free once they leave.
const YIELD_PACKETS: f64 = 2.0;

/// Where auto is (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    Start,
    Grow {
        since: Duration,
        before: Option<f64>,
    },
    Ask {
        since: Duration,
        from: Asking,
        again: bool,
    },
    Full {
        since: Duration,
        /// Since when the group has moved less than its cap with no queue
        /// (uncapped: since when no queue has risen).
        slack_since: Option<Duration>,
        /// The most the group moved since a queue rose (None: none rises).
        peak: Option<f64>,
        /// The cap's last step up, a fraction (0: it did not climb).
        step: f64,
    },
    Fair {
        since: Duration,
        clear_since: Option<Duration>,
    },
}

/// A tick's queue against the path's threshold (`path::Delay`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Queue {
    Clear,
    /// Above half the threshold: rising, or held low by a steer like auto's.
    Rising,
    Standing,
}

/// The phase an `Ask` was asked from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Asking {
    /// From `Grow`, with the rate before its last doubling.
    Grow(Option<f64>),
    Full,
}

impl Phase {
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::Grow { .. } => "grow",
            Phase::Ask { .. } => "ask",
            Phase::Full { .. } => "full",
            Phase::Fair { .. } => "fair",
        }
    }
}

/// How long things take on a path whose base RTT is `r`.
#[derive(Clone, Copy, Debug)]
struct Times {
    tick: Duration,
    /// New streams' slow start.
    settle: Duration,
    /// A rate measured over.
    measure: Duration,
    /// An ask's length.
    ask: Duration,
    /// No queue this long while fair: the path has room again.
    free: Duration,
    /// A queue from before a change drains in this.
    drain: Duration,
}

impl Times {
    fn of(r: Duration) -> Times {
        let rtts = |n: u32, floor_ms: u64| (r * n).max(Duration::from_millis(floor_ms));
        Times {
            tick: r.clamp(Duration::from_millis(100), Duration::from_millis(500)),
            settle: rtts(10, 2000),
            measure: rtts(5, 1000),
            ask: rtts(15, 3000),
            free: rtts(25, 5000),
            drain: rtts(5, 1000),
        }
    }
}

pub struct Auto {
    most: usize,
    /// Ordinary flows' worth while others share the path (`--fair-share`);
    /// 0: the group yields entirely (`yielding`).
    fair: usize,
    dials: bool,
    phase: Phase,
    delay: Delay,
    delivered: Delivered,
    spread: Spread,
    held: Held,
    /// Streams that carry now.
    n: usize,
    /// How many the path needed while the group had it alone.
    n_full: usize,
    /// Streams before the last doubling.
    from_n: usize,
    /// The streams whose doubling was last measured not to pay (a knee),
    /// and how many times running it was: a knee is tried again when the
    /// path shows room for a FREE, and each time the same knee is measured
    /// the wait doubles (as a retransmission timer backs off), so a knee
    /// found wrongly is left and one found rightly costs ever less.
    knee_n: Option<usize>,
    knee_seen: u32,
    /// How many asks running found the room untaken while the group moved
    /// less than µ: someone else is on the path (a queue stood under a group
    /// short of µ) and did not take the room, a stiff source. A queue that
    /// then stands through a DRAIN in `Full` is that source's rise, and the
    /// cap follows it down (`stiff_followed` times running, up to
    /// 2^`stiff_seen` - 1) before it is asked about again: each ask costs a
    /// margin of the rate for an ASK, and a source found stiff again and
    /// again is asked about ever less often, as a knee is tried ever less
    /// often. Every `BACKOFF_MAX`-th rise at the most is still asked about,
    /// so flows that back off and came meanwhile are found within a minute.
    stiff_seen: u32,
    stiff_followed: u32,
    /// How many times running a group that yields entirely stepped aside
    /// without finding the path its own in between: each time the FREE it
    /// waits for before it tries the path again doubles (to 8 FREEs), as a
    /// knee's does. A try costs the others the room it takes for an ask and
    /// the group only its own time, which its user gave up to them.
    yields: u32,
    /// What the path gave the group, bytes a second, when a queue last
    /// stood under it alone (or it probed higher without one).
    capacity: Option<f64>,
    /// The group's cap now, bytes a second.
    cap: Option<f64>,
    /// What the path gave the group when it last had the path alone.
    alone: Option<f64>,
    /// Each tick: when, how high the queue was against its threshold, and the queue in µs.
    stood: VecDeque<(Duration, Queue, u32)>,
    /// Each stream's cap as last told (None: none).
    told: Vec<Option<u64>>,
    told_n: usize,
    now: Duration,
    ticks: u64,
    /// When the streams or their cap last changed: a rate over a span that
    /// reaches back before it is of another group.
    changed_at: Duration,
    /// The bottleneck's rate, bytes a second, as the receiving end last
    /// told it (`path::dispersion`).
    bottleneck: Option<f64>,
}

/// The streams auto starts with, of `most`, `fair` carrying while others share the path.
pub fn first_streams(most: usize, fair: usize) -> usize {
    let most = most.max(1);
    FIRST_STREAMS.min(most).max(fair.clamp(1, most))
}

impl Auto {
    /// `most` streams at the most (`-n`), `fair` while others share the
    /// path (`--fair-share`, whole flows; 0: it yields entirely, one stream
    /// paced to a few packets a round trip); `dials`: this end dials its
    /// streams, so it can add and close them (else it paces the ones it
    /// does not want to a trickle).
    pub fn new(most: usize, fair: usize, dials: bool) -> Auto {
        let n = first_streams(most, fair);
        let most = most.max(1);
        let fair = fair.min(most);
        Auto {
            most,
            fair,
            dials,
            phase: Phase::Start,
            delay: Delay::default(),
            delivered: Delivered::new(Duration::from_secs(60)),
            spread: Spread::new(20),
            held: Held::default(),
            n,
            n_full: n,
            from_n: n,
            knee_n: None,
            knee_seen: 0,
            stiff_seen: 0,
            stiff_followed: 0,
            yields: 0,
            capacity: None,
            cap: None,
            alone: None,
            stood: VecDeque::new(),
            told: Vec::new(),
            told_n: usize::MAX,
            now: Duration::ZERO,
            ticks: 0,
            changed_at: Duration::ZERO,
            bottleneck: None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Streams carrying now.
    pub fn streams(&self) -> usize {
        self.n
    }

    fn times(&self) -> Times {
        Times::of(self.delay.base().unwrap_or(Duration::from_millis(100)))
    }

    fn margin(&self) -> f64 {
        self.spread.cv().map_or(MARGIN_MAX, |cv| {
            (MARGIN_CV * cv).clamp(MARGIN_MIN, MARGIN_MAX)
        })
    }

    /// The group's rate over the last `span`, or over what of it has passed
    /// since the streams or their cap changed, if that is a few ticks at least.
    fn clean_rate(&self, span: Duration) -> Option<f64> {
        let since = self.now.saturating_sub(self.changed_at);
        (since >= 3 * self.times().tick).then(|| self.delivered.rate(span.min(since)))?
    }

    /// The share of ticks since `from` at which the queue was at `level` or higher.
    fn share_at_least(&self, from: Duration, level: Queue) -> f64 {
        let ticks: Vec<bool> = self
            .ticks_since(from)
            .map(|(_, q, _)| *q >= level)
            .collect();
        if ticks.is_empty() {
            return 0.0;
        }
        ticks.iter().filter(|s| **s).count() as f64 / ticks.len() as f64
    }

    /// The ticks since `from` (each: when, the queue's level, the queue in µs).
    fn ticks_since(&self, from: Duration) -> impl Iterator<Item = &(Duration, Queue, u32)> {
        self.stood.iter().filter(move |(t, _, _)| *t >= from)
    }

    /// The lowest queue of the ticks since `from`.
    fn least_queue(&self, from: Duration) -> Option<Duration> {
        self.ticks_since(from)
            .map(|(_, _, us)| Duration::from_micros(*us as u64))
            .min()
    }

    /// A queue above half the threshold at every tick since `from` (two at
    /// least), and no lower at the last than at the first of them.
    fn stood_through(&self, from: Duration) -> bool {
        let ticks: Vec<(Queue, u32)> = self.ticks_since(from).map(|(_, q, us)| (*q, *us)).collect();
        ticks.len() >= 2
            && ticks.iter().all(|(q, _)| *q >= Queue::Rising)
            && ticks.last().map(|x| x.1) >= ticks.first().map(|x| x.1)
    }

    /// The queue was at `level` or higher at this tick and the one before: a
    /// queue at the bottleneck stays a tick at least, where a host's stall
    /// shows in one tick's RTTs alone.
    fn twice_at_least(&self, level: Queue) -> bool {
        self.stood.len() >= 2 && self.stood.iter().rev().take(2).all(|(_, q, _)| *q >= level)
    }

    /// The phase after this tick (the one transition function).
    fn next(&mut self, streams: &[StreamView]) -> Phase {
        let now = self.now;
        let t = self.times();
        let rate = self.clean_rate(t.measure);
        let m = self.margin();
        if rate.is_some_and(|r| self.carries_bottleneck(r)) {
            // The group has the path to itself: no source is beside it.
            self.stiff_seen = 0;
            self.yields = 0;
        }
        match self.phase {
            Phase::Start => {
                if let Some(r) = self.held_by_hosts(self.clean_rate(3 * t.tick)) {
                    return self.grown(r);
                }
                let out_of_slow_start = streams
                    .iter()
                    .filter_map(|s| s.info.as_ref())
                    .any(|i| i.ssthresh < i32::MAX as u32);
                if out_of_slow_start || self.twice_at_least(Queue::Standing) || now >= t.settle {
                    Phase::Grow {
                        since: now,
                        before: None,
                    }
                } else {
                    Phase::Start
                }
            }
            Phase::Grow { since, before } => {
                if let Some(r) = self.held_by_hosts(self.clean_rate(3 * t.tick)) {
                    // Once the streams the last step opened are past their slow
                    // start, and if it paid: a host that holds the streams by its
                    // CPU (a receiver that reads no faster, its window full) is
                    // not helped by more of them.
                    if before.is_none_or(|b| now >= since + t.settle && self.paid(b, r)) {
                        return self.grown(r);
                    }
                }
                if now < since + t.settle + t.measure {
                    return self.phase;
                }
                let Some(r) = rate else { return self.phase };
                self.n_full = self.n;
                if self.share_at_least(now.saturating_sub(t.measure), Queue::Rising) >= 0.5 {
                    // The path is full, of the group or of others too (an AQM holds
                    // the queue of a full path low: half the threshold is enough).
                    self.capacity = Some(r);
                    if self.carries_bottleneck(r) {
                        return self.own_queue_in_growth(before, r, r, m);
                    }
                    // The group moved all µ over a few ticks of the MEASURE, if
                    // not over all of it (a stream recovering from a random
                    // loss, new streams still climbing): then nobody else's
                    // packets were in the queue, and the path is its own.
                    let most = self.delivered.most(t.measure, 3 * t.tick);
                    if let Some(x) = most.filter(|x| self.carries_bottleneck(*x)) {
                        return self.own_queue_in_growth(before, r, self.through(x), m);
                    }
                    return self.ask(Asking::Grow(before), r, m);
                }
                let knee = before.is_some_and(|b| !self.paid(b, r));
                if let (true, Some(b)) = (knee, before) {
                    self.knee_seen = if self.knee_n == Some(self.from_n) {
                        (self.knee_seen + 1).min(BACKOFF_MAX)
                    } else {
                        1
                    };
                    self.knee_n = Some(self.from_n);
                    self.give_back_if_it_bought_nothing(b, r, m);
                }
                // A group that moves µ is held by the path, whatever its
                // streams' losses: a doubling more finds no room, only the
                // queue, which its streams' slow start overshoots.
                if knee || self.n >= self.most || self.carries_bottleneck(r) {
                    // The streams, or the path's rate, hold the group: no cap to keep a queue off.
                    self.capacity = Some(r);
                    self.alone = Some(r);
                    self.cap = None;
                    return self.full_from_now();
                }
                self.doubled(Some(r))
            }
            Phase::Ask { since, from, again } => {
                if now < since + t.ask {
                    return self.phase;
                }
                // Held at half the threshold or more: a second auto keeps a queue
                // that low while it follows the room it is given, as this one does.
                let held = self.share_at_least(since + t.ask / 2, Queue::Rising) >= 0.5;
                let moved = self.clean_rate(t.ask / 2);
                if let (true, false, Some(r), Some(cap)) = (held, again, moved, self.cap) {
                    // Held once: asked again, a margin below what the group moved
                    // (or below its cap, if the path gave it less: then the cap asked
                    // nothing). Flows that back off take that room too; a stiff
                    // source that rose through one ask rarely rises through two.
                    self.cap = Some(r.min(cap) * (1.0 - m));
                    return Phase::Ask {
                        since: now,
                        from,
                        again: true,
                    };
                }
                if held {
                    // The room was taken: flows that back off share the path.
                    return self.fair_from_now();
                }
                // Nobody took the room: the queue the path never went under
                // meanwhile is no full path's, and a queue that rises later is
                // read above it.
                if let Some(q) = self.least_queue(since + t.ask / 2) {
                    self.delay.set_floor(q);
                }
                if let Asking::Grow(before) = from {
                    // The group's own queue. If the doubling that raised it paid
                    // as loss-limited streams' does, the queue was new streams'
                    // slow start: double again. Not where µ is told: a group in
                    // `Grow` asks only while it moves less than µ (a queue of its
                    // own comes with all of µ moved), so someone else was there
                    // and did not take the room, a stiff source or a group that
                    // was asking too. More streams would find only the queue, or
                    // take from a group that yields.
                    let r = self.capacity.unwrap_or(0.0);
                    let may_be_slow_start = self.bottleneck.is_none();
                    if may_be_slow_start
                        && before.is_none_or(|b| self.paid(b, r))
                        && self.n < self.most
                    {
                        self.cap = None;
                        return self.doubled(Some(r));
                    }
                }
                // The group's queue, or a stiff source's: capped a margin below
                // what the path gave. A stiff source's, where µ says the group
                // moved less than the bottleneck sends.
                let short_of_mu = self.capacity.is_some_and(|c| self.short_of_mu(c));
                if short_of_mu && self.fair == 0 {
                    // Someone else is on the path, and a group that yields
                    // entirely yields to a source that does not back off too,
                    // as LEDBAT yields to any queue it did not make.
                    return self.fair_from_now();
                }
                if short_of_mu {
                    self.stiff_seen = (self.stiff_seen + 1).min(BACKOFF_MAX);
                }
                self.cap = self.capacity.map(|c| c * (1.0 - m));
                self.alone = self.capacity;
                self.full_from_now()
            }
            Phase::Full {
                since,
                slack_since,
                peak,
                step,
            } => {
                // A queue that rose and did not fall through a drain's time: the
                // cap's step down would have let it go.
                if self.stood_through(now.saturating_sub(t.drain)) && now >= since + t.drain {
                    // Someone came, or the path gives less: what the group moves since
                    // the queue rose is what the path gives it now. Over all the DRAIN
                    // the queue stood through: the bottleneck was busy all of it, so a
                    // group alone moved µ over it, where three ticks of it may read a
                    // tick's bunched or late acknowledgements, more than µ's error.
                    let since_rose = self.clean_rate(t.drain);
                    let Some(r) = since_rose.or(rate).or(self.cap).or(self.capacity) else {
                        return self.phase;
                    };
                    self.capacity = Some(r);
                    if self.carries_bottleneck(r) {
                        // The group moves all the bottleneck sends: the queue holds
                        // its packets alone (as in `Grow`), and nobody is there to
                        // ask. The cap's steps down did not drain it: drained as an
                        // ask would drain it, a margin below what the path gives,
                        // without an ask's wait.
                        self.cap = Some(self.through(r) * (1.0 - m));
                        return self.full_from_now();
                    }
                    // Beside a source found stiff, its rise is the room's fall: the
                    // cap follows it down, as far below what the group moves now as
                    // drains the queue in a DRAIN, before it is asked about again.
                    if self.stiff_followed + 1 < self.stiff_backoff() {
                        self.stiff_followed += 1;
                        self.cap = Some(self.drained(r, m));
                        return self.full_from_now();
                    }
                    self.stiff_followed = 0;
                    return self.ask(Asking::Full, r, m);
                }
                let rising = self.delay.rising();
                let Some(cap) = self.cap else {
                    // Uncapped, at a knee one doubling measured: but a path that holds
                    // no queue for a FREE is not full, whatever a MEASURE of a few
                    // sawteeth of loss-limited streams said. More streams; but not
                    // while the group moves µ: then the path holds it.
                    // A queue counts once it rose at two ticks running, as where
                    // the cap follows it (below): a single tick's is a host's stall.
                    let held_by_path = rate.is_some_and(|r| self.carries_bottleneck(r));
                    let slack_since = if self.twice_at_least(Queue::Rising) || held_by_path {
                        None
                    } else {
                        slack_since.or(Some(now))
                    };
                    return match slack_since {
                        Some(s)
                            if now >= s + t.free * self.free_backoff() && self.n < self.most =>
                        {
                            self.doubled(rate)
                        }
                        _ => Phase::Full {
                            since,
                            slack_since,
                            peak,
                            step,
                        },
                    };
                };
                // The cap follows the room the path leaves, by the queue. While a
                // queue rises the bottleneck is busy and what the group moves is
                // what the path gives it: the cap goes half a margin below the most
                // it moved since, and stays while the queue drains. With no queue it
                // climbs, an eighth of a margin at the first tick (well inside the
                // margin, so that the queue's answer, a round trip or two late,
                // finds it at most a margin above) and twice the step at each
                // tick after, to a margin (room that opened wide is taken in a few
                // ticks); never more than a margin above what the group moves (a
                // cap far above that asks nothing).
                let recent = self.clean_rate(3 * t.tick);
                // Streams held by their buffers have nothing unsent, so the cap
                // (a pacing rate) does not hold them either.
                if let Some(r) = self.held_by_hosts(recent) {
                    self.cap = None;
                    return self.grown(r);
                }
                // A margin of the bottleneck's rate where it is known (the same
                // reach for every group on the path, as the steps below), else of
                // what the group moves.
                let reach = |r: f64| self.bottleneck.unwrap_or(r) * m;
                // No higher than the bottleneck sends, as closely as its rate is
                // known: a cap above that asks nothing of the path and only
                // lets the streams fill its queue.
                let top = self
                    .bottleneck
                    .map_or(f64::INFINITY, |mu| mu * (1.0 + MU_WITHIN));
                let ceiling = recent.map(|r| (r + reach(r)).min(top));
                // At its ceiling: half a margin above what the group moves at least,
                // so that the rate's own noise (within a margin) does not hide the
                // slack from one tick to the next, or as high as the bottleneck
                // sends, where that is lower. A group that moves all the
                // bottleneck sends is held by the path, whatever its cap.
                let moves_mu = recent.is_some_and(|r| self.carries_bottleneck(r));
                let at_ceiling =
                    recent.is_some_and(|r| cap >= (r * (1.0 + m / 2.0)).min(top)) && !moves_mu;
                // A queue that others raise stays while they send into it; one
                // that rose at a single tick and was gone at the next is a stall
                // of a host on the route (which holds the ACKs too, so the rate
                // dips with it) or a burst that drained at once, and following it
                // down cuts the cap by the stall's dip. The cap steps down once
                // the queue rose at two ticks running; at one, it stops climbing.
                let stays = rising && self.twice_at_least(Queue::Rising);
                let (peak, step) = if rising {
                    let p = recent
                        .map(|r| self.through(r))
                        .map_or(peak, |r| Some(peak.map_or(r, |p: f64| p.max(r))));
                    if let (true, Some(p)) = (stays, p) {
                        // Alone (it moves all the bottleneck sends), as far below
                        // as drains the queue within a DRAIN.
                        let below = if moves_mu {
                            self.drained(p, m / 2.0)
                        } else {
                            p * (1.0 - m / 2.0)
                        };
                        self.cap = Some(cap.min(below));
                    }
                    (p, 0.0)
                } else {
                    self.alone = recent
                        .map(|r| r.max(self.alone.unwrap_or(0.0)))
                        .or(self.alone);
                    let step = if step == 0.0 {
                        m / 8.0
                    } else {
                        (2.0 * step).min(m)
                    };
                    // Up to the ceiling, never down: with no queue the path asks for
                    // nothing back, and a group that moves less than its cap may only
                    // have less to send (a transfer's last blocks on a few streams).
                    // A cap that followed that fall would hold those streams to it,
                    // and they would move less again.
                    // The step is a fraction of the bottleneck's rate where the
                    // receiving end told it: the same for every group on the path,
                    // so two autos that climb and step down together converge on
                    // equal caps (additive increase, multiplicative decrease: Chiu
                    // and Jain), where steps of their own caps keep their ratio.
                    let up = self.bottleneck.unwrap_or(cap) * step;
                    if let Some(c) = ceiling {
                        self.cap = Some((cap + up).min(c).max(cap));
                    }
                    (None, step)
                };
                let slack_since = if !rising && at_ceiling {
                    slack_since.or(Some(now))
                } else {
                    None
                };
                match slack_since {
                    Some(s) if now >= s + t.measure => {
                        // No queue, and the group moves a margin less than its cap: the
                        // streams, not the path, hold the rate, and the cap asks nothing.
                        // More streams, if it may open them; uncapped in any case (a
                        // queue of its own brings the cap back, through an ask).
                        self.cap = None;
                        if self.n < self.most {
                            return self.doubled(rate);
                        }
                        Phase::Full {
                            since,
                            slack_since: None,
                            peak: None,
                            step: 0.0,
                        }
                    }
                    _ => Phase::Full {
                        since,
                        slack_since,
                        peak,
                        step,
                    },
                }
            }
            Phase::Fair { since, clear_since } => {
                let standing = self
                    .stood
                    .back()
                    .is_some_and(|(_, q, _)| *q == Queue::Standing);
                // The room the group left takes the others a FREE to grow into.
                let settled = now >= since + t.free;
                let alone = self
                    .alone
                    .is_some_and(|a| rate.is_some_and(|r| r >= a * (1.0 - m)));
                if settled && alone {
                    // The fair streams move what the group moved alone: nobody is beside them.
                    return self.regrow();
                }
                match clear_since {
                    _ if standing || !settled => Phase::Fair {
                        since,
                        clear_since: None,
                    },
                    None => Phase::Fair {
                        since,
                        clear_since: Some(now),
                    },
                    // Room again: the others left, or are held elsewhere.
                    Some(c) if now >= c + t.free * self.yield_backoff() => self.regrow(),
                    Some(_) => self.phase,
                }
            }
        }
    }

    /// Whether the group moves what the bottleneck sends (µ, the receiving
    /// end's word), as closely as that word is known: a queue that stands
    /// then holds the group's packets, and anyone else's share of it is
    /// within µ's own error.
    fn carries_bottleneck(&self, r: f64) -> bool {
        self.bottleneck
            .is_some_and(|mu| r >= mu * (1.0 - MU_WITHIN))
    }

    /// Whether the receiving end told µ and the group, moving `r`, moves
    /// less than it by more than its error: a queue then holds someone
    /// else's packets too.
    fn short_of_mu(&self, r: f64) -> bool {
        self.bottleneck.is_some() && !self.carries_bottleneck(r)
    }

    /// What of a rate `r`, measured from the sender's acknowledgements,
    /// crossed the bottleneck: no more than it sends (µ, where the receiving
    /// end told it). A sender's count runs ahead of µ for a tick when
    /// acknowledgements arrive bunched (a host's stall on the way back).
    fn through(&self, r: f64) -> f64 {
        self.bottleneck.map_or(r, |mu| r.min(mu))
    }

    /// Whether a doubling from a rate of `b` to `r` paid: it brought half of
    /// what doubling loss-limited streams brings, `b` more, or of the room
    /// the bottleneck has above `b` (µ, where the receiving end told it), if
    /// that is less (none, if `b` is µ already); without µ, a rate 1.5 times
    /// the one before. Near µ a doubling cannot double the rate however
    /// loss-limited the streams are: measured against `2b` it finds a knee at
    /// the path's edge, where streams that random loss (or RED's early drops)
    /// hold below it still leave the rest of the path unused.
    fn paid(&self, b: f64, r: f64) -> bool {
        let room = self.bottleneck.map_or(b, |mu| (mu - b).min(b));
        room > 0.0 && r - b >= DOUBLING_WORTH * room
    }

    /// `Grow` found a queue of the group's own (it carries the bottleneck's
    /// rate; `r` over the MEASURE, and the path `gave` it that or more over
    /// some ticks of it): the knee, which no ask needs to confirm. The
    /// streams before the doubling, where `give_back_if_it_bought_nothing`
    /// says so; capped below what the path gave as far as drains the queue
    /// in a DRAIN (`drained`), a margin at most.
    ///
    /// Here too a doubling from streams that moved more than µ's error below
    /// it is kept: it took the part of an idle path they left, however close
    /// the two rates are in the rate's noise, and given back the streams
    /// would leave it again, show slack under their cap, and double into the
    /// same queue over and over.
    fn own_queue_in_growth(&mut self, before: Option<f64>, r: f64, gave: f64, m: f64) -> Phase {
        if let Some(b) = before {
            self.give_back_if_it_bought_nothing(b, r, m);
        }
        self.alone = Some(gave);
        self.cap = Some(self.drained(gave, m));
        self.full_from_now()
    }

    /// The cap that drains a queue of the group's own (it carries the
    /// bottleneck's rate) within a DRAIN: below what it moves by the queue's
    /// share of a DRAIN, and never more than `most` (a fraction) below. The
    /// group alone sends all the queue holds, so a cap that much below what
    /// the bottleneck sends empties it in that time; a margin below, as an
    /// ask's, would empty it too, and leave the path short of the rest for as
    /// long.
    fn drained(&self, r: f64, most: f64) -> f64 {
        let share = self.delay.queue().as_secs_f64() / self.times().drain.as_secs_f64();
        self.through(r) * (1.0 - share.min(most))
    }

    /// A doubling from a rate of `b` that brought `r`, no more than the rate's
    /// own noise (`m`) above it, bought nothing: the streams it added carry
    /// nothing the others would not, and cost (their own losses, both hosts'
    /// CPU). Back to the streams before it, as the ones the path needs, if
    /// they carried the bottleneck's rate (µ) as far as it is known.
    ///
    /// Streams that moved more than µ's error below it left part of the path
    /// unused, and a few seconds after a doubling say little of what more
    /// streams move there: the new streams' slow start overshoots, and the
    /// drops it brings (a RED queue's early ones above all) cut every
    /// stream's window, which CUBIC takes tens of seconds to grow back at a
    /// long path's window. Given back, the streams before are the ones just
    /// cut, and leave the room unused longer than the doubling did.
    fn give_back_if_it_bought_nothing(&mut self, b: f64, r: f64, m: f64) {
        let carried = self.bottleneck.is_none() || self.carries_bottleneck(b);
        if carried && r <= b * (1.0 + m) {
            self.n = self.from_n;
            self.n_full = self.n;
        }
    }

    /// `Fair`, entered now: others share the path. `--fair-share` ordinary
    /// flows, uncapped; or one stream at a few packets a round trip.
    fn fair_from_now(&mut self) -> Phase {
        self.stiff_seen = 0;
        if self.fair == 0 {
            self.yields = (self.yields + 1).min(BACKOFF_MAX);
        }
        self.n = self.fair.max(1);
        self.cap = self.yielding();
        Phase::Fair {
            since: self.now,
            clear_since: None,
        }
    }

    /// `Full`, entered now: no slack, peak or climb yet.
    fn full_from_now(&self) -> Phase {
        Phase::Full {
            since: self.now,
            slack_since: None,
            peak: None,
            step: 0.0,
        }
    }

    /// How many FREEs a knee waits before it is tried again: 1 after the
    /// first measurement, doubling with each that found the same knee.
    fn free_backoff(&self) -> u32 {
        1 << self.knee_seen.saturating_sub(1)
    }

    /// How many FREEs without a queue a group that yields entirely waits in
    /// `Fair` before it tries the path again: 1 the first time, doubling
    /// with each time running it stepped aside.
    fn yield_backoff(&self) -> u32 {
        1 << self.yields.saturating_sub(1)
    }

    /// How many rises of a queue that stands through a DRAIN in `Full` the
    /// group meets for each one it asks about: 1 until an ask finds a stiff
    /// source, doubling with each that finds one again.
    fn stiff_backoff(&self) -> u32 {
        1 << self.stiff_seen.min(BACKOFF_MAX - 1)
    }

    /// The group's `recent` rate (over the last three ticks), if the streams
    /// are held by their own buffers (the sending socket's, or the receiver's
    /// window) at this tick and the one before, no queue rises, the group
    /// moves less than µ and it may open more: the hosts, not the path, hold
    /// the rate (`path::Held`), and that needs no MEASURE of slack to show.
    fn held_by_hosts(&self, recent: Option<f64>) -> Option<f64> {
        if !self.held.holds() || self.delay.rising() || self.n >= self.most {
            return None;
        }
        recent.filter(|r| *r > 0.0 && !self.carries_bottleneck(*r))
    }

    /// Streams held by their buffers at a rate `r`: each moves about r / n,
    /// so µ needs n µ / r of them (µ's error above), if that is more than
    /// twice as many (growth's step: the random losses that take some of
    /// them off their buffers' limit soon after are not in r). Within `-n`;
    /// the rate before is `r`, to see what they buy.
    fn grown(&mut self, r: f64) -> Phase {
        // A group that yields entirely, trying the path after it stepped
        // aside (`regrow`), doubles at the most: what µ leaves may be the others'.
        let trying = self.fair == 0 && self.yields > 0;
        let need = self.bottleneck.filter(|_| !trying).map_or(0.0, |mu| {
            (self.n as f64 * mu * (1.0 + MU_WITHIN) / r).ceil()
        });
        self.from_n = self.n;
        self.n = (need as usize).max(self.n * 2).min(self.most);
        Phase::Grow {
            since: self.now,
            before: Some(r),
        }
    }

    /// Twice the streams (within `-n`), to see what they buy over `rate`.
    fn doubled(&mut self, rate: Option<f64>) -> Phase {
        self.from_n = self.n;
        self.n = (self.n * 2).min(self.most);
        Phase::Grow {
            since: self.now,
            before: rate,
        }
    }

    /// Back from `Fair` to the streams the path needed alone, to grow from there.
    ///
    /// A group that yields entirely tries the path with one stream, and
    /// grows from it only as `Grow` does, a doubling at a time while no queue
    /// rises: the others may still be there (beside flows that random loss or
    /// an AQM's early drops hold below their share, no queue stands whether
    /// or not they are), and all the streams the path needed alone, opened at
    /// once, take from them in their slow start what a Reno flow on a long
    /// path grows back over minutes. One stream costs them what one ordinary
    /// flow arriving costs; its user gave up the time the try takes.
    fn regrow(&mut self) -> Phase {
        self.n = if self.fair == 0 {
            1
        } else {
            self.n_full.max(self.fair)
        };
        self.cap = None;
        // Others came and went: what the path was measured to reward is measured again.
        self.knee_n = None;
        self.knee_seen = 0;
        Phase::Grow {
            since: self.now,
            before: None,
        }
    }

    /// The cap while others share the path: none for ordinary flows; for a
    /// group that yields entirely, its one stream's `YIELD_PACKETS` a base
    /// RTT, as a scavenger (LEDBAT, RFC 6817; rLEDBAT, RFC 9840) keeps.
    fn yielding(&self) -> Option<f64> {
        let base = self.delay.base().unwrap_or(Duration::from_millis(100));
        (self.fair == 0).then(|| YIELD_PACKETS * MSS / base.as_secs_f64())
    }

    /// Caps the group the margin `m` below `rate` to see who takes the room.
    ///
    /// Not a group that yields entirely and moved less than µ: whoever takes
    /// the room or not, its ask ends in `Fair` (someone else is there, and it
    /// yields to any source), so it steps aside at once rather than move
    /// beside them for an ASK first.
    fn ask(&mut self, from: Asking, rate: f64, m: f64) -> Phase {
        if self.fair == 0 && self.short_of_mu(rate) {
            return self.fair_from_now();
        }
        self.cap = Some(rate * (1.0 - m));
        Phase::Ask {
            since: self.now,
            from,
            again: false,
        }
    }

    /// What the streams must be told for the phase: how many carry, and each one's cap.
    fn steerings(&mut self, streams: &[StreamView]) -> Vec<Steering> {
        let mut out = Vec::new();
        if self.dials && self.n != self.told_n {
            out.push(Steering::Streams(self.n));
        }
        self.told_n = self.n;
        let total = streams.len().max(self.most);
        if self.told.len() < total {
            self.told.resize(total, None);
        }
        // What each stream moved over the last tick, by the kernel's count of
        // packets delivered (it goes on within a block, where the engine
        // counts whole blocks), is how the group's cap is shared among them.
        let moved = self.delivered.last_tick(self.n);
        let noise = self.margin();
        let parts = self.cap.map(|c| share::parts(c, &moved, noise));
        for i in 0..total {
            let want = if i < self.n {
                parts.as_ref().map(|p| p[i].max(1.0) as u64)
            } else if self.dials {
                // Closed: nothing to cap.
                None
            } else {
                Some(TRICKLE)
            };
            let differs = match (want, self.told[i]) {
                (Some(a), Some(b)) => (a as f64 - b as f64).abs() > 0.02 * b as f64,
                (a, b) => a.is_some() != b.is_some(),
            };
            let live = streams.get(i).is_some_and(|s| s.info.is_some());
            if differs && (live || want.is_none()) {
                out.push(Steering::Pace(i, want));
                self.told[i] = want;
            }
        }
        out
    }
}

impl Steer for Auto {
    fn interval(&self) -> Duration {
        self.times().tick
    }

    fn tick(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        self.now = elapsed;
        // What each stream had acknowledged this tick first: the queue is
        // read from those streams only.
        self.delivered.note(elapsed, streams);
        let delivered = &self.delivered;
        // The tick is the newest look (the engine reads no other at this
        // moment): the least is over the round trip before it.
        self.delay.sample(elapsed, streams);
        self.delay.note(streams, |i| delivered.acked(i));
        let told = &self.told;
        self.held.note(
            streams,
            |i| delivered.moved(i),
            |i| told.get(i).copied().flatten().is_some(),
        );
        let standing = self.delay.standing();
        let level = if standing {
            Queue::Standing
        } else if self.delay.rising() {
            Queue::Rising
        } else {
            Queue::Clear
        };
        self.stood.push_back((elapsed, level, self.delay.queue_us));
        while self
            .stood
            .front()
            .is_some_and(|(t, _, _)| elapsed.saturating_sub(*t) > Duration::from_secs(120))
        {
            self.stood.pop_front();
        }
        // The spread at the scale auto's rules read the rate: three ticks, one
        // sample per three (samples that share ticks would hide the noise).
        // Only of one group on one path: a span that reaches back before the
        // streams or their cap changed, or into the streams' slow start,
        // measures that change, not the path's noise (the first ask's margin
        // would be sized by slow start's climb).
        self.ticks += 1;
        let steady = self.phase != Phase::Start
            && elapsed.saturating_sub(self.changed_at) >= 3 * self.times().tick;
        if self.ticks % 3 == 0 && steady {
            if let Some(r) = self.delivered.rate(3 * self.times().tick) {
                self.spread.note(r);
            }
        }
        let before = (self.n, self.cap, self.phase.name());
        self.phase = self.next(streams);
        // The cap's steps while it follows the path (in `Full`) leave the group
        // what it was; another number of streams, or another phase's cap, do not.
        if (self.n, self.phase.name()) != (before.0, before.2)
            || (self.cap.is_some() != before.1.is_some())
            || (before.2 != "full" && self.cap != before.1)
        {
            self.changed_at = elapsed;
        }
        self.steerings(streams)
    }

    fn state(&self) -> Option<SteerState> {
        Some(SteerState {
            strength: None,
            queue_us: Some(self.delay.queue_us),
            utility: None,
            shared: match self.phase {
                Phase::Fair { .. } => Some(true),
                Phase::Full { .. } => Some(false),
                _ => None,
            },
            share_bps: self.cap,
            phase: Some(self.phase.name()),
            bottleneck_bps: self.bottleneck,
        })
    }

    fn bottleneck(&mut self, bytes_per_sec: f64) {
        self.bottleneck = Some(bytes_per_sec);
    }

    /// Paced from the first tick µ is known (the first streams' unpaced
    /// slow start is what the receiving end reads µ from), each later
    /// connection from the first tick it is seen at, as they are once
    /// capped: unpaced, a stream sends each window the acknowledgements free
    /// at once, at the hosts' rate, and on a long path a window is many
    /// milliseconds of the bottleneck's. Its queue fills for part of each round trip and the
    /// bottleneck idles for the rest: the RTTs read a standing queue while
    /// the group moves less than µ, which is how a path shared with someone
    /// else reads, and an ask (whose cap paces the streams) finds the room
    /// untaken. Paced at TCP's own rate (twice the window a round trip in
    /// slow start, 1.2 times after) the streams move the same windows, and
    /// the queue the RTTs read is the path's.
    fn paces(&self) -> bool {
        true
    }

    /// `LOOKS_PER_TICK` a tick, on a grid from the tick; but a tick reads
    /// only the looks of the round trip before it (`Delay::sample` drops the
    /// older), so on a path shorter than a tick the looks before that round
    /// trip are not taken: a look costs the streams' reading, and a wake
    /// where no sender is awake to take it.
    fn looks(&self) -> Option<Looks> {
        let tick = self.times().tick;
        let every = tick / path::LOOKS_PER_TICK;
        if every.is_zero() {
            return None;
        }
        // The first point of the tick's grid in the round trip before the next tick.
        let before = tick.saturating_sub(self.delay.base().unwrap_or(tick));
        let steps = before.as_nanos().div_ceil(every.as_nanos()).max(1);
        Some(Looks {
            first: every * steps as u32,
            every,
        })
    }

    fn sample(&mut self, elapsed: Duration, streams: &[StreamView]) {
        self.delay.sample(elapsed, streams);
    }
}

#[cfg(test)]
mod tests;
