//! When a source's packets are due.
//!
//! Rates count UDP payload bits, as iperf does, so a source's figures compare
//! with the papers' iperf figures; the link carries 28 (IP + UDP) plus 14
//! (Ethernet) bytes more per packet.

use braid_link::rng::Rng;

/// How a source's rate varies in time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// A fixed rate in bit/s, packets evenly spaced.
    Constant { bps: f64 },
    /// Hacker 2004 Eq. 3: f(t) = Avg*cos(t/c) + Min + Avg, with
    /// Avg = (Max - Min)/2 and c = 0.05*pi*period. The cosine's true period is
    /// 2*pi*c = 0.1*pi^2*period (9.87 s for the paper's 10 s); we keep the
    /// paper's formula, since its capacity figures (Eq. 7-8) integrate it.
    Sine {
        min_bps: f64,
        max_bps: f64,
        period_s: f64,
    },
    /// Packets at exponentially distributed gaps with this mean rate in bit/s.
    Poisson { bps: f64 },
}

/// A shape that cannot send.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShapeError {
    #[error("rate {0} bit/s must be positive and finite")]
    Rate(f64),
    #[error("sinusoid from {min} to {max} bit/s needs 0 <= min <= max and max > 0")]
    Bounds { min: f64, max: f64 },
    #[error("period {0} s must be positive and finite")]
    Period(f64),
}

impl Shape {
    pub fn validate(&self) -> Result<(), ShapeError> {
        let ok = |r: f64| r.is_finite() && r > 0.0;
        match *self {
            Shape::Constant { bps } | Shape::Poisson { bps } => {
                if !ok(bps) {
                    return Err(ShapeError::Rate(bps));
                }
            }
            Shape::Sine {
                min_bps,
                max_bps,
                period_s,
            } => {
                if !(min_bps.is_finite()
                    && max_bps.is_finite()
                    && min_bps >= 0.0
                    && max_bps >= min_bps
                    && max_bps > 0.0)
                {
                    return Err(ShapeError::Bounds {
                        min: min_bps,
                        max: max_bps,
                    });
                }
                if !ok(period_s) {
                    return Err(ShapeError::Period(period_s));
                }
            }
        }
        Ok(())
    }

    /// The rate at time t seconds after the start, bit/s (Poisson: its mean).
    pub fn rate(&self, t: f64) -> f64 {
        match *self {
            Shape::Constant { bps } | Shape::Poisson { bps } => bps,
            Shape::Sine {
                min_bps,
                max_bps,
                period_s,
            } => {
                let avg = (max_bps - min_bps) / 2.0;
                avg * (t / sine_c(period_s)).cos() + min_bps + avg
            }
        }
    }

    /// Bits due in [0, t]: the integral of the rate (Eq. 7's UDP term).
    pub fn bits(&self, t: f64) -> f64 {
        match *self {
            Shape::Constant { bps } | Shape::Poisson { bps } => bps * t,
            Shape::Sine {
                min_bps,
                max_bps,
                period_s,
            } => {
                let avg = (max_bps - min_bps) / 2.0;
                let c = sine_c(period_s);
                avg * c * (t / c).sin() + (min_bps + avg) * t
            }
        }
    }
}

fn sine_c(period_s: f64) -> f64 {
    0.05 * std::f64::consts::PI * period_s
}

/// The departure times of one source's packets, in seconds from its start.
#[derive(Clone, Debug)]
pub struct Schedule {
    shape: Shape,
    packet_bits: f64,
    sent: u64,
    last: f64,
    rng: Rng,
}

impl Schedule {
    pub fn new(shape: Shape, packet_bytes: usize, seed: u64) -> Result<Self, ShapeError> {
        shape.validate()?;
        Ok(Schedule {
            shape,
            packet_bits: packet_bytes as f64 * 8.0,
            sent: 0,
            last: 0.0,
            rng: Rng::new(seed),
        })
    }

    /// When the next packet is due. The first is due at 0. Deterministic
    /// shapes place packet k where the integral of the rate reaches k packets,
    /// so the bits sent never drift from the bits due by more than a packet.
    pub fn next_departure(&mut self) -> f64 {
        let k = self.sent;
        self.sent += 1;
        let t = match self.shape {
            Shape::Constant { bps } => k as f64 * self.packet_bits / bps,
            Shape::Poisson { bps } => {
                if k == 0 {
                    0.0
                } else {
                    // Inverse transform: -ln(U)/lambda, U in (0, 1].
                    let u = 1.0 - self.rng.unit();
                    self.last - u.ln() * self.packet_bits / bps
                }
            }
            Shape::Sine { .. } => self.invert_bits(k as f64 * self.packet_bits),
        };
        self.last = t;
        t
    }

    /// The time at which `bits(t) = target`, found from the last departure
    /// onward: bits() is non-decreasing, so bisection always converges, and
    /// Newton steps make it fast where the rate is not near zero.
    fn invert_bits(&self, target: f64) -> f64 {
        let mut lo = self.last;
        if self.shape.bits(lo) >= target {
            return lo;
        }
        let mut step = self.packet_bits / self.shape.rate(lo).max(1.0);
        let mut hi = lo + step;
        while self.shape.bits(hi) < target {
            lo = hi;
            step *= 2.0;
            hi = lo + step;
        }
        let mut t = (lo + hi) / 2.0;
        for _ in 0..200 {
            let err = self.shape.bits(t) - target;
            if err.abs() < 1e-6 || hi - lo < 1e-10 {
                break;
            }
            if err > 0.0 {
                hi = t;
            } else {
                lo = t;
            }
            let r = self.shape.rate(t);
            let newton = t - err / r;
            t = if r > 0.0 && newton > lo && newton < hi {
                newton
            } else {
                (lo + hi) / 2.0
            };
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAPER_UDP_1_10: Shape = Shape::Sine {
        min_bps: 1e6,
        max_bps: 10e6,
        period_s: 10.0,
    };

    #[test]
    fn sine_starts_at_max_and_reaches_min_half_a_cycle_later() {
        let s = PAPER_UDP_1_10;
        assert!((s.rate(0.0) - 10e6).abs() < 1e-6);
        let half = std::f64::consts::PI * sine_c(10.0);
        assert!((s.rate(half) - 1e6).abs() < 1e-3);
        // Its mean over whole cycles is (max + min)/2.
        let cycle = 2.0 * half;
        assert!((s.bits(4.0 * cycle) / (4.0 * cycle) - 5.5e6).abs() < 1e-3);
    }

    #[test]
    fn bits_is_the_integral_of_rate() {
        let s = Shape::Sine {
            min_bps: 50e6,
            max_bps: 80e6,
            period_s: 10.0,
        };
        let (mut sum, dt) = (0.0, 1e-4);
        for i in 0..100_000 {
            sum += s.rate((i as f64 + 0.5) * dt) * dt;
        }
        assert!((sum - s.bits(10.0)).abs() / s.bits(10.0) < 1e-9);
    }

    #[test]
    fn sine_schedule_never_drifts_more_than_a_packet() {
        let mut sch = Schedule::new(PAPER_UDP_1_10, 1440, 1).unwrap();
        let bits = 1440.0 * 8.0;
        let mut prev = -1.0;
        for k in 0..20_000u64 {
            let t = sch.next_departure();
            assert!(t > prev, "departures must increase: {prev} then {t}");
            prev = t;
            let due = PAPER_UDP_1_10.bits(t);
            assert!(
                (due - k as f64 * bits).abs() < 1.0,
                "packet {k} at {t}: due {due}"
            );
        }
    }

    #[test]
    fn sine_from_zero_still_schedules() {
        let s = Shape::Sine {
            min_bps: 0.0,
            max_bps: 1e6,
            period_s: 1.0,
        };
        let mut sch = Schedule::new(s, 1000, 1).unwrap();
        let times: Vec<f64> = (0..500).map(|_| sch.next_departure()).collect();
        assert!(times.windows(2).all(|w| w[1] > w[0]));
        // 500 packets of 8000 bits at a mean of 0.5 Mbit/s take about 8 s.
        assert!((times[499] - 8.0).abs() < 0.2, "{}", times[499]);
    }

    #[test]
    fn constant_spacing_is_exact() {
        let mut sch = Schedule::new(Shape::Constant { bps: 8e6 }, 1000, 1).unwrap();
        let t: Vec<f64> = (0..4).map(|_| sch.next_departure()).collect();
        assert_eq!(t, vec![0.0, 0.001, 0.002, 0.003]);
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_spread_of_an_exponential() {
        let mut sch = Schedule::new(Shape::Poisson { bps: 8e6 }, 1000, 42).unwrap();
        let n = 100_000;
        let t: Vec<f64> = (0..n).map(|_| sch.next_departure()).collect();
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "{mean}");
        // An exponential's standard deviation equals its mean.
        assert!((var.sqrt() / mean - 1.0).abs() < 0.02);
        let other: Vec<f64> = {
            let mut s = Schedule::new(Shape::Poisson { bps: 8e6 }, 1000, 43).unwrap();
            (0..10).map(|_| s.next_departure()).collect()
        };
        assert_ne!(&t[..10], &other[..]);
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert_eq!(
            Shape::Constant { bps: 0.0 }.validate(),
            Err(ShapeError::Rate(0.0))
        );
        assert!(Shape::Sine {
            min_bps: 5.0,
            max_bps: 1.0,
            period_s: 1.0
        }
        .validate()
        .is_err());
        assert!(Shape::Sine {
            min_bps: 0.0,
            max_bps: 1.0,
            period_s: 0.0
        }
        .validate()
        .is_err());
        assert!(Schedule::new(Shape::Poisson { bps: f64::NAN }, 10, 0).is_err());
    }
}
