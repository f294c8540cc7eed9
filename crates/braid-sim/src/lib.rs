//! N TCP flows through one bottleneck, on virtual time and seeded, so a
//! run is exactly repeatable and takes milliseconds: the tier between the
//! controls' unit vectors and the real kernel's system tests.
//!
//! What is real: each flow's window is the controls' own arithmetic
//! (bpf/math/, compiled natively: `braid_cc::native`), or CUBIC as Linux's
//! tcp_cubic.c computes it (`cubic`), or a BBR v1 model (`bbr`); a TCP-P
//! group is coupled as bpf/braid_cc.bpf.c couples it (an epoch the members
//! catch up with, the burst guard), and the bottleneck is braid-link's
//! `Direction` (loss model, drop-tail or RED queue, exact serialisation,
//! delay line). Each flow may have a round-trip time of its own (a delay
//! added to its ACKs' way back), and a flow may be finite (a number of
//! packets, then it is done): Poisson arrivals of short flows, as web
//! traffic (`poisson`).
//!
//! What is simplified (unlike the kernel, on purpose, to stay small):
//! - every packet is MSS-sized; a flow sends as long as it has data (bulk
//!   flows always do); ACKs come one per packet over a reverse path that
//!   only delays them;
//! - a packet is found lost once a packet sent 3 or more after it is
//!   acknowledged (SACK's dupthresh on a path that never reorders); one
//!   window reduction per round trip (NewReno's recovery: no growth until
//!   what was in flight at the loss is acknowledged);
//! - a retransmission timeout (no ACK for max(200 ms, 3 sRTT); a second
//!   before the first RTT sample) reduces the window like a loss, where
//!   Linux would restart from one packet;
//! - no delayed ACKs, no receive window; pacing only where a steer caps a
//!   flow's rate (one packet per interval, as the kernel paces under
//!   SO_MAX_PACING_RATE), and a paced flow grows its window only while the
//!   window holds it back (the kernel's tcp_is_cwnd_limited: at some send of
//!   the last round, or in slow start while the window is under twice the
//!   most in flight);
//! - a stiff flow (UDP that does not back off) sends at its rate, a constant
//!   or a sinusoid, and is never retransmitted.

pub mod bbr;
pub mod cubic;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use braid_cc::native::{Arith, Window};
use braid_link::{Config, Direction, Frame};

use bbr::Bbr;
use cubic::Cubic;

/// Bytes of a data packet on the wire; its payload is [`MSS`].
pub const WIRE: usize = 1500;
pub const MSS: usize = 1448;
const DUPTHRESH: u64 = 3;

/// Which model a flow's window follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// `arith`: braid's controls' own arithmetic (bpf/math).
    Native,
    /// Linux's CUBIC (`cubic`).
    Cubic,
    /// A BBR v1 model (`bbr`).
    Bbr,
}

/// One flow: its control, and its settings as braid-cc would give them.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    pub model: Model,
    pub arith: Arith,
    /// braid_frac's growth in thousandths of Reno's (1000/m).
    pub frac_cwnd: u32,
    /// A TCP-P group (index into the run's groups), for `Arith::Tcpp`.
    pub group: Option<usize>,
    /// TCP-P's strength k x 1000.
    pub k_milli: u32,
    /// When the flow starts and when it stops sending new data, in ns.
    pub start_ns: u64,
    pub stop_ns: u64,
    /// Not TCP: a stiff stream at this rate.
    pub stiff: Option<Stiff>,
    /// A stream of braid's session (what `SimSteering::Streams` counts);
    /// a TCP-P flow always is.
    pub session: bool,
    /// Added to the path's round-trip time, ns (on the ACKs' way back).
    pub extra_rtt_ns: u64,
    /// A finite flow: it is done once this many packets have been delivered.
    pub packets: Option<u64>,
}

/// A stiff flow's rate: from `min_bps` to `max_bps` and back over
/// `period_ns` (a sinusoid, as braid-traffic's UDP source), or constant when
/// the two are equal. Bits on the wire per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stiff {
    pub min_bps: f64,
    pub max_bps: f64,
    pub period_ns: u64,
}

impl Stiff {
    pub fn rate_at(&self, t_ns: u64) -> f64 {
        if self.period_ns == 0 || self.max_bps == self.min_bps {
            return self.max_bps;
        }
        let phase = (t_ns % self.period_ns) as f64 / self.period_ns as f64;
        let mid = (self.min_bps + self.max_bps) / 2.0;
        mid + (self.max_bps - self.min_bps) / 2.0 * (2.0 * std::f64::consts::PI * phase).sin()
    }
}

impl Flow {
    pub fn new(arith: Arith) -> Flow {
        Flow {
            model: Model::Native,
            arith,
            frac_cwnd: 1000,
            group: None,
            k_milli: 1000,
            start_ns: 0,
            stop_ns: u64::MAX,
            stiff: None,
            session: false,
            extra_rtt_ns: 0,
            packets: None,
        }
    }

    /// Linux's CUBIC.
    pub fn cubic() -> Flow {
        Flow {
            model: Model::Cubic,
            ..Flow::new(Arith::Reno)
        }
    }

    /// A BBR v1 flow.
    pub fn bbr() -> Flow {
        Flow {
            model: Model::Bbr,
            ..Flow::new(Arith::Reno)
        }
    }

    /// A stream of braid's session (see `session`).
    pub fn in_session(self) -> Flow {
        Flow {
            session: true,
            ..self
        }
    }

    /// A stiff flow (see [`Stiff`]).
    pub fn stiff(min_bps: f64, max_bps: f64, period_ns: u64) -> Flow {
        Flow {
            stiff: Some(Stiff {
                min_bps,
                max_bps,
                period_ns,
            }),
            ..Flow::new(Arith::Reno)
        }
    }

    pub fn frac(m: u32) -> Flow {
        Flow {
            frac_cwnd: 1000 / m,
            ..Flow::new(Arith::Frac)
        }
    }

    pub fn tcpp(group: usize, k_milli: u32) -> Flow {
        Flow {
            group: Some(group),
            k_milli,
            session: true,
            ..Flow::new(Arith::Tcpp)
        }
    }
}

/// Short flows like `template` arriving as a Poisson process between
/// `from_ns` and `to_ns`, at `load_bps` of payload on average, their sizes
/// exponential with mean `mean_bytes` (web-like traffic); seeded.
pub fn poisson(
    template: Flow,
    load_bps: f64,
    mean_bytes: f64,
    from_ns: u64,
    to_ns: u64,
    seed: u64,
) -> Vec<Flow> {
    let mut rng = braid_link::rng::Rng::new(seed);
    let per_ns = load_bps / 8.0 / mean_bytes / 1e9;
    let mut t = from_ns as f64;
    let mut out = Vec::new();
    loop {
        t += -(1.0 - rng.unit()).ln() / per_ns;
        if t >= to_ns as f64 {
            return out;
        }
        let bytes = -(1.0 - rng.unit()).ln() * mean_bytes;
        out.push(Flow {
            start_ns: t as u64,
            packets: Some((bytes / MSS as f64).ceil().max(1.0) as u64),
            ..template
        });
    }
}

#[derive(Debug)]
struct Pkt {
    flow: usize,
    seq: u64,
    sent_ns: u64,
}

impl Frame for Pkt {
    fn len(&self) -> usize {
        WIRE
    }
}

/// An ACK on its way back, due at `at` (`n` keeps equal times in order).
struct Due {
    at: u64,
    n: u64,
    pkt: Pkt,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.n) == (o.at, o.n)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.n).cmp(&(o.at, o.n))
    }
}

/// A TCP-P group's shared state, as the BPF glue keeps it in its map.
#[derive(Default, Debug)]
struct Group {
    members: u32,
    epoch: u64,
    last_reduction_ns: Option<u64>,
}

/// A flow's window, by its model.
enum Cc {
    Native(Window),
    Cubic(Cubic),
    Bbr(Bbr),
}

impl Cc {
    fn new(f: &Flow, now_ns: u64) -> Cc {
        match f.model {
            Model::Native => Cc::Native(Window::new(f.arith, 10, u32::MAX, now_ns / 1000)),
            Model::Cubic => Cc::Cubic(Cubic::new(10)),
            Model::Bbr => Cc::Bbr(Bbr::new()),
        }
    }

    fn cwnd(&self) -> u32 {
        match self {
            Cc::Native(w) => w.cwnd(),
            Cc::Cubic(c) => c.cwnd,
            Cc::Bbr(b) => b.cwnd(),
        }
    }

    fn ssthresh(&self) -> u32 {
        match self {
            Cc::Native(w) => w.ssthresh(),
            Cc::Cubic(c) => c.ssthresh,
            Cc::Bbr(_) => u32::MAX,
        }
    }
}

/// A packet in flight: its sequence, and the flow's delivery count and
/// time when it went (a BBR rate sample's start).
#[derive(Clone, Copy, Debug)]
struct Out {
    seq: u64,
    delivered: u64,
    delivered_ns: u64,
}

struct Sender {
    spec: Flow,
    cc: Cc,
    next_seq: u64,
    /// Sent and not yet acknowledged or found lost. A lost packet's data
    /// goes again as a new packet (bulk data is alike).
    outstanding: VecDeque<Out>,
    /// In recovery until a packet of this sequence or later is acknowledged.
    recovery_until: Option<u64>,
    srtt_ns: u64,
    /// The smallest smoothed RTT seen: with the current one, the TCP-P burst guard.
    min_srtt_ns: u64,
    last_ack_ns: u64,
    seen_epoch: u64,
    active: bool,
    /// A finite flow that delivered all its packets.
    done: bool,
    /// Payload packets that reached the receiver, and when the last did.
    delivered: u64,
    delivered_ns: u64,
    losses: u64,
    /// Packets found lost (by three later ones acknowledged, or a timeout).
    lost: u64,
    /// A steer's rate cap, as ns between packets; and when the next may go
    /// (also a stiff or paced flow's clock).
    pace_gap_ns: Option<u64>,
    next_send_ns: u64,
    /// A session's stream a steer took out: it sends nothing (and is out of
    /// its TCP-P group) until it joins again as a new connection.
    parked: bool,
    /// Its counters when its connection began (TCP_INFO's start at zero).
    sent_base: u64,
    lost_base: u64,
    /// The most it had in flight over the round that ends when `max_out_seq`
    /// is acknowledged, and whether its window held it back in that round
    /// (the kernel's max_packets_out and is_cwnd_limited).
    max_out: u64,
    max_out_seq: u64,
    cwnd_limited: bool,
}

impl Sender {
    /// The gap to the next packet: the steer's cap's or the BBR model's
    /// pacing, whichever is slower; `None` sends as the window allows.
    fn gap_ns(&self) -> Option<u64> {
        let bbr = match &self.cc {
            Cc::Bbr(b) => b.pacing_rate().map(|r| (1e9 / r.max(1.0)) as u64),
            _ => None,
        };
        match (self.pace_gap_ns, bbr) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether its window holds it back, so that it may grow (the kernel's
    /// tcp_is_cwnd_limited): its window held it at some send of the last
    /// round, or, in slow start, the window is under twice the most it had in
    /// flight then (a paced flow's slow start goes on while the pacing lets
    /// out most of what the window allows).
    fn window_limited(&self) -> bool {
        self.pace_gap_ns.is_none()
            || self.cwnd_limited
            || (self.cc.cwnd() < self.cc.ssthresh() && (self.cc.cwnd() as u64) < 2 * self.max_out)
    }

    /// After a send: the round's most in flight, and whether the window held it (tcp_cwnd_validate).
    fn validate_window(&mut self, limited: bool) {
        let out = self.outstanding.len() as u64;
        let una = self.outstanding.front().map_or(self.next_seq, |o| o.seq);
        if una >= self.max_out_seq || out > self.max_out {
            self.max_out = out;
            self.max_out_seq = self.next_seq;
            self.cwnd_limited = limited;
        } else {
            self.cwnd_limited |= limited;
        }
    }

    /// Packets the flow may still send (a finite one stops at its size).
    fn has_data(&self) -> bool {
        match self.spec.packets {
            Some(n) => self.delivered + (self.outstanding.len() as u64) < n,
            None => true,
        }
    }
}

/// What a run measured, per flow, over its measurement window.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Payload bits per second.
    pub bps: Vec<f64>,
    /// Window reductions (loss events) per flow.
    pub losses: Vec<u64>,
    /// Packets the bottleneck dropped (queue, RED, loss model).
    pub dropped: u64,
    /// Over the measured span: packets the bottleneck dropped for its queue
    /// (drop-tail's full buffer, RED's early drops), and for its random loss.
    pub congestion_drops: u64,
    pub random_drops: u64,
}

impl Outcome {
    pub fn mbps(&self, flows: std::ops::Range<usize>) -> f64 {
        self.bps[flows].iter().sum::<f64>() / 1e6
    }
}

/// A flow as a steer sees it on a tick (what TCP_INFO would say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowView {
    pub active: bool,
    /// A stream of braid's session (the flows a steer drives).
    pub tcpp: bool,
    /// Carrying data: not taken out of the session by a steer.
    pub carrying: bool,
    pub srtt_ns: u64,
    /// The smallest smoothed RTT it has seen.
    pub min_srtt_ns: u64,
    /// Payload packets that reached the receiver.
    pub delivered: u64,
    /// Its window and slow-start threshold, packets (u32::MAX before a loss).
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Packets sent and packets found lost (TCP_INFO's data_segs_out and
    /// total_retrans: each lost packet's data goes again).
    pub sent: u64,
    pub lost: u64,
    /// Packets sent and not yet acknowledged or found lost (TCP_INFO's unacked).
    pub in_flight: u32,
    /// In loss recovery (TCP_INFO's ca_state past open).
    pub recovering: bool,
}

/// What a steer asks of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SimSteering {
    /// Every TCP-P flow's strength, k x 1000.
    Strength(u32),
    /// Cap flow `i`'s rate at this many payload bytes per second; `None` lifts it.
    Pace(usize, Option<u64>),
    /// The first `n` streams of the session carry data; the rest send
    /// nothing (and are out of their TCP-P group) at once (in braid a stream
    /// that left stays a member until its connection has closed at both
    /// ends, a round trip or so later), and one that comes back is a new
    /// connection: slow start from 10 packets, no RTT yet.
    Streams(usize),
    /// Flow `i` (a session's) carries data, or is taken out as `Streams`
    /// takes one out: for runs of more than one session.
    Carry(usize, bool),
}

/// A steer as a run asks it: what it wants done now, and in how many ns it
/// looks again.
pub type SimSteer<'a> = dyn FnMut(u64, &[FlowView]) -> (Vec<SimSteering>, u64) + 'a;

/// A bottleneck (braid-link's configuration, one way) and the reverse
/// path's delay.
pub struct Run {
    link: Direction<Pkt>,
    reverse_ns: u64,
    senders: Vec<Sender>,
    groups: Vec<Group>,
    acks: BinaryHeap<Reverse<Due>>,
    acks_n: u64,
    /// Flows by start time, and the next of them to start.
    starts: Vec<usize>,
    next_start: usize,
    /// Flows that started and are not done, in index order.
    live: Vec<usize>,
}

impl Run {
    pub fn new(link: Config, reverse_ns: u64, flows: &[Flow]) -> Run {
        let groups = flows
            .iter()
            .filter_map(|f| f.group)
            .max()
            .map_or(0, |g| g + 1);
        let mut starts: Vec<usize> = (0..flows.len()).collect();
        starts.sort_by_key(|&i| flows[i].start_ns);
        Run {
            link: Direction::new(link, false),
            reverse_ns,
            senders: flows
                .iter()
                .map(|f| Sender {
                    spec: *f,
                    cc: Cc::new(f, f.start_ns),
                    next_seq: 0,
                    outstanding: VecDeque::new(),
                    recovery_until: None,
                    srtt_ns: 0,
                    min_srtt_ns: 0,
                    last_ack_ns: f.start_ns,
                    seen_epoch: 0,
                    active: false,
                    done: false,
                    delivered: 0,
                    delivered_ns: f.start_ns,
                    losses: 0,
                    lost: 0,
                    pace_gap_ns: None,
                    next_send_ns: f.start_ns,
                    parked: false,
                    sent_base: 0,
                    lost_base: 0,
                    max_out: 0,
                    max_out_seq: 0,
                    cwnd_limited: false,
                })
                .collect(),
            groups: (0..groups).map(|_| Group::default()).collect(),
            acks: BinaryHeap::new(),
            acks_n: 0,
            starts,
            next_start: 0,
            live: Vec::new(),
        }
    }

    /// Does what a steer asks before the run begins (which streams carry from the start).
    pub fn steer_now(&mut self, asked: &[SimSteering]) {
        for a in asked {
            self.steered(*a, 0);
        }
    }

    /// Runs until `end_ns` and reports what each flow moved from
    /// `from_ns` on (the warm-up before it is left out).
    pub fn measure(self, from_ns: u64, end_ns: u64) -> Outcome {
        self.measure_steered(from_ns, end_ns, u64::MAX, &mut |_, _| {
            (Vec::new(), u64::MAX)
        })
    }

    /// As [`Run::measure`], and from `first_ns` on asks `steer` what it
    /// makes of the flows: what it asks is done at once (a strength becomes
    /// every TCP-P flow's, as braid's sender sets it on live sockets), and it
    /// says in how many ns it wants to look again.
    pub fn measure_steered(
        mut self,
        from_ns: u64,
        end_ns: u64,
        first_ns: u64,
        steer: &mut SimSteer,
    ) -> Outcome {
        let mut tick = first_ns;
        let mut at_from: Option<Vec<(u64, u64)>> = None;
        let mut now = 0u64;
        let mut dropped = 0u64;
        let mut link_from = None;
        loop {
            if at_from.is_none() && now >= from_ns {
                link_from = Some(self.link.counters().clone());
                at_from = Some(
                    self.senders
                        .iter()
                        .map(|s| (s.delivered, s.losses))
                        .collect(),
                );
            }
            self.start(now);
            // A steer due now acts before anything is sent (at the start: which streams carry).
            if now >= tick {
                let (asked, next) = steer(now, &self.views());
                tick = tick.saturating_add(next.max(1));
                for a in asked {
                    self.steered(a, now);
                }
            }
            for j in 0..self.live.len() {
                let i = self.live[j];
                self.check_timeout(i, now);
                dropped += self.send(i, now);
            }
            while let Some(p) = self.link.pop(now) {
                let at = now + self.reverse_ns + self.senders[p.flow].spec.extra_rtt_ns;
                self.acks_n += 1;
                self.acks.push(Reverse(Due {
                    at,
                    n: self.acks_n,
                    pkt: p,
                }));
            }
            // Each ACK clocks out its own flow's packets before the next ACK is
            // read, as a host's stack does: ACKs due at one instant (frames the
            // delay line released together) are read in the order their packets
            // left the bottleneck, and no flow sends ahead of the others for
            // being first in a list (that order would decide which flow finds a
            // full queue, and drop-tail's losses would favour it for good).
            while self.acks.peek().is_some_and(|Reverse(d)| d.at <= now) {
                let Reverse(d) = self.acks.pop().expect("peeked");
                let flow = d.pkt.flow;
                self.on_ack(d.pkt, now);
                dropped += self.send(flow, now);
            }
            for j in 0..self.live.len() {
                let i = self.live[j];
                dropped += self.send(i, now);
            }
            self.live.retain(|&i| !self.senders[i].done);
            let next = [
                self.link.next_wakeup(),
                self.acks.peek().map(|Reverse(d)| d.at),
                self.next_timer(now),
                (tick < u64::MAX).then_some(tick),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= end_ns => now = t.max(now + 1),
                _ => break,
            }
        }
        let base = at_from.unwrap_or_else(|| vec![(0, 0); self.senders.len()]);
        let secs = (end_ns - from_ns) as f64 / 1e9;
        Outcome {
            bps: self
                .senders
                .iter()
                .zip(&base)
                .map(|(s, b)| (s.delivered - b.0) as f64 * MSS as f64 * 8.0 / secs)
                .collect(),
            losses: self
                .senders
                .iter()
                .zip(&base)
                .map(|(s, b)| s.losses - b.1)
                .collect(),
            dropped,
            congestion_drops: {
                let (a, b) = (self.link.counters(), link_from.as_ref());
                (a.dropped_queue + a.dropped_red) - b.map_or(0, |b| b.dropped_queue + b.dropped_red)
            },
            random_drops: self.link.counters().dropped_loss
                - link_from.as_ref().map_or(0, |b| b.dropped_loss),
        }
    }

    fn steered(&mut self, a: SimSteering, now: u64) {
        match a {
            SimSteering::Strength(k) => {
                for s in self.senders.iter_mut().filter(|s| s.spec.group.is_some()) {
                    s.spec.k_milli = k;
                }
            }
            SimSteering::Pace(i, rate) => {
                if let Some(s) = self.senders.get_mut(i) {
                    s.pace_gap_ns = rate.map(|r| (MSS as f64 * 1e9 / r.max(1) as f64) as u64);
                    s.next_send_ns = s.next_send_ns.min(now);
                }
            }
            SimSteering::Carry(i, carrying) => {
                if self.senders.get(i).is_some_and(|s| s.spec.session) {
                    self.carry(i, carrying, now);
                }
            }
            SimSteering::Streams(n) => {
                let members: Vec<usize> = (0..self.senders.len())
                    .filter(|&i| self.senders[i].spec.session)
                    .collect();
                for (j, i) in members.into_iter().enumerate() {
                    self.carry(i, j < n.max(1), now);
                }
            }
        }
    }

    /// Takes a session's flow `i` out of the session, or brings it back.
    fn carry(&mut self, i: usize, carrying: bool, now: u64) {
        let s = &mut self.senders[i];
        if s.parked != carrying {
            return;
        }
        s.parked = !carrying;
        if !s.active {
            return;
        }
        s.outstanding.clear();
        s.recovery_until = None;
        if let Some(g) = s.spec.group {
            let group = &mut self.groups[g];
            if !carrying {
                group.members = group.members.saturating_sub(1);
                return;
            }
            group.members += 1;
            s.seen_epoch = group.epoch;
        }
        if !carrying {
            return;
        }
        s.cc = Cc::new(&s.spec, now);
        s.srtt_ns = 0;
        s.min_srtt_ns = 0;
        s.last_ack_ns = now;
        s.next_send_ns = now;
        s.sent_base = s.next_seq;
        s.lost_base = s.lost;
        s.max_out = 0;
        s.max_out_seq = s.next_seq;
        s.cwnd_limited = false;
    }

    fn views(&self) -> Vec<FlowView> {
        self.senders
            .iter()
            .map(|s| FlowView {
                active: s.active,
                tcpp: s.spec.session,
                carrying: !s.parked,
                srtt_ns: s.srtt_ns,
                min_srtt_ns: s.min_srtt_ns,
                delivered: s.delivered,
                cwnd: s.cc.cwnd(),
                ssthresh: s.cc.ssthresh(),
                sent: s.next_seq - s.sent_base,
                lost: s.lost - s.lost_base,
                in_flight: s.outstanding.len() as u32,
                recovering: s.recovery_until.is_some(),
            })
            .collect()
    }

    fn start(&mut self, now: u64) {
        while let Some(&i) = self.starts.get(self.next_start) {
            let s = &mut self.senders[i];
            if now < s.spec.start_ns {
                break;
            }
            self.next_start += 1;
            s.active = true;
            s.last_ack_ns = now;
            // In the flows' order, as they were given: what goes first in one
            // instant takes the queue's last place.
            let at = self.live.partition_point(|&j| j < i);
            self.live.insert(at, i);
            if s.parked {
                continue;
            }
            if let Some(g) = s.spec.group {
                // Membership as the control's init counts it.
                let g = &mut self.groups[g];
                g.members += 1;
                s.seen_epoch = g.epoch;
            }
        }
    }

    /// When a flow's retransmission timer, pacing clock or start comes due.
    fn next_timer(&self, now: u64) -> Option<u64> {
        let start = self
            .starts
            .get(self.next_start)
            .map(|&i| self.senders[i].spec.start_ns);
        self.live
            .iter()
            .filter_map(|&i| {
                let s = &self.senders[i];
                if s.parked {
                    return None;
                }
                let rto = (!s.outstanding.is_empty()).then(|| s.last_ack_ns + rto(s));
                if now >= s.spec.stop_ns {
                    return rto;
                }
                if s.spec.stiff.is_some() {
                    return Some(s.next_send_ns);
                }
                let paced = (s.gap_ns().is_some()
                    && s.has_data()
                    && (s.outstanding.len() as u64) < s.cc.cwnd() as u64)
                    .then_some(s.next_send_ns);
                [paced, rto].into_iter().flatten().min()
            })
            .chain(start)
            .min()
    }

    /// Sends what the window allows; returns the packets the link dropped.
    fn send(&mut self, i: usize, now: u64) -> u64 {
        let s = &mut self.senders[i];
        if !s.active || s.parked || s.done || now >= s.spec.stop_ns {
            return 0;
        }
        let mut dropped = 0;
        if let Some(st) = s.spec.stiff {
            while s.next_send_ns <= now {
                let p = Pkt {
                    flow: i,
                    seq: s.next_seq,
                    sent_ns: now,
                };
                s.next_seq += 1;
                let gap = WIRE as f64 * 8.0 * 1e9 / st.rate_at(s.next_send_ns).max(1.0);
                s.next_send_ns += gap as u64;
                if self.link.arrive(now, p).is_err() {
                    dropped += 1;
                }
            }
            return dropped;
        }
        let gap = s.gap_ns();
        let before = s.next_seq;
        while (s.outstanding.len() as u64) < s.cc.cwnd() as u64 && s.has_data() {
            if let Some(gap) = gap {
                if now < s.next_send_ns {
                    break;
                }
                s.next_send_ns = now + gap;
            }
            let seq = s.next_seq;
            s.next_seq += 1;
            s.outstanding.push_back(Out {
                seq,
                delivered: s.delivered,
                delivered_ns: s.delivered_ns,
            });
            let p = Pkt {
                flow: i,
                seq,
                sent_ns: now,
            };
            if self.link.arrive(now, p).is_err() {
                dropped += 1;
            }
        }
        let limited = (s.outstanding.len() as u64) >= s.cc.cwnd() as u64;
        if s.next_seq > before || limited {
            s.validate_window(limited);
        }
        dropped
    }

    fn check_timeout(&mut self, i: usize, now: u64) {
        let s = &self.senders[i];
        if !s.active || s.parked || s.outstanding.is_empty() || now < s.last_ack_ns + rto(s) {
            return;
        }
        self.reduce(i, now);
        let s = &mut self.senders[i];
        if let Cc::Cubic(c) = &mut s.cc {
            c.timeout();
        }
        s.lost += s.outstanding.len() as u64;
        s.outstanding.clear();
        s.recovery_until = Some(s.next_seq);
        s.last_ack_ns = now;
    }

    fn on_ack(&mut self, p: Pkt, now: u64) {
        let i = p.flow;
        // What a leaving connection had in flight still arrives; it steers nothing.
        let s = &self.senders[i];
        if s.spec.stiff.is_some() || s.parked || p.seq < s.sent_base {
            self.senders[i].delivered += 1;
            return;
        }
        self.catch_up(i);
        let (n, k) = self.group_of(i);
        let s = &mut self.senders[i];
        s.delivered += 1;
        s.delivered_ns = now;
        if s.spec.packets.is_some_and(|n| s.delivered >= n) {
            s.done = true;
        }
        s.last_ack_ns = now;
        let rtt = now - p.sent_ns;
        s.srtt_ns = if s.srtt_ns == 0 {
            rtt
        } else {
            (7 * s.srtt_ns + rtt) / 8
        };
        s.min_srtt_ns = if s.min_srtt_ns == 0 {
            s.srtt_ns
        } else {
            s.min_srtt_ns.min(s.srtt_ns)
        };
        let Some(pos) = s.outstanding.iter().position(|o| o.seq == p.seq) else {
            return;
        };
        // A window grows only while it holds the sender back (the kernel's
        // tcp_is_cwnd_limited): a paced flow below its window does not.
        let filled = s.window_limited();
        let out = s.outstanding.remove(pos).expect("found");
        // Packets sent DUPTHRESH or more before this one and not yet acknowledged are lost.
        let mut lost = 0;
        while s
            .outstanding
            .front()
            .is_some_and(|o| o.seq + DUPTHRESH <= p.seq)
        {
            s.outstanding.pop_front();
            lost += 1;
        }
        s.lost += lost;
        if s.recovery_until.is_some_and(|r| p.seq >= r) {
            s.recovery_until = None;
        }
        let in_flight = s.outstanding.len() as u32;
        let (delivered, next_seq) = (s.delivered, s.next_seq);
        match &mut s.cc {
            Cc::Cubic(c) => c.rtt_sample(rtt / 1000, p.seq, next_seq),
            Cc::Bbr(b) => b.ack(
                now / 1000,
                rtt / 1000,
                out.delivered,
                out.delivered_ns / 1000,
                delivered,
                in_flight,
            ),
            Cc::Native(_) => {}
        }
        if lost > 0 {
            if s.recovery_until.is_none() {
                self.reduce(i, now);
                let s = &mut self.senders[i];
                s.recovery_until = Some(s.next_seq);
            }
            return;
        }
        let s = &mut self.senders[i];
        if s.recovery_until.is_none() && s.active && filled {
            match &mut s.cc {
                Cc::Native(w) => {
                    if s.spec.arith == Arith::Htcp {
                        w.htcp_sample(now / 1000, (rtt / 1000) as u32);
                    }
                    w.ack(1, now / 1000, s.spec.frac_cwnd, n, k);
                }
                Cc::Cubic(c) => c.ack(1, now / 1000),
                Cc::Bbr(_) => {}
            }
        }
    }

    fn group_of(&self, i: usize) -> (u32, u32) {
        let s = &self.senders[i];
        match s.spec.group {
            Some(g) => (self.groups[g].members.max(1), s.spec.k_milli),
            None => (1, s.spec.k_milli),
        }
    }

    /// Applies the reductions other members of the flow's group signalled
    /// since it last looked (the glue's tcpp_catch_up).
    fn catch_up(&mut self, i: usize) {
        let Some(g) = self.senders[i].spec.group else {
            return;
        };
        let (epoch, members) = (self.groups[g].epoch, self.groups[g].members);
        let s = &mut self.senders[i];
        if epoch != s.seen_epoch {
            if let Cc::Native(w) = &mut s.cc {
                w.tcpp_reduce(
                    (epoch - s.seen_epoch) as u32,
                    epoch,
                    members.max(1),
                    s.spec.k_milli,
                );
            }
            s.seen_epoch = epoch;
        }
    }

    /// A loss event: the control's response, and a TCP-P member's signal to
    /// its group (the glue's tcpp_ssthresh).
    fn reduce(&mut self, i: usize, now: u64) {
        self.catch_up(i);
        let group = self.senders[i].spec.group;
        let (since, epoch) = match group {
            Some(g) => (
                self.groups[g]
                    .last_reduction_ns
                    .map_or(u64::MAX, |t| now.saturating_sub(t) / 1000),
                self.groups[g].epoch,
            ),
            None => (u64::MAX, 0),
        };
        let s = &mut self.senders[i];
        s.losses += 1;
        let guard_us = (s.min_srtt_ns.max(s.srtt_ns) / 1000).min(u32::MAX as u64) as u32;
        let signal = match &mut s.cc {
            Cc::Native(w) => w.loss(now / 1000, since, epoch, guard_us).1,
            Cc::Cubic(c) => {
                c.loss();
                false
            }
            Cc::Bbr(b) => {
                b.loss(now / 1000);
                false
            }
        };
        if let (Some(g), true) = (group, signal) {
            let g = &mut self.groups[g];
            g.epoch += 1;
            g.last_reduction_ns = Some(now);
            self.senders[i].seen_epoch = g.epoch;
        }
    }
}

/// The retransmission timeout: a second until the first RTT is measured
/// (RFC 6298's initial RTO, the kernel's TCP_TIMEOUT_INIT), so that a first
/// window on a path of 200 ms or more is not taken for lost before its
/// first ACK could have come back.
fn rto(s: &Sender) -> u64 {
    if s.srtt_ns == 0 {
        return 1_000_000_000;
    }
    (3 * s.srtt_ns).max(200_000_000)
}

/// Jain's fairness index of `x`.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if sq == 0.0 {
        return 1.0;
    }
    sum * sum / (x.len() as f64 * sq)
}
