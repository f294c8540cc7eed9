//! `--mode falcon`: the stream-count search of Falcon (Arifuzzaman et al.,
//! SC'21; IEEE TPDS 2023), as a baseline for `--mode auto`. Every probing
//! interval it measures the session's throughput T and loss L (retransmitted
//! over sent segments) at the current number of streams n, scores
//! U = T / K^n - T * B * L with the published K = 1.02 and B = 10, and takes a
//! gradient step over n: the direction the last change of n moved U, a step
//! that doubles while the direction holds and falls back to one when it turns
//! (bounded by half the step that overshot, so the search settles).
//! Its streams run the system's control (or `--cc`) with nothing coupling
//! them: the search is fair among Falcon transfers, which see one another's
//! loss, not toward other flows.

use std::time::Duration;

use crate::proto::steer::{Steer, SteerState, Steering, StreamView};

pub const K: f64 = 1.02;
pub const B: f64 = 10.0;
/// How long each number of streams is measured before the next step.
pub const PROBE: Duration = Duration::from_secs(3);

pub struct Falcon {
    n: usize,
    max: usize,
    /// The last probe's n and utility.
    last: Option<(usize, f64)>,
    step: usize,
    /// The longest step allowed: halved each time the direction turns.
    cap: usize,
    /// Consecutive steps taken at the cap in one direction.
    held: u32,
    dir: i64,
    /// Totals at the start of the current probe: seconds, bytes, retransmits, segments.
    mark: Option<(f64, u64, u64, u64)>,
    pub utility: f64,
}

/// Falcon's score of a probe: throughput (any unit), loss ratio, streams.
pub fn utility(t: f64, loss: f64, n: usize) -> f64 {
    t / K.powi(n as i32) - t * B * loss
}

impl Falcon {
    /// Starts at `start` streams and searches 1..=`max`.
    pub fn new(start: usize, max: usize) -> Self {
        Falcon {
            n: start.clamp(1, max.max(1)),
            max: max.max(1),
            last: None,
            step: 1,
            cap: max.max(1),
            held: 0,
            dir: 1,
            mark: None,
            utility: 0.0,
        }
    }

    pub fn streams(&self) -> usize {
        self.n
    }

    /// One probe's result at the current n; returns the next n.
    fn probe(&mut self, u: f64) -> usize {
        self.utility = u;
        let here = self.n;
        match self.last {
            None => self.dir = 1,
            Some((n0, u0)) if n0 != here => {
                let slope = (u - u0) / (here as f64 - n0 as f64);
                let dir = if slope >= 0.0 { 1 } else { -1 };
                if dir == self.dir {
                    // Steps at the cap that keep pointing the same way mean the
                    // optimum moved: let the cap grow again.
                    if self.step < self.cap {
                        self.held = 0;
                    } else {
                        self.held += 1;
                        if self.held >= 2 {
                            self.cap = (self.cap * 2).min(self.max);
                            self.held = 0;
                        }
                    }
                    self.step = (self.step * 2).min(self.cap);
                } else {
                    // The optimum lies between the last two points: later steps
                    // stay shorter than the one that overshot it.
                    self.cap = (self.step / 2).max(1);
                    self.step = 1;
                    self.held = 0;
                }
                self.dir = dir;
            }
            // Same n twice (at an edge): try the other way.
            Some(_) => {
                self.dir = -self.dir;
                self.step = 1;
            }
        }
        self.last = Some((here, u));
        let next = here as i64 + self.dir * self.step as i64;
        self.n = next.clamp(1, self.max as i64) as usize;
        self.n
    }
}

impl Steer for Falcon {
    fn interval(&self) -> Duration {
        PROBE
    }

    fn state(&self) -> Option<SteerState> {
        Some(SteerState {
            utility: Some(self.utility),
            ..SteerState::default()
        })
    }

    fn tick(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        let bytes: u64 = streams.iter().map(|v| v.bytes).sum();
        let (retrans, segs) = streams
            .iter()
            .filter_map(|v| v.info.as_ref())
            .fold((0u64, 0u64), |(r, s), i| {
                (r + i.total_retrans as u64, s + i.data_segs_out as u64)
            });
        let now = elapsed.as_secs_f64();
        let Some((t0, b0, r0, s0)) = self.mark.replace((now, bytes, retrans, segs)) else {
            return vec![Steering::Streams(self.n)];
        };
        let dt = now - t0;
        if dt <= 0.0 {
            return Vec::new();
        }
        let t = bytes.saturating_sub(b0) as f64 * 8.0 / dt;
        let sent = segs.saturating_sub(s0);
        let loss = if sent == 0 {
            0.0
        } else {
            retrans.saturating_sub(r0) as f64 / sent as f64
        };
        vec![Steering::Streams(self.probe(utility(t, loss, self.n)))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_utility_rewards_throughput_and_taxes_streams_and_loss() {
        assert_eq!(utility(100.0, 0.0, 0), 100.0);
        assert!((utility(100.0, 0.0, 10) - 100.0 / 1.02f64.powi(10)).abs() < 1e-9);
        // 1 % loss costs a tenth of the throughput (B = 10).
        assert!((utility(100.0, 0.01, 0) - 90.0).abs() < 1e-9);
    }

    /// A path whose throughput grows with n up to a knee at `knee` streams and whose loss
    /// rises past it, as Falcon's paper draws it.
    fn path(n: usize, knee: usize) -> (f64, f64) {
        let t = 100.0 * (n.min(knee) as f64 / knee as f64);
        let loss = if n > knee {
            0.002 * (n - knee) as f64
        } else {
            0.0
        };
        (t, loss)
    }

    #[test]
    fn the_search_climbs_to_the_knee_and_stays_near_it() {
        let mut f = Falcon::new(1, 32);
        let mut seen = Vec::new();
        for _ in 0..30 {
            let n = f.streams();
            let (t, loss) = path(n, 8);
            seen.push(f.probe(utility(t, loss, n)));
        }
        let tail = &seen[15..];
        assert!(tail.iter().all(|n| (5..=12).contains(n)), "{seen:?}");
        assert!(
            seen[..6].iter().any(|n| *n >= 8),
            "the doubling step gets there fast: {seen:?}"
        );
    }

    #[test]
    fn the_search_climbs_again_when_the_knee_moves_up() {
        let mut f = Falcon::new(1, 64);
        for _ in 0..30 {
            let n = f.streams();
            let (t, loss) = path(n, 8);
            f.probe(utility(t, loss, n));
        }
        let mut seen = Vec::new();
        for _ in 0..30 {
            let n = f.streams();
            let (t, loss) = path(n, 24);
            seen.push(f.probe(utility(t, loss, n)));
        }
        assert!(seen[20..].iter().all(|n| *n >= 14), "{seen:?}");
    }

    #[test]
    fn streams_come_from_the_totals_of_a_probe() {
        let mut f = Falcon::new(2, 8);
        let view = |bytes: u64| StreamView {
            stream: 0,
            wanted: true,
            bytes,
            info: Some(braid_cc::TcpInfo {
                total_retrans: 0,
                data_segs_out: (bytes / 1448) as u32,
                ..Default::default()
            }),
        };
        assert_eq!(f.tick(Duration::ZERO, &[view(0)]), [Steering::Streams(2)]);
        assert_eq!(f.tick(PROBE, &[view(3_000_000)]), [Steering::Streams(3)]);
        assert!((f.utility - 8e6 / 1.02f64.powi(2)).abs() < 1.0);
    }
}
