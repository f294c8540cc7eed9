//! `--mode auto`: a TCP-P group (Cho & Bettati) whose strength k the sending
//! end steers from what its streams' TCP_INFO says about the path's queue.
//!
//! Why the queue: on a path nobody else uses, random loss holds each stream
//! below the path's rate and no queue builds; more strength fills the path.
//! Once the group fills it, its own probing builds a queue, and strength
//! beyond that point only adds loss: k settles where the queue starts (the
//! knee of Hacker & Athey 2002). When other flows share the bottleneck, they
//! keep its queue standing whatever the group does, so k falls to its floor,
//! the fair share (one flow unless `--fair-share` says otherwise), and the
//! group takes what that many TCP flows take (TCP-P's Eq. 8 and 9).
//!
//! The queueing delay is the streams' median smoothed RTT above the smallest
//! RTT any of them saw. Each tick (two base RTTs, within 100 ms..1 s) moves k
//! multiplicatively toward the delay target: up by at most 15 % when there
//! is no queue, down by at most 30 % when the queue is twice the target.

use std::time::Duration;

use braid_cc::{SocketSettings, Strength};

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

pub struct Auto {
    group: u64,
    k: f64,
    floor: f64,
    ceiling: f64,
    told: f64,
    base_us: Option<u32>,
    /// The last tick's queueing delay, for reports.
    pub queue_us: u32,
}

impl Auto {
    /// A group of `streams` streams with TCP-P group id `group`; `fair_share`
    /// is the strength it keeps to while others share the path.
    pub fn new(group: u64, streams: usize, fair_share: Strength) -> Self {
        let floor = fair_share.milli() as f64 / 1000.0;
        Auto {
            group,
            k: floor,
            floor,
            ceiling: (streams as f64).max(floor),
            told: floor,
            base_us: None,
            queue_us: 0,
        }
    }

    pub fn strength(&self) -> f64 {
        self.k
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

    /// One step of k from a queueing delay and a base RTT, both in µs.
    fn step(&mut self, queue_us: f64, base_us: f64) {
        let target = TARGET_MIN_US.max(base_us * TARGET_SHARE);
        let off = ((target - queue_us) / target).clamp(-1.0, 1.0);
        let gain = if off >= 0.0 { GAIN_UP } else { GAIN_DOWN };
        self.k = (self.k * (gain * off).exp()).clamp(self.floor, self.ceiling);
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
        })
    }

    fn tick(&mut self, _: Duration, streams: &[StreamView]) -> Vec<Steering> {
        let live: Vec<_> = streams
            .iter()
            .filter(|v| v.wanted)
            .filter_map(|v| v.info.as_ref())
            .filter(|i| i.srtt_us > 0)
            .collect();
        if live.is_empty() {
            return Vec::new();
        }
        let min_rtt = live.iter().map(|i| i.min_rtt_us).filter(|r| *r > 0).min();
        if let Some(m) = min_rtt {
            self.base_us = Some(self.base_us.map_or(m, |b| b.min(m)));
        }
        let Some(base) = self.base_us else {
            return Vec::new();
        };
        let mut srtt: Vec<u32> = live.iter().map(|i| i.srtt_us).collect();
        srtt.sort_unstable();
        let median = srtt[srtt.len() / 2];
        self.queue_us = median.saturating_sub(base);
        self.step(self.queue_us as f64, base as f64);
        if (self.k - self.told).abs() <= HYSTERESIS * self.told {
            return Vec::new();
        }
        self.told = self.k;
        let c = self.control();
        (0..streams.len())
            .map(|i| Steering::Control(i, c.clone()))
            .collect()
    }
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
                ..TcpInfo::default()
            }),
        }
    }

    fn ticks(a: &mut Auto, n: usize, srtt_ms: f64) -> Vec<Steering> {
        let mut last = Vec::new();
        for _ in 0..n {
            let v: Vec<_> = (0..4).map(|i| view(i, srtt_ms, 68.0)).collect();
            let out = a.tick(Duration::ZERO, &v);
            if !out.is_empty() {
                last = out;
            }
        }
        last
    }

    #[test]
    fn no_queue_raises_k_to_the_stream_count_and_a_standing_queue_brings_it_to_the_floor() {
        let mut a = Auto::new(7, 4, Strength::ONE);
        assert_eq!(a.strength(), 1.0);
        let told = ticks(&mut a, 40, 68.5);
        assert_eq!(
            a.strength(),
            4.0,
            "an idle path: as strong as the streams allow"
        );
        assert_eq!(told.len(), 4, "every stream is told");
        match &told[0] {
            Steering::Control(0, c) => {
                assert_eq!(c.cc.as_deref(), Some("braid_tcpp"));
                assert_eq!(c.settings.strength.unwrap().milli(), 4000);
                assert_eq!(c.settings.group_id, Some(7));
            }
            other => panic!("{other:?}"),
        }
        // Others keep 40 ms of queue standing: down to one flow's strength, fast.
        ticks(&mut a, 7, 108.0);
        assert_eq!(a.strength(), 1.0, "down within seven ticks");
        assert_eq!(a.queue_us, 40_000);
    }

    #[test]
    fn k_holds_where_the_queue_sits_at_its_target() {
        let mut a = Auto::new(1, 9, Strength::ONE);
        ticks(&mut a, 10, 68.0);
        let k = a.strength();
        assert!(k > 1.0 && k < 9.0, "{k}");
        // 6.8 ms of queue is the target on a 68 ms path: k stays.
        assert!(ticks(&mut a, 5, 74.8).is_empty());
        assert!((a.strength() - k).abs() < 1e-9);
    }

    #[test]
    fn the_floor_is_the_fair_share_and_a_view_without_rtt_changes_nothing() {
        let mut a = Auto::new(1, 8, Strength::from_milli(2500).unwrap());
        ticks(&mut a, 20, 200.0);
        assert_eq!(a.strength(), 2.5);
        let idle = StreamView {
            stream: 0,
            wanted: true,
            bytes: 0,
            info: None,
        };
        assert!(a.tick(Duration::ZERO, &[idle]).is_empty());
        assert_eq!(a.interval(), Duration::from_millis(136));
    }
}
