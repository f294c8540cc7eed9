//! What `braid plan` says of a path: each mode's predicted rate, the knee,
//! and the mode and number of streams to use, with the reason. Pure: the
//! path comes from the command line or from a short probe (braid-cli).

use crate::path::model::{knee_streams, mathis_bps, Response};
use crate::records::{Plan, PlanMode};
use crate::steer::plan::MAX_STREAMS;

/// A path as the models need it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathFacts {
    /// The bottleneck's rate, bits per second.
    pub rate_bps: f64,
    pub rtt_s: f64,
    /// Loss that is not the streams' own: packets lost per packet sent.
    pub loss: f64,
    pub mss_bytes: f64,
    /// Measured by a probe (true) or given (false).
    pub measured: bool,
    /// The knee a probe measured: the fewest streams whose aggregate came
    /// within a tenth of the best. Where given it is what the plan follows,
    /// since it saw what limits this path (a host's CPU, a receive window)
    /// and the models see only loss.
    pub measured_knee: Option<u32>,
}

/// A combined group's streams beyond the first grow as if their RTT were m
/// times longer: under loss that is not congestion each moves 1/sqrt(m) of
/// a Reno stream (Hacker 2004 section V; braid-sim pins it).
fn combined_bps(one: f64, n: u32, m: f64) -> f64 {
    one + (n.saturating_sub(1)) as f64 * one / m.sqrt()
}

/// Predictions for streams of `control` (auto's and parallel's; combined
/// and TCP-P grow as Reno does), with Mathis' constant `c` where a Reno
/// window is the bound.
pub fn advise(path: &PathFacts, control: Response, c: f64) -> Plan {
    let one = control.one_stream_bps(path.mss_bytes, path.rtt_s, path.loss, c);
    let reno = mathis_bps(path.mss_bytes, path.rtt_s, path.loss, c);
    let model_knee = knee_streams(one, path.rate_bps);
    let wanted = path.measured_knee.unwrap_or(model_knee).max(1);
    // Past what a session may open the plan says so, and plans with the most.
    let knee = wanted.min(MAX_STREAMS as u32);
    let cap = |bps: f64| bps.min(path.rate_bps);
    let n = knee.max(2);
    let modes = vec![
        PlanMode {
            mode: "single".into(),
            streams: 1,
            predicted_bps: cap(one),
        },
        PlanMode {
            mode: "parallel".into(),
            streams: n,
            predicted_bps: cap(n as f64 * one),
        },
        PlanMode {
            mode: "combined --virtual-rtt 10".into(),
            streams: n,
            predicted_bps: cap(combined_bps(reno, n, 10.0)),
        },
        PlanMode {
            mode: "combined --virtual-rtt 100".into(),
            streams: n,
            predicted_bps: cap(combined_bps(reno, n, 100.0)),
        },
        PlanMode {
            // Strength k: the group takes what k flows take, on an idle path too.
            mode: "tcpp --strength 1".into(),
            streams: n,
            predicted_bps: cap(reno),
        },
        PlanMode {
            // Up to n flows' worth while the path is its own: what it moves there.
            mode: "auto".into(),
            streams: n,
            predicted_bps: cap(n as f64 * one),
        },
    ];
    let name = control.name();
    let (mode, streams, reason) = if knee == 1 {
        let why = match path.measured_knee {
            Some(_) => "one stream moved within a tenth of the most any number did".to_owned(),
            None => format!(
                "one {name} stream is predicted to move {:.0} % of the path's rate",
                100.0 * cap(one) / path.rate_bps
            ),
        };
        (
            "single".to_owned(),
            1,
            format!("{why}: more streams would only queue and lose"),
        )
    } else {
        let basis = match path.measured_knee {
            Some(k) => format!(
                "the probes' aggregate came within a tenth of its best at {k} streams (the measured \
                 knee; the {name} model's is {model_knee})"
            ),
            None => format!(
                "loss of {:.1e} holds one {name} stream to {:.1} Mb/s of {:.1} Mb/s; {model_knee} \
                 streams reach the path's rate (the knee)",
                path.loss,
                one / 1e6,
                path.rate_bps / 1e6,
            ),
        };
        let past = if wanted > knee {
            format!(
                "; that is past the {MAX_STREAMS} streams a session opens, which are predicted to \
                 move {:.1} Mb/s",
                cap(knee as f64 * one) / 1e6
            )
        } else {
            String::new()
        };
        (
            "auto".to_owned(),
            knee,
            format!(
                "{basis}{past}; more only add congestion. Auto (the default mode) finds the knee by \
                 itself while the path is its own (`-n` is its most) and moves one ordinary flow's \
                 share while others share it, where `parallel -n {knee}` takes {knee} flows' shares; \
                 of the fixed modes, `tcpp -n {knee} --strength 1` takes one flow's share \
                 everywhere, and `combined -n {knee} --virtual-rtt 10` is predicted to move {:.0} % \
                 of what {knee} parallel streams would",
                100.0 * cap(combined_bps(reno, knee.max(2), 10.0)) / cap(knee as f64 * one).max(1.0)
            ),
        )
    };
    Plan {
        rate_bps: path.rate_bps,
        rtt_s: path.rtt_s,
        loss: path.loss,
        mss: path.mss_bytes,
        measured: path.measured,
        c,
        control: name.to_owned(),
        one_stream_bps: one.is_finite().then_some(one),
        knee,
        modes,
        recommend_mode: mode,
        recommend_streams: streams,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::model::{C_PERIODIC, C_RANDOM};

    fn path(rate: f64, rtt: f64, loss: f64) -> PathFacts {
        PathFacts {
            rate_bps: rate,
            rtt_s: rtt,
            loss,
            mss_bytes: 1448.0,
            measured: false,
            measured_knee: None,
        }
    }

    #[test]
    fn the_papers_paths_get_the_papers_stream_counts() {
        // Hacker 2004: 100 Mb/s, 68 ms, 1e-5: one stream ~66 Mb/s, two fill it.
        let p = advise(&path(100e6, 0.068, 1e-5), Response::Reno, C_PERIODIC);
        assert_eq!(
            (p.recommend_mode.as_str(), p.recommend_streams),
            ("auto", 2)
        );
        assert!((p.modes[0].predicted_bps - 65.97e6).abs() < 0.1e6);
        assert_eq!(p.modes[1].predicted_bps, 100e6, "capped at the path's rate");
        // Hacker 2002, MTU 1500: 200 Mb/s, 65 ms, 1e-4: the knee near 10 (9 here).
        let p = advise(&path(200e6, 0.065, 1e-4), Response::Reno, C_RANDOM);
        assert_eq!(p.knee, 9);
        assert!(p.reason.contains("tcpp -n 9 --strength 1"), "{}", p.reason);
    }

    #[test]
    fn a_clean_path_needs_one_stream() {
        let p = advise(&path(100e6, 0.010, 1e-7), Response::Reno, C_RANDOM);
        assert_eq!(
            (p.recommend_mode.as_str(), p.recommend_streams, p.knee),
            ("single", 1, 1)
        );
        // Without loss the model has no bound: still one stream, capped at the rate.
        let p = advise(&path(100e6, 0.010, 0.0), Response::Reno, C_RANDOM);
        assert_eq!(p.recommend_streams, 1);
        assert_eq!(p.modes[0].predicted_bps, 100e6);
    }

    #[test]
    fn cubic_streams_need_fewer_on_a_long_fat_path_and_bbr_one() {
        // 1 Gb/s, 200 ms, 1e-4: Reno holds a stream to 7.5 Mb/s, CUBIC to 18.3.
        let lfn = path(1e9, 0.2, 1e-4);
        let reno = advise(&lfn, Response::Reno, C_RANDOM);
        let cubic = advise(&lfn, Response::Cubic, C_RANDOM);
        assert_eq!((reno.knee, cubic.knee), (133, 55));
        assert_eq!(cubic.control, "cubic");
        assert!(
            cubic.reason.contains("one cubic stream"),
            "{}",
            cubic.reason
        );
        // Combined and TCP-P grow as Reno does, whatever auto's streams run.
        let tcpp = |p: &Plan| {
            p.modes
                .iter()
                .find(|m| m.mode == "tcpp --strength 1")
                .unwrap()
                .predicted_bps
        };
        assert_eq!(tcpp(&cubic), tcpp(&reno));
        let bbr = advise(&lfn, Response::Bbr, C_RANDOM);
        assert_eq!((bbr.recommend_mode.as_str(), bbr.knee), ("single", 1));
    }

    #[test]
    fn a_knee_past_what_a_session_opens_is_planned_at_the_most() {
        // 10 Gb/s, 200 ms, 1e-4: 1329 Reno streams would fill it.
        let p = advise(&path(10e9, 0.2, 1e-4), Response::Reno, C_RANDOM);
        assert_eq!(p.recommend_streams, MAX_STREAMS as u32);
        assert!(p.modes.iter().all(|m| m.streams <= MAX_STREAMS as u32));
        assert!(
            p.reason.contains("1329 streams") && p.reason.contains("past the 256"),
            "{}",
            p.reason
        );
    }

    #[test]
    fn a_measured_knee_is_what_the_plan_follows() {
        // Loopback: no loss, so the model wants one stream; the probes saw
        // four streams move more (a host's CPU, not loss, held one back).
        let mut p = path(20e9, 0.0001, 0.0);
        p.measured = true;
        p.measured_knee = Some(4);
        let plan = advise(&p, Response::Cubic, C_RANDOM);
        assert_eq!(
            (
                plan.recommend_mode.as_str(),
                plan.recommend_streams,
                plan.knee
            ),
            ("auto", 4, 4)
        );
        assert!(plan.reason.contains("measured knee"), "{}", plan.reason);
        p.measured_knee = Some(1);
        let plan = advise(&p, Response::Cubic, C_RANDOM);
        assert_eq!(
            (plan.recommend_mode.as_str(), plan.recommend_streams),
            ("single", 1)
        );
    }

    #[test]
    fn combined_sits_between_one_stream_and_parallel() {
        let p = advise(&path(1e9, 0.068, 1e-4), Response::Reno, C_RANDOM);
        let by = |m: &str| p.modes.iter().find(|x| x.mode == m).unwrap().predicted_bps;
        assert!(by("single") < by("combined --virtual-rtt 100"));
        assert!(by("combined --virtual-rtt 100") < by("combined --virtual-rtt 10"));
        assert!(by("combined --virtual-rtt 10") < by("parallel"));
        assert_eq!(by("tcpp --strength 1"), by("single"));
        // Auto on the path alone moves what parallel streams would.
        assert_eq!(by("auto"), by("parallel"));
    }
}
