//! What the papers and the kernel tier claim of the controls, pinned on
//! virtual time: seeded, repeatable to the bit, in well under a second
//! each. The kernel tier (tests/system) measures the same on real sockets
//! with wide tolerances; here the tolerances are the model's, not a busy
//! machine's.

use braid_cc::native::Arith;
use braid_link::spec;
use braid_sim::{jain, Flow, Outcome, Run};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// `link` in netem's words (braid-link's spec) one way, `rtt_ms` in all.
fn run(link: &str, rtt_ms: u64, flows: &[Flow], from_s: u64, to_s: u64) -> Outcome {
    let one_way = rtt_ms * MS / 2;
    // A trailing "jitter": 1 ms of it on the delay, as a real path has.
    let (link, jitter) = match link.strip_suffix(" jitter") {
        Some(l) => (l, " 1ms"),
        None => (link, ""),
    };
    let cfg =
        spec::parse(&format!("{link} delay {}ms{jitter}", rtt_ms / 2)).expect("a valid link spec");
    Run::new(cfg, one_way, flows).measure(from_s * S, to_s * S)
}

/// `n` flows like `f`, starting 37 ms apart: flows that start together on
/// one RTT through a drop-tail queue lose packets in lockstep.
fn many(n: usize, f: Flow) -> Vec<Flow> {
    (0..n)
        .map(|i| Flow {
            start_ns: i as u64 * 37 * MS,
            ..f
        })
        .collect()
}

#[test]
fn frac_grows_as_if_its_rtt_were_m_times_longer() {
    // Hacker 2004 section V: under loss that is not congestion, a fractional
    // stream's window is sqrt(frac) of Reno's, so it moves 1/sqrt(m) as much.
    for (m, want) in [(10u32, 0.316), (100, 0.100)] {
        let mut flows = many(8, Flow::new(Arith::Reno));
        flows.extend(many(8, Flow::frac(m)));
        let o = run(
            "rate 10gbit limit 100000 loss random 0.1% seed 3",
            50,
            &flows,
            20,
            200,
        );
        let ratio = o.mbps(8..16) / o.mbps(0..8);
        eprintln!(
            "measured: frac m={m}: {:.3} of Reno (1/sqrt(m) = {want})",
            ratio
        );
        assert!(
            (ratio / want - 1.0).abs() < 0.12,
            "m = {m}: {ratio:.3}, want {want}"
        );
    }
}

#[test]
fn reno_under_random_loss_follows_mathis() {
    // One stream, loss p: MSS * C / (RTT * sqrt(p)), C about 1.3 under random loss.
    let o = run(
        "rate 10gbit limit 100000 loss random 0.1% seed 5",
        50,
        &many(4, Flow::new(Arith::Reno)),
        20,
        300,
    );
    let per_flow = o.mbps(0..4) / 4.0;
    let mathis = 1448.0 * 8.0 * 1.30 / (0.050 * 0.001f64.sqrt()) / 1e6;
    eprintln!("measured: Reno at p = 1e-3, 50 ms: {per_flow:.2} Mb/s a flow, Mathis (C = 1.30) {mathis:.2}");
    assert!(
        (per_flow / mathis - 1.0).abs() < 0.15,
        "{per_flow:.2} against {mathis:.2}"
    );
}

/// The bottleneck of Cho & Bettati's 20 Mb/s setting: 50 ms, a queue of about a BDP, and
/// 1 ms of jitter. Without jitter (and with flows started together) every flow has the same
/// RTT to the packet and a drop-tail queue drops in lockstep: 8 TCP-P flows of strength 1
/// then took 2.3 times a Reno flow's rate, and 10 of strength 2 took 4.3 (phase effects).
const SHARED: &str = "rate 20mbit limit 83 seed 11 jitter";

#[test]
fn parallel_reno_streams_take_about_n_shares() {
    let mut flows = many(4, Flow::new(Arith::Reno));
    flows.push(Flow::new(Arith::Reno));
    let o = run(SHARED, 50, &flows, 30, 330);
    let ratio = o.mbps(0..4) / o.mbps(4..5);
    eprintln!("measured: 4 Reno against 1 Reno: {ratio:.2}");
    assert!((3.5..=5.0).contains(&ratio), "{ratio:.2}");
}

#[test]
fn a_tcpp_group_of_strength_one_takes_one_flows_share() {
    // Cho & Bettati Eq. 8 and 9: N coupled flows behave like one. Under drop-tail the group
    // loses in more of the queue's overflows than one flow of its size (any of its N streams
    // may be hit), so it takes somewhat less: 0.59-0.72 here, and 0.57-0.75 in the kernel
    // (tests/system/test_controls_on_paths.py, whose bounds these are).
    for n in [2usize, 4, 8] {
        let mut flows = many(n, Flow::tcpp(0, 1000));
        flows.push(Flow::new(Arith::Reno));
        let o = run(SHARED, 50, &flows, 30, 330);
        let ratio = o.mbps(0..n) / o.mbps(n..n + 1);
        eprintln!("measured: {n} TCP-P (k = 1) against 1 Reno: {ratio:.2}");
        assert!((0.45..=1.25).contains(&ratio), "N = {n}: {ratio:.2}");
    }
}

#[test]
fn a_tcpp_group_of_strength_k_takes_about_k_shares() {
    // 10 TCP-P flows of strength k affect a Reno flow about as k plain flows would: less, for
    // the losses of ten streams (above): 0.50 k and 0.56 k here.
    for k in [2u32, 4] {
        let mut flows = many(10, Flow::tcpp(0, k * 1000));
        flows.push(Flow::new(Arith::Reno));
        let o = run(SHARED, 50, &flows, 30, 330);
        let ratio = o.mbps(0..10) / o.mbps(10..11);
        eprintln!("measured: 10 TCP-P (k = {k}) against 1 Reno: {ratio:.2}");
        assert!(
            ratio > 0.4 * k as f64 && ratio < 1.3 * k as f64,
            "k = {k}: {ratio:.2}"
        );
    }
}

#[test]
fn equal_flows_share_the_bottleneck_fairly_and_fill_it() {
    let o = run(SHARED, 50, &many(4, Flow::new(Arith::Reno)), 30, 330);
    let j = jain(&o.bps);
    let used = o.mbps(0..4) / 20.0 * (1500.0 / 1448.0);
    eprintln!(
        "measured: 4 Reno flows: Jain {j:.4}, link used {:.1} %",
        used * 100.0
    );
    assert!(j > 0.98, "{j}");
    assert!(used > 0.9, "{used}");
}

#[test]
fn runs_are_repeatable_to_the_bit_and_the_seed_matters() {
    let flows = vec![
        Flow::new(Arith::Reno),
        Flow::frac(10),
        Flow::tcpp(0, 1000),
        Flow::tcpp(0, 1000),
    ];
    let a = run(
        "rate 20mbit limit 83 loss random 0.01% seed 1",
        50,
        &flows,
        5,
        30,
    );
    let b = run(
        "rate 20mbit limit 83 loss random 0.01% seed 1",
        50,
        &flows,
        5,
        30,
    );
    let c = run(
        "rate 20mbit limit 83 loss random 0.01% seed 2",
        50,
        &flows,
        5,
        30,
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn streams_that_leave_send_nothing_and_come_back_as_new_connections() {
    // Four TCP-P k = 1 streams beside one Reno flow; from 10 s three leave,
    // from 30 s they carry data again.
    use braid_sim::SimSteering;
    let mut flows = many(4, Flow::tcpp(0, 1000));
    flows.push(Flow {
        start_ns: 11 * MS,
        ..Flow::new(Arith::Reno)
    });
    let window = |from_s: u64, to_s: u64| {
        let cfg = spec::parse("rate 50mbit limit 200 delay 20ms").expect("a valid spec");
        let mut views = Vec::new();
        let mut steer = |now: u64, v: &[braid_sim::FlowView]| {
            views = v.to_vec();
            let asked = match now / S {
                10 => vec![SimSteering::Streams(1)],
                30 => vec![SimSteering::Streams(4)],
                _ => Vec::new(),
            };
            (asked, S)
        };
        let o = Run::new(cfg, 20 * MS, &flows).measure_steered(from_s * S, to_s * S, S, &mut steer);
        (o, views)
    };
    let (apart, views) = window(15, 29);
    assert!(views[0].carrying && !views[1].carrying && views[4].carrying);
    for i in 1..4 {
        assert_eq!(apart.bps[i], 0.0, "stream {i} left, yet sent");
    }
    // One TCP-P stream of a group of one at k = 1 is a Reno flow.
    let ratio = apart.bps[0] / apart.bps[4];
    assert!(
        ratio > 0.6 && ratio < 1.6,
        "alone in its group: {ratio:.2} of the Reno flow"
    );
    let (back, views) = window(35, 50);
    assert!(views.iter().all(|v| v.carrying));
    // Back as new connections: their counters start again.
    assert!(views[1].sent < views[0].sent, "{:?}", &views[..2]);
    for i in 1..4 {
        assert!(
            back.bps[i] > 0.1 * back.bps[0],
            "stream {i} did not come back: {:?}",
            back.bps
        );
    }
}

#[test]
fn one_cubic_flow_fills_a_clean_long_path() {
    // 100 Mb/s, 68 ms, a buffer of one BDP (587 packets): CUBIC's concave
    // approach to its last maximum keeps the path busy through each loss.
    let o = run(
        "rate 100mbit limit 587 jitter",
        68,
        &[Flow::cubic()],
        20,
        120,
    );
    let used = o.mbps(0..1) / 100.0 * (1500.0 / 1448.0);
    eprintln!(
        "measured: one CUBIC flow: {:.1} % of the path",
        used * 100.0
    );
    assert!(used > 0.95, "{used}");
}

#[test]
fn a_first_window_on_a_long_path_is_not_timed_out_before_its_ack_could_return() {
    // 200 ms and more: the first ACK comes after the 200 ms floor of the RTO
    // that holds once an RTT is known; a clean path loses nothing.
    for rtt_ms in [200, 300] {
        let o = run(
            "rate 100mbit limit 100000 jitter",
            rtt_ms,
            &[Flow::cubic()],
            0,
            5,
        );
        assert_eq!(o.losses[0], 0, "{rtt_ms} ms: a loss on a clean path");
        assert!(o.mbps(0..1) > 20.0, "{rtt_ms} ms: {}", o.mbps(0..1));
    }
}

#[test]
fn cubic_under_random_loss_follows_its_response_function() {
    // RFC 9438 section 5: with loss rate p CUBIC's mean window is
    // (C (3 + beta) / (4 (1 - beta)))^(1/4) (RTT / p)^(3/4), RTT in seconds,
    // and never below the Reno-friendly region's: an AIMD of alpha =
    // 3 (1 - beta) / (1 + beta) and beta averages Reno's sqrt(3 / (2 p)).
    let (beta, c) = (0.7f64, 0.4f64);
    for (rtt_ms, p) in [(100u64, 1e-5f64), (200, 1e-5), (100, 1e-4)] {
        let link = format!("rate 10gbit limit 200000 loss random {}% seed 9", p * 100.0);
        let o = run(&link, rtt_ms, &[Flow::cubic()], 60, 600);
        let rtt = rtt_ms as f64 / 1000.0;
        let cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * (rtt / p).powf(0.75);
        let reno = (3.0 / (2.0 * p)).sqrt();
        let want = cubic.max(reno) * MSS_BITS / rtt / 1e6;
        let got = o.mbps(0..1);
        eprintln!("measured: CUBIC, {rtt_ms} ms, p {p}: {got:.1} Mb/s, RFC 9438 {want:.1}");
        assert!(
            (0.75..1.33).contains(&(got / want)),
            "{got:.1} against {want:.1}"
        );
    }
}

const MSS_BITS: f64 = braid_sim::MSS as f64 * 8.0;

#[test]
fn bbr_takes_the_path_from_cubic_in_a_shallow_buffer_and_not_in_a_deep_one() {
    // A buffer of a quarter BDP: CUBIC's losses keep it small while BBR,
    // deaf to loss, holds its model's rate. Four BDPs: CUBIC fills the
    // buffer, BBR's window of twice its BDP holds it to its share or less.
    let (shallow, deep) = (
        run(
            "rate 100mbit limit 147",
            68,
            &[Flow::bbr(), Flow::cubic()],
            30,
            150,
        ),
        run(
            "rate 100mbit limit 2350",
            68,
            &[Flow::bbr(), Flow::cubic()],
            30,
            150,
        ),
    );
    let (s, d) = (
        shallow.mbps(0..1) / shallow.mbps(1..2),
        deep.mbps(0..1) / deep.mbps(1..2),
    );
    eprintln!("measured: BBR / CUBIC: {s:.2} in a quarter BDP, {d:.2} in four");
    assert!(s > 1.5, "{s:.2}");
    assert!(d < 1.0, "{d:.2}");
    assert!(shallow.mbps(0..2) > 90.0 && deep.mbps(0..2) > 90.0);
}

#[test]
fn a_flow_with_a_longer_round_trip_takes_less() {
    // Reno's rate goes as 1 / RTT: three times the RTT (with a queue of 19 ms
    // on both), well under half the rate.
    let far = Flow {
        extra_rtt_ns: 80 * MS,
        ..Flow::new(Arith::Reno)
    };
    let o = run(
        "rate 50mbit limit 80 jitter",
        40,
        &[Flow::new(Arith::Reno), far],
        30,
        230,
    );
    let ratio = o.mbps(1..2) / o.mbps(0..1);
    eprintln!("measured: Reno at 120 ms against Reno at 40 ms: {ratio:.2}");
    assert!(ratio < 0.5, "{ratio:.2}");
    assert!(o.mbps(0..2) > 45.0);
}

#[test]
fn short_poisson_flows_load_the_path_as_asked() {
    let flows = braid_sim::poisson(Flow::cubic(), 30e6, 200e3, 0, 120 * S, 7);
    let o = run("rate 100mbit limit 400", 40, &flows, 20, 120);
    let load = o.mbps(0..flows.len());
    eprintln!(
        "measured: {} Poisson flows at 30 Mb/s of load: {load:.1} Mb/s",
        flows.len()
    );
    assert!((24.0..36.0).contains(&load), "{load:.1}");
}

#[test]
fn a_paced_flow_in_slow_start_climbs_to_its_pace() {
    // 1 Gb/s, 100 ms, a buffer that never fills: one CUBIC flow paced from
    // the start at 400 Mb/s of payload. Its ACKs come back at the pace, so it
    // never has its whole window in flight; the kernel still counts it held
    // by its window while the window is under twice what it had in flight
    // (tcp_is_cwnd_limited in slow start), and its slow start doubles to the
    // pace within ten round trips, as it would unpaced.
    use braid_sim::SimSteering;
    let cfg = spec::parse("rate 1000mbit limit 100000 delay 50ms").expect("a valid spec");
    let mut run = Run::new(cfg, 50 * MS, &[Flow::cubic()]);
    let pace = 400e6 / 8.0;
    run.steer_now(&[SimSteering::Pace(0, Some(pace as u64))]);
    let o = run.measure(2 * S, 5 * S);
    assert_eq!(o.losses[0], 0);
    let mbps = o.mbps(0..1);
    assert!(mbps > 0.95 * 400.0 && mbps < 1.01 * 400.0, "{mbps:.1} Mb/s");
}

#[test]
fn the_bottleneck_counts_its_queue_drops_apart_from_its_random_loss() {
    // A constant stream below the link's rate is dropped only by the loss model;
    // one above it overflows the buffer too. Counted over the measured span only.
    let stream = |mbps: f64| Flow::stiff(mbps * 1e6, mbps * 1e6, 0);
    let under = run(
        "rate 10mbit limit 50 loss random 1% seed 3",
        20,
        &[stream(8.0)],
        2,
        12,
    );
    let sent = 8e6 * 10.0 / 1500.0 / 8.0; // packets in the 10 measured seconds
    assert_eq!(under.congestion_drops, 0);
    let expected = 0.01 * sent;
    assert!(
        (under.random_drops as f64 - expected).abs() < 4.0 * expected.sqrt(),
        "random drops {} against {expected:.0} expected",
        under.random_drops
    );
    let over = run("rate 10mbit limit 50 seed 3", 20, &[stream(12.0)], 2, 12);
    assert_eq!(over.random_drops, 0);
    // A fifth of what arrives finds the buffer full.
    let excess = 2e6 * 10.0 / 1500.0 / 8.0;
    assert!(
        (over.congestion_drops as f64 - excess).abs() < 0.05 * excess,
        "queue drops {} against {excess:.0}",
        over.congestion_drops
    );
}
