//! Models of what TCP streams move over a path: Mathis (one stream's bound,
//! Hacker 2002 Eq. 2), the n-stream aggregate (Eq. 3-5), Padhye's model with
//! timeouts, and the knee (the fewest streams that fill the path). Pure
//! functions of the path; `braid plan` prints them, and the laboratory's
//! `braidlab.metrics` is checked against the same vectors
//! (`vectors/models.json`, written by this module's test).

/// Mathis' C for one loss every 1/p packets and an ACK per packet: sqrt(3/2).
pub const C_PERIODIC: f64 = 1.224_744_871_391_589;
/// With delayed ACKs (one ACK per two packets): sqrt(3/4).
pub const C_DELAYED_ACK: f64 = 0.866_025_403_784_438_6;
/// Reno under independent (random) loss: its mean window is about
/// 1.30/sqrt(p), not sqrt(3/2)/sqrt(p), since losses come unevenly
/// (braidlab.cwnd.reno_random_loss_c simulates it; braid-sim's Reno sits
/// within 1.5 % of it). The constant Hacker 2002 says a path calls for.
pub const C_RANDOM: f64 = 1.30;

/// One stream's rate bound in bits per second: MSS C / (RTT sqrt(p))
/// (Mathis et al.; Hacker 2002 Eq. 2). Infinite without loss.
pub fn mathis_bps(mss_bytes: f64, rtt_s: f64, p: f64, c: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    mss_bytes * 8.0 * c / (rtt_s * p.sqrt())
}

/// CUBIC's constants (RFC 9438): the window's growth C (packets/s^3) and
/// its multiplicative decrease, the window kept after a loss.
pub const CUBIC_C: f64 = 0.4;
pub const CUBIC_BETA: f64 = 0.7;

/// One CUBIC stream's rate bound under random loss, bits per second: its
/// mean window is (C (3 + b) / (4 (1 - b)))^(1/4) (RTT / p)^(3/4) packets
/// where the cubic curve governs (RFC 9438 section 5.1, b = 0.7), and never
/// under what its Reno-friendly region holds, Mathis' window with `c`.
/// Infinite without loss.
pub fn cubic_bps(mss_bytes: f64, rtt_s: f64, p: f64, c: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let k = (CUBIC_C * (3.0 + CUBIC_BETA) / (4.0 * (1.0 - CUBIC_BETA))).powf(0.25);
    let window = k * (rtt_s / p).powf(0.75);
    (window * mss_bytes * 8.0 / rtt_s).max(mathis_bps(mss_bytes, rtt_s, p, c))
}

/// Random loss below which BBR (v1, Linux's `bbr`) keeps its rate: it paces
/// at the delivery rate it measures and does not answer loss, and holds the
/// path's rate up to about 15 % of packets lost (Cardwell et al., "BBR:
/// congestion-based congestion control", ACM Queue 2016).
pub const BBR_LOSS_TOLERATED: f64 = 0.15;

/// The loss-response models `braid plan` knows, by control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    Reno,
    Cubic,
    Bbr,
}

impl Response {
    pub fn name(self) -> &'static str {
        match self {
            Response::Reno => "reno",
            Response::Cubic => "cubic",
            Response::Bbr => "bbr",
        }
    }

    pub fn of(control: &str) -> Option<Response> {
        match control {
            "reno" => Some(Response::Reno),
            "cubic" => Some(Response::Cubic),
            "bbr" => Some(Response::Bbr),
            _ => None,
        }
    }

    /// One stream's bound on a path with random loss `p`: infinite where
    /// loss does not hold it back (the path's rate then does).
    pub fn one_stream_bps(self, mss_bytes: f64, rtt_s: f64, p: f64, c: f64) -> f64 {
        match self {
            Response::Reno => mathis_bps(mss_bytes, rtt_s, p, c),
            Response::Cubic => cubic_bps(mss_bytes, rtt_s, p, c),
            Response::Bbr if p < BBR_LOSS_TOLERATED => f64::INFINITY,
            // Past its tolerance BBR v1 collapses; the bound Reno keeps is a floor.
            Response::Bbr => mathis_bps(mss_bytes, rtt_s, p, c),
        }
    }
}

/// Hacker 2002 Eq. 3: the sum of each stream's bound, given (MSS, RTT, p)
/// per stream; with equal streams, Eq. 4-5: n times one stream's, a
/// "virtual MSS" of n MSS.
pub fn aggregate_bps(streams: &[(f64, f64, f64)], c: f64) -> f64 {
    streams
        .iter()
        .map(|&(mss, rtt, p)| mathis_bps(mss, rtt, p, c))
        .sum()
}

/// Padhye, Firoiu, Towsley and Kurose's model with timeouts (their
/// approximation, Eq. 31), in bits per second: `b` packets per ACK, `rto_s`
/// the first timeout, `wmax_packets` the receiver's window if it limits.
pub fn padhye_bps(
    mss_bytes: f64,
    rtt_s: f64,
    p: f64,
    rto_s: f64,
    b: f64,
    wmax_packets: Option<f64>,
) -> f64 {
    let cap = wmax_packets.map_or(f64::INFINITY, |w| w / rtt_s);
    if p <= 0.0 {
        return cap * mss_bytes * 8.0;
    }
    let fast = rtt_s * (2.0 * b * p / 3.0).sqrt();
    let timeouts = rto_s * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (1.0 / (fast + timeouts)).min(cap) * mss_bytes * 8.0
}

/// The knee as the model sees it: the fewest streams whose aggregate
/// reaches the path's rate. Past it more streams only queue and lose
/// (Hacker 2002 section 4.1). At least one.
pub fn knee_streams(one_stream_bps: f64, rate_bps: f64) -> u32 {
    if one_stream_bps.is_nan() || one_stream_bps <= 0.0 || one_stream_bps >= rate_bps {
        return 1;
    }
    (rate_bps / one_stream_bps).ceil().min(u32::MAX as f64) as u32
}

/// The knee as measured: the fewest streams whose aggregate reaches `frac`
/// of the best aggregate seen (braidlab.metrics.knee).
pub fn measured_knee(points: &[(u32, f64)], frac: f64) -> Option<u32> {
    let best = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    sorted.into_iter().find(|p| p.1 >= frac * best).map(|p| p.0)
}

/// Flows that each add a packet per RTT to a drop-tail queue (Reno's
/// congestion avoidance) beside a sender that holds its own rate fill the
/// queue at n packets an RTT: its delay q grows as dq/dt = n d / R, with d
/// the seconds one packet takes at the bottleneck and R = base + q, so R^2
/// grows at 2 n d a second. `growth_s` is that growth (seconds of R^2 a
/// second); `mss_bytes` and `rate_bps` (what the bottleneck moves of them,
/// bits a second) give d. The count is of flows at the sender's RTT: one
/// whose RTT is twice as long adds a packet every two and counts a quarter.
pub fn flows_filling(growth_s: f64, mss_bytes: f64, rate_bps: f64) -> f64 {
    let d = mss_bytes * 8.0 / rate_bps;
    growth_s / (2.0 * d)
}

/// What `k` flows' worth of a path of `rate_bps` takes when `others`
/// flows share it equally with them: k / (others + k) of it.
pub fn equal_share_bps(rate_bps: f64, others: f64, k: f64) -> f64 {
    rate_bps * k / (others.max(0.0) + k)
}

/// The least-squares slope of y against x (None for fewer than two
/// distinct x).
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn mathis_by_hand_and_the_papers_calibration() {
        // 1448 B, 68 ms, p = 1e-5, sqrt(3/2): 1448 * 8 * 1.2247 / (0.068 * 0.0031623) = 65.97 Mb/s,
        // the single stream Hacker 2004 measured (64.5 Mb/s) and DESIGN.md's calibration.
        let bps = mathis_bps(1448.0, 0.068, 1e-5, C_PERIODIC);
        assert!(close(bps, 65.97e6, 1e-3), "{bps}");
        assert_eq!(mathis_bps(1448.0, 0.068, 0.0, C_PERIODIC), f64::INFINITY);
        // Eq. 4: n equal streams are one stream with n times the MSS.
        let four = aggregate_bps(&[(1448.0, 0.065, 1e-4); 4], C_PERIODIC);
        assert!(close(
            four,
            mathis_bps(4.0 * 1448.0, 0.065, 1e-4, C_PERIODIC),
            1e-12
        ));
    }

    #[test]
    fn flows_counted_from_the_queues_growth_by_hand() {
        // 100 Mb/s of 1448 B packets: 115.84 us a packet. Five flows adding a
        // packet an RTT each at 100 ms: the queue grows 579.2 us an RTT,
        // 5.792 ms a second, so R^2 grows at 2 R dR/dt = 2 * 0.1 * 5.792e-3.
        let growth = 2.0 * 0.1 * 5.792e-3;
        let n = flows_filling(growth, 1448.0, 100e6);
        assert!(close(n, 5.0, 1e-9), "{n}");
        // The same five at 200 ms: the queue grows half as fast, and R^2 the same.
        let n = flows_filling(2.0 * 0.2 * 5.792e-3 / 2.0, 1448.0, 100e6);
        assert!(close(n, 5.0, 1e-9), "{n}");
        // One flow's worth beside five: a sixth; two flows' worth: two sevenths.
        assert!(close(equal_share_bps(96e6, 5.0, 1.0), 16e6, 1e-12));
        assert!(close(equal_share_bps(98e6, 5.0, 2.0), 28e6, 1e-12));
        assert_eq!(equal_share_bps(50e6, -1.0, 1.0), 50e6);
    }

    #[test]
    fn slope_by_least_squares() {
        let line: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
        assert!(close(slope(&line).unwrap(), 2.0, 1e-12));
        // (0,0) (1,1) (2,0): the best line is flat.
        assert_eq!(slope(&[(0.0, 0.0), (1.0, 1.0), (2.0, 0.0)]), Some(0.0));
        assert_eq!(slope(&[(1.0, 0.0)]), None);
        assert_eq!(slope(&[(1.0, 0.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn padhye_meets_mathis_at_low_loss_and_falls_below_at_high() {
        let rto = 0.2;
        // At p = 1e-6 timeouts hardly count: sqrt(3/2b) of Mathis with b = 1.
        let p = padhye_bps(1448.0, 0.05, 1e-6, rto, 1.0, None);
        let m = mathis_bps(1448.0, 0.05, 1e-6, C_PERIODIC);
        assert!(close(p, m, 0.01), "{p} vs {m}");
        // At 5 % loss timeouts count: 0.854 Mb/s by hand, two thirds of Mathis' 1.269.
        let p = padhye_bps(1448.0, 0.05, 0.05, rto, 1.0, None);
        assert!(close(p, 0.8539e6, 1e-3), "{p}");
        assert!(p < 0.7 * mathis_bps(1448.0, 0.05, 0.05, C_PERIODIC), "{p}");
        // The receiver's window caps it: 10 packets a 50 ms RTT.
        assert!(close(
            padhye_bps(1448.0, 0.05, 1e-9, rto, 1.0, Some(10.0)),
            10.0 / 0.05 * 1448.0 * 8.0,
            1e-9
        ));
    }

    #[test]
    fn cubic_by_hand_and_where_reno_friendliness_takes_over() {
        // 200 ms, p = 1e-4: k = (0.4 * 3.7 / 1.2)^(1/4) = 1.05384; the window
        // 1.05384 * (0.2 / 1e-4)^(3/4) = 315.2 packets, 18.26 Mb/s at 1448 B.
        let long = cubic_bps(1448.0, 0.2, 1e-4, C_RANDOM);
        assert!(close(long, 18.26e6, 2e-3), "{long}");
        assert!(long > 2.0 * mathis_bps(1448.0, 0.2, 1e-4, C_RANDOM));
        // 10 ms, p = 1e-3: the cubic window (5.9) is under Reno's (41.1):
        // CUBIC's Reno-friendly region holds Reno's rate.
        assert_eq!(
            cubic_bps(1448.0, 0.01, 1e-3, C_RANDOM),
            mathis_bps(1448.0, 0.01, 1e-3, C_RANDOM)
        );
        assert_eq!(cubic_bps(1448.0, 0.2, 0.0, C_RANDOM), f64::INFINITY);
        assert_eq!(
            Response::Bbr.one_stream_bps(1448.0, 0.2, 1e-2, C_RANDOM),
            f64::INFINITY
        );
        assert_eq!(Response::of("cubic"), Some(Response::Cubic));
        assert_eq!(Response::of("braid_tcpp"), None);
    }

    #[test]
    fn the_knee_is_where_the_streams_fill_the_path() {
        // Hacker 2002's MTU 1500 path, as calibrated: 200 Mb/s, 65 ms, p = 1e-4.
        let one = mathis_bps(1448.0, 0.065, 1e-4, C_RANDOM);
        assert_eq!(knee_streams(one, 200e6), 9);
        assert_eq!(knee_streams(300e6, 200e6), 1);
        assert_eq!(knee_streams(0.0, 200e6), 1);
        assert_eq!(
            measured_knee(
                &[(1, 20.0), (2, 41.0), (4, 80.0), (8, 150.0), (12, 160.0)],
                0.9
            ),
            Some(8)
        );
        assert_eq!(measured_knee(&[], 0.9), None);
    }

    #[test]
    fn the_shared_vectors_are_these_models() {
        let mut cases = Vec::new();
        for (mss, rtt, p) in [
            (1448.0, 0.068, 1e-5),
            (2948.0, 0.065, 1e-4),
            (4366.0, 0.065, 3e-4),
        ] {
            cases.push(
                json!({"model": "mathis", "mss": mss, "rtt": rtt, "p": p, "c": C_PERIODIC,
                              "bps": mathis_bps(mss, rtt, p, C_PERIODIC)}),
            );
        }
        for (p, rto, b) in [(1e-4, 0.2, 1.0), (1e-2, 0.2, 2.0), (0.05, 1.0, 2.0)] {
            cases.push(
                json!({"model": "padhye", "mss": 1448.0, "rtt": 0.05, "p": p, "rto": rto, "b": b,
                              "bps": padhye_bps(1448.0, 0.05, p, rto, b, None)}),
            );
        }
        for (one, rate) in [(25e6, 200e6), (26.5e6, 200e6), (300e6, 200e6)] {
            cases.push(
                json!({"model": "knee", "one_stream_bps": one, "rate_bps": rate,
                              "streams": knee_streams(one, rate)}),
            );
        }
        let ours = serde_json::to_string_pretty(&json!({"cases": cases})).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/models.json");
        if std::env::var_os("BRAID_BLESS").is_some() {
            std::fs::write(&path, &ours).unwrap();
        }
        assert_eq!(
            ours,
            std::fs::read_to_string(&path).unwrap(),
            "the models changed: rewrite vectors/models.json with BRAID_BLESS=1 and check braidlab.metrics"
        );
    }
}
