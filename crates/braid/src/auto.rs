//! `--mode auto`: a TCP-P group (Cho & Bettati) whose strength k the sending
//! end steers from what its streams' TCP_INFO says about the path's queue.
//!
//! Why the queue: on a path nobody else uses, random loss holds each stream
//! below the path's rate and no queue builds; more strength fills the path.
//! Once the group fills it, a queue stands, and what the group should do
//! depends on whose it is. When other loss-based flows share the bottleneck,
//! k falls to its floor, the fair share (one flow unless `--fair-share` says
//! otherwise), and the group takes what that many TCP flows take (TCP-P's
//! Eq. 8 and 9). When the queue is the group's own (an idle path, or traffic
//! that does not back off, such as a stiff UDP stream), nobody loses by the
//! group's strength and k rises toward one flow per stream, as parallel
//! streams would run.
//!
//! Whose queue it is, the group asks the path by yielding: for 5 s every
//! stream sends at most 70 % of its rate (SO_MAX_PACING_RATE on the live
//! sockets), or 92 % where the group's delivery has held steady, with no
//! swing a stiff source could fill the smaller room with. Flows that back
//! off also grow back (Reno by a packet per RTT each) and take the room the
//! group leaves, so a queue stands again for much of the yield's second half
//! (more than a quarter of its ticks: not one reading, as others'
//! synchronised losses empty the queue for a while; the yield ends as soon
//! as that many have seen one); traffic that does not back off does not grow
//! either, and the queue is gone but for a stiff source's swings. A room found taken when the queue
//! was not known to be shared is asked about once more, 2.5 s later, before
//! the group is held to its share (and it is not held meanwhile): a swing of
//! stiff UDP rising through one yield fills its room, and the next meets
//! another phase of the swing.
//!
//! The first question waits 20 s, past the streams' slow start, so that a
//! short transfer does not pay for it. Asking costs the yield's 30 % (8 %
//! on a steady path) for 5 s: while the queue is the group's own, 30 s after
//! the first answer, then 60 s, then every 120 s (at 30 s on an idle path it cost 5 % of the
//! rate); every 30 to 60 s, and shallow, while others share it. It is what finds flows that
//! arrive while the group
//! runs strong (beside a group of strength 9, 5 Reno flows hold a third of
//! the path and cannot grow, and the queue does not tell them from a stiff
//! source). Between questions, a fall of the group's delivery that lasts
//! (the best of its 2 s rates over the last few seconds under three
//! quarters of the best over the 22 s before) asks at once: newcomers beside
//! a strong group hold a share and the group's delivery stays down, where a
//! stiff source's swings come back up. How long a fall must last the path's
//! own past says: 3 s where the group's rate held steady, the longest low
//! spell seen plus 2 s (at most 8 s) beside a source that swings. A question
//! a fall asked takes a first "taken" as the answer, yields down to that
//! share at once (for a second 5 s if nobody filled the room in the first:
//! newcomers halved by their own slow start fill a large room slowly), and
//! the share it holds the group to comes from the queue's growth or the
//! losses since the fall began, not from the idle path's before it.
//! Flows that grow slower than the yield gives room (one Reno flow
//! on a long path: a packet per RTT against a third of the group's window)
//! stay small beside a strong group; the group finds the room untaken.
//!
//! Found sharing, a group that ran strong before the others came would come
//! down only by halving at each of its loss events (beside 5 Reno flows on a
//! 68 ms path, from 60 % of the path to a sixth in about 30 s). So while
//! others share the path the group's rate is capped at its fair share. If
//! the group had the path to itself before, it knows the path's rate, and
//! the share is that rate split equally with the others, counted by how fast
//! they fill the queue: while a queue stands, all in flight is the path's
//! rate times the RTT, and each Reno flow adds a packet an RTT, so the
//! square of the RTT grows at twice their number times a packet's time at
//! the bottleneck, less what the group's own flight adds (see RAMP_TICKS).
//! The share first told holds until the group has counted them often enough
//! under its caps to go by those counts alone, since every new cap starts
//! the count afresh.
//! Otherwise (the others were there first) it is what `--fair-share`
//! Reno flows take at the loss rate its streams see (Mathis, with p the loss
//! events per packet since the sharing began: since the fall that asked, or
//! over the last 60 s until the sharing is older than that). The count
//! converges rather than forgets, and starts afresh when the last minute's
//! events say the rate changed. Held there, k follows what the group
//! delivers, not the queue (others hold one too): it rises while the
//! group moves less than the cap, since nine TCP-P streams at k = 1 move
//! less than one Reno flow, and holds once the cap is what limits it. The
//! RTT of the cap is the mean over the span p is counted on, so the cap does
//! not swing with the others' sawtooth. The cap comes off when a question
//! finds the room untaken, or when no queue has stood for 45 base RTTs (a
//! capped group builds none to ask about once the others leave; beside Reno
//! flows one stands again within about 30 RTTs of their losses; a queue
//! that stands for a tick or two is a stall of the path, not them; twice as
//! long for the first clearing after a question found them, whose losses
//! then come together): then the path is the group's own. Its windows are
//! still what the cap let them be, so k goes to four times its ceiling (the
//! group grows four packets an RTT per stream) until its own queue stands,
//! then to the ceiling.
//!
//! What the group delivered is what its streams' TCP saw acknowledged, not
//! the blocks that completed: at a megabit or two a stream those come one or
//! two a second.
//!
//! A drain probe (caps that leave the path nearly idle for a few RTTs, as
//! BBR drains to see the propagation delay) was measured first and dropped:
//! a queue that drains says only that the others' windows hold less than
//! the path's BDP, which newcomers beside a strong group never do.
//!
//! The queueing delay is the streams' median smoothed RTT above the smallest
//! RTT any of them saw. Each tick (two base RTTs, within 100 ms..1 s) moves k
//! multiplicatively: up by at most 15 % when there is no queue or the queue
//! is the group's own, down by at most 30 % when a queue not known to be the
//! group's is twice the target.

use std::collections::VecDeque;
use std::time::Duration;

use braid_cc::{SocketSettings, Strength};

use crate::model::{equal_share_bps, flows_filling, mathis_bps, slope, C_PERIODIC};
use crate::plan::StreamControl;
use crate::proto::steer::{Steer, SteerState, Steering, StreamView};

/// The queueing delay the group aims under: a few milliseconds, or a tenth of
/// the base RTT on a long path (where the kernel's RTT samples are coarser).
const TARGET_MIN_US: f64 = 5_000.0;
const TARGET_SHARE: f64 = 0.1;
const GAIN_UP: f64 = 0.15;
const GAIN_DOWN: f64 = 0.30;
/// The steer tells the sockets of a new k only when it moved this much.
const HYSTERESIS: f64 = 0.02;
/// A yield: how long, and the share of its rate each stream keeps.
const YIELD_FOR: Duration = Duration::from_secs(5);
const YIELD_SHARE: f64 = 0.7;
/// On a path whose delivery holds steady (see `Auto::steady`) a question
/// leaves less room: 8 % of the rate is as plain a room to flows that back
/// off (five Reno flows fill it in a few RTTs, one in a few seconds) and a
/// stiff source that does not swing cannot fill it, and the group's rate
/// dips by no more than its own random losses move it. Beside a source that
/// swings the room must outlast its swings' reach: the deep yield.
const YIELD_SHARE_STEADY: f64 = 0.92;
/// The share of the yield's second half in which a queue must stand for the
/// room to count as taken.
const TAKEN_SHARE: f64 = 0.25;
/// The first question waits 20 s: past the streams' slow start, and a
/// transfer shorter than that does not pay for it (until then the group
/// behaves as if others held the queue).
const FIRST_ASK: Duration = Duration::from_secs(20);
/// Between questions: while the queue is the group's own (doubling with each
/// answer that says so, up to OWN_FOR_MAX: a deep question costs 30 % of the
/// group's rate for 5 s, and a question every 30 s would cost 5 % of it;
/// newcomers that back off are found between questions by the fall of the
/// group's delivery); while others share it (doubling from the first to the
/// second while they stay). Flows that back off and leave are found without
/// a question (see GONE_RTTS), so a question while others share the path
/// asks only after a stiff source that holds a queue alone: every 10 to 20 s,
/// or 5 s after any moment without a queue, each question's dip (8 % for
/// some 3 s) broke the 10 % band the held rate is judged in (adaptive-held-4).
const OWN_FOR: Duration = Duration::from_secs(30);
const OWN_FOR_MAX: Duration = Duration::from_secs(120);
const SHARED_FOR: Duration = Duration::from_secs(30);
const SHARED_FOR_MAX: Duration = Duration::from_secs(60);
/// No queue for GONE_RTTS base RTTs (within GONE_MIN..GONE_MAX) while
/// others shared the path: they left. Flows that back off refill what their
/// synchronised losses emptied in tens of RTTs (their halved windows' deficit
/// over the buffer, a packet per RTT each): beside 5 Reno flows on the Hacker
/// 2004 path a queue stood again within about 2 s, 30 RTTs; the time is
/// counted in RTTs since a longer path refills as many RTTs more slowly.
const GONE_RTTS: u32 = 45;
const GONE_MIN: Duration = Duration::from_secs(3);
const GONE_MAX: Duration = Duration::from_secs(10);
/// A queue that stands on fewer ticks in a row than this does not restart
/// the count of GONE_RTTS: flows that back off refill theirs for seconds,
/// while a moment's stall of the path (one sRTT spike, some 6 ms over a
/// single tick in adaptive-conv-4, 3 s after five Reno flows left) put the
/// release off by 2 s.
const STOOD_TICKS: u32 = 3;
/// The first clearing after an answer that found others counts this many
/// times GONE_RTTS: the others had just grown into the question's room, the
/// caps then went from the room to the share on a full queue, and the
/// others' losses that followed came together. Beside 5 Reno flows all five
/// halved half a second after such an answer and no queue stood for 3.1 s,
/// 45 base RTTs; the caps came off and the group ran strong beside them for
/// 30 s (adaptive-checked-e0414f7-busy, tcp-5 auto-4 r1, 4.5 % taken from
/// them). Later clearings, once a queue has stood again, count GONE_RTTS:
/// the departure 160 s into tcp-arrive is found as soon as before.
const FIRST_CLEAR: u32 = 2;
/// Released, the group's windows are what its share allowed (a stream held
/// below its window by its cap does not grow it), and at one packet per RTT
/// per stream they took 4 s to fill the Hacker 2004 path again from a
/// sixth of it. So the strength goes to this many times the ceiling
/// (TCP-P's k > N: the group grows k packets an RTT, and a member's loss
/// halves that member alone) until a queue of its own stands or
/// REGROW_RTTS base RTTs have passed, then to the ceiling.
const REGROW_BOOST: f64 = 4.0;
const REGROW_RTTS: u32 = 30;
/// A room found taken when the queue was not known to be shared is asked
/// about again this long after, before the group is held to its share: a
/// stiff source's swing rising through one yield fills its room, and the
/// next yield, 7.5 s after the first began, meets another phase of it.
const CONFIRM_AFTER: Duration = Duration::from_millis(2500);
/// While the queue is the group's own, a fall in what the group delivers that
/// lasts brings the next question forward: newcomers that back off, beside a
/// group running strong, hold a share of the path and stay small, and the
/// group's delivery stays down. The best of its rates over RATE_SPAN in the
/// last `hold` below FALL_SHARE of the best in the FALL_BEFORE before that is
/// such a fall. How long is long enough the path's own past says: `hold` is
/// the longest spell of low rates (below FALL_SHARE of the best) that ended
/// in the rates noted, plus FALL_MARGIN, within FALL_HOLD_MIN..FALL_RECENT.
/// A path whose rate held steady over STEADY_FOR of clean rates is asked
/// about after 3 s of a fall (5 Reno flows arriving beside a strong group
/// cut its rate by a third at once); beside a stiff source that swings (UDP
/// 50-80 Mb/s, a low spell of some 6 s in every 11) the group waits out its
/// swings, and until its rates have told it, waits FALL_RECENT, which no
/// swing of 10 s or shorter outlasts. Rates whose span meets a yield do not
/// count.
const RATE_SPAN: Duration = Duration::from_secs(2);
const FALL_RECENT: Duration = Duration::from_secs(8);
const FALL_HOLD_MIN: Duration = Duration::from_secs(3);
const FALL_MARGIN: Duration = Duration::from_secs(2);
const STEADY_FOR: Duration = Duration::from_secs(15);
const FALL_BEFORE: Duration = Duration::from_secs(22);
const FALL_SHARE: f64 = 0.75;
/// A low spell longer than this that came back is a swing (`Auto::steady`):
/// the spells a steady path's hold allows (FALL_HOLD_MIN - FALL_MARGIN).
const SWING_FOR: Duration = Duration::from_secs(1);
/// Clean rates further apart than this (a yield between them) do not make
/// one spell.
const RATE_GAP: Duration = Duration::from_secs(1);
/// While others share the path, the group's rate is capped at what `floor`
/// Reno flows take at the rate of loss events its streams saw over this long
/// (Mathis), once they saw this many; the caps are retold when the share
/// moved by more than a tenth. Over 20 s the group beside 5 Reno flows
/// counted some four events of its own, and one more or fewer moved the
/// share by an eighth: its cap stepped between 10 and 20 Mb/s within one
/// cell (adaptive-steady). Over 60 s it counts a dozen, as TFRC (RFC 5348)
/// averages its last eight loss intervals for a rate that does not jump.
const FAIR_OVER: Duration = Duration::from_secs(60);
const FAIR_MIN_EVENTS: u64 = 2;
/// How long after the first loss event since a fall its streams' own events
/// still belong to it (they lose at moments apart within one overflow).
const BURST_FOR: Duration = Duration::from_secs(1);
/// The caps are retold when the share moved by more than this: the steps
/// stay well inside the 10 % band a settled rate is judged in.
const FAIR_RETELL: f64 = 0.05;
/// While the group is held at its share, the loss rate counts from when the
/// sharing began, not over a sliding FAIR_OVER: over 60 s the share beside
/// five arriving Reno flows climbed by a third in the phase's last 20 s, as
/// the events of its first minute aged out (adaptive-steady-3), where the
/// count since they came converges. The span starts afresh when the last
/// FAIR_OVER's count of the streams' events lies more than CHANGE_SIGMA
/// standard deviations (a Poisson count's) from what the span's rate
/// expects of it: others came or left, and the old rate no longer holds.
const CHANGE_SIGMA: f64 = 3.0;
/// Found sharing without a fall, the group counts over the last FAIR_OVER
/// until its span covers this long, then over the span alone: the minute
/// before the answer holds the transfer's own slow start, whose overflow
/// costs every stream a halving and is no part of the loss rate that
/// follows (counted from the start, the share beside 5 CUBIC flows sat at
/// 0.67 of one Reno stream's rate, adaptive-rare-busy).
const SPAN_MIN: Duration = Duration::from_secs(30);
/// Held at the fair share, the strength is what lets the group reach it: a
/// TCP-P group of nine at k = 1 moves less than one Reno flow (0.59 of one in
/// Cho and Bettati's Fig. 3 cell; beside 5 Reno flows auto held at k = 1 moved
/// 0.83 of one Reno stream's rate, drifting to 4-6 Mb/s against its 4-9).
/// Below the share by more than REACH_SLACK of it, k rises; above it (the
/// share just fell), k falls; between, the cap does the limiting and k holds.
const REACH_SLACK: f64 = 0.15;
/// Held at its share on a path it has had to itself, the group counts the
/// others by how fast they fill the queue (`model::flows_filling`: Reno
/// flows add a packet an RTT each, and the group, held at its caps, adds
/// none) and takes the path's rate split equally with them. Counted from
/// loss events, the share beside five arriving Reno flows wandered by a
/// fifth over the minute they stayed (adaptive-regrow-4 and -5: the count
/// converges on a few events a second); the queue's growth over one
/// second of one rise says the same count within a tenth. A window of
/// RAMP_TICKS ticks counts when the caps held through it and the tick
/// before, a queue stood at every tick, and none fell by more than half
/// the target (a loss's halving, or the stall of the path); the count is
/// the median over the last FAIR_OVER, once RAMPS_MIN windows say it.
const RAMP_TICKS: usize = 8;
const RAMPS_MIN: usize = 6;
/// Windows made while every stream was capped count the others within a
/// few per cent of one another (the group adds none of its own growth), and
/// the share goes by them alone once HELD_MIN say it: the queue stands for
/// them only once the newcomers have filled the room their slow start's
/// overflow left, some 4 s into a fall's question, and waiting for six
/// held a share 11 % under the kept one for 1.3 s more (braid-sim, seed 4:
/// settled 12.0 s after the arrival, 10.0 with three).
const HELD_MIN: usize = 3;
/// Newcomers that back off grow into the queue beside a group that runs
/// strong before its delivery has fallen by a quarter: beside five Reno
/// flows arriving, the group's 2 s rate went from 96 to 72 Mb/s over 6 s,
/// and the fall was judged 9 s after they came (which put the group at its
/// share 10 s after, and the 3 s mean within the 10 % band 12 s after). So
/// on a steady path a fall is also the median count over the last
/// COUNTED_FOR at COUNTED_OTHERS or more, with the group's best rate there
/// under COUNTED_FALL of its best before: a tenth would be within what UDP
/// 1-10 Mb/s swinging beside the group takes of it.
const COUNTED_FOR: Duration = Duration::from_secs(2);
const COUNTED_OTHERS: f64 = 1.5;
const COUNTED_FALL: f64 = 0.85;

/// The group's counts at one tick: packets sent, and loss events as the
/// group's and as its streams' (see `Auto::note_losses`).
#[derive(Clone, Copy, Debug, Default)]
struct Booked {
    t: Duration,
    sent: u64,
    group: u64,
    streams: u64,
    /// The streams' median sRTT summed over the ticks so far, in µs, and
    /// the ticks: the RTT the share is computed at is the mean over the span
    /// its p covers (beside Reno flows the queue, and each tick's sRTT,
    /// swings by half with their sawtooth, and Reno's rate follows the mean).
    rtt_us: f64,
    ticks: u64,
}

/// The loss episode a fall began with (the newcomers' slow start
/// overflowing the queue), to be left out of the share once it is over.
#[derive(Clone, Copy, Debug)]
enum Burst {
    /// No fall began the span: nothing to leave out.
    Unsought,
    /// A fall began it; no group event since.
    Awaited,
    /// The first group event since the fall, at this tick.
    Began(Duration),
    /// Over: the counts at the first tick BURST_FOR after it began.
    Ended(Booked),
}

/// A spell of the group's clean rates below FALL_SHARE of the best: its
/// first and last rates' ticks; whether a rate that was not low came just
/// before it and just after it (it ended at a gap, a yield, otherwise); and
/// whether it is over (the last spell may be under way).
#[derive(Clone, Copy, Debug)]
struct LowSpell {
    start: Duration,
    last: Duration,
    from_high: bool,
    came_back: bool,
    over: bool,
}

/// One tick as the count of others (see RAMP_TICKS) reads it: the
/// streams' median sRTT, the sum of their windows, the packets the group
/// has in flight (a capped stream's cap times its sRTT, if its window
/// allows that much), whether every stream's cap held it below its window,
/// how many streams there were, which caps were in force, and whether a
/// queue stood.
#[derive(Clone, Copy, Debug)]
struct RampTick {
    t: Duration,
    srtt_us: u32,
    cwnd: u64,
    flight: f64,
    held: bool,
    streams: usize,
    caps: u64,
    standing: bool,
}

/// Whose the standing queue is, by the latest question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// Not asked yet: the group behaves as if others held it.
    Unknown,
    /// Nobody took what the group gave up: the group's own.
    Own,
    /// Others took it and held it: responsive flows share the path.
    Shared,
}

pub struct Auto {
    group: u64,
    k: f64,
    floor: f64,
    ceiling: f64,
    told: f64,
    base_us: Option<u32>,
    /// The last tick's queueing delay, for reports.
    pub queue_us: u32,
    queue: Queue,
    /// While the group yields: until when, and the queue at each tick of its
    /// second half.
    yielding: Option<Duration>,
    seen: Vec<u32>,
    /// When the next question may be asked (once a queue stands).
    next_ask: Duration,
    shared_gap: Duration,
    own_gap: Duration,
    /// Streams whose rate is capped now, by a yield or the fair share.
    paced: Vec<usize>,
    /// The group's packets sent and loss events so far, at each tick of the
    /// last FAIR_OVER; and each stream's packets lost by the last tick, and
    /// whether it was losing then.
    book: VecDeque<Booked>,
    lost: Vec<(usize, u32, bool)>,
    /// Since when no queue has stood (for STOOD_TICKS in a row), and the
    /// ticks in a row a queue has stood.
    clear_since: Option<Duration>,
    stood: u32,
    /// Since the last answer that found others, no queue has yet stood again
    /// after a clearing (see FIRST_CLEAR).
    first_clear: bool,
    /// Released (see `released`): the strength stays boosted until then,
    /// or until a queue stands.
    regrow_until: Option<Duration>,
    /// Since when the group's delivery has been down, if a fall asked the
    /// last question: the newcomers' loss rate is that since then.
    fell_since: Option<Duration>,
    /// The counts where the share's span begins (the fall's start, or when
    /// others were found sharing without one), kept past FAIR_OVER while the
    /// group is held; and the fall's burst.
    span: Option<Booked>,
    burst: Burst,
    /// The fair share the streams' caps were last set from, bytes per second.
    fair_told: Option<f64>,
    /// The last question found the room taken, or the group's delivery fell
    /// and stayed down: the next question's answer is taken as it comes.
    confirming: bool,
    /// The yield under way was made longer once (see `tick`).
    extended: bool,
    /// When the last question ended.
    answered: Duration,
    /// Each stream's count (see `delivered`) at the last tick; the group's
    /// bytes since the start at each tick of the last RATE_SPAN; its rate over RATE_SPAN at
    /// each tick of the last FALL_RECENT + FALL_BEFORE but those of yields.
    stream_bytes: Vec<(usize, (bool, u64))>,
    delivered: VecDeque<(Duration, u64)>,
    rates: VecDeque<(Duration, f64)>,
    /// The best rate the group delivered with a queue of its own standing
    /// before others were first found sharing the path: the path's, bytes a
    /// second; and whether they have been.
    full: Option<f64>,
    ever_shared: bool,
    /// The share a fall's question yields down to, while it does, and the
    /// most the question's room lets it be (see `begin_yield`), bytes a
    /// second.
    fallen_told: Option<(f64, f64)>,
    /// How many times caps were told (a window counts the others only
    /// where the caps held) and each capped stream's cap, bytes a second;
    /// the last ticks, and the others counted over the last FAIR_OVER (see
    /// RAMP_TICKS).
    caps: u64,
    capped: Vec<(usize, u64)>,
    ramp: VecDeque<RampTick>,
    others: VecDeque<(Duration, f64, bool)>,
}

impl Auto {
    /// A group of `streams` streams with TCP-P group id `group`; `fair_share`
    /// is the strength it keeps to while others share the path.
    pub fn new(group: u64, streams: usize, fair_share: Strength) -> Self {
        let floor = fair_share.as_f64();
        Auto {
            group,
            k: floor,
            floor,
            ceiling: (streams as f64).max(floor),
            told: floor,
            base_us: None,
            queue_us: 0,
            queue: Queue::Unknown,
            yielding: None,
            seen: Vec::new(),
            next_ask: FIRST_ASK,
            shared_gap: SHARED_FOR,
            own_gap: OWN_FOR,
            paced: Vec::new(),
            book: VecDeque::new(),
            lost: Vec::new(),
            clear_since: None,
            stood: 0,
            first_clear: false,
            regrow_until: None,
            fell_since: None,
            span: None,
            burst: Burst::Unsought,
            fair_told: None,
            confirming: false,
            extended: false,
            answered: Duration::ZERO,
            stream_bytes: Vec::new(),
            delivered: VecDeque::new(),
            rates: VecDeque::new(),
            full: None,
            ever_shared: false,
            fallen_told: None,
            caps: 0,
            capped: Vec::new(),
            ramp: VecDeque::new(),
            others: VecDeque::new(),
        }
    }

    pub fn strength(&self) -> f64 {
        self.k
    }

    /// Whose the queue is, by the latest question.
    pub fn queue(&self) -> Queue {
        self.queue
    }

    /// Whether the group is yielding to ask whose the queue is.
    pub fn asking(&self) -> bool {
        self.yielding.is_some()
    }

    fn control(&self) -> StreamControl {
        StreamControl {
            cc: Some("braid_tcpp".into()),
            settings: SocketSettings {
                strength: Strength::from_milli((self.k * 1000.0).round() as u32).ok(),
                group_id: Some(self.group),
                ..SocketSettings::default()
            },
        }
    }

    fn target_us(base_us: f64) -> f64 {
        TARGET_MIN_US.max(base_us * TARGET_SHARE)
    }

    /// One step of k from a queueing delay and a base RTT, both in µs.
    fn step(&mut self, queue_us: f64, base_us: f64) {
        let target = Self::target_us(base_us);
        let mut off = ((target - queue_us) / target).clamp(-1.0, 1.0);
        if self.queue == Queue::Own {
            off = off.abs();
        }
        let gain = if off >= 0.0 { GAIN_UP } else { GAIN_DOWN };
        self.scale_k(gain * off);
    }

    /// k times e^`by`, kept between the floor (the fair share) and the
    /// ceiling (one flow per stream).
    fn scale_k(&mut self, by: f64) {
        self.k = (self.k * by.exp()).clamp(self.floor, self.ceiling);
    }

    /// One step of k toward the strength at which the group's delivery, in
    /// bytes a second, reaches the fair share it is held to.
    fn reach(&mut self, rate: f64, share: f64) {
        let short = (1.0 - rate / share.max(1.0)).clamp(-1.0, 1.0);
        if short > REACH_SLACK {
            self.scale_k(GAIN_UP * short);
        } else if short < 0.0 {
            self.scale_k(GAIN_DOWN * short);
        }
    }

    /// The group's delivery over the last RATE_SPAN, if this tick noted one.
    fn rate_now(&self, elapsed: Duration) -> Option<f64> {
        self.rates
            .back()
            .filter(|(t, _)| *t == elapsed)
            .map(|(_, r)| *r)
    }

    /// A question: every live stream capped at a share of its rate, room for
    /// others to grow into.
    fn begin_yield(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        let live = live(streams);
        self.end_regrow();
        // Others counted before a question that no fall asked were counted
        // while the queue was the group's own (or known shared).
        if self.fell_since.is_none() && self.queue != Queue::Shared {
            self.others.clear();
        }
        self.yielding = Some(elapsed + YIELD_FOR);
        self.seen.clear();
        self.extended = false;
        self.paced = live.iter().map(|(s, _)| *s).collect();
        // A stream held at the fair share sends less than its window says.
        let held = self
            .fair_told
            .map_or(f64::INFINITY, |f| f / live.len() as f64);
        // Held at its share, the group asks whether the others left: flows
        // still there fill the smaller room at once, and the deep one broke
        // the 10 % band its rate is judged in every 10 to 20 s (a 3 s mean
        // 25 % under the share, adaptive-span-4 and -5).
        let keep = if self.steady() || self.queue == Queue::Shared {
            YIELD_SHARE_STEADY
        } else {
            YIELD_SHARE
        };
        // A question a fall asked leaves room down to the share the losses
        // since the fall say: newcomers that back off are why the group fell,
        // and they fill it, so the group is at its share when the answer
        // comes rather than some seconds after. A stiff source's swing makes
        // few losses, and the share they say lies above the group's rate.
        let share = self.fell_since.and_then(|_| self.share_now(&live));
        let fallen = share.map_or(f64::INFINITY, |f| f / live.len() as f64);
        // The windows of the moment, scaled up to the best the group
        // delivered over the last two rate spans if they say less: a
        // question that began as the group's own queue overflowed met eight
        // of nine windows halved, and 70 % of those held the group at 54 %
        // of its rate for 5 s (it broke the 10 % band 35 s after five Reno
        // flows left). Not down: a paced stream's window says more than it
        // sends, and its cap is the smaller. Each stream keeps its part, so
        // that the room is the group's to leave, not for a stream that had
        // just halved to grow into (its own queue then stood through the
        // question, and braid-sim found the idle path shared).
        let windows: f64 = live.iter().map(|(_, i)| rate(i)).sum();
        let best = self
            .rates
            .iter()
            .filter(|(t, _)| *t + 2 * RATE_SPAN >= elapsed)
            .map(|(_, r)| *r)
            .fold(0.0, f64::max);
        let scale = if windows > 0.0 {
            (best / windows).max(1.0)
        } else {
            1.0
        };
        // Each stream's part of the room the question leaves.
        let parts: Vec<(usize, f64)> = live
            .iter()
            .map(|(s, i)| (*s, (rate(i) * scale).min(held) * keep))
            .collect();
        let room: f64 = parts.iter().map(|(_, p)| p).sum();
        // The question follows the count the capped group makes (see
        // `steer`), whether its first share was counted or came from the
        // losses: held at the loss share, 12 % under the one it kept, the
        // group waited 8 s for the answer to retell it (adaptive-full,
        // tcp-arrive r1, which settled 13.1 s after the arrival). Never
        // above the question's own room, which would close it.
        self.fallen_told = share.map(|s| (s, room));
        parts
            .into_iter()
            .map(|(s, part)| Steering::Pace(s, Some(part.min(fallen).max(1.0) as u64)))
            .collect()
    }

    /// The answer: the yield's caps come off, or become the fair share's.
    fn conclude(
        &mut self,
        elapsed: Duration,
        answer: Queue,
        streams: &[StreamView],
    ) -> Vec<Steering> {
        self.yielding = None;
        self.fallen_told = None;
        self.answered = elapsed;
        // The queue's absence before the question says nothing of who is
        // there after it: a fall's question asks with no queue standing, and
        // a count from before it let the caps off one tick after it found
        // five Reno flows (adaptive-regrow-4).
        self.clear_since = None;
        self.stood = 0;
        self.first_clear = answer == Queue::Shared;
        let first = answer == Queue::Shared && self.queue != Queue::Shared;
        if first && !self.confirming {
            // Not held meanwhile: a stiff source's swing, the usual reason
            // for a first "taken", then costs the group the second yield
            // alone. Held at its share the group moved a quarter of what it
            // could beside UDP 50-80 Mb/s (10 against 39 Mb/s over those 5 s).
            // Newcomers that back off are mostly found by a fall of the
            // group's delivery, which needs no second question.
            self.confirming = true;
            self.next_ask = elapsed + CONFIRM_AFTER;
            return self.lift();
        }
        self.confirming = false;
        if answer == Queue::Own {
            self.found_own(elapsed);
            return self.lift();
        }
        self.own_gap = OWN_FOR;
        if self.queue == Queue::Shared {
            self.shared_gap = (self.shared_gap * 2).min(SHARED_FOR_MAX);
        }
        self.next_ask = elapsed + self.shared_gap;
        self.queue = Queue::Shared;
        self.ever_shared = true;
        if self.span.is_none() {
            self.span = self.book.back().copied();
        }
        self.fair(streams, true)
    }

    /// The queue is the group's own from `elapsed`: the next question comes
    /// after the gap between questions while it is, which doubles; a later
    /// sharing starts its own gaps afresh.
    fn found_own(&mut self, elapsed: Duration) {
        // Rates held to a share say nothing of what the path gives the
        // group, and against the strong rates before the group was held
        // they read as a fall: in braid-sim the release after 5 Reno flows
        // left asked a fall's question at once, which held the group at its
        // old share for 10 s more.
        if self.queue == Queue::Shared {
            self.rates.clear();
        }
        self.queue = Queue::Own;
        self.next_ask = elapsed + self.own_gap;
        self.own_gap = (self.own_gap * 2).min(OWN_FOR_MAX);
        self.shared_gap = SHARED_FOR;
    }

    /// Every cap comes off, the fair share's included.
    fn lift(&mut self) -> Vec<Steering> {
        self.fair_told = None;
        self.others.clear();
        self.fell_since = None;
        self.span = None;
        self.burst = Burst::Unsought;
        self.paced
            .drain(..)
            .map(|s| Steering::Pace(s, None))
            .collect()
    }

    /// How long no queue must stand while others share the path for them to
    /// have left (see GONE_RTTS).
    fn gone_after(&self) -> Duration {
        let gone = self.rtts(GONE_RTTS).clamp(GONE_MIN, GONE_MAX);
        if self.first_clear {
            gone * FIRST_CLEAR
        } else {
            gone
        }
    }

    /// No queue has stood for `gone_after` while others shared the path:
    /// they left. A group held at its share would build none to ask about,
    /// so the caps come off, and the path is taken to be the group's own: the
    /// queue's absence for that long is a plainer answer than a question's,
    /// which costs the group what it yields just as it has climbed back (it
    /// broke the 10 % band the new rate is judged in, 10 s after the
    /// others left). The strength goes past its ceiling at once (see
    /// REGROW_BOOST), since a queue of its own would only raise it, and the
    /// next question comes after OWN_FOR, or sooner if the group's delivery
    /// falls.
    fn released(&mut self, elapsed: Duration) -> Vec<Steering> {
        self.clear_since = None;
        self.own_gap = OWN_FOR;
        self.found_own(elapsed);
        self.k = (self.ceiling * REGROW_BOOST).min(Strength::MAX.as_f64());
        self.regrow_until = Some(elapsed + self.rtts(REGROW_RTTS));
        self.lift()
    }

    /// The regrowth after a release is over: the strength back to the
    /// ceiling, if it was boosted.
    fn end_regrow(&mut self) {
        if self.regrow_until.take().is_some() {
            self.k = self.ceiling;
        }
    }

    /// `n` base RTTs (GONE_MAX before any RTT is known).
    fn rtts(&self, n: u32) -> Duration {
        self.base_us
            .map_or(GONE_MAX, |b| Duration::from_micros(b as u64) * n)
    }

    /// Notes the group's packets sent and its loss events, counted two ways:
    /// the group's (a tick in which any stream lost packets after one in
    /// which none did) and its streams' (each stream's, likewise). Mathis' p
    /// counts events (a window's halving), not packets: a burst (flows
    /// arriving in slow start) costs many packets but one halving, and
    /// counting its packets would put the share far below the others'.
    /// `srtt_us` is the live streams' median sRTT at this tick.
    fn note_losses(&mut self, elapsed: Duration, streams: &[StreamView], srtt_us: u32) {
        let mut sent = 0u64;
        let mut new = 0u64;
        let was_losing = self.lost.iter().any(|&(_, _, w)| w);
        let mut lost = Vec::with_capacity(streams.len());
        for v in streams {
            let Some(i) = v.info.as_ref() else { continue };
            sent += i.data_segs_out as u64;
            let was = self.lost.iter().find(|(s, _, _)| *s == v.stream);
            // A new connection's counts start again from zero.
            let losing = was.is_some_and(|&(_, l, _)| i.total_retrans > l);
            if losing && !was.is_some_and(|&(_, _, w)| w) {
                new += 1;
            }
            lost.push((v.stream, i.total_retrans, losing));
        }
        let losing = lost.iter().any(|&(_, _, w)| w);
        self.lost = lost;
        // A stream that left takes its counts along: start the book again,
        // and the share's span with it.
        if self.book.back().is_some_and(|b| sent < b.sent) {
            self.book.clear();
            self.span = None;
            self.burst = Burst::Unsought;
        }
        let before = self.book.back().copied().unwrap_or_default();
        let now = Booked {
            t: elapsed,
            sent,
            group: before.group + u64::from(losing && !was_losing),
            streams: before.streams + new,
            rtt_us: before.rtt_us + srtt_us as f64,
            ticks: before.ticks + 1,
        };
        self.book.push_back(now);
        while self.book.len() > 2 && self.book[1].t + FAIR_OVER <= elapsed {
            self.book.pop_front();
        }
        self.note_burst(now);
        if self.queue == Queue::Shared {
            self.restart_span_on_change();
        }
    }

    /// The fall that asks the next question began at `since`: the share
    /// counts from there, and the loss episode it began with (found among
    /// the ticks already booked, as the fall is judged seconds after it
    /// began) is left out once over.
    fn began_falling(&mut self, since: Duration) {
        self.fell_since = Some(since);
        self.others.retain(|(t, _, _)| *t >= since);
        self.span = self.book.iter().find(|b| b.t >= since).copied();
        self.burst = Burst::Awaited;
        let after: Vec<Booked> = self.book.iter().filter(|b| b.t > since).copied().collect();
        for b in after {
            self.note_burst(b);
        }
    }

    /// The burst's state after the tick booked as `b`.
    fn note_burst(&mut self, b: Booked) {
        let Some(span) = self.span else { return };
        self.burst = match self.burst {
            Burst::Awaited if b.group > span.group => Burst::Began(b.t),
            Burst::Began(t) if b.t >= t + BURST_FOR => Burst::Ended(b),
            other => other,
        };
    }

    /// Starts the share's span afresh at the oldest booked tick when the
    /// streams' loss events over the book (FAIR_OVER, all of it inside the
    /// span) are more or fewer than the span's rate can explain.
    fn restart_span_on_change(&mut self) {
        let (Some(from), Some(window), Some(last)) = (
            self.anchor(),
            self.book.front().copied(),
            self.book.back().copied(),
        ) else {
            return;
        };
        if window.t <= from.t || last.t < window.t + FAIR_OVER - self.interval() {
            return;
        }
        let Some(sent) = last.sent.checked_sub(from.sent).filter(|s| *s > 0) else {
            return;
        };
        let per_packet = (last.streams - from.streams) as f64 / sent as f64;
        let expected = per_packet * (last.sent - window.sent) as f64;
        let seen = (last.streams - window.streams) as f64;
        if (seen - expected).abs() > CHANGE_SIGMA * expected.max(1.0).sqrt() {
            self.span = Some(window);
            self.burst = Burst::Unsought;
        }
    }

    /// Where the share's loss rate counts from while the group is held: past
    /// the fall's burst once it is over, else the span's start.
    fn anchor(&self) -> Option<Booked> {
        match self.burst {
            Burst::Ended(b) => Some(b),
            _ => self.span,
        }
    }

    /// Notes what the group delivered since the last tick, and its rate over
    /// the last RATE_SPAN. A stream's first reading is its baseline, so one
    /// that joins (or is first seen late) adds nothing it moved before; nor
    /// does a tick whose count went back (a new connection's starts again)
    /// or came from the other count than the last.
    fn note_delivery(&mut self, elapsed: Duration, streams: &[StreamView]) {
        let counts: Vec<(usize, (bool, u64))> =
            streams.iter().map(|v| (v.stream, delivered(v))).collect();
        let moved: u64 = counts
            .iter()
            .map(|&(stream, (acked, now))| {
                let before = self
                    .stream_bytes
                    .iter()
                    .find(|(s, _)| *s == stream)
                    .filter(|(_, (a, _))| *a == acked)
                    .map_or(now, |(_, (_, b))| *b);
                now.saturating_sub(before)
            })
            .sum();
        self.stream_bytes = counts;
        let total = self.delivered.back().map_or(0, |(_, b)| *b) + moved;
        self.delivered.push_back((elapsed, total));
        while self.delivered.len() > 2 && self.delivered[1].0 + RATE_SPAN <= elapsed {
            self.delivered.pop_front();
        }
        let (t0, b0) = self.delivered[0];
        // A yield's rates are low by design, and so are those just after it.
        let clean = self.yielding.is_none() && elapsed >= self.answered + RATE_SPAN;
        if clean && elapsed >= t0 + RATE_SPAN {
            let secs = (elapsed - t0).as_secs_f64();
            self.rates.push_back((elapsed, (total - b0) as f64 / secs));
        }
        while self
            .rates
            .front()
            .is_some_and(|(t, _)| *t + FALL_RECENT + FALL_BEFORE < elapsed)
        {
            self.rates.pop_front();
        }
    }

    /// The clean rates' spells below FALL_SHARE of the best, in order, and
    /// how long the rates cover (spans over RATE_GAP, a yield's, left out).
    fn low_spells(&self) -> (Duration, Vec<LowSpell>) {
        let best = self.rates.iter().map(|(_, r)| *r).fold(0.0, f64::max);
        let low = |r: f64| r < FALL_SHARE * best;
        let mut covered = Duration::ZERO;
        let mut spells = Vec::new();
        let mut open: Option<LowSpell> = None;
        let mut prev: Option<(Duration, f64)> = None;
        for &(t, r) in &self.rates {
            let joined = prev.filter(|(p, _)| t.saturating_sub(*p) <= RATE_GAP);
            if let Some((p, _)) = joined {
                covered += t - p;
            }
            if let Some(mut spell) = open.take() {
                match joined {
                    None => spells.push(LowSpell {
                        over: true,
                        ..spell
                    }),
                    Some(_) if !low(r) => spells.push(LowSpell {
                        came_back: true,
                        over: true,
                        ..spell
                    }),
                    Some(_) => {
                        spell.last = t;
                        open = Some(spell);
                    }
                }
            }
            if low(r) && open.is_none() {
                open = Some(LowSpell {
                    start: t,
                    last: t,
                    from_high: joined.is_some_and(|(_, before)| !low(before)),
                    came_back: false,
                    over: false,
                });
            }
            prev = Some((t, r));
        }
        spells.extend(open);
        (covered, spells)
    }

    /// How long the group's delivery must stay down to count as a fall: the
    /// path's longest spell of low rates that ended, plus FALL_MARGIN; the
    /// longest wait until the rates cover STEADY_FOR.
    fn hold(&self) -> Duration {
        let (covered, spells) = self.low_spells();
        // The spell under way is what is being judged, not the path's past.
        if covered < STEADY_FOR {
            return FALL_RECENT;
        }
        // A spell that ended at a gap (a yield) lasted at least as long as
        // it was seen.
        let longest = spells
            .iter()
            .filter(|s| s.over)
            .map(|s| s.last - s.start)
            .max()
            .unwrap_or_default();
        (longest + FALL_MARGIN).clamp(FALL_HOLD_MIN, FALL_RECENT)
    }

    /// Whether the group's delivery holds steady, for the depth of a
    /// question: its clean rates cover STEADY_FOR and none swung, that is
    /// came down from a rate at least FALL_SHARE of the best, stayed below it
    /// longer than SWING_FOR and came back up. A fall that has not come back
    /// (held to a share as others came) is no swing, and nor is a climb from
    /// the low rates the span begins with (freed as they left): what a
    /// question must outlast is a source whose own rate comes and goes.
    fn steady(&self) -> bool {
        let (covered, spells) = self.low_spells();
        covered >= STEADY_FOR
            && !spells
                .iter()
                .any(|s| s.from_high && s.came_back && s.last - s.start > SWING_FOR)
    }

    /// When the group's delivery fell and stayed down while the queue was its
    /// own, the time the fall began: judged once the hold has passed since
    /// the last question's low rates.
    fn fell(&self, elapsed: Duration) -> Option<Duration> {
        if self.queue != Queue::Own {
            return None;
        }
        let hold = self.hold();
        if elapsed < self.answered + RATE_SPAN + hold {
            return None;
        }
        match self.best_rates(elapsed, hold) {
            // The rates lag what the path did by their span.
            (Some(now), Some(before)) if now < FALL_SHARE * before => {
                Some(elapsed.saturating_sub(hold + RATE_SPAN))
            }
            _ => self.counted_fall(elapsed),
        }
    }

    /// On a steady path, others that the queue counts beside a group that
    /// runs strong (see COUNTED_FOR), with its delivery down by more than
    /// COUNTED_FALL: when the fall began (the first count it goes by).
    fn counted_fall(&self, elapsed: Duration) -> Option<Duration> {
        let since = elapsed.checked_sub(COUNTED_FOR)?;
        if !self.steady() {
            return None;
        }
        let n: Vec<f64> = self
            .others
            .iter()
            .filter(|o| o.0 > since)
            .map(|o| o.1)
            .collect();
        if n.len() < RAMPS_MIN || median(n)? < COUNTED_OTHERS {
            return None;
        }
        match self.best_rates(elapsed, COUNTED_FOR) {
            (Some(now), Some(before)) if now < COUNTED_FALL * before => Some(since),
            _ => None,
        }
    }

    /// The best of the group's rates over the last `recent`, and the best
    /// of those before.
    fn best_rates(&self, elapsed: Duration, recent: Duration) -> (Option<f64>, Option<f64>) {
        let best = |now: bool| {
            self.rates
                .iter()
                .filter(|(t, _)| (*t + recent > elapsed) == now)
                .map(|(_, r)| *r)
                .reduce(f64::max)
        };
        (best(true), best(false))
    }

    /// Whether enough counts of others were made while every stream was
    /// capped for the share to go by them alone (see `counted_share`).
    fn counted_held(&self) -> bool {
        self.others.iter().filter(|o| o.2).count() >= HELD_MIN
    }

    /// The loss events per packet one flow in the group's place would see:
    /// after a fall, over the time since it began once enough came (the loss
    /// rate the newcomers make, not the idle path's before them); else over
    /// the last FAIR_OVER, or the share's span where that is longer (see
    /// CHANGE_SIGMA).
    ///
    /// A flow as large as the group would lose in nearly every overflow that
    /// touches any of its streams and count the group's events; one as small
    /// as a stream, a stream's. One flow at its share lies between, and the
    /// geometric mean of the two is the p used. Measured at one-second
    /// resolution against one Reno stream's p on the same draws: beside 5
    /// Reno and 5 CUBIC flows there from the start, the group's 0.9-1.0 of
    /// it and the streams' 1.3-2.0; beside 5 Reno flows that arrived while
    /// the group ran strong, 0.45-0.55 and 0.95-1.0. Held to the streams'
    /// alone, auto moved 0.74 and 0.71 of one Reno stream's rate beside 5
    /// Reno and 5 CUBIC flows (adaptive-fall-2); to the group's, 1.6 times it
    /// beside the arriving flows (adaptive-fall).
    ///
    /// With p, the streams' mean sRTT over the same span, in seconds.
    fn loss_rate(&self) -> Option<(f64, f64)> {
        let last = *self.book.back()?;
        let over = |b: &Booked| {
            let sent = last.sent.checked_sub(b.sent).filter(|s| *s > 0)? as f64;
            let (group, streams) = (last.group - b.group, last.streams - b.streams);
            let ticks = last.ticks.checked_sub(b.ticks).filter(|n| *n > 0)? as f64;
            let rtt_s = (last.rtt_us - b.rtt_us) / ticks / 1e6;
            (group >= 1 && streams >= FAIR_MIN_EVENTS)
                .then(|| ((group as f64 / sent * streams as f64 / sent).sqrt(), rtt_s))
        };
        // The first loss episode after a fall began is the newcomers' slow
        // start overflowing the queue: one halving for every flow, but not
        // the loss rate they go on to make. Counted, it put the share at 8
        // Mb/s beside 5 arriving Reno flows, and the share took a minute to
        // climb to the 11 that held once it had aged out (adaptive-steady-2).
        let window = self.book.front()?;
        match (self.burst, self.span) {
            (Burst::Ended(b), Some(span)) => over(&b).or_else(|| over(&span)),
            (Burst::Unsought, Some(span)) if last.t >= span.t + SPAN_MIN => over(&span),
            (Burst::Unsought, _) => None,
            (_, span) => span.as_ref().and_then(over),
        }
        .or_else(|| over(window))
    }

    /// The share the group is held to: counted from the queue where it can
    /// be (`counted_share`), else from the losses (`loss_share`).
    fn share_now(&self, live: &[(usize, &braid_cc::TcpInfo)]) -> Option<f64> {
        self.counted_share().or_else(|| self.loss_share(live))
    }

    /// What `floor` Reno flows take at the loss rate and RTT `loss_rate`
    /// gives, bytes a second, if it gives them.
    fn loss_share(&self, live: &[(usize, &braid_cc::TcpInfo)]) -> Option<f64> {
        let (p, rtt_s) = self.loss_rate()?;
        let (_, i) = live.first()?;
        Some(fair_share_bps(self.floor, i.mss as f64, rtt_s, p) / 8.0)
    }

    /// `floor` flows' worth of the path's rate split equally with the others
    /// counted from the queue's growth, bytes a second, once the group has
    /// had the path to itself and counted them often enough.
    fn counted_share(&self) -> Option<f64> {
        let full = self.full?;
        if self.others.len() < RAMPS_MIN {
            return None;
        }
        // Counts made while every stream was capped need not take the
        // group's own growth out (k packets an RTT while it runs strong, a
        // larger and noisier part of what the queue says): once there are
        // enough of them, they alone.
        let held = self.counted_held();
        let n: Vec<f64> = self
            .others
            .iter()
            .filter(|o| o.2 || !held)
            .map(|o| o.1)
            .collect();
        // A question found the room taken: someone is there, if the queue
        // grows by none (traffic that holds its rate).
        Some(equal_share_bps(full, median(n)?.max(1.0), self.floor))
    }

    /// Notes this tick for the count of others, and counts them over the
    /// last RAMP_TICKS ticks if the window says (see RAMP_TICKS).
    fn note_ramp(&mut self, tick: RampTick, mss: f64, target_us: f64) {
        self.ramp.push_back(tick);
        while self.ramp.len() > RAMP_TICKS + 1 {
            self.ramp.pop_front();
        }
        while self
            .others
            .front()
            .is_some_and(|(t, _, _)| *t + FAIR_OVER <= tick.t)
        {
            self.others.pop_front();
        }
        let Some(full) = self.full else { return };
        let same = |r: &RampTick| r.caps == tick.caps && r.streams == tick.streams;
        if self.ramp.len() <= RAMP_TICKS || !self.ramp.iter().all(same) {
            return;
        }
        let window: Vec<RampTick> = self.ramp.iter().skip(1).copied().collect();
        let fell = window.windows(2).any(|w| {
            (w[0].srtt_us as f64 - w[1].srtt_us as f64) > target_us / 2.0 || w[1].cwnd < w[0].cwnd
        });
        if fell || !window.iter().all(|r| r.standing) {
            return;
        }
        let t = |r: &RampTick| r.t.as_secs_f64();
        let squares: Vec<(f64, f64)> = window
            .iter()
            .map(|r| (t(r), (r.srtt_us as f64 / 1e6).powi(2)))
            .collect();
        // The group's flight against the RTTs gone by (the RTT grows by half
        // over a long rise): its growth in packets an RTT.
        let mut rtts = 0.0;
        let mut flight = vec![(0.0, window[0].flight)];
        for w in window.windows(2) {
            let rtt_s = (w[0].srtt_us as f64 + w[1].srtt_us as f64) / 2e6;
            rtts += (t(&w[1]) - t(&w[0])) / rtt_s.max(1e-6);
            flight.push((rtts, w[1].flight));
        }
        if let (Some(growth), Some(own)) = (slope(&squares), slope(&flight)) {
            // While the queue stands, everything in flight is the path's
            // rate times the RTT, so the others' windows grow by what that
            // grows less the group's own flight, packets an RTT: k while it
            // runs strong; while capped, its rate times the RTT's growth
            // (its packets take their part of the queue). Counted as if the
            // capped group added nothing, five Reno flows read as 5.5 to 6.
            let n = flows_filling(growth, mss, full * 8.0) - own;
            // Kept as counted, below zero too: the median of a count
            // clipped at zero reads noise on an idle path as others.
            let held = window.iter().all(|r| r.held);
            self.others.push_back((tick.t, n, held));
        }
    }

    /// Notes the caps a tick told, and counts them as new caps if any
    /// stream's differs from what it had. A cap told again at its value is
    /// no new cap: a question's answer that holds the group where its yield
    /// did would otherwise start the count of others afresh (RAMP_TICKS
    /// ticks, some 1.2 s on the Hacker 2004 path) just as they are found.
    fn note_caps(&mut self, asked: &[Steering]) {
        let mut changed = false;
        for s in asked {
            if let Steering::Pace(i, cap) = s {
                let before = self.capped.iter().find(|(c, _)| c == i).map(|(_, c)| *c);
                changed |= before != *cap;
                self.capped.retain(|(c, _)| c != i);
                self.capped.extend(cap.map(|c| (*i, c)));
            }
        }
        if changed {
            self.caps += 1;
        }
    }

    /// Caps the streams at the fair share while others share the path: a
    /// group found far above it (it ran strong before they came) would
    /// otherwise come down only by halving at each of its loss events.
    /// `lift` when the streams' caps are a yield's, to come off.
    fn fair(&mut self, streams: &[StreamView], lift: bool) -> Vec<Steering> {
        let live = live(streams);
        let same_streams =
            live.len() == self.paced.len() && live.iter().all(|(s, _)| self.paced.contains(s));
        let counted = self.counted_share();
        // Counted from the queue, the share holds until the counts made
        // under its caps are enough to go by alone: each retell moves the
        // caps and starts the count afresh, so a share first told from the
        // counts made while the group ran strong (a third under the capped
        // group's on one draw) came down by one count each RAMP_TICKS ticks,
        // 25, 23, 20 then 17 Mb/s over 4 s (adaptive-arrive-7, which
        // settled 14.1 s after the arrival).
        let gathering = self.fair_told.is_some() && counted.is_some() && !self.counted_held();
        if !lift && same_streams && gathering {
            return Vec::new();
        }
        // Too few loss events lately to tell: the last share holds. So does
        // one within FAIR_RETELL of the new, when a question's caps come
        // off: the count of others moves by some 4 % between questions, and
        // a step that size after one, below the dip of the next, broke the
        // 10 % band (a 3 s mean 11 % under the share the phase settled at).
        let new = counted.or_else(|| self.loss_share(&live));
        let share = match (new, self.fair_told) {
            (Some(new), Some(old)) if (new - old).abs() <= FAIR_RETELL * old => Some(old),
            (new, old) => new.or(old),
        };
        let retell = lift
            || match (share, self.fair_told) {
                (Some(new), Some(old)) => !same_streams || (new - old).abs() > FAIR_RETELL * old,
                (None, None) => false,
                _ => true,
            };
        if !retell {
            return Vec::new();
        }
        self.fair_told = share;
        let mut asked: Vec<Steering> = self
            .paced
            .drain(..)
            .filter(|s| share.is_none() || !live.iter().any(|(l, _)| l == s))
            .map(|s| Steering::Pace(s, None))
            .collect();
        if let Some(share) = share {
            let each = (share / live.len() as f64).max(1.0) as u64;
            self.paced = live.iter().map(|(s, _)| *s).collect();
            asked.extend(self.paced.iter().map(|s| Steering::Pace(*s, Some(each))));
        }
        asked
    }

    /// The queue the streams see: their median sRTT above the base RTT; with
    /// the base RTT and that median.
    fn measure(&mut self, streams: &[StreamView]) -> Option<(u32, u32, u32)> {
        let live = live(streams);
        if live.is_empty() {
            return None;
        }
        let min_rtt = live
            .iter()
            .map(|(_, i)| i.min_rtt_us)
            .filter(|r| *r > 0)
            .min();
        if let Some(m) = min_rtt {
            self.base_us = Some(self.base_us.map_or(m, |b| b.min(m)));
        }
        let base = self.base_us?;
        let srtt = median_srtt_us(&live);
        Some((srtt.saturating_sub(base), base, srtt))
    }
}

impl Steer for Auto {
    fn interval(&self) -> Duration {
        let base = self.base_us.unwrap_or(100_000) as u64;
        Duration::from_micros((2 * base).clamp(100_000, 1_000_000))
    }

    fn state(&self) -> Option<SteerState> {
        Some(SteerState {
            strength: Some(self.k),
            queue_us: Some(self.queue_us),
            utility: None,
            shared: match self.queue {
                Queue::Unknown => None,
                Queue::Own => Some(false),
                Queue::Shared => Some(true),
            },
            share_bps: self.fair_told,
        })
    }

    fn tick(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        let asked = self.steer(elapsed, streams);
        self.note_caps(&asked);
        asked
    }
}

impl Auto {
    /// A tick's steering (`Steer::tick` counts the caps it tells).
    fn steer(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        let Some((queue, base, srtt)) = self.measure(streams) else {
            return Vec::new();
        };
        self.queue_us = queue;
        self.note_losses(elapsed, streams, srtt);
        self.note_delivery(elapsed, streams);
        let target = Self::target_us(base as f64);
        let standing = queue as f64 > target;
        // The path's rate is what the group moved before anyone was found
        // beside it: a release beside flows that had all halved at once
        // (the queue gone for 3 s, adaptive-count-busy) ran the group strong
        // beside them, and its rate then was no measure of the path's.
        if self.queue == Queue::Own && standing && self.yielding.is_none() && !self.ever_shared {
            if let Some(r) = self.rate_now(elapsed).filter(|r| *r > 0.0) {
                self.full = Some(self.full.map_or(r, |f| f.max(r)));
            }
        }
        let live_now = live(streams);
        if let Some((_, i)) = live_now.first() {
            // Packets in flight, and whether the cap is what holds it there.
            let flight = |(s, i): &(usize, &braid_cc::TcpInfo)| {
                let window = i.cwnd as f64;
                match self.capped.iter().find(|(c, _)| c == s) {
                    Some((_, cap)) => {
                        let paced = *cap as f64 * i.srtt_us as f64 / 1e6 / i.mss.max(1) as f64;
                        (window.min(paced), paced < window)
                    }
                    None => (window, false),
                }
            };
            let flights: Vec<(f64, bool)> = live_now.iter().map(flight).collect();
            let tick = RampTick {
                t: elapsed,
                srtt_us: srtt,
                cwnd: live_now.iter().map(|(_, i)| i.cwnd as u64).sum(),
                flight: flights.iter().map(|f| f.0).sum(),
                held: flights.iter().all(|f| f.1),
                streams: live_now.len(),
                caps: self.caps,
                standing,
            };
            self.note_ramp(tick, i.mss as f64, target);
        }
        if let Some(until) = self.yielding {
            if elapsed + YIELD_FOR / 2 >= until {
                self.seen.push(queue);
            }
            // A fall's question yields down to the share the others counted
            // while the group still ran strong (a count that takes the
            // group's own growth out, from the 2 s that asked, and it was
            // 10 % under what the group counted once capped: adaptive-counted-4,
            // which settled 10.1 s after the arrival), or to the losses'
            // where too few were counted. Once the capped group has
            // counted them itself, the room follows that count.
            if let Some((told, room)) = self.fallen_told {
                let held = self.counted_held();
                let moved = |n: &f64| held && (n - told).abs() > FAIR_RETELL * told;
                if let Some(new) = self.counted_share().map(|n| n.min(room)).filter(moved) {
                    self.fallen_told = Some((new, room));
                    let each = (new / live_now.len().max(1) as f64).max(1.0) as u64;
                    return live_now
                        .iter()
                        .map(|(s, _)| Steering::Pace(*s, Some(each)))
                        .collect();
                }
            }
            // Others took the room when a queue stood for more than a quarter
            // of the yield's second half: not one reading (others' synchronised
            // losses empty the queue for a while), and not a moment's (a stiff
            // source's swing fills some of the room for some of the time).
            // Once that many readings have stood, the rest cannot change the
            // answer, and the yield ends there.
            let stood = self.seen.iter().filter(|q| **q as f64 > target).count();
            let half = (YIELD_FOR / 2).as_secs_f64() / self.interval().as_secs_f64();
            let sure = stood as f64 > TAKEN_SHARE * half.floor().max(1.0);
            if elapsed < until && !sure {
                return Vec::new();
            }
            let taken = sure || stood as f64 > TAKEN_SHARE * self.seen.len() as f64;
            if !taken && self.fell_since.is_some() && !self.extended {
                // A fall's question yields down to the share: a room of most
                // of the group's rate, which flows that came (each halved by
                // their slow start's overflow, growing a packet per RTT) may
                // not have filled in 5 s. Found untaken, the caps came off and
                // the group took 50 Mb/s beside five arriving Reno flows until
                // its delivery fell again 7 s later (adaptive-span-5). A
                // stiff source's swing, the other cause of a fall, leaves the
                // room empty however long the group waits.
                self.extended = true;
                self.yielding = Some(elapsed + YIELD_FOR);
                self.seen.clear();
                return Vec::new();
            }
            let answer = if taken { Queue::Shared } else { Queue::Own };
            return self.conclude(elapsed, answer, streams);
        }
        self.stood = if standing { self.stood + 1 } else { 0 };
        if self.stood >= STOOD_TICKS {
            // A queue stood again after a clearing: the others refilled
            // what their losses emptied, and the next clearing is theirs
            // leaving or another loss of theirs, not the answer's.
            if self.clear_since.take().is_some() {
                self.first_clear = false;
            }
        } else if !standing {
            self.clear_since.get_or_insert(elapsed);
        }
        if let (Some(since), Queue::Shared, false) = (self.clear_since, self.queue, standing) {
            if elapsed >= since + self.gone_after() {
                return self.released(elapsed);
            }
        }
        if let Some(since) = self.fell(elapsed) {
            // The fall is the first answer (a stiff source's swing does not
            // last): a room found taken now needs no second question.
            self.next_ask = self.next_ask.min(elapsed);
            self.confirming = true;
            self.began_falling(since);
        }
        // A question waits for a queue to ask about, but one that confirms
        // does not: a group held at its share beside a stiff source builds
        // none, and would stay held.
        if (standing || self.confirming) && elapsed >= self.next_ask {
            return self.begin_yield(elapsed, streams);
        }
        let mut asked = if self.queue == Queue::Shared {
            self.fair(streams, false)
        } else {
            Vec::new()
        };
        match (self.queue, self.fair_told) {
            // Held at a share: the queue is the others' too and says nothing
            // of whether the group reaches its share; its delivery does (none
            // yet after a question: k holds).
            (Queue::Shared, Some(share)) => {
                if let Some(rate) = self.rate_now(elapsed) {
                    self.reach(rate, share);
                }
            }
            _ => match self.regrow_until {
                // The path is full again once the group's queue stands.
                Some(until) if standing || elapsed >= until => self.end_regrow(),
                Some(_) => {}
                None => self.step(queue as f64, base as f64),
            },
        }
        if (self.k - self.told).abs() > HYSTERESIS * self.told {
            self.told = self.k;
            let c = self.control();
            asked.extend((0..streams.len()).map(|i| Steering::Control(i, c.clone())));
        }
        asked
    }
}

/// The streams that carry blocks and have a connection with an RTT.
fn live(streams: &[StreamView]) -> Vec<(usize, &braid_cc::TcpInfo)> {
    streams
        .iter()
        .filter(|v| v.wanted)
        .filter_map(|v| v.info.as_ref().map(|i| (v.stream, i)))
        .filter(|(_, i)| i.srtt_us > 0)
        .collect()
}

/// The middle of `x` (the upper of the two middles of an even count);
/// None when empty.
fn median(mut x: Vec<f64>) -> Option<f64> {
    x.sort_by(f64::total_cmp);
    x.get(x.len() / 2).copied()
}

/// The live streams' median smoothed RTT; `live` is not empty.
fn median_srtt_us(live: &[(usize, &braid_cc::TcpInfo)]) -> u32 {
    let mut srtt: Vec<u32> = live.iter().map(|(_, i)| i.srtt_us).collect();
    srtt.sort_unstable();
    srtt[srtt.len() / 2]
}

/// What `floor` Reno flows take at loss rate `p` and this RTT (Mathis), bits
/// per second: the group's share while others share the path.
fn fair_share_bps(floor: f64, mss: f64, rtt_s: f64, p: f64) -> f64 {
    floor * mathis_bps(mss, rtt_s, p, C_PERIODIC)
}

/// What a stream has delivered, in bytes: what its connection's TCP saw
/// acknowledged when it tells (exact), else the blocks this end counted as
/// they completed (true with the former). Counted in 128 KiB blocks, a
/// stream held to a megabit or two completes one or two a second, and the
/// group's 2 s rate beside five Reno flows swung by a sixth with nothing on
/// the path changing: as much as the falls and the reach it is read for.
fn delivered(v: &StreamView) -> (bool, u64) {
    match v.info.as_ref() {
        Some(i) if i.bytes_acked > 0 => (true, i.bytes_acked),
        _ => (false, v.bytes),
    }
}

/// A stream's sending rate from its window and RTT, bytes per second.
fn rate(i: &braid_cc::TcpInfo) -> f64 {
    i.cwnd as f64 * i.mss.max(1) as f64 * 1e6 / i.srtt_us.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_cc::TcpInfo;

    fn view(i: usize, srtt_ms: f64, min_ms: f64) -> StreamView {
        StreamView {
            stream: i,
            wanted: true,
            bytes: 0,
            info: Some(TcpInfo {
                srtt_us: (srtt_ms * 1000.0) as u32,
                min_rtt_us: (min_ms * 1000.0) as u32,
                cwnd: 100 + i as u32,
                mss: 1448,
                ..TcpInfo::default()
            }),
        }
    }

    /// An Auto whose first question comes at 5 s, to keep the tests short.
    fn asks_at_5(group: u64, streams: usize, fair_share: Strength) -> Auto {
        let mut a = Auto::new(group, streams, fair_share);
        a.next_ask = Duration::from_secs(5);
        a
    }

    #[test]
    fn the_first_question_waits_twenty_seconds() {
        let mut a = Auto::new(1, 9, Strength::ONE);
        let early = run(&mut a, Duration::ZERO, 19.9, |_, _| 108.0);
        assert_eq!(yields(&early), 0);
        assert_eq!(
            a.strength(),
            1.0,
            "meanwhile others are assumed to hold the queue"
        );
        assert_eq!(yields(&a.tick(Duration::from_secs(20), &views(108.0))), 1);
    }

    fn views(srtt_ms: f64) -> Vec<StreamView> {
        (0..4).map(|i| view(i, srtt_ms, 68.0)).collect()
    }

    /// Ticks `a` at its own interval from `from` for `secs` seconds over four
    /// streams whose sRTT `path` gives from the time and whether the group
    /// yields; returns every steering asked.
    fn run(
        a: &mut Auto,
        from: Duration,
        secs: f64,
        path: impl Fn(Duration, bool) -> f64,
    ) -> Vec<Steering> {
        let mut t = from;
        let mut asked = Vec::new();
        while t < from + Duration::from_secs_f64(secs) {
            asked.extend(a.tick(t, &views(path(t, a.asking()))));
            t += a.interval();
        }
        asked
    }

    fn strengths(asked: &[Steering]) -> Vec<u32> {
        asked
            .iter()
            .filter_map(|s| match s {
                Steering::Control(0, c) => c.settings.strength.map(|k| k.milli()),
                _ => None,
            })
            .collect()
    }

    fn yields(asked: &[Steering]) -> usize {
        asked
            .iter()
            .filter(|s| matches!(s, Steering::Pace(0, Some(_))))
            .count()
    }

    #[test]
    fn no_queue_raises_k_to_the_stream_count_without_asking() {
        let mut a = asks_at_5(7, 4, Strength::ONE);
        assert_eq!(a.strength(), 1.0);
        let asked = run(&mut a, Duration::ZERO, 10.0, |_, _| 68.5);
        assert_eq!(
            a.strength(),
            4.0,
            "an idle path: as strong as the streams allow"
        );
        assert_eq!(yields(&asked), 0, "no queue, no question");
        match asked
            .iter()
            .rev()
            .find(|s| matches!(s, Steering::Control(0, _)))
        {
            Some(Steering::Control(0, c)) => {
                assert_eq!(c.cc.as_deref(), Some("braid_tcpp"));
                assert_eq!(c.settings.strength.unwrap().milli(), 4000);
                assert_eq!(c.settings.group_id, Some(7));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.queue(), Queue::Unknown);
    }

    #[test]
    fn a_yield_caps_every_stream_at_seventy_percent_for_five_seconds() {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        // No question before the first is due, whatever the queue.
        assert!(run(&mut a, Duration::ZERO, 4.9, |_, _| 108.0)
            .iter()
            .all(|s| !matches!(s, Steering::Pace(..))));
        // 40 ms of queue after that: the question.
        let asked = a.tick(Duration::from_secs(5), &views(108.0));
        assert!(a.asking());
        let cap = |i: u32| ((100 + i) as f64 * 1448.0 / 0.108 * 0.7) as u64;
        assert_eq!(
            asked,
            (0..4)
                .map(|i| Steering::Pace(i as usize, Some(cap(i))))
                .collect::<Vec<_>>()
        );
        // Nothing changes while it yields, k included.
        let k = a.strength();
        for ms in [7_500, 8_000, 9_900] {
            assert!(a.tick(Duration::from_millis(ms), &views(108.0)).is_empty());
        }
        assert_eq!(a.strength(), k);
        // The queue stood again: others took the room. Every cap comes off.
        let end = a.tick(Duration::from_secs(10), &views(108.0));
        assert_eq!(
            end,
            (0..4).map(|i| Steering::Pace(i, None)).collect::<Vec<_>>()
        );
        assert!(!a.asking());
        // Taken once: asked again 2.5 s later before the group is held.
        assert_eq!(a.queue(), Queue::Unknown);
        let again = run(&mut a, Duration::from_millis(10_100), 8.0, |_, _| 108.0);
        assert_eq!(yields(&again), 1);
        assert_eq!(a.queue(), Queue::Shared);
        assert_eq!(a.state().unwrap().shared, Some(true));
    }

    #[test]
    fn a_question_that_meets_windows_halved_a_moment_ago_yields_from_what_the_group_delivered() {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        // Each stream delivers what its window says at 108 ms; at the tick
        // the question comes, every window has just been halved.
        let flowing = |t: Duration, halved: bool| -> Vec<StreamView> {
            (0..4u32)
                .map(|i| {
                    let mut v = view(i as usize, 108.0, 68.0);
                    v.bytes = (t.as_secs_f64() * (100 + i) as f64 * 1448.0 / 0.108) as u64;
                    if halved {
                        v.info.as_mut().unwrap().cwnd = (100 + i) / 2;
                    }
                    v
                })
                .collect()
        };
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(5) {
            a.tick(t, &flowing(t, false));
            t += a.interval();
        }
        let at = Duration::from_secs(5);
        let asked = a.tick(at, &flowing(at, true));
        assert!(a.asking());
        let total: u64 = caps(&asked).iter().map(|c| c.expect("a cap")).sum();
        let delivered: f64 = (0..4).map(|i| (100 + i) as f64 * 1448.0 / 0.108).sum();
        // 70 % of what it delivered, not of what the halved windows say (35 %).
        assert!(
            (total as f64 / delivered - 0.7).abs() < 0.02,
            "{total} of {delivered}"
        );
    }

    /// Ticks of 136 ms for `secs` s from R = 75 ms, straight to the count of
    /// others, on a path that moves 12 MB/s of 1448 B packets: while the
    /// queue stands, all in flight is that rate times R, and `others` flows
    /// add a packet an RTT each to it. The group's own windows grow by `own`
    /// packets an RTT, or with `paced` (bytes a second) it is capped there
    /// and has that rate times R in flight. `caps` gives the caps' count at
    /// each tick's time, and `cwnd` may change the group's windows' sum.
    #[allow(clippy::too_many_arguments)]
    fn ramp(
        a: &mut Auto,
        others: f64,
        own: f64,
        paced: Option<f64>,
        secs: f64,
        caps: impl Fn(f64) -> u64,
        cwnd: impl Fn(f64, f64) -> f64,
    ) {
        let (mss, rate) = (1448.0, 12e6);
        let (mut r2, mut w, mut t) = (0.075f64.powi(2), 400.0, 0.0);
        while t < secs {
            let r = r2.sqrt();
            let flight = paced.map_or(w, |p| p * r / mss);
            let tick = RampTick {
                t: Duration::from_secs_f64(t),
                srtt_us: (r * 1e6) as u32,
                cwnd: cwnd(t, w) as u64,
                flight: cwnd(t, flight),
                held: paced.is_some(),
                streams: 4,
                caps: caps(t),
                standing: true,
            };
            a.note_ramp(tick, mss, 6800.0);
            // d(R^2)/dt = 2 R dR/dt, and R dR/dt is what the windows add an
            // RTT over the rate the windows share.
            let windows_rate = rate - paced.unwrap_or(0.0);
            for _ in 0..100 {
                w += own * 0.00136 / r2.sqrt();
                r2 += 2.0 * (others + own) * mss / windows_rate * 0.00136;
            }
            t += 0.136;
        }
    }

    #[test]
    fn the_others_are_counted_by_how_fast_the_queue_grows_less_the_groups_own_growth() {
        let cases = [
            (5.0, 0.0, None),
            (5.0, 9.0, None),
            (0.0, 9.0, None),
            (2.0, 36.0, None),
            (12.0, 1.0, None),
            // Capped at a sixth of the path, and at half of it.
            (5.0, 0.0, Some(2e6)),
            (1.0, 0.0, Some(6e6)),
        ];
        for (others, own, paced) in cases {
            let mut a = Auto::new(1, 4, Strength::ONE);
            // Nothing is counted before the path's rate is known.
            ramp(&mut a, others, own, paced, 2.0, |_| 0, |_, w| w);
            assert!(a.others.is_empty());
            a.full = Some(12e6);
            ramp(&mut a, others, own, paced, 3.0, |_| 0, |_, w| w);
            // 23 ticks, and a window of 8 after a tick before it at each
            // from the ninth (the first call's ticks end in a drop).
            assert!(a.others.len() >= 23 - RAMP_TICKS - 1, "{others} and {own}");
            for (_, n, _) in &a.others {
                assert!(
                    (n - others).abs() < 0.2 + 0.02 * own,
                    "{others} others, {own} of the group's own, capped at {paced:?}: counted {n}"
                );
            }
        }
    }

    #[test]
    fn a_window_with_a_loss_or_new_caps_in_it_counts_nobody() {
        // Five others; the group's windows shrink at 1 s (a loss), its caps
        // change at 2.5 s: no window (8 ticks of 136 ms) that holds the loss
        // counts, nor one that holds new caps or follows them at once.
        let mut a = Auto::new(1, 4, Strength::ONE);
        a.full = Some(12e6);
        let caps = |t: f64| u64::from(t > 2.5);
        let cwnd = |t: f64, w: f64| if t > 1.0 { w - 50.0 } else { w };
        ramp(&mut a, 5.0, 0.0, None, 4.0, caps, cwnd);
        let at: Vec<f64> = a.others.iter().map(|(t, _, _)| t.as_secs_f64()).collect();
        assert!(!at.is_empty());
        for t in &at {
            let from = t - (RAMP_TICKS - 1) as f64 * 0.136;
            assert!(from > 1.0 || *t < 1.0, "a loss in the window: {at:?}");
            let before = from - 0.136;
            assert!(before > 2.5 || *t < 2.5, "new caps in the window: {at:?}");
        }
        // The counts each window made are the five.
        assert!(a.others.iter().all(|(_, n, _)| (n - 5.0).abs() < 0.2));
        // The share: a sixth of the path once enough windows said it.
        assert!(a.others.len() >= RAMPS_MIN);
        let share = a.counted_share().unwrap();
        assert!((share / 2e6 - 1.0).abs() < 0.03, "{share}");
    }

    #[test]
    fn a_queue_others_hold_brings_k_to_the_floor_and_questions_grow_rarer() {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        run(&mut a, Duration::ZERO, 10.0, |_, _| 68.5);
        assert_eq!(a.strength(), 4.0);
        // Others arrive and keep 40 ms standing, yield or not.
        let asked = run(&mut a, Duration::from_secs(10), 41.0, |_, _| 108.0);
        assert_eq!(a.queue(), Queue::Shared);
        assert_eq!(a.strength(), 1.0);
        let ks = strengths(&asked);
        assert!(ks.len() <= 8, "down within a few ticks: {ks:?}");
        // At 10 s, again 2.5 s after its answer (17.5 s), then 30 s after
        // that one's (about 50 s), and 60 s after the next.
        assert_eq!(yields(&asked), 3, "{asked:?}");
    }

    #[test]
    fn a_queue_that_goes_when_the_group_yields_is_its_own_until_others_take_the_room() {
        let mut a = asks_at_5(1, 9, Strength::ONE);
        // Stiff traffic beside the group: 40 ms of queue, none while the group yields.
        let stiff = |_: Duration, yielding: bool| if yielding { 69.0 } else { 108.0 };
        let asked = run(&mut a, Duration::ZERO, 30.0, stiff);
        assert_eq!(a.queue(), Queue::Own);
        assert_eq!(a.state().unwrap().shared, Some(false));
        assert_eq!(
            a.strength(),
            9.0,
            "the queue is the group's own: full strength"
        );
        assert_eq!(yields(&asked), 1, "the answer holds 30 s");
        // Then Reno flows arrive and grow into the next yield's room (40 s),
        // and into that of the one that confirms it (47.5 s).
        let asked = run(&mut a, Duration::from_secs(30), 25.0, |_, _| 108.0);
        assert_eq!(yields(&asked), 2);
        assert_eq!(a.queue(), Queue::Shared);
        assert_eq!(a.strength(), 1.0);
    }

    /// When each question of `a` over `secs` seconds began, in seconds.
    fn question_times(a: &mut Auto, secs: f64, path: impl Fn(Duration, bool) -> f64) -> Vec<f64> {
        let mut t = Duration::ZERO;
        let mut at = Vec::new();
        while t < Duration::from_secs_f64(secs) {
            if yields(&a.tick(t, &views(path(t, a.asking())))) > 0 {
                at.push(t.as_secs_f64());
            }
            t += a.interval();
        }
        at
    }

    #[test]
    fn questions_grow_rarer_while_every_answer_finds_the_queue_the_groups_own() {
        let mut a = asks_at_5(1, 9, Strength::ONE);
        let stiff = |_: Duration, yielding: bool| if yielding { 69.0 } else { 108.0 };
        let at = question_times(&mut a, 240.0, stiff);
        // Answered 5 s after each began; then 30, 60 and 120 s until the next.
        let want = [5.0, 40.0, 105.0, 230.0];
        assert_eq!(at.len(), want.len(), "{at:?}");
        for (got, want) in at.iter().zip(want) {
            assert!((got - want).abs() < 0.5, "{at:?}");
        }
        // Others who take a room start the count over: after the group was
        // held to its share and let go again, the next question is 30 s on.
        assert_eq!(a.own_gap, OWN_FOR_MAX);
        for (secs, answer) in [
            (240, Queue::Shared),
            (245, Queue::Shared),
            (250, Queue::Own),
        ] {
            a.conclude(Duration::from_secs(secs), answer, &views(108.0));
        }
        assert_eq!(a.next_ask, Duration::from_secs(280));
    }

    #[test]
    fn a_moment_of_queue_in_a_yield_is_a_swing_and_a_quarter_of_it_is_others() {
        // The yield runs from 5 s to 10 s; its second half from 7.5 s.
        let answer = |stood_ms: u64| {
            let mut a = asks_at_5(1, 9, Strength::ONE);
            run(&mut a, Duration::ZERO, 10.1, |t, yielding| {
                let swing = t >= Duration::from_millis(8_000)
                    && t < Duration::from_millis(8_000 + stood_ms);
                if yielding && !swing {
                    69.0
                } else {
                    108.0
                }
            });
            (a.queue(), a.confirming)
        };
        assert_eq!(answer(400), (Queue::Own, false), "a stiff source's swing");
        assert_eq!(
            answer(900),
            (Queue::Unknown, true),
            "more than a quarter of 2.5 s: taken, to be asked again"
        );
    }

    /// Four streams at `srtt_ms` that have sent 1000 packets a second each
    /// by `t`, and stream 0 lost one packet every 2 s.
    fn counting(t: Duration, srtt_ms: f64) -> Vec<StreamView> {
        let mut v = views(srtt_ms);
        for (n, s) in v.iter_mut().enumerate() {
            let i = s.info.as_mut().unwrap();
            i.data_segs_out = (t.as_secs_f64() * 1000.0) as u32;
            i.total_retrans = if n == 0 { (t.as_secs() / 2) as u32 } else { 0 };
        }
        v
    }

    fn caps(asked: &[Steering]) -> Vec<Option<u64>> {
        asked
            .iter()
            .filter_map(|s| match s {
                Steering::Pace(_, cap) => Some(*cap),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn losses_over_several_ticks_are_one_event_and_each_stream_has_its_own() {
        let mut a = Auto::new(1, 4, Strength::ONE);
        let lost = [0, 0, 3, 9, 12, 12, 12, 13, 13];
        let other = [0, 0, 0, 1, 1, 1, 1, 1, 1];
        for (n, l) in lost.iter().enumerate() {
            let mut v = views(70.0);
            v[1].info.as_mut().unwrap().total_retrans = *l;
            v[3].info.as_mut().unwrap().total_retrans = other[n];
            v[2].info.as_mut().unwrap().data_segs_out = 1000 * (n as u32 + 1);
            a.note_losses(Duration::from_millis(100 * n as u64), &v, 70_000);
        }
        // Stream 1: a burst over three ticks, then one more loss: two
        // halvings. Stream 3 lost during stream 1's burst: its own halving,
        // but not the group's.
        let b = *a.book.back().unwrap();
        assert_eq!((b.group, b.streams), (2, 3));
        let (p, rtt_s) = a.loss_rate().unwrap();
        assert!((p - 6f64.sqrt() / 8000.0).abs() < 1e-12, "{p}");
        assert!((rtt_s - 0.070).abs() < 1e-9, "{rtt_s}");
        // A stream on a new connection (its counts went back) is no loss.
        let mut v = views(70.0);
        v[1].info.as_mut().unwrap().total_retrans = 2;
        v[2].info.as_mut().unwrap().data_segs_out = 10_000;
        a.note_losses(Duration::from_millis(900), &v, 70_000);
        assert_eq!(a.book.back().unwrap().streams, 3);
    }

    #[test]
    fn found_sharing_the_group_is_held_to_one_reno_flows_rate_until_the_room_is_its_own() {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let mut t = Duration::ZERO;
        let mut asked = Vec::new();
        while a.queue() != Queue::Shared {
            asked = a.tick(t, &counting(t, 108.0));
            t += a.interval();
        }
        // Held at Mathis' rate for loss events every 2 s among 4000 packets a
        // second (p = 1.25e-4) at 108 ms: 11.7 Mb/s, a quarter on each stream.
        let held = caps(&asked);
        assert_eq!(held.len(), 4, "{asked:?}");
        let total: u64 = held.iter().map(|c| c.expect("a cap, not a lift")).sum();
        // The steer's record says the share it holds the group to.
        let told = a.state().unwrap().share_bps.expect("held at a share");
        assert!((told - total as f64).abs() < 4.0, "{told} against {total}");
        let mathis = mathis_bps(1448.0, 0.108, 1.25e-4, C_PERIODIC) / 8.0;
        assert!(
            (total as f64 - mathis).abs() < 0.25 * mathis,
            "{total} against {mathis}"
        );
        // Their losses empty the queue for a second, and they refill it.
        let mut t = two_spans(&mut a, t, (SECOND, 69.0), (SECOND, 108.0));
        // The others leave and the capped group builds no queue: 45 base
        // RTTs later (3.06 s) the caps come off without a question, and the
        // path is the group's own.
        let gone = t;
        let mut lifted = Vec::new();
        let mut asking = false;
        while a.queue() == Queue::Shared && t < gone + Duration::from_secs(10) {
            lifted.extend(a.tick(t, &counting(t, 69.0)));
            asking |= a.asking();
            t += a.interval();
        }
        assert_eq!(a.queue(), Queue::Own);
        assert_eq!(
            a.state().unwrap().share_bps,
            None,
            "no share once the path is its own"
        );
        let after = Duration::from_millis(3060);
        assert!(
            t >= gone + after && t < gone + after + Duration::from_millis(300),
            "{t:?}"
        );
        assert!(!asking);
        // (The share was retold as the loss rate fell meanwhile.)
        assert_eq!(caps(&lifted)[caps(&lifted).len() - 4..], vec![None; 4]);
        // Its strength is four times the ceiling at once, while its windows
        // grow back; at the first tick its own queue stands, the ceiling.
        assert_eq!(a.strength(), 16.0);
        let asked = run(&mut a, t, 1.0, |_, _| 69.0);
        assert_eq!(a.strength(), 16.0, "no queue yet: still regrowing");
        assert_eq!(strengths(&asked), vec![16_000], "told once");
        let asked = run(&mut a, t + Duration::from_secs(1), 28.0, |_, _| 108.0);
        assert_eq!(strengths(&asked)[0], 4_000);
        assert_eq!(a.strength(), 4.0);
        // Not asked about until OWN_FOR has passed.
        assert_eq!(yields(&asked), 0);
        let asked = run(&mut a, t + Duration::from_secs(29), 5.0, |_, y| {
            if y {
                69.0
            } else {
                108.0
            }
        });
        assert_eq!(yields(&asked), 1);
        assert_eq!(a.queue(), Queue::Own);
    }

    const SECOND: Duration = Duration::from_secs(1);

    /// Ticks from `t` with the streams' sRTT (ms) at `first.1` for
    /// `first.0`, then at `then.1` for `then.0`; the time after them.
    fn two_spans(
        a: &mut Auto,
        mut t: Duration,
        first: (Duration, f64),
        then: (Duration, f64),
    ) -> Duration {
        let from = t;
        while t < from + first.0 + then.0 {
            let srtt = if t < from + first.0 { first.1 } else { then.1 };
            a.tick(t, &counting(t, srtt));
            t += a.interval();
        }
        t
    }

    /// A group asked at 5 s, ticked with others' queue standing (108 ms on a
    /// 69 ms path) until the answer holds it at its share; the time then.
    fn found_sharing() -> (Auto, Duration) {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let mut t = Duration::ZERO;
        while a.queue() != Queue::Shared {
            a.tick(t, &counting(t, 108.0));
            t += a.interval();
        }
        (a, t)
    }

    /// A group the question found others beside (their queue at 108 ms on
    /// a 69 ms path), and the time after the answer: the answer's losses
    /// empty the queue for `cleared` and the others refill it for a second.
    fn held_and_refilled(cleared: Duration) -> (Auto, Duration) {
        let (mut a, t) = found_sharing();
        let t = two_spans(&mut a, t, (cleared, 69.0), (SECOND, 108.0));
        assert_eq!(
            a.queue(),
            Queue::Shared,
            "held through {cleared:?} without a queue"
        );
        (a, t)
    }

    /// Held at a share, then the others leave at `gone`: the time until the
    /// caps come off, when the streams' sRTT is `spike` at the ticks in
    /// `spiked` (counted from `gone`) and 69 ms at the rest.
    fn released_after(spiked: std::ops::Range<usize>, spike: f64) -> Duration {
        let (mut a, t) = held_and_refilled(Duration::from_secs(1));
        until_released(&mut a, t, spiked, spike)
    }

    /// Ticks a held group from `gone` (for at most 10 s) until the caps come
    /// off, with the streams' sRTT at `spike` at the ticks in `spiked` and
    /// 69 ms at the rest; the time that took.
    fn until_released(
        a: &mut Auto,
        mut t: Duration,
        spiked: std::ops::Range<usize>,
        spike: f64,
    ) -> Duration {
        let gone = t;
        let mut n = 0;
        while a.queue() == Queue::Shared && t < gone + Duration::from_secs(10) {
            let srtt = if spiked.contains(&n) { spike } else { 69.0 };
            a.tick(t, &counting(t, srtt));
            t += a.interval();
            n += 1;
        }
        t - gone
    }

    #[test]
    fn no_queue_before_a_question_that_finds_others_is_no_sign_they_left() {
        let mut a = asks_at_5(1, 4, Strength::ONE);
        // No queue for 6 s, then a fall asks (the group's delivery fell:
        // newcomers), and they fill the room it leaves.
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(6) {
            a.tick(t, &counting(t, 69.0));
            t += a.interval();
        }
        a.confirming = true;
        while a.queue() != Queue::Shared && t < Duration::from_secs(20) {
            a.tick(t, &counting(t, 108.0));
            t += a.interval();
        }
        assert_eq!(a.queue(), Queue::Shared);
        // Their queue empties a moment after their losses: no release for
        // that, nor for the 6 s before the question.
        two_spans(&mut a, t, (SECOND, 108.0), (SECOND, 69.0));
        assert_eq!(a.queue(), Queue::Shared);
    }

    #[test]
    fn the_others_losses_just_after_an_answer_are_no_sign_they_left() {
        // 4.5 s without a queue (65 base RTTs) after the answer: the others
        // halved together on the queue they had just filled. Held, and the
        // next clearing is counted as usual.
        let (mut a, t) = held_and_refilled(Duration::from_millis(4500));
        let released = until_released(&mut a, t, 0..0, 69.0);
        assert_eq!(a.queue(), Queue::Own);
        assert!(released < Duration::from_millis(3400), "{released:?}");
        // Others that leave as the answer comes are found too, after twice
        // the count: the group is not held at its share for good.
        let (mut a, answered) = found_sharing();
        let held = until_released(&mut a, answered, 0..0, 69.0);
        assert_eq!(a.queue(), Queue::Own);
        assert!(
            held > Duration::from_secs(6) && held < Duration::from_millis(6700),
            "{held:?}"
        );
    }

    #[test]
    fn a_moments_spike_of_the_rtt_does_not_put_off_the_release() {
        let clear = released_after(0..0, 69.0);
        assert!(clear < Duration::from_millis(3400), "{clear:?}");
        // Two ticks of a 6 ms spike a second after the others left: a stall,
        // not flows that came back.
        assert_eq!(released_after(7..9, 80.0), clear);
        // A queue that stands three ticks in a row is someone's: the count
        // starts again after it.
        let stood = released_after(7..10, 80.0);
        assert!(stood >= clear + Duration::from_millis(1300), "{stood:?}");
    }

    #[test]
    fn held_at_its_share_k_rises_until_the_group_reaches_it_and_holds_there() {
        let (mut a, mut t) = found_sharing();
        assert!(a.fair_told.is_some(), "held at a share");
        assert_eq!(a.strength(), 1.0, "the queue brought k to its floor");
        // No question meanwhile: this is about k under the cap.
        a.next_ask = t + Duration::from_secs(60);
        // Once the loss book spans FAIR_OVER, the share no longer moves;
        // meanwhile the group delivers its share, and k holds at the floor.
        let mut moved = 0.0;
        while t < Duration::from_secs(25) {
            let mut v = counting(t, 108.0);
            for s in &mut v {
                s.bytes = (moved / 4.0) as u64;
            }
            a.tick(t, &v);
            moved += a.fair_told.unwrap() * a.interval().as_secs_f64();
            t += a.interval();
        }
        assert!(a.strength() < 1.2, "k {} at its share", a.strength());
        let share = a.fair_told.expect("held at a share");
        // The group delivers `of` the share for `secs`; k after.
        let mut deliver = |a: &mut Auto, t: &mut Duration, secs: f64, of: f64| {
            let end = *t + Duration::from_secs_f64(secs);
            while *t < end {
                let mut v = counting(*t, 108.0);
                for s in &mut v {
                    s.bytes = (moved / 4.0) as u64;
                }
                a.tick(*t, &v);
                let dt = a.interval();
                moved += of * share * dt.as_secs_f64();
                *t += dt;
            }
            a.strength()
        };
        // Half the share, though the queue stands: the strength rises.
        let short = deliver(&mut a, &mut t, 5.0, 0.5);
        assert!(short > 2.0, "k {short:.2} below its share");
        // Paced just under the cap, once the 2 s rate shows it: k holds.
        let reached = deliver(&mut a, &mut t, 2.5, 0.95);
        assert_eq!(deliver(&mut a, &mut t, 1.5, 0.95), reached);
        assert_eq!(a.fair_told, Some(share), "the share itself held");
        // Above the share (it fell; the caps catch up): k falls, not below the floor.
        let over = deliver(&mut a, &mut t, 10.0, 1.5);
        assert!(
            over < reached,
            "k {over:.2} above its share, {reached:.2} at it"
        );
        assert!(over >= 1.0);
    }

    /// Yields begun by `a` from `from` to `to`, each stream delivering at
    /// `rate(t)` bytes a second and 40 ms of queue standing but while the
    /// group yields (stiff traffic) or always (`taken` says when).
    fn questions(
        a: &mut Auto,
        from: f64,
        to: f64,
        rate: impl Fn(f64) -> f64,
        taken: impl Fn(f64) -> bool,
    ) -> Vec<f64> {
        let mut t = Duration::from_secs_f64(from);
        let mut moved = 0.0;
        let mut begun = Vec::new();
        while t < Duration::from_secs_f64(to) {
            let secs = t.as_secs_f64();
            let srtt = if a.asking() && !taken(secs) {
                69.0
            } else {
                108.0
            };
            let mut v = views(srtt);
            for s in &mut v {
                s.bytes = moved as u64;
            }
            let was = a.asking();
            a.tick(t, &v);
            if a.asking() && !was {
                begun.push(secs);
            }
            let dt = a.interval();
            moved += rate(secs) * dt.as_secs_f64();
            t += dt;
        }
        begun
    }

    #[test]
    fn a_lasting_fall_in_delivery_brings_the_question_forward_and_a_swing_does_not() {
        let stiff = |_| false;
        // Own from 10 s; the next question is due at 40 s.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let asked = questions(&mut a, 0.0, 45.0, |_| 1e6, stiff);
        assert_eq!(asked.len(), 2);
        assert!((asked[1] - 40.0).abs() < 0.2, "{asked:?}");
        // From 25 s the group delivers 60 %: the path held steady before, so
        // once every rate of the last 3 s is below 75 % of the best before
        // (from about 29.3 s: the 2 s rates fall below it 1.3 s in), it asks.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let fall = |t: f64| if t < 25.0 { 1e6 } else { 0.6e6 };
        let asked = questions(&mut a, 0.0, 45.0, fall, stiff);
        assert!(asked[1] > 29.0 && asked[1] < 29.6, "{asked:?}");
        assert_eq!(a.queue(), Queue::Own);
        // Newcomers took the fall's room: held at once, the fall being the
        // question's first answer.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let asked = questions(&mut a, 0.0, 40.0, fall, |t| t > 30.0);
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert_eq!(a.queue(), Queue::Shared);
        // A stiff source's swing, 30 % to 100 % over 10 s: no early question.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let swing = |t: f64| 1e6 * (0.65 + 0.35 * (std::f64::consts::TAU * t / 10.0).sin());
        let asked = questions(&mut a, 0.0, 45.0, swing, stiff);
        assert!((asked[1] - 40.0).abs() < 0.2, "{asked:?}");
    }

    #[test]
    fn a_falls_question_that_finds_its_room_untaken_yields_once_more() {
        // The fall from 25 s asks at about 29.3 s, down to the share. The
        // newcomers, halved by their own slow start's overflow, fill the
        // room only from 36 s: the yield goes on past its 5 s and finds them.
        let fall = |t: f64| if t < 25.0 { 1e6 } else { 0.6e6 };
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let asked = questions(&mut a, 0.0, 35.0, fall, |t| t > 36.0);
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert!(a.asking(), "still yielding at 35 s");
        let asked = questions(&mut a, 35.0, 40.0, fall, |t| t > 36.0);
        assert!(asked.is_empty(), "{asked:?}");
        assert_eq!(a.queue(), Queue::Shared);
        // Beside a stiff source nobody fills it: the room is the group's own
        // after the second yield, and once only.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        questions(&mut a, 0.0, 39.0, fall, |_| false);
        assert!(a.asking());
        questions(&mut a, 39.0, 40.0, fall, |_| false);
        assert!(!a.asking());
        assert_eq!(a.queue(), Queue::Own);
    }

    #[test]
    fn rates_held_to_a_share_are_no_fall_once_the_path_is_the_groups_own() {
        // Strong for 10 s, then held to a tenth of it for 15 s.
        let mut a = Auto::new(1, 9, Strength::ONE);
        at(&mut a, 0..100, 1e7);
        at(&mut a, 100..250, 1e6);
        let now = Duration::from_secs(25);
        a.queue = Queue::Own;
        assert!(a.fell(now).is_some(), "as rates of the group's own, a fall");
        a.queue = Queue::Shared;
        a.released(now);
        assert_eq!(a.queue(), Queue::Own);
        assert_eq!(a.fell(now), None);
    }

    #[test]
    fn held_at_its_share_a_question_leaves_the_smaller_room() {
        let mut a = Auto::new(1, 4, Strength::ONE);
        a.queue = Queue::Shared;
        a.fair_told = Some(1e6);
        assert!(!a.steady());
        let asked = a.begin_yield(Duration::from_secs(30), &views(108.0));
        let want = (1e6 / 4.0 * YIELD_SHARE_STEADY) as u64;
        assert_eq!(caps(&asked), vec![Some(want); 4]);
    }

    /// Notes the group's rate as `rate` at ten ticks a second over `tenths`.
    fn at(a: &mut Auto, tenths: std::ops::Range<u32>, rate: f64) {
        for ds in tenths {
            a.rates
                .push_back((Duration::from_millis(ds as u64 * 100), rate));
        }
    }

    #[test]
    fn on_a_steady_path_others_the_queue_counts_are_a_fall_before_the_rate_falls_a_quarter() {
        // 20 s at 12 MB/s (a swing to half of it for 3 s from 20 s, if
        // `swing`), then from 28 s `share` of it, with `others` counted at
        // every tick of the last 2 s.
        let fall = |others: f64, share: f64, swing: bool| {
            let mut a = Auto::new(1, 9, Strength::ONE);
            a.queue = Queue::Own;
            at(&mut a, 0..200, 12e6);
            at(&mut a, 200..230, if swing { 6e6 } else { 12e6 });
            at(&mut a, 230..280, 12e6);
            at(&mut a, 280..300, share * 12e6);
            for ds in 281..300u64 {
                let t = Duration::from_millis(ds * 100);
                a.others.push_back((t, others, false));
            }
            a.fell(Duration::from_secs(30))
        };
        assert_eq!(fall(5.0, 0.8, false), Some(Duration::from_secs(28)));
        assert_eq!(fall(1.0, 0.8, false), None, "too few others to be sure");
        assert_eq!(fall(5.0, 0.9, false), None, "UDP 1-10 Mb/s takes a tenth");
        assert_eq!(fall(5.0, 0.8, true), None, "a source that swings");
    }

    #[test]
    fn a_falls_question_follows_the_count_the_capped_group_makes() {
        let mut a = Auto::new(1, 4, Strength::ONE);
        a.full = Some(12e6);
        // A fall's question yields down to 1.6 MB/s, a count made while the
        // group ran strong; then six windows, capped, count five others.
        a.yielding = Some(Duration::from_secs(40));
        a.fallen_told = Some((1.6e6, 12e6));
        for i in 0..6u64 {
            let t = Duration::from_millis(30_000 + i * 136);
            a.others.push_back((t, 5.0, true));
        }
        let asked = a.tick(Duration::from_secs(31), &views(108.0));
        assert_eq!(caps(&asked), vec![Some(500_000); 4], "a sixth of the path");
        assert!(a.asking(), "the question goes on");
        // Within 5 % of that: nothing retold.
        a.others.push_back((Duration::from_secs(31), 5.2, true));
        let asked = a.tick(Duration::from_millis(31_136), &views(108.0));
        assert!(caps(&asked).is_empty(), "{asked:?}");
    }

    #[test]
    fn a_cap_told_again_at_its_value_is_no_new_cap() {
        let mut a = Auto::new(1, 2, Strength::ONE);
        let both = |x, y| [Steering::Pace(0, Some(x)), Steering::Pace(1, Some(y))];
        a.note_caps(&both(500, 500));
        assert_eq!(a.caps, 1);
        a.note_caps(&both(500, 500));
        a.note_caps(&[]);
        assert_eq!(a.caps, 1, "the same caps again, and none told");
        a.note_caps(&both(500, 400));
        assert_eq!(a.caps, 2, "one stream's cap moved");
        a.note_caps(&[Steering::Pace(1, None)]);
        assert_eq!(a.caps, 3, "one came off");
        a.note_caps(&[Steering::Pace(1, None)]);
        assert_eq!(a.caps, 3, "and again");
        assert_eq!(a.capped, vec![(0, 500)]);
    }

    #[test]
    fn counted_from_the_queue_the_share_holds_until_the_capped_counts_say_it_alone() {
        let mut a = Auto::new(1, 4, Strength::ONE);
        a.full = Some(12e6);
        a.queue = Queue::Shared;
        let v = views(108.0);
        let count = |a: &mut Auto, ms: u64, n: f64, held: bool| {
            a.others.push_back((Duration::from_millis(ms), n, held));
        };
        // Counted while the group ran strong: a median of 3.5 others.
        for (i, n) in [2.0, 2.5, 3.0, 3.5, 4.0, 4.5].into_iter().enumerate() {
            count(&mut a, 20_000 + i as u64 * 136, n, false);
        }
        let each = |others: f64| (12e6 / (others + 1.0) / 4.0) as u64;
        assert_eq!(caps(&a.fair(&v, true)), vec![Some(each(3.5)); 4]);
        // Capped, the group counts five. The median of all the counts moves
        // by more than FAIR_RETELL from the second on, but the caps hold:
        // retold, they would start the count afresh.
        for i in 0..HELD_MIN as u64 - 1 {
            count(&mut a, 22_000 + i * 136, 5.0, true);
            assert!(a.fair(&v, false).is_empty(), "retold at count {i}");
        }
        assert!(a.counted_share().unwrap() < (1.0 - FAIR_RETELL) * 12e6 / 4.5);
        // Enough of them: a sixth of the path, at once.
        count(&mut a, 23_000, 5.0, true);
        assert_eq!(caps(&a.fair(&v, false)), vec![Some(each(5.0)); 4]);
    }

    #[test]
    fn a_question_leaves_less_room_where_the_groups_delivery_holds_steady() {
        let cap_share = |a: &mut Auto| {
            let v = views(108.0);
            let caps = caps(&a.begin_yield(Duration::from_secs(30), &v));
            caps[0].unwrap() as f64 / rate(v[0].info.as_ref().unwrap())
        };
        let mut a = Auto::new(1, 9, Strength::ONE);
        at(&mut a, 0..100, 1e6);
        assert!(!a.steady(), "10 s of rates tell too little");
        assert!((cap_share(&mut a) - YIELD_SHARE).abs() < 1e-3);
        at(&mut a, 100..200, 1e6);
        assert!(a.steady());
        assert!((cap_share(&mut a) - YIELD_SHARE_STEADY).abs() < 1e-3);
        // A swing: down for 3 s and back up.
        let mut b = Auto::new(1, 9, Strength::ONE);
        at(&mut b, 0..200, 1e6);
        at(&mut b, 200..230, 0.4e6);
        at(&mut b, 230..240, 1e6);
        assert!(!b.steady());
        assert!((cap_share(&mut b) - YIELD_SHARE).abs() < 1e-3);
        // A dip of a second is none.
        let mut c = Auto::new(1, 9, Strength::ONE);
        at(&mut c, 0..200, 1e6);
        at(&mut c, 200..210, 0.4e6);
        at(&mut c, 210..220, 1e6);
        assert!(c.steady());
        // Nor is a fall that stays (held to a share as others came), nor a
        // climb from the rates the span begins with (freed as they left).
        let mut d = Auto::new(1, 9, Strength::ONE);
        at(&mut d, 0..100, 1e6);
        at(&mut d, 100..300, 0.2e6);
        assert!(d.steady());
        let mut e = Auto::new(1, 9, Strength::ONE);
        at(&mut e, 0..50, 0.2e6);
        at(&mut e, 50..250, 1e6);
        assert!(e.steady());
        // Low rates a yield cut off are not known to have come back.
        let mut f = Auto::new(1, 9, Strength::ONE);
        at(&mut f, 0..200, 1e6);
        at(&mut f, 200..230, 0.4e6);
        at(&mut f, 280..300, 1e6);
        assert!(f.steady());
    }

    #[test]
    fn delivery_is_what_tcp_saw_acknowledged_when_the_connection_tells() {
        let mut a = Auto::new(1, 2, Strength::ONE);
        // Blocks complete in bursts (0, 2, 0, 2 a tick), the bytes
        // acknowledged flow evenly: 100 kB a tick on each stream, 2 MB/s in all
        // (the blocks would say 2.6 over the last 2 s).
        for n in 0..=30u64 {
            let mut v = views(70.0);
            v.truncate(2);
            for s in &mut v {
                s.bytes = (n / 2) * 2 * 131_072;
                s.info.as_mut().unwrap().bytes_acked = n * 100_000;
            }
            a.note_delivery(Duration::from_millis(100 * n), &v);
        }
        let (_, r) = *a.rates.back().unwrap();
        assert!((r - 2e6).abs() < 1.0, "{r}");
        // A stream whose connection is gone falls back to its blocks: no jump.
        let total = a.delivered.back().unwrap().1;
        let mut v = views(70.0);
        v.truncate(2);
        v[0].info = None;
        v[0].bytes = 50 * 131_072;
        v[1].info.as_mut().unwrap().bytes_acked = 3_100_000;
        a.note_delivery(Duration::from_millis(3100), &v);
        assert_eq!(a.delivered.back().unwrap().1, total + 100_000);
    }

    #[test]
    fn a_fall_must_outlast_the_paths_own_low_spells() {
        let mut a = Auto::new(1, 9, Strength::ONE);
        at(&mut a, 0..100, 1e6);
        assert_eq!(a.hold(), FALL_RECENT, "10 s of rates tell too little");
        at(&mut a, 100..200, 1e6);
        assert_eq!(a.hold(), FALL_HOLD_MIN, "a steady path");
        // A spell of 4.9 s at 40 %, over: the hold is 6.9 s.
        at(&mut a, 200..250, 0.4e6);
        at(&mut a, 250..260, 1e6);
        assert_eq!(a.hold(), Duration::from_millis(6900));
        // A spell under way is what a fall is judged on, not the past.
        let mut b = Auto::new(1, 9, Strength::ONE);
        at(&mut b, 0..200, 1e6);
        at(&mut b, 200..300, 0.4e6);
        assert_eq!(b.hold(), FALL_HOLD_MIN);
        // A yield cuts a spell: it lasted at least what was seen of it.
        let mut c = Auto::new(1, 9, Strength::ONE);
        at(&mut c, 0..200, 1e6);
        at(&mut c, 200..230, 0.4e6);
        at(&mut c, 300..310, 0.4e6);
        at(&mut c, 310..320, 1e6);
        assert_eq!(c.hold(), Duration::from_millis(4900));
        // Longer spells than a swing of 10 s has: the hold stays FALL_RECENT.
        let mut d = Auto::new(1, 9, Strength::ONE);
        at(&mut d, 0..200, 1e6);
        at(&mut d, 200..300, 0.4e6);
        at(&mut d, 300..310, 1e6);
        assert_eq!(d.hold(), FALL_RECENT);
    }

    #[test]
    fn after_a_fall_the_share_comes_from_the_losses_since_it_began() {
        let mut a = Auto::new(1, 9, Strength::ONE);
        // 1000 packets a second; a loss event every 4 s for 16 s, then one
        // every second.
        let ms = Duration::from_millis;
        // The queue stands longer once they came: 70 ms of sRTT, then 110.
        let (mut events, mut rtt_us) = (0, 0.0);
        for i in 0..=20u64 {
            if i >= 16 || i % 4 == 3 {
                events += 1;
            }
            if i > 0 {
                rtt_us += if i > 16 { 110_000.0 } else { 70_000.0 };
            }
            a.book.push_back(Booked {
                t: ms(i * 1000),
                sent: i * 1000,
                group: events,
                streams: events,
                rtt_us,
                ticks: i,
            });
        }
        let (whole, rtt_whole) = a.loss_rate().unwrap();
        assert!((whole - 9.0 / 20_000.0).abs() < 1e-9, "{whole}");
        assert!((rtt_whole - 0.078).abs() < 1e-9, "{rtt_whole}");
        a.began_falling(ms(16_000));
        let (since, rtt_since) = a.loss_rate().unwrap();
        assert!((since - 4.0 / 4_000.0).abs() < 1e-9, "{since}");
        assert!((rtt_since - 0.110).abs() < 1e-9, "{rtt_since}");
        // Too few events since the fall: the whole window speaks.
        a.began_falling(ms(19_500));
        assert_eq!(a.loss_rate(), Some((whole, rtt_whole)));
    }

    #[test]
    fn the_newcomers_slow_start_overflow_is_left_out_of_the_share_after_a_fall() {
        let mut a = Auto::new(1, 9, Strength::ONE);
        // 4000 packets a second; the fall began at 10 s; at 11 s every
        // stream lost at once (one group event, nine streams'); from 13 s a
        // group event and two streams' every 2 s.
        let (mut group, mut streams) = (0, 0);
        for i in 0..=20u64 {
            if i == 11 {
                (group, streams) = (group + 1, streams + 9);
            }
            if i >= 13 && i % 2 == 1 {
                (group, streams) = (group + 1, streams + 2);
            }
            a.book.push_back(Booked {
                t: Duration::from_secs(i),
                sent: i * 4000,
                group,
                streams,
                rtt_us: i as f64 * 100_000.0,
                ticks: i,
            });
        }
        a.began_falling(Duration::from_secs(10));
        // From 12 s on: 4 and 8 events among 32000 packets.
        let (p, _) = a.loss_rate().unwrap();
        let want = (4.0f64 * 8.0).sqrt() / 32_000.0;
        assert!((p - want).abs() < 1e-12, "{p} against {want}");
        // Too few since the burst (the fall began at 17 s): since the fall.
        a.began_falling(Duration::from_secs(17));
        let (p, _) = a.loss_rate().unwrap();
        let want = 2.0f64.sqrt() / 12_000.0;
        assert!((p - want).abs() < 1e-12, "{p} against {want}");
    }

    /// Found sharing (no fall) at `shared_at` s: `lost` gives stream 0's
    /// packets lost by each tick of 100 ms (four streams at 100 ms sending
    /// 1000 packets a second each); the loss rate the share would use at
    /// `at`.
    fn held_loss_rate(lost: impl Fn(Duration) -> u32, shared_at: u64, at: &[u64]) -> Vec<f64> {
        let mut a = Auto::new(1, 4, Strength::ONE);
        let mut out = Vec::new();
        for ms in (0..=*at.iter().max().unwrap() * 1000).step_by(100) {
            let t = Duration::from_millis(ms);
            let mut v = views(100.0);
            for s in &mut v {
                s.info.as_mut().unwrap().data_segs_out = ms as u32;
            }
            v[0].info.as_mut().unwrap().total_retrans = lost(t);
            a.note_losses(t, &v, 100_000);
            if ms == shared_at * 1000 {
                a.queue = Queue::Shared;
                a.span = a.book.back().copied();
            }
            if at.iter().any(|s| s * 1000 == ms) {
                out.push(a.loss_rate().unwrap().0);
            }
        }
        out
    }

    #[test]
    fn held_at_its_share_the_loss_rate_counts_from_when_the_sharing_began() {
        // An event a second for 30 s, then one every 2 s: at 90 s the last
        // minute alone would say 30 among 240,000 packets, the span says 60
        // among 360,000 (a third more), and the share does not climb as the
        // first 30 s age out.
        let lost = |t: Duration| {
            let s = t.as_secs() as u32;
            if s <= 30 {
                s
            } else {
                30 + (s - 30) / 2
            }
        };
        let p = held_loss_rate(lost, 0, &[90]);
        let want = 60.0 / 360_000.0;
        assert!((p[0] - want).abs() < 0.02 * want, "{} against {want}", p[0]);
    }

    #[test]
    fn found_sharing_by_a_question_the_transfers_own_start_ages_out_of_the_count() {
        // Ten events in the first 2 s (the group's slow start overflowing),
        // then one every 2 s; the question finds others there at 22 s. At
        // 40 s the span is too short and the last minute speaks (slow start
        // and all); from 52 s the span alone, one in 8000 packets.
        let lost = |t: Duration| {
            let ms = t.as_millis() as u32;
            if ms < 2000 {
                ms / 200
            } else {
                10 + (ms - 2000) / 2000
            }
        };
        let p = held_loss_rate(lost, 22, &[40, 60, 120]);
        let steady = 1.0 / 8000.0;
        assert!(p[0] > 1.3 * steady, "{}", p[0]);
        assert!((p[1] - steady).abs() < 0.1 * steady, "{}", p[1]);
        assert!((p[2] - steady).abs() < 0.05 * steady, "{}", p[2]);
    }

    #[test]
    fn the_span_starts_again_when_the_losses_change_more_than_chance_explains() {
        // One event every 2 s for 90 s, then four a second (others came):
        // the span restarts, and 60 s after the change the loss rate is
        // within a fifth of the new one (1 among 1000 packets).
        let lost = |t: Duration| {
            let ms = t.as_millis() as u32;
            if ms <= 90_000 {
                ms / 2000
            } else {
                45 + (ms - 90_000) / 250
            }
        };
        let p = held_loss_rate(lost, 0, &[89, 150]);
        assert!((p[0] - 1.0 / 8000.0).abs() < 0.05 / 8000.0, "{}", p[0]);
        assert!((p[1] - 1e-3).abs() < 0.2e-3, "{}", p[1]);
    }

    #[test]
    fn a_question_a_fall_asked_yields_down_to_the_share_the_losses_since_say() {
        let mut a = Auto::new(1, 4, Strength::ONE);
        // 4000 packets a second at 100 ms; a loss event a second from 16 s.
        for i in 0..=20u64 {
            let events = i.saturating_sub(16);
            a.book.push_back(Booked {
                t: Duration::from_secs(i),
                sent: i * 4000,
                group: events,
                streams: events,
                rtt_us: i as f64 * 100_000.0,
                ticks: i,
            });
        }
        let v = views(108.0);
        let rates: f64 = v.iter().map(|s| rate(s.info.as_ref().unwrap())).sum();
        let total =
            |asked: &[Steering]| -> f64 { caps(asked).iter().map(|c| c.unwrap() as f64).sum() };
        // No fall: the yield keeps 70 % of the rate.
        let kept = total(&a.begin_yield(Duration::from_secs(20), &v));
        assert!(
            (kept / rates - YIELD_SHARE).abs() < 1e-3,
            "{kept} of {rates}"
        );
        // After a fall: down to Mathis' rate for p = 4 / 16000 at 100 ms.
        a.began_falling(Duration::from_secs(16));
        let share = mathis_bps(1448.0, 0.1, 2.5e-4, C_PERIODIC) / 8.0;
        assert!(share < 0.5 * YIELD_SHARE * rates);
        let fallen = total(&a.begin_yield(Duration::from_secs(20), &v));
        assert!(
            (fallen - share).abs() < 0.01 * share,
            "{fallen} against {share}"
        );
        // Too few windows counted the others when it began; once the capped
        // group has counted five, the room follows the count (a sixth of
        // the path) though the question began at the losses' share.
        a.full = Some(12e6);
        let count = |a: &mut Auto, ms: u64, n: f64, held: bool| {
            a.others.push_back((Duration::from_millis(ms), n, held));
        };
        for i in 0..(RAMPS_MIN - HELD_MIN) as u64 {
            count(&mut a, 18_000 + i * 136, 3.0, false);
        }
        for i in 0..HELD_MIN as u64 - 1 {
            count(&mut a, 20_000 + i * 136, 5.0, true);
        }
        assert!(a.tick(Duration::from_millis(20_300), &v).is_empty());
        count(&mut a, 20_400, 5.0, true);
        let asked = a.tick(Duration::from_millis(20_450), &v);
        assert_eq!(caps(&asked), vec![Some(500_000); 4], "a sixth of the path");
        assert!(a.asking(), "the question goes on");
        // One other counted says half the path, more than the question's
        // room: the room it is, not more, or the question would close it.
        for i in 0..4u64 {
            count(&mut a, 20_500 + i * 136, 1.0, true);
        }
        let room = YIELD_SHARE * rates;
        assert!(6e6 > room);
        let asked = a.tick(Duration::from_millis(21_100), &v);
        let retold = total(&asked);
        assert!((retold - room).abs() < 4.0, "{retold} against {room}");
    }

    #[test]
    fn a_room_first_found_taken_is_asked_about_again_before_the_group_is_held() {
        // The first yield (5-10 s) meets a rising swing: the queue stands.
        let mut a = asks_at_5(1, 9, Strength::ONE);
        let asked = questions(&mut a, 0.0, 10.1, |_| 1e6, |_| true);
        assert!(
            asked.len() == 1 && (asked[0] - 5.0).abs() < 0.2,
            "{asked:?}"
        );
        assert_eq!(a.queue(), Queue::Unknown, "not held on one answer");
        assert!(a.paced.is_empty(), "the yield's caps came off");
        // A queue stood in more than a quarter of the second half's readings
        // by 8.2 s: the rest could not change the answer.
        let ended = a.answered.as_secs_f64();
        assert!(ended > 7.5 && ended < 8.5, "answered at {ended}");
        // 2.5 s later it asks again; the swing has gone: the queue is its own.
        let asked = questions(&mut a, 10.1, 20.0, |_| 1e6, |t| t < 10.0);
        assert_eq!(asked.len(), 1);
        assert!((asked[0] - ended - 2.5).abs() < 0.2, "{asked:?}");
        assert_eq!(a.queue(), Queue::Own);
        assert!(a.paced.is_empty() && a.fair_told.is_none());
        // Taken twice running, the group is held to its share.
        let mut a = asks_at_5(1, 9, Strength::ONE);
        let asked = questions(&mut a, 0.0, 18.0, |_| 1e6, |_| true);
        assert_eq!(asked.len(), 2);
        assert_eq!(a.queue(), Queue::Shared);
    }

    #[test]
    fn a_group_that_confirms_is_not_held_and_asks_even_with_no_queue() {
        // Losses would give a share, but a first room found taken does not
        // hold the group: every cap comes off until the second answer.
        let mut a = asks_at_5(1, 4, Strength::ONE);
        let mut t = Duration::ZERO;
        while !a.confirming {
            a.tick(t, &counting(t, 108.0));
            t += a.interval();
        }
        assert!(a.loss_rate().is_some(), "a share could be told");
        assert!(a.paced.is_empty() && a.fair_told.is_none());
        // Beside a stiff source the queue may be gone by then; the question
        // comes anyway and finds the room untaken.
        let held = t;
        let mut asked = false;
        while t < held + Duration::from_secs(10) {
            a.tick(t, &counting(t, 69.0));
            asked |= a.asking();
            t += a.interval();
        }
        assert!(asked);
        assert_eq!(a.queue(), Queue::Own);
        assert!(a.paced.is_empty() && a.fair_told.is_none());
    }

    #[test]
    fn k_holds_where_the_queue_sits_at_its_target() {
        let mut a = asks_at_5(1, 9, Strength::ONE);
        run(&mut a, Duration::ZERO, 1.0, |_, _| 68.0);
        let k = a.strength();
        assert!(k > 1.0 && k < 9.0, "{k}");
        // 6.8 ms of queue is the target on a 68 ms path: k stays, no question.
        let asked = run(&mut a, Duration::from_secs(1), 1.0, |_, _| 74.8);
        assert!(asked.is_empty(), "{asked:?}");
        assert!((a.strength() - k).abs() < 1e-9);
    }

    #[test]
    fn the_floor_is_the_fair_share_and_a_view_without_rtt_changes_nothing() {
        let mut a = asks_at_5(1, 8, Strength::from_milli(2500).unwrap());
        run(&mut a, Duration::ZERO, 34.0, |_, _| 200.0);
        assert_eq!(a.strength(), 2.5);
        let idle = StreamView {
            stream: 0,
            wanted: true,
            bytes: 0,
            info: None,
        };
        assert!(!a.asking());
        assert!(a.tick(Duration::from_secs(35), &[idle]).is_empty());
        assert_eq!(a.interval(), Duration::from_millis(136));
    }
}
