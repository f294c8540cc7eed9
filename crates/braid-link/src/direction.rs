//! One direction of the emulated link, as a sans-IO pipeline:
//! loss model -> queue (drop-tail or RED) -> serialisation at the link rate
//! -> delay line -> out. Time is an argument (`now`, nanoseconds on any
//! monotonic clock), so every stage is tested without sockets or clocks.
//!
//! Serialisation is exact: a packet starts when it reaches the head of the
//! queue and the link is free, and takes (bytes + overhead) * 8 / rate; a
//! token bucket would let an idle link burst at line rate, this does not.
//! The delay line is unbounded and not counted in the queue limit (a
//! packet in flight is not in a queue). Jitter never reorders: a packet is
//! never released before the one ahead of it.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;

use crate::hist::Hist;
use crate::loss::Loss;
use crate::red::{Red, RedParams, Verdict};
use crate::rng::Rng;
use crate::trace::{Cursor, DeliveryTrace};

/// Anything with a length in bytes can cross the link.
pub trait Frame {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Frame for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

/// The drop-tail queue's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

/// The queue discipline.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueKind {
    DropTail(Limit),
    Red(RedParams),
}

/// Where the loss model acts: on arrival, before the queue, or as packets leave the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossAt {
    /// Before the queue: a lost packet never takes queue space (netem's place).
    Enqueue,
    /// After the queue: a lost packet took its place in the queue and its link time.
    Dequeue,
}

/// One direction's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Bottleneck rate, bit/s; None = no serialisation limit.
    pub rate_bps: Option<u64>,
    /// A varying rate from a Mahimahi delivery trace, instead of `rate_bps`.
    pub trace: Option<Arc<DeliveryTrace>>,
    /// Bytes added to each frame's length for serialisation (preamble, FCS, gap).
    pub overhead: u32,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Uniform jitter in [-jitter, +jitter], ns.
    pub jitter_ns: u64,
    pub queue: QueueKind,
    pub loss: Loss,
    pub loss_at: LossAt,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rate_bps: None,
            trace: None,
            overhead: 0,
            delay_ns: 0,
            jitter_ns: 0,
            queue: QueueKind::DropTail(Limit::Packets(1000)),
            loss: Loss::None,
            loss_at: LossAt::Enqueue,
            seed: 1,
        }
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DropReason {
    Queue,
    Red,
    Loss,
}

/// What happened to each packet, when the event log is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    /// `avg_bytes`: RED's average backlog after this arrival updated it (0 without RED).
    Arrive { t_ns: u64, len: u32, avg_bytes: u32 },
    /// Leaves the emulator; `queue_ns` waited in the queue, `total_ns` since arrival.
    Depart {
        t_ns: u64,
        len: u32,
        queue_ns: u64,
        total_ns: u64,
    },
    Drop {
        t_ns: u64,
        len: u32,
        reason: DropReason,
    },
}

/// Per-direction counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    pub arrived: u64,
    pub arrived_bytes: u64,
    pub departed: u64,
    pub departed_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_red: u64,
    pub dropped_loss: u64,
    pub max_backlog_packets: u64,
    pub max_backlog_bytes: u64,
    /// How late packets left relative to their release time (the I/O loop's error).
    #[serde(skip)]
    pub late: Hist,
}

impl Counters {
    /// The lateness below which a fraction `q` of departures fell, ns (within 12.5 %, above).
    pub fn late_quantile_ns(&self, q: f64) -> u64 {
        self.late.quantile(q)
    }
}

struct InFlight<F> {
    release: u64,
    arrival: u64,
    queue_ns: u64,
    frame: F,
}

/// One direction of the link.
pub struct Direction<F> {
    cfg: Config,
    loss: Loss,
    red: Option<Red>,
    cursor: Option<Cursor>,
    rng: Rng,
    queue: VecDeque<(u64, F)>,
    backlog_bytes: u64,
    link_free_at: u64,
    tx_carry: u128,
    line: VecDeque<InFlight<F>>,
    last_release: u64,
    counters: Counters,
    log: Option<Vec<Event>>,
}

/// Packets held without reallocating (queue and delay line each).
const PREALLOCATED: usize = 1 << 16;

impl<F: Frame> Direction<F> {
    pub fn new(cfg: Config, log_events: bool) -> Self {
        let red = match &cfg.queue {
            QueueKind::Red(p) => Some(Red::new(p.clone())),
            QueueKind::DropTail(_) => None,
        };
        Direction {
            loss: cfg.loss.clone(),
            rng: Rng::new(cfg.seed),
            red,
            cursor: cfg.trace.clone().map(Cursor::new),
            queue: VecDeque::with_capacity(PREALLOCATED),
            backlog_bytes: 0,
            link_free_at: 0,
            tx_carry: 0,
            line: VecDeque::with_capacity(PREALLOCATED),
            last_release: 0,
            counters: Counters::default(),
            log: log_events.then(|| Vec::with_capacity(PREALLOCATED)),
            cfg,
        }
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn events(&self) -> &[Event] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// Packets waiting in the queue (not in transmission or in flight).
    pub fn backlog(&self) -> (usize, u64) {
        (self.queue.len(), self.backlog_bytes)
    }

    fn record(&mut self, e: Event) {
        if let Some(log) = &mut self.log {
            log.push(e);
        }
    }

    fn drop_frame(&mut self, now: u64, f: F, reason: DropReason) -> F {
        match reason {
            DropReason::Queue => self.counters.dropped_queue += 1,
            DropReason::Red => self.counters.dropped_red += 1,
            DropReason::Loss => self.counters.dropped_loss += 1,
        }
        self.record(Event::Drop {
            t_ns: now,
            len: f.len() as u32,
            reason,
        });
        f
    }

    /// A frame arrives. On a drop the frame comes back, for its buffer to be reused.
    pub fn arrive(&mut self, now: u64, f: F) -> Result<(), F> {
        self.service(now);
        let len = f.len() as u64;
        self.counters.arrived += 1;
        self.counters.arrived_bytes += len;
        if self.cfg.loss_at == LossAt::Enqueue && self.loss.lose(&mut self.rng) {
            self.record_arrival(now, len);
            return Err(self.drop_frame(now, f, DropReason::Loss));
        }
        let admit = self.admit(now, len);
        self.record_arrival(now, len);
        if let Err(reason) = admit {
            return Err(self.drop_frame(now, f, reason));
        }
        self.backlog_bytes += len;
        self.queue.push_back((now, f));
        let (pkts, bytes) = (self.queue.len() as u64, self.backlog_bytes);
        self.counters.max_backlog_packets = self.counters.max_backlog_packets.max(pkts);
        self.counters.max_backlog_bytes = self.counters.max_backlog_bytes.max(bytes);
        self.service(now);
        Ok(())
    }

    fn record_arrival(&mut self, now: u64, len: u64) {
        if self.log.is_some() {
            let avg = self.red.as_ref().map_or(0.0, |r| r.avg());
            self.record(Event::Arrive {
                t_ns: now,
                len: len as u32,
                avg_bytes: avg.min(u32::MAX as f64) as u32,
            });
        }
    }

    /// The queue's verdict on a frame of `len` bytes arriving now.
    fn admit(&mut self, now: u64, len: u64) -> Result<(), DropReason> {
        match (&self.cfg.queue, &mut self.red) {
            (QueueKind::Red(_), Some(red)) => {
                match red.arrive(now, self.backlog_bytes, len, &mut self.rng) {
                    Verdict::Enqueue => Ok(()),
                    Verdict::Early => Err(DropReason::Red),
                    Verdict::Forced => Err(if self.backlog_bytes + len > red.params.limit {
                        DropReason::Queue
                    } else {
                        DropReason::Red
                    }),
                }
            }
            (QueueKind::DropTail(Limit::Packets(n)), _) => {
                if (self.queue.len() as u64) < *n {
                    Ok(())
                } else {
                    Err(DropReason::Queue)
                }
            }
            (QueueKind::DropTail(Limit::Bytes(b)), _) => {
                if self.backlog_bytes + len <= *b {
                    Ok(())
                } else {
                    Err(DropReason::Queue)
                }
            }
            (QueueKind::Red(_), None) => unreachable!("RED state is made with the config"),
        }
    }

    fn tx_time(&mut self, len: u64) -> u64 {
        let Some(rate) = self.cfg.rate_bps else {
            return 0;
        };
        let bits_ns = (len + self.cfg.overhead as u64) as u128 * 8 * 1_000_000_000 + self.tx_carry;
        self.tx_carry = bits_ns % rate as u128;
        (bits_ns / rate as u128) as u64
    }

    /// Moves packets whose transmission has started by `now` from the queue
    /// to the delay line.
    pub fn service(&mut self, now: u64) {
        while let Some(&(arrival, _)) = self.queue.front() {
            let mut start = self.link_free_at.max(arrival);
            if let Some(c) = &mut self.cursor {
                // A frame starts at an opportunity: until then it holds its queue place.
                start = c.seek(start);
            }
            if start > now {
                break;
            }
            let (arrival, f) = self.queue.pop_front().expect("front exists");
            let len = f.len() as u64;
            self.backlog_bytes -= len;
            if self.queue.is_empty() {
                if let Some(red) = &mut self.red {
                    red.idle(start);
                }
            }
            let end = match &mut self.cursor {
                Some(c) => c.consume(len + self.cfg.overhead as u64),
                None => start + self.tx_time(len),
            };
            self.link_free_at = end;
            if self.cfg.loss_at == LossAt::Dequeue && self.loss.lose(&mut self.rng) {
                self.drop_frame(start, f, DropReason::Loss);
                continue;
            }
            let mut release = end + self.cfg.delay_ns;
            if self.cfg.jitter_ns > 0 {
                let j = self.cfg.jitter_ns as f64;
                let offset = (self.rng.unit() * 2.0 - 1.0) * j;
                release = (release as f64 + offset).max(end as f64) as u64;
            }
            // No reordering: never before the packet ahead.
            release = release.max(self.last_release);
            self.last_release = release;
            self.line.push_back(InFlight {
                release,
                arrival,
                queue_ns: start - arrival,
                frame: f,
            });
        }
    }

    /// The next frame due to leave by `now`.
    pub fn pop(&mut self, now: u64) -> Option<F> {
        self.service(now);
        if self.line.front()?.release > now {
            return None;
        }
        let p = self.line.pop_front().expect("front exists");
        let len = p.frame.len() as u32;
        self.counters.departed += 1;
        self.counters.departed_bytes += len as u64;
        let late = now - p.release;
        self.counters.late.record(late);
        self.record(Event::Depart {
            t_ns: now,
            len,
            queue_ns: p.queue_ns,
            total_ns: now - p.arrival,
        });
        Some(p.frame)
    }

    /// When something next happens here without a new arrival.
    pub fn next_wakeup(&self) -> Option<u64> {
        let line = self.line.front().map(|p| p.release);
        let queue = self.queue.front().map(|&(arrival, _)| {
            let at = self.link_free_at.max(arrival);
            self.cursor.as_ref().map_or(at, |c| c.peek(at))
        });
        match (line, queue) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct P(usize);
    impl Frame for P {
        fn len(&self) -> usize {
            self.0
        }
    }

    const MS: u64 = 1_000_000;

    fn drain(d: &mut Direction<P>, until: u64, step: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut t = 0;
        while t <= until {
            while d.pop(t).is_some() {
                out.push(t);
            }
            t += step;
        }
        out
    }

    #[test]
    fn delay_only_releases_after_the_delay() {
        let mut d = Direction::new(
            Config {
                delay_ns: 10 * MS,
                ..Default::default()
            },
            false,
        );
        d.arrive(0, P(1500)).ok().unwrap();
        assert_eq!(d.next_wakeup(), Some(10 * MS));
        assert!(d.pop(10 * MS - 1).is_none());
        assert!(d.pop(10 * MS).is_some());
    }

    #[test]
    fn a_delivery_trace_releases_frames_at_its_opportunities() {
        let trace = Arc::new(DeliveryTrace::parse("1\n2\n3\n4\n").unwrap());
        let cfg = Config {
            trace: Some(trace),
            delay_ns: MS,
            ..Default::default()
        };
        let mut d = Direction::new(cfg, false);
        for _ in 0..6 {
            d.arrive(0, P(1500)).ok().unwrap();
        }
        // The first frame waits in the queue for the 1 ms opportunity.
        assert_eq!(d.backlog().0, 6);
        assert_eq!(d.next_wakeup(), Some(MS));
        // Opportunities at 1, 2, 3, 4 ms, then the trace repeats (5, 6 ms); plus 1 ms delay.
        assert_eq!(
            drain(&mut d, 20 * MS, MS / 4),
            vec![2 * MS, 3 * MS, 4 * MS, 5 * MS, 6 * MS, 7 * MS]
        );
    }

    #[test]
    fn serialisation_spaces_packets_at_the_rate_not_a_burst() {
        // 100 Mb/s, 1250-byte frames: 100 us each, from an idle link too.
        let mut d = Direction::new(
            Config {
                rate_bps: Some(100_000_000),
                ..Default::default()
            },
            false,
        );
        for _ in 0..5 {
            d.arrive(0, P(1250)).ok().unwrap();
        }
        let out = drain(&mut d, MS, 1000);
        assert_eq!(out, vec![100_000, 200_000, 300_000, 400_000, 500_000]);
    }

    #[test]
    fn fractional_serialisation_times_do_not_drift() {
        // 1514 bytes at 1 Gb/s is 12.112 us; 1000 of them must take 12.112 ms exactly.
        let mut d = Direction::new(
            Config {
                rate_bps: Some(1_000_000_000),
                ..Default::default()
            },
            false,
        );
        for _ in 0..1000 {
            d.arrive(0, P(1514)).ok().unwrap();
        }
        let mut last = 0;
        let mut t = 0;
        while d.next_wakeup().is_some() {
            t = d.next_wakeup().unwrap();
            while d.pop(t).is_some() {
                last = t;
            }
        }
        assert_eq!(last, 12_112_000, "{t}");
    }

    #[test]
    fn drop_tail_drops_only_when_full_and_bounds_the_wait() {
        // 10 Mb/s, limit 10 packets of 1250 B: 1 ms each, so at most ~10 ms of wait.
        let cfg = Config {
            rate_bps: Some(10_000_000),
            queue: QueueKind::DropTail(Limit::Packets(10)),
            ..Default::default()
        };
        let mut d = Direction::new(cfg, true);
        let mut dropped = 0;
        // 2 packets per ms: twice the rate.
        for i in 0..400u64 {
            let t = i * MS / 2;
            while d.pop(t).is_some() {}
            if d.arrive(t, P(1250)).is_err() {
                dropped += 1;
                assert_eq!(d.backlog().0, 10, "dropped before the queue was full");
            }
        }
        assert!(dropped > 150);
        let max_wait = d
            .events()
            .iter()
            .filter_map(|e| {
                if let Event::Depart { queue_ns, .. } = e {
                    Some(*queue_ns)
                } else {
                    None
                }
            })
            .max()
            .unwrap();
        assert!((9 * MS..=10 * MS + MS).contains(&max_wait), "{max_wait}");
        assert_eq!(d.counters().dropped_queue, dropped);
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let cfg = Config {
            rate_bps: Some(1_000_000),
            queue: QueueKind::DropTail(Limit::Bytes(3000)),
            ..Default::default()
        };
        let mut d = Direction::new(cfg, false);
        // the first leaves the queue into transmission at once
        assert!(d.arrive(0, P(1000)).is_ok());
        assert!(d.arrive(0, P(1500)).is_ok());
        assert!(d.arrive(0, P(1500)).is_ok());
        assert!(d.arrive(0, P(100)).is_err());
    }

    #[test]
    fn jitter_never_reorders() {
        let cfg = Config {
            delay_ns: 5 * MS,
            jitter_ns: 4 * MS,
            ..Default::default()
        };
        let mut d = Direction::new(cfg, true);
        // Sparse packets (one per 10 ms) show the jitter; dense ones would
        // queue behind the latest release.
        for i in 0..500u64 {
            d.arrive(i * 10 * MS, P(100)).ok().unwrap();
        }
        let out = drain(&mut d, 5100 * MS, 100_000);
        assert_eq!(out.len(), 500);
        assert!(out.windows(2).all(|w| w[0] <= w[1]));
        let totals: Vec<u64> = d
            .events()
            .iter()
            .filter_map(|e| {
                if let Event::Depart { total_ns, .. } = e {
                    Some(*total_ns)
                } else {
                    None
                }
            })
            .collect();
        assert!(totals.iter().any(|&t| t < 4 * MS) && totals.iter().any(|&t| t > 6 * MS));
    }

    #[test]
    fn loss_after_the_queue_still_uses_link_time() {
        let cfg = Config {
            rate_bps: Some(8_000_000),
            loss: Loss::Periodic { every: 2, seen: 0 },
            loss_at: LossAt::Dequeue,
            ..Default::default()
        };
        let mut d = Direction::new(cfg, false);
        for _ in 0..4 {
            d.arrive(0, P(1000)).ok().unwrap();
        }
        // 1 ms per packet; the 2nd and 4th are lost but the 3rd still waits for the 2nd's slot.
        assert_eq!(drain(&mut d, 5 * MS, 1000), vec![MS, 3 * MS]);
        assert_eq!(d.counters().dropped_loss, 2);
    }

    #[test]
    fn lateness_quantiles() {
        let mut c = Counters::default();
        for _ in 0..99 {
            c.late.record(1000);
        }
        c.late.record(1_000_000);
        assert_eq!(c.late_quantile_ns(0.5), 1024);
        assert_eq!(c.late_quantile_ns(0.999), 1_048_576);
        assert_eq!(Counters::default().late_quantile_ns(0.5), 0);
    }
}
