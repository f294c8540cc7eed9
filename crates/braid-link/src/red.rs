//! Random Early Detection (Floyd & Jacobson 1993) with tc-red(8)'s parameters:
//! limit, min, max, avpkt, burst, probability, bandwidth (ECN is off: drops
//! only). `gentle` is ns-3's option: between max and 2*max the drop
//! probability rises from max_p to 1 instead of jumping to 1.
//!
//! The average is an EWMA of the backlog in bytes, updated at each arrival;
//! after an idle period it decays as if `idle / (avpkt / bandwidth)` empty
//! packets had arrived. Between min and max the drop probability
//! pb = max_p (avg - min) / (max - min) is spread by the count since the last
//! drop, pa = pb / (1 - count pb), so drops come evenly rather than in clumps.

use crate::rng::Rng;

/// tc-red's parameters (bytes, packets, bit/s).
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    /// Hard limit of the backlog, bytes.
    pub limit: u64,
    /// Average backlog where early drops start, bytes.
    pub min: u64,
    /// Average backlog where the drop probability reaches `probability`, bytes.
    pub max: u64,
    /// Typical packet size, bytes.
    pub avpkt: u64,
    /// Burst the average lets through, packets (sets the EWMA weight).
    pub burst: u64,
    /// max_p.
    pub probability: f64,
    /// Link rate, bit/s, for the idle-time decay.
    pub bandwidth: u64,
    /// ns-3's gentle mode.
    pub gentle: bool,
}

impl RedParams {
    /// tc's default burst, (2 min + max) / (3 avpkt).
    pub fn default_burst(min: u64, max: u64, avpkt: u64) -> u64 {
        ((2 * min + max) / (3 * avpkt.max(1))).max(1)
    }

    /// The EWMA weight tc derives from `burst`: the largest 2^-wlog with
    /// burst + 1 - min/avpkt <= (1 - (1 - W)^burst) / W.
    pub fn weight(&self) -> f64 {
        let a = self.burst as f64 + 1.0 - self.min as f64 / self.avpkt.max(1) as f64;
        let mut w = 0.5f64;
        for _ in 1..32 {
            if a <= (1.0 - (1.0 - w).powf(self.burst as f64)) / w {
                return w;
            }
            w /= 2.0;
        }
        w
    }

    /// Checks the parameters; the message names the one that is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.avpkt == 0 {
            return Err("red: avpkt must be positive".into());
        }
        if self.min >= self.max {
            return Err(format!(
                "red: min ({}) must be below max ({})",
                self.min, self.max
            ));
        }
        if self.limit < self.max {
            return Err(format!(
                "red: limit ({}) must be at least max ({})",
                self.limit, self.max
            ));
        }
        if !(0.0..=1.0).contains(&self.probability) || self.probability == 0.0 {
            return Err(format!(
                "red: probability {} must be in (0, 1]",
                self.probability
            ));
        }
        if self.bandwidth == 0 {
            return Err("red: bandwidth must be positive".into());
        }
        Ok(())
    }
}

/// The drop probability for an average backlog, before the count spreads it.
pub fn base_probability(p: &RedParams, avg: f64) -> f64 {
    let (min, max) = (p.min as f64, p.max as f64);
    if avg < min {
        0.0
    } else if avg < max {
        p.probability * (avg - min) / (max - min)
    } else if p.gentle && avg < 2.0 * max {
        p.probability + (1.0 - p.probability) * (avg - max) / max
    } else {
        1.0
    }
}

/// What RED does with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queue it.
    Enqueue,
    /// Early (probabilistic) drop.
    Early,
    /// Forced drop: the average is past max (or 2 max in gentle mode), or the hard limit is reached.
    Forced,
}

/// RED's state between packets.
#[derive(Clone, Debug)]
pub struct Red {
    pub params: RedParams,
    w: f64,
    avg: f64,
    count: i64,
    idle_since: Option<u64>,
}

impl Red {
    pub fn new(params: RedParams) -> Self {
        let w = params.weight();
        Red {
            params,
            w,
            avg: 0.0,
            count: -1,
            idle_since: Some(0),
        }
    }

    /// The current average backlog, bytes.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// The queue emptied at `now_ns`.
    pub fn idle(&mut self, now_ns: u64) {
        self.idle_since = Some(now_ns);
    }

    /// Updates the average with the backlog an arriving packet finds, then decides.
    pub fn arrive(&mut self, now_ns: u64, backlog: u64, len: u64, rng: &mut Rng) -> Verdict {
        if let Some(since) = self.idle_since.take() {
            // As if m small packets had found an empty queue during the idle time.
            let pkt_time = self.params.avpkt as f64 * 8.0 / self.params.bandwidth as f64 * 1e9;
            let m = now_ns.saturating_sub(since) as f64 / pkt_time;
            self.avg *= (1.0 - self.w).powf(m);
        }
        self.avg += self.w * (backlog as f64 - self.avg);
        if backlog + len > self.params.limit {
            self.count = 0;
            return Verdict::Forced;
        }
        let pb = base_probability(&self.params, self.avg);
        if pb <= 0.0 {
            self.count = -1;
            return Verdict::Enqueue;
        }
        if pb >= 1.0 {
            self.count = 0;
            return Verdict::Forced;
        }
        self.count += 1;
        let spread = 1.0 - self.count as f64 * pb;
        let pa = if spread <= 0.0 { 1.0 } else { pb / spread };
        if rng.chance(pa) {
            self.count = 0;
            return Verdict::Early;
        }
        Verdict::Enqueue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(gentle: bool) -> RedParams {
        RedParams {
            limit: 400_000,
            min: 30_000,
            max: 90_000,
            avpkt: 1000,
            burst: RedParams::default_burst(30_000, 90_000, 1000),
            probability: 0.1,
            bandwidth: 10_000_000,
            gentle,
        }
    }

    #[test]
    fn tc_default_burst_and_weight() {
        let p = params(false);
        assert_eq!(p.burst, 50);
        let w = p.weight();
        // burst 50, min/avpkt 30: a = 21; W = 2^-wlog is the largest with (1-(1-W)^50)/W >= 21
        assert!((1.0 - (1.0 - w).powf(50.0)) / w >= 21.0);
        assert!((1.0 - (1.0 - 2.0 * w).powf(50.0)) / (2.0 * w) < 21.0);
    }

    #[test]
    fn probability_follows_the_max_p_line_and_gentle_ramp() {
        let p = params(false);
        assert_eq!(base_probability(&p, 10_000.0), 0.0);
        assert!((base_probability(&p, 60_000.0) - 0.05).abs() < 1e-12);
        assert_eq!(base_probability(&p, 95_000.0), 1.0);
        let g = params(true);
        assert!((base_probability(&g, 135_000.0) - (0.1 + 0.9 * 0.5)).abs() < 1e-12);
        assert_eq!(base_probability(&g, 180_000.0), 1.0);
    }

    #[test]
    fn a_constant_backlog_between_min_and_max_drops_at_about_the_line() {
        // With the count spreading drops, the interval between drops is uniform
        // on 1..1/pb, so the drop rate is 2 pb / (1 + pb).
        let mut red = Red::new(params(false));
        let mut rng = Rng::new(3);
        let (mut drops, n) = (0, 200_000);
        for i in 0..n {
            if red.arrive(i * 1000, 60_000, 1000, &mut rng) != Verdict::Enqueue {
                drops += 1;
            }
        }
        let pb = base_probability(&red.params, red.avg());
        let want = 2.0 * pb / (1.0 + pb);
        let got = drops as f64 / n as f64;
        assert!((got - want).abs() / want < 0.05, "{got} vs {want}");
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut red = Red::new(params(false));
        let mut rng = Rng::new(1);
        for i in 0..10_000 {
            red.arrive(i, 80_000, 1000, &mut rng);
        }
        let before = red.avg();
        red.idle(10_000);
        // one second idle at 10 Mb/s is 1250 packet times of 1000 bytes
        red.arrive(1_000_010_000, 0, 1000, &mut rng);
        assert!(red.avg() < before * 0.01, "{} -> {}", before, red.avg());
    }

    #[test]
    fn hard_limit_forces_a_drop() {
        let mut red = Red::new(params(false));
        let mut rng = Rng::new(1);
        assert_eq!(red.arrive(0, 399_500, 1000, &mut rng), Verdict::Forced);
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut p = params(false);
        p.min = 100_000;
        assert!(p.validate().unwrap_err().contains("min"));
    }
}
