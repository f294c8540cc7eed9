//! Does the cross traffic answer a sender's rate pulses? Nimbus (Goyal et
//! al., SIGCOMM 2022) tells elastic cross traffic from stiff by it: flows
//! that are ACK-clocked through the bottleneck's queue send what gets
//! through, so their rate falls while a pulse fills the queue and rises as
//! it drains; a stiff source, or a flow the bottleneck does not hold, goes
//! on as it was. Here a stiff sinusoid (the pulse) runs beside each kind of
//! competitor, and the competitors' rate is read from the simulation's
//! truth (what no sender sees): eta is its component at the pulse's
//! frequency over the pulse's own, with its phase against the pulse
//! (-180 degrees: in antiphase). A design tool for an elasticity test, not
//! a claim.
//!
//!     cargo run --release -p braid-sim --example pulse -- [PERIOD_MS,...]

#[path = "../tests/harness/mod.rs"]
mod harness;

use braid_cc::native::Arith;
use braid_sim::{poisson, Flow, FlowView, Run, MSS};
use harness::{cfg, many, MS, S};

/// The competitors' rate is sampled this often.
const BIN: u64 = 100 * MS;
/// Measured from FROM to TO seconds (after the competitors' start).
const FROM: u64 = 20;
const TO: u64 = 80;

struct Case {
    name: &'static str,
    link: &'static str,
    rtt_ms: f64,
    /// The pulse's lowest and highest rate, Mb/s.
    pulse: (f64, f64),
    others: Vec<Flow>,
}

fn case(
    name: &'static str,
    link: &'static str,
    rtt_ms: f64,
    pulse: (f64, f64),
    others: Vec<Flow>,
) -> Case {
    Case {
        name,
        link,
        rtt_ms,
        pulse,
        others,
    }
}

fn cases() -> Vec<Case> {
    let (lfn, lfn_5, lfn_4) = (
        "rate 1000mbit limit 8333",
        "rate 1000mbit limit 8333 loss random 0.001%",
        "rate 1000mbit limit 8333 loss random 0.01%",
    );
    let reno = Flow::new(Arith::Reno);
    let web = poisson(Flow::cubic(), 4e6, 200e3, 0, TO * S, 7);
    vec![
        case(
            "1G 100ms 1e-5, 4 CUBIC",
            lfn_5,
            100.0,
            (300.0, 500.0),
            many(4, Flow::cubic()),
        ),
        case(
            "1G 100ms, 4 CUBIC",
            lfn,
            100.0,
            (100.0, 300.0),
            many(4, Flow::cubic()),
        ),
        case(
            "1G 100ms 1e-4, 1 CUBIC",
            lfn_4,
            100.0,
            (300.0, 500.0),
            many(1, Flow::cubic()),
        ),
        case(
            "1G 100ms, stiff 400",
            lfn,
            100.0,
            (300.0, 500.0),
            vec![Flow::stiff(400e6, 400e6, 0)],
        ),
        case(
            "100M 68ms 1e-5, 5 Reno",
            "rate 100mbit limit 400 loss random 0.001%",
            68.0,
            (10.0, 30.0),
            many(5, reno),
        ),
        case(
            "20M 10ms shallow, 4 CUBIC",
            "rate 20mbit limit 17",
            10.0,
            (2.0, 8.0),
            many(4, Flow::cubic()),
        ),
        case(
            "20M 10ms, web 20 %",
            "rate 20mbit limit 17",
            10.0,
            (5.0, 12.0),
            web,
        ),
    ]
}

/// The pulse's rate and the competitors', Mb/s, at each bin.
fn run(c: &Case, period_ms: u64) -> (f64, Vec<(f64, f64, f64)>) {
    let mut flows = vec![Flow::stiff(
        c.pulse.0 * 1e6,
        c.pulse.1 * 1e6,
        period_ms * MS,
    )];
    flows.extend(c.others.iter().copied());
    let mut counts: Vec<(u64, u64, u64)> = Vec::new();
    let mut steer = |now: u64, views: &[FlowView]| {
        let others = views[1..].iter().map(|v| v.delivered).sum();
        counts.push((now, views[0].delivered, others));
        (Vec::new(), BIN)
    };
    let run = Run::new(cfg(c.link, c.rtt_ms), (c.rtt_ms / 2.0 * 1e6) as u64, &flows);
    let out = run.measure_steered(FROM * S, TO * S, FROM * S, &mut steer);
    let mbps = |n: u64, dt: f64| n as f64 * MSS as f64 * 8.0 / dt / 1e6;
    let bins = counts
        .windows(2)
        .map(|w| {
            let dt = (w[1].0 - w[0].0) as f64 / 1e9;
            (
                w[1].0 as f64 / 1e9,
                mbps(w[1].1 - w[0].1, dt),
                mbps(w[1].2 - w[0].2, dt),
            )
        })
        .collect();
    (out.mbps(0..1), bins)
}

/// The competitors' component at `hz` over the pulse's, and its phase against the pulse (degrees).
fn answer(bins: &[(f64, f64, f64)], hz: f64) -> (f64, f64) {
    let at = |pick: fn(&(f64, f64, f64)) -> f64| {
        bins.iter().fold((0.0, 0.0), |(re, im), b| {
            let a = 2.0 * std::f64::consts::PI * hz * b.0;
            (re + pick(b) * a.cos(), im + pick(b) * a.sin())
        })
    };
    let (pr, pi) = at(|b| b.1);
    let (zr, zi) = at(|b| b.2);
    let eta = (zr.hypot(zi)) / pr.hypot(pi);
    let phase = (zi * pr - zr * pi).atan2(zr * pr + zi * pi).to_degrees();
    (eta, phase)
}

fn main() {
    let periods: Vec<u64> = std::env::args().nth(1).map_or(vec![1000, 4000], |s| {
        s.split(',')
            .map(|p| p.parse().expect("PERIOD_MS is a number"))
            .collect()
    });
    for p in periods {
        println!("pulse period {p} ms");
        for c in cases() {
            let (pulse, bins) = run(&c, p);
            let others = bins.iter().map(|b| b.2).sum::<f64>() / bins.len() as f64;
            let (eta, phase) = answer(&bins, 1e3 / p as f64);
            println!(
                "  {:28} pulse {pulse:6.1} Mb/s  others {others:6.1} Mb/s  eta {eta:4.2}  phase {phase:5.0} deg",
                c.name
            );
        }
    }
}
