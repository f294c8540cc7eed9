//! CUBIC as Linux's tcp_cubic.c runs it (RFC 9438), for the simulation:
//! the same constants and the same integer arithmetic, so that a run's
//! windows are the kernel's to within its rounding.
//!
//! Where this differs from the kernel, on purpose:
//! - the cube root is exact (an integer Newton iteration), where the kernel
//!   takes a table and one Newton step (within 0.2 % of exact);
//! - time is kept in microseconds and converted to CUBIC's 1/1024 s units
//!   at each use, as the kernel's BPF port (selftests' bpf_cubic.c) does,
//!   where the kernel counts jiffies;
//! - HyStart detects the end of slow start by delay only (an RTT sample
//!   above the round's minimum by max(4 ms, min(16 ms, min RTT / 8)), out of
//!   the first 8 of a round); the ACK-train test is left out, since the
//!   simulated receiver acknowledges every packet at once and a train
//!   carries no information here.

/// 717/1024: the window after a loss (RFC 9438's beta of 0.7).
const BETA: u64 = 717;
const BETA_SCALE: u64 = 1024;
/// C = 41 * 10 / 1024 = 0.4 (RFC 9438 section 5.1), as bic_scale gives it.
const BIC_SCALE: u64 = 41;
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// 2^40 / (bic_scale * 10): K in 1/1024 s units is cbrt(CUBE_FACTOR * deficit).
const CUBE_FACTOR: u64 = (1u64 << 40) / CUBE_RTT_SCALE;
/// The Reno-friendly region's step (RFC 9438 section 4.3): one packet per
/// `cwnd * BETA_FRIENDLY / 8` ACKs, 3 (1 - beta) / (1 + beta) of Reno's.
const BETA_FRIENDLY: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// HyStart: not below this window, and over this many samples a round.
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u64 = 4_000;
const HYSTART_DELAY_MAX_US: u64 = 16_000;

/// One connection's CUBIC state.
#[derive(Clone, Debug)]
pub struct Cubic {
    pub cwnd: u32,
    pub ssthresh: u32,
    cwnd_cnt: u32,
    /// ACKs per one packet of growth (the kernel's `ca->cnt`).
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time_us: u64,
    origin: u32,
    /// K, in 1/1024 s.
    k: u64,
    /// The smallest RTT seen, µs (0: none yet).
    delay_min_us: u64,
    /// When this congestion-avoidance epoch began, µs (None: at the next ACK).
    epoch_start_us: Option<u64>,
    ack_cnt: u64,
    /// The window Reno would have now (the Reno-friendly region).
    tcp_cwnd: u32,
    /// HyStart's round: it ends when this sequence is acknowledged.
    round_end: u64,
    round_min_us: u64,
    round_samples: u32,
}

impl Cubic {
    pub fn new(cwnd: u32) -> Cubic {
        Cubic {
            cwnd,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time_us: 0,
            origin: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start_us: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            round_end: 0,
            round_min_us: u64::MAX,
            round_samples: 0,
        }
    }

    /// An RTT sample of the packet `seq` just acknowledged; `next_seq` is
    /// the next to be sent (where HyStart's next round will end).
    pub fn rtt_sample(&mut self, rtt_us: u64, seq: u64, next_seq: u64) {
        if rtt_us == 0 {
            return;
        }
        if self.delay_min_us == 0 || rtt_us < self.delay_min_us {
            self.delay_min_us = rtt_us;
        }
        if self.cwnd >= self.ssthresh || self.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        if seq >= self.round_end {
            self.round_end = next_seq;
            self.round_min_us = u64::MAX;
            self.round_samples = 0;
        }
        if self.round_samples < HYSTART_SAMPLES {
            self.round_min_us = self.round_min_us.min(rtt_us);
            self.round_samples += 1;
            if self.round_samples == HYSTART_SAMPLES {
                let thresh =
                    (self.delay_min_us / 8).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.round_min_us >= self.delay_min_us + thresh {
                    // The queue grew within one round: slow start ends here.
                    self.ssthresh = self.cwnd;
                }
            }
        }
    }

    /// `acked` packets acknowledged at `now_us`, outside recovery.
    pub fn ack(&mut self, acked: u32, now_us: u64) {
        if self.cwnd < self.ssthresh {
            let room = self.ssthresh - self.cwnd;
            self.cwnd += acked.min(room);
            if acked <= room {
                return;
            }
        }
        self.update(acked, now_us);
        // tcp_cong_avoid_ai: one packet per `cnt` ACKs.
        let w = self.cnt.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    /// The CUBIC function's target, as `cnt`: how many ACKs per packet of growth.
    fn update(&mut self, acked: u32, now_us: u64) {
        self.ack_cnt += acked as u64;
        if self.last_cwnd == self.cwnd && now_us.saturating_sub(self.last_time_us) < 1000 {
            // At most once per millisecond, as the kernel's once per jiffy.
            return;
        }
        self.last_cwnd = self.cwnd;
        self.last_time_us = now_us;
        let start = *self.epoch_start_us.get_or_insert_with(|| {
            self.ack_cnt = acked as u64;
            self.tcp_cwnd = self.cwnd;
            if self.last_max_cwnd <= self.cwnd {
                self.k = 0;
                self.origin = self.cwnd;
            } else {
                self.k = cbrt(CUBE_FACTOR * (self.last_max_cwnd - self.cwnd) as u64);
                self.origin = self.last_max_cwnd;
            }
            now_us
        });
        // t: since the epoch began, plus the minimum RTT (the window a round
        // trip from now), in 1/1024 s.
        let t_us = now_us - start + self.delay_min_us;
        let t = (t_us << 10) / 1_000_000;
        let offs = t.abs_diff(self.k);
        let delta = ((CUBE_RTT_SCALE as u128 * (offs as u128).pow(3)) >> 40) as u64;
        let target = if t < self.k {
            (self.origin as u64).saturating_sub(delta)
        } else {
            self.origin as u64 + delta
        };
        let cwnd = self.cwnd as u64;
        self.cnt = if target > cwnd {
            (cwnd / (target - cwnd)).max(1) as u32
        } else {
            (100 * cwnd).min(u32::MAX as u64) as u32
        };
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            // No loss yet: grow at least 5 % a round trip.
            self.cnt = 20;
        }
        // The Reno-friendly region: never slower than Reno would grow here.
        let step = (cwnd * BETA_FRIENDLY) >> 3;
        if let Some(n) = self.ack_cnt.checked_div(step) {
            self.ack_cnt -= n * step;
            self.tcp_cwnd += n as u32;
        }
        if self.tcp_cwnd > self.cwnd {
            let max_cnt = self.cwnd / (self.tcp_cwnd - self.cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }

    /// A loss event: the new window (and threshold). Fast convergence: a
    /// flow whose window is below its last maximum gives a little more up.
    pub fn loss(&mut self) -> u32 {
        self.epoch_start_us = None;
        self.last_max_cwnd = if self.cwnd < self.last_max_cwnd {
            ((self.cwnd as u64 * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)) as u32
        } else {
            self.cwnd
        };
        self.ssthresh = ((self.cwnd as u64 * BETA / BETA_SCALE) as u32).max(2);
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
        self.ssthresh
    }

    /// A retransmission timeout: the kernel's loss state resets CUBIC's
    /// epoch and HyStart and restarts from one packet.
    pub fn timeout(&mut self) {
        self.loss();
        self.last_max_cwnd = 0;
        self.cwnd = 1;
        self.round_end = 0;
    }
}

/// The integer cube root, floor(cbrt(a)).
fn cbrt(a: u64) -> u64 {
    if a == 0 {
        return 0;
    }
    let mut x = (a as f64).cbrt() as u64 + 1;
    // Newton from above converges to the floor.
    loop {
        let y = (2 * x + a / (x * x)) / 3;
        if y >= x {
            break;
        }
        x = y;
    }
    while x * x * x > a {
        x -= 1;
    }
    while (x + 1) * (x + 1) * (x + 1) <= a {
        x += 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cube_root_is_exact() {
        for a in [
            0u64,
            1,
            7,
            8,
            26,
            27,
            1 << 40,
            (1 << 40) + 12345,
            u32::MAX as u64 * 1000,
        ] {
            let x = cbrt(a);
            assert!(x * x * x <= a && (x + 1).pow(3) > a, "{a}: {x}");
        }
    }

    #[test]
    fn constants_are_the_kernels() {
        assert_eq!(BETA_FRIENDLY, 15, "beta_scale");
        assert_eq!(CUBE_FACTOR, 2_681_735_677, "cube_factor");
    }

    /// After a loss from W the window follows RFC 9438's W(t) = C (t - K)^3 + W,
    /// K = cbrt(W (1 - beta) / C), a round trip ahead (the kernel aims at the
    /// window one minimum RTT from now), whatever the RTT.
    #[test]
    fn the_window_follows_the_cubic_function() {
        for (w, rtt_us) in [(1000u32, 100_000u64), (4000, 50_000)] {
            let mut c = Cubic::new(w);
            c.ssthresh = w;
            c.rtt_sample(rtt_us, 0, 0);
            c.loss();
            let k = ((w as f64) * 0.3 / 0.4).cbrt();
            let mut now = 0u64;
            while (now as f64) < 1.5 * k * 1e6 {
                // One round trip: every packet of the window acknowledged.
                for _ in 0..c.cwnd {
                    c.ack(1, now);
                }
                now += rtt_us;
                let t = now as f64 / 1e6;
                let want = 0.4 * (t - k).powi(3) + w as f64;
                assert!(
                    (c.cwnd as f64 - want).abs() < 0.01 * w as f64 + 2.0,
                    "W {w}, at {t:.1} s: {} where W(t) is {want:.0}",
                    c.cwnd
                );
            }
        }
    }

    #[test]
    fn slow_start_ends_when_a_round_sees_the_queue_grow() {
        let mut c = Cubic::new(10);
        let mut seq = 0;
        // Rounds at a 100 ms RTT, then rounds 20 ms slower (a queue of 20 ms).
        for (round, rtt) in [100_000u64, 100_000, 100_000, 120_000]
            .into_iter()
            .enumerate()
        {
            let n = c.cwnd as u64;
            for _ in 0..n {
                c.rtt_sample(rtt, seq, seq + n);
                c.ack(1, round as u64 * rtt);
                seq += 1;
            }
        }
        assert!(c.ssthresh < u32::MAX, "HyStart left slow start");
        assert!(c.cwnd < 200, "{}", c.cwnd);
    }
}
