//! A BBR-like flow (BBR v1, as Linux's tcp_bbr.c runs it), for the
//! simulation's competitors: a model of the path (the bottleneck's rate as
//! the largest delivery rate over the last 10 round trips, the propagation
//! delay as the smallest RTT over 10 s) and a sender paced at a gain times
//! that rate, with a window of twice the model's BDP.
//!
//! Kept from tcp_bbr.c: STARTUP at a gain of 2/ln 2 until the rate grew by
//! less than a quarter over three rounds, DRAIN at its inverse until what is
//! in flight fits the BDP, PROBE_BW's eight-phase gain cycle (1.25, 0.75,
//! then six of 1) a minimum RTT each, PROBE_RTT (four packets for 200 ms)
//! when the minimum RTT has not been seen again for 10 s, and loss having
//! no say in the rate. Left out: the quanta added to the window, the
//! long-term rate of policed paths, ACK aggregation, and packet
//! conservation in recovery; a sample that is application-limited cannot
//! happen here (flows are always backlogged).

const STARTUP_GAIN: f64 = 2.885;
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const CWND_GAIN: f64 = 2.0;
const BW_ROUNDS: u64 = 10;
const MIN_RTT_WINDOW_US: u64 = 10_000_000;
const PROBE_RTT_US: u64 = 200_000;
const PROBE_RTT_CWND: u32 = 4;
const FULL_BW_GROWTH: f64 = 1.25;
const FULL_BW_ROUNDS: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw { phase: usize, since_us: u64 },
    ProbeRtt { until_us: u64 },
}

/// One BBR connection's model and mode.
#[derive(Clone, Debug)]
pub struct Bbr {
    mode: Mode,
    /// Delivery rate samples' maximum per round, for the last BW_ROUNDS rounds: (round, packets per s).
    bw_samples: Vec<(u64, f64)>,
    min_rtt_us: u64,
    min_rtt_at_us: u64,
    round: u64,
    /// The round ends when a packet sent after this delivery count is acknowledged.
    next_round_delivered: u64,
    full_bw: f64,
    full_bw_rounds: u32,
    /// The mode to go back to after PROBE_RTT.
    filled: bool,
}

impl Bbr {
    pub fn new() -> Bbr {
        Bbr {
            mode: Mode::Startup,
            bw_samples: Vec::new(),
            min_rtt_us: u64::MAX,
            min_rtt_at_us: 0,
            round: 0,
            next_round_delivered: 0,
            full_bw: 0.0,
            full_bw_rounds: 0,
            filled: false,
        }
    }

    /// The bottleneck's rate as the model has it, packets per second.
    pub fn bw(&self) -> f64 {
        self.bw_samples.iter().map(|(_, b)| *b).fold(0.0, f64::max)
    }

    fn bdp(&self) -> f64 {
        if self.min_rtt_us == u64::MAX {
            return 10.0;
        }
        self.bw() * self.min_rtt_us as f64 / 1e6
    }

    fn pacing_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup => STARTUP_GAIN,
            Mode::Drain => 1.0 / STARTUP_GAIN,
            Mode::ProbeBw { phase, .. } => CYCLE[phase],
            Mode::ProbeRtt { .. } => 1.0,
        }
    }

    /// Packets per second to pace at (None: not yet measured, send by the window).
    pub fn pacing_rate(&self) -> Option<f64> {
        let bw = self.bw();
        (bw > 0.0).then(|| bw * self.pacing_gain())
    }

    pub fn cwnd(&self) -> u32 {
        match self.mode {
            Mode::ProbeRtt { .. } => PROBE_RTT_CWND,
            Mode::Startup if self.bw() == 0.0 => 10,
            Mode::Startup => (STARTUP_GAIN * self.bdp()).max(10.0) as u32,
            _ => (CWND_GAIN * self.bdp()).max(4.0) as u32,
        }
    }

    /// A packet acknowledged at `now_us`: its RTT, the delivery count when
    /// it was sent and then, and now (counts in packets).
    pub fn ack(
        &mut self,
        now_us: u64,
        rtt_us: u64,
        delivered_at_send: u64,
        delivered_time_at_send_us: u64,
        delivered: u64,
        in_flight: u32,
    ) {
        if rtt_us > 0
            && (rtt_us <= self.min_rtt_us || now_us - self.min_rtt_at_us > MIN_RTT_WINDOW_US)
        {
            let expired = self.min_rtt_us != u64::MAX
                && now_us - self.min_rtt_at_us > MIN_RTT_WINDOW_US
                && rtt_us > self.min_rtt_us;
            self.min_rtt_us = rtt_us;
            self.min_rtt_at_us = now_us;
            if expired && !matches!(self.mode, Mode::ProbeRtt { .. }) {
                self.mode = Mode::ProbeRtt {
                    until_us: now_us + PROBE_RTT_US.max(rtt_us),
                };
            }
        }
        let new_round = delivered_at_send >= self.next_round_delivered;
        if new_round {
            self.round += 1;
            self.next_round_delivered = delivered;
        }
        let interval = now_us.saturating_sub(delivered_time_at_send_us);
        if interval > 0 {
            let rate = (delivered - delivered_at_send) as f64 * 1e6 / interval as f64;
            match self.bw_samples.last_mut() {
                Some((r, b)) if *r == self.round => *b = b.max(rate),
                _ => self.bw_samples.push((self.round, rate)),
            }
            let round = self.round;
            self.bw_samples.retain(|(r, _)| r + BW_ROUNDS > round);
        }
        if new_round && !self.filled {
            let bw = self.bw();
            if bw >= self.full_bw * FULL_BW_GROWTH {
                self.full_bw = bw;
                self.full_bw_rounds = 0;
            } else {
                self.full_bw_rounds += 1;
                if self.full_bw_rounds >= FULL_BW_ROUNDS {
                    self.filled = true;
                    self.mode = Mode::Drain;
                }
            }
        }
        let min_rtt = self.min_rtt_us.min(1_000_000_000);
        match self.mode {
            Mode::Drain if in_flight as f64 <= self.bdp() => {
                self.mode = Mode::ProbeBw {
                    phase: 2,
                    since_us: now_us,
                }
            }
            Mode::ProbeBw { phase, since_us } => {
                let bdp = self.bdp();
                let due = now_us - since_us >= min_rtt;
                let next = match phase {
                    // Probing up lasts until the extra is in flight (or a loss says it is not there).
                    0 => due && in_flight as f64 >= 1.25 * bdp,
                    // Draining the probe's queue ends as soon as it is gone.
                    1 => due || in_flight as f64 <= bdp,
                    _ => due,
                };
                if next {
                    self.mode = Mode::ProbeBw {
                        phase: (phase + 1) % CYCLE.len(),
                        since_us: now_us,
                    };
                }
            }
            Mode::ProbeRtt { until_us } if now_us >= until_us => {
                self.min_rtt_at_us = now_us;
                self.mode = if self.filled {
                    Mode::ProbeBw {
                        phase: 2,
                        since_us: now_us,
                    }
                } else {
                    Mode::Startup
                };
            }
            _ => {}
        }
    }

    /// A loss: in PROBE_BW's upward phase it ends the probe (the extra is not there).
    pub fn loss(&mut self, now_us: u64) {
        if let Mode::ProbeBw { phase: 0, .. } = self.mode {
            self.mode = Mode::ProbeBw {
                phase: 1,
                since_us: now_us,
            };
        }
    }
}

impl Default for Bbr {
    fn default() -> Self {
        Self::new()
    }
}
