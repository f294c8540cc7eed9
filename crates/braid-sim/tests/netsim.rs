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

/// 5 Reno flows (as `many` starts them) that arrive `from_s` seconds in and,
/// given `until_s`, leave then: the laboratory's arriving competition.
fn arriving(from_s: u64, until_s: Option<u64>) -> Vec<Flow> {
    many(5, Flow::new(Arith::Reno))
        .into_iter()
        .map(|f| Flow {
            start_ns: f.start_ns + from_s * S,
            stop_ns: until_s.map_or(f.stop_ns, |u| u * S),
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
    // Cho & Bettati Eq. 8 and 9: N coupled flows behave like one.
    for n in [2usize, 4, 8] {
        let mut flows = many(n, Flow::tcpp(0, 1000));
        flows.push(Flow::new(Arith::Reno));
        let o = run(SHARED, 50, &flows, 30, 330);
        let ratio = o.mbps(0..n) / o.mbps(n..n + 1);
        eprintln!("measured: {n} TCP-P (k = 1) against 1 Reno: {ratio:.2}");
        assert!((0.65..=1.25).contains(&ratio), "N = {n}: {ratio:.2}");
    }
}

#[test]
fn a_tcpp_group_of_strength_k_takes_about_k_shares() {
    // 10 TCP-P flows of strength k affect a Reno flow as k plain flows would.
    for k in [2u32, 4] {
        let mut flows = many(10, Flow::tcpp(0, k * 1000));
        flows.push(Flow::new(Arith::Reno));
        let o = run(SHARED, 50, &flows, 30, 330);
        let ratio = o.mbps(0..10) / o.mbps(10..11);
        eprintln!("measured: 10 TCP-P (k = {k}) against 1 Reno: {ratio:.2}");
        assert!(
            ratio > 0.6 * k as f64 && ratio < 1.3 * k as f64,
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

/// A TCP-P group of 9 driven by braid's `--mode auto` steer (braid::auto::Auto), ticking when
/// it asks to, as the engine does, fed what TCP_INFO would say of each member, its strength and
/// its drain probes' rate caps done as the engine does them. Returns what the run measured and
/// the strength after each tick.
fn steered(
    link: &str,
    rtt_ms: u64,
    others: &[Flow],
    from_s: u64,
    to_s: u64,
) -> (Outcome, Vec<f64>) {
    let t = traced(link, rtt_ms, others, from_s, to_s);
    (t.outcome, t.ks)
}

/// What `traced` saw: `steered`'s two, when (in seconds) each tick found
/// the queue shared, and the group's packets delivered by each tick
/// (seconds, packets).
struct Trace {
    outcome: Outcome,
    ks: Vec<f64>,
    shared: Vec<f64>,
    moved: Vec<(f64, u64)>,
}

fn traced(link: &str, rtt_ms: u64, others: &[Flow], from_s: u64, to_s: u64) -> Trace {
    use braid::auto::{Auto, Queue};
    use braid::proto::steer::{Steer, Steering, StreamView};
    use braid_sim::SimSteering;

    let mut flows = many(9, Flow::tcpp(0, 1000));
    flows.extend(others.iter().map(|f| Flow {
        start_ns: f.start_ns + 17 * MS,
        ..*f
    }));
    let (link, jitter) = (link.trim_end_matches(" jitter"), " 1ms");
    let cfg = spec::parse(&format!("{link} delay {}ms{jitter}", rtt_ms / 2)).expect("a valid spec");
    let mut auto = Auto::new(1, 9, braid_cc::Strength::ONE);
    let mut ks = Vec::new();
    let mut shared = Vec::new();
    let mut moved = Vec::new();
    let mut steer = |now: u64, views: &[braid_sim::FlowView]| {
        let delivered = views.iter().filter(|v| v.tcpp).map(|v| v.delivered).sum();
        moved.push((now as f64 / 1e9, delivered));
        let group: Vec<StreamView> = views
            .iter()
            .enumerate()
            .filter(|(_, v)| v.tcpp)
            .map(|(i, v)| StreamView {
                stream: i,
                wanted: v.carrying,
                bytes: v.delivered * braid_sim::MSS as u64,
                info: (v.active && v.srtt_ns > 0).then(|| braid_cc::TcpInfo {
                    srtt_us: (v.srtt_ns / 1000) as u32,
                    min_rtt_us: (v.min_srtt_ns / 1000) as u32,
                    cwnd: v.cwnd,
                    mss: braid_sim::MSS as u32,
                    data_segs_out: v.sent as u32,
                    total_retrans: v.lost as u32,
                    ..Default::default()
                }),
            })
            .collect();
        let asked = auto.tick(std::time::Duration::from_nanos(now), &group);
        ks.push(auto.strength());
        if auto.queue() == Queue::Shared {
            shared.push(now as f64 / 1e9);
        }
        let done = asked
            .iter()
            .filter_map(|s| match s {
                Steering::Control(0, c) => c
                    .settings
                    .strength
                    .map(|k| SimSteering::Strength(k.milli())),
                Steering::Pace(i, rate) => Some(SimSteering::Pace(*i, *rate)),
                Steering::Streams(n) => Some(SimSteering::Streams(*n)),
                _ => None,
            })
            .collect();
        (done, auto.interval().as_nanos() as u64)
    };
    let o = Run::new(cfg, rtt_ms * MS / 2, &flows).measure_steered(
        from_s * S,
        to_s * S,
        2 * rtt_ms * MS,
        &mut steer,
    );
    Trace {
        outcome: o,
        ks,
        shared,
        moved,
    }
}

/// The group's rate in Mb/s over each second (from the ticks' counts).
fn per_second(moved: &[(f64, u64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut last = moved[0];
    for &(t, n) in moved {
        if t.floor() > last.0.floor() {
            let mbps = (n - last.1) as f64 * braid_sim::MSS as f64 * 8.0 / (t - last.0) / 1e6;
            out.push((t, mbps));
            last = (t, n);
        }
    }
    out
}

/// Seconds after `change` until the rate settled, as the laboratory's
/// braidlab.metrics.settle_time judges it: from then to `end`, every mean
/// over the last 3 s (of points after the change) lies within 10 % of the
/// median over the phase's second half.
fn settle_s(rates: &[(f64, f64)], change: f64, end: f64) -> f64 {
    let pts: Vec<(f64, f64)> = rates
        .iter()
        .copied()
        .filter(|(t, _)| *t > change && *t <= end)
        .collect();
    let settled = median(
        pts.iter()
            .filter(|(t, _)| *t > (change + end) / 2.0)
            .map(|(_, r)| *r)
            .collect(),
    );
    let inside: Vec<bool> = pts
        .iter()
        .map(|(t, _)| {
            let w: Vec<f64> = pts
                .iter()
                .filter(|(s, _)| s <= t && *s > t - 3.0 + 1e-9)
                .map(|(_, r)| *r)
                .collect();
            let mean = w.iter().sum::<f64>() / w.len() as f64;
            (mean - settled).abs() <= 0.1 * settled
        })
        .collect();
    (0..pts.len())
        .take_while(|&i| pts[pts.len() - 1].0 - pts[i].0 >= 3.0 - 1e-9)
        .find(|&i| inside[i..].iter().all(|x| *x))
        .map_or(f64::INFINITY, |i| pts[i].0 - change)
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(|a, b| a.total_cmp(b));
    x[x.len() / 2]
}

#[test]
fn auto_fills_an_idle_lossy_path_like_parallel_streams() {
    // 1e-4 random loss at 68 ms holds one Reno stream near Mathis's 20 Mb/s of 100.
    let link = "rate 100mbit limit 400 loss random 0.01% seed 5 jitter";
    let (auto, ks) = steered(link, 68, &[], 10, 60);
    let parallel = run(link, 68, &many(9, Flow::new(Arith::Reno)), 10, 60);
    let single = run(link, 68, &[Flow::new(Arith::Reno)], 10, 60);
    let (a, p, s) = (auto.mbps(0..9), parallel.mbps(0..9), single.mbps(0..1));
    let k = median(ks[ks.len() / 2..].to_vec());
    eprintln!("measured: idle, 1e-4: auto {a:.1} Mb/s (median k {k:.2}), parallel-9 {p:.1}, single {s:.1}");
    // Once its queue stands, auto's yields find it its own and the strength stays
    // up: 91 % of parallel-9 here; the first 20 s before the first question, and the
    // yields' 30 % for 5 s every 35 s, cost the rest.
    assert!(a > 0.9 * p, "auto {a:.1} against parallel-9 {p:.1}");
    assert!(a > 3.0 * s, "auto {a:.1} against one stream {s:.1}");
    assert!(k > 2.0, "the strength rose to fill the path: median {k:.2}");
}

#[test]
fn auto_takes_one_flows_share_beside_reno_flows() {
    let link = "rate 100mbit limit 400 jitter";
    let reno: Vec<Flow> = many(5, Flow::new(Arith::Reno));
    let (auto, ks) = steered(link, 68, &reno, 20, 80);
    let share = auto.mbps(0..9) / (auto.mbps(9..14) / 5.0);
    let mut flows = many(9, Flow::new(Arith::Reno));
    flows.extend(reno.iter().map(|f| Flow {
        start_ns: f.start_ns + 17 * MS,
        ..*f
    }));
    let parallel = run(link, 68, &flows, 20, 80);
    let par_share = parallel.mbps(0..9) / (parallel.mbps(9..14) / 5.0);
    let mut flows = many(9, Flow::tcpp(0, 1000));
    flows.extend(reno.iter().map(|f| Flow {
        start_ns: f.start_ns + 17 * MS,
        ..*f
    }));
    let fixed = run(link, 68, &flows, 20, 80);
    let fixed_share = fixed.mbps(0..9) / (fixed.mbps(9..14) / 5.0);
    let k = median(ks[ks.len() / 2..].to_vec());
    eprintln!("measured: beside 5 Reno: auto {share:.2} flows' worth (median k {k:.2}), tcpp-9 k=1 {fixed_share:.2}, parallel-9 {par_share:.2}");
    // Held at one Reno flow's rate at the loss rate it sees, the group reaches
    // that rate and no more (0.76 flows' worth here, median k 2.24: the paced
    // group counts more loss events than a Reno flow would; a fixed k = 1
    // group takes 1.39, its loss response alone holding it).
    assert!(
        share > 0.75 && share < 1.25,
        "auto took {share:.2} flows' worth"
    );
    assert!(
        par_share > 3.0 * share,
        "parallel-9 {par_share:.2} against auto {share:.2}"
    );
    assert!(
        k < 4.5,
        "the strength stays far from the stream count: median {k:.2}"
    );
}

#[test]
fn auto_fills_what_stiff_udp_leaves_like_parallel_streams() {
    // The Hacker 2004 path beside 50-80 Mb/s of UDP that does not back off: the room the
    // group yields stays empty, the queue is the group's own, and auto runs strong.
    let link = "rate 100mbit limit 400 loss random 0.001% seed 3 jitter";
    let udp = [Flow::stiff(50e6, 80e6, 10 * S)];
    let (auto, ks) = steered(link, 68, &udp, 20, 80);
    let mut flows = many(9, Flow::new(Arith::Reno));
    flows.push(Flow {
        start_ns: 17 * MS,
        ..udp[0]
    });
    let parallel = run(link, 68, &flows, 20, 80);
    let mut flows = many(9, Flow::tcpp(0, 1000));
    flows.push(Flow {
        start_ns: 17 * MS,
        ..udp[0]
    });
    let fixed = run(link, 68, &flows, 20, 80);
    let (a, p, f) = (auto.mbps(0..9), parallel.mbps(0..9), fixed.mbps(0..9));
    let k = median(ks[ks.len() / 2..].to_vec());
    eprintln!("measured: beside UDP 50-80: auto {a:.1} Mb/s (median k {k:.2}), parallel-9 {p:.1}, tcpp-9 k=1 {f:.1}");
    // 0.90 of parallel-9 here (0.88-0.95 over other seeds): the yields' 30 % for 5 s
    // every 35 s, and the odd yield a swing of the UDP fills, cost the rest.
    assert!(a > 0.85 * p, "auto {a:.1} against parallel-9 {p:.1}");
    assert!(
        k > 4.0,
        "the group's own queue: the strength stays up, median {k:.2}"
    );
}

#[test]
fn auto_gives_way_to_reno_flows_that_arrive_while_it_runs_strong() {
    // Alone for 20 s, auto runs at full strength; 5 Reno flows then arrive. Beside the
    // strong group they stay small, and nothing in its TCP_INFO tells them from stiff
    // traffic until the group next yields (within 30 s) and they grow into the room.
    let link = "rate 100mbit limit 400 loss random 0.001% seed 4 jitter";
    let reno = arriving(20, None);
    let (auto, ks) = steered(link, 68, &reno, 60, 120);
    let share = auto.mbps(0..9) / (auto.mbps(9..14) / 5.0);
    let early = ks[..ks.len() / 8].iter().cloned().fold(0.0, f64::max);
    let k = median(ks[ks.len() / 2..].to_vec());
    // The first question comes as they arrive (20 s) and the next, 2.5 s after
    // it, confirms it; found sharing, the group is held to one Reno flow's rate
    // at the loss rate it sees, and settles there, not three halvings later.
    let (settling, _) = steered(link, 68, &reno, 30, 60);
    let soon = settling.mbps(0..9) / (settling.mbps(9..14) / 5.0);
    eprintln!("measured: Reno flows arriving at 20 s: auto {soon:.2} flows' worth 10-40 s after, {share:.2} from 60 s on (median k {k:.2}, {early:.1} before)");
    assert!(early > 8.0, "alone, the group ran strong: {early:.2}");
    assert!(
        share < 1.5 && soon < 1.5,
        "auto took {soon:.2} flows' worth 10 s after they came, {share:.2} from 60 s on"
    );
}

#[test]
fn auto_takes_the_path_back_when_reno_flows_leave() {
    // 5 Reno flows from 20 s to 50 s: auto finds them and keeps to its share; once they
    // have gone, no queue stands while it is held to that share, and 5 s later it lets go
    // and fills the path again.
    let link = "rate 100mbit limit 400 loss random 0.001% seed 4 jitter";
    let reno = arriving(20, Some(50));
    let (during, _) = steered(link, 68, &reno, 35, 50);
    let (after, _) = steered(link, 68, &reno, 60, 90);
    let (alone, _) = steered(link, 68, &[], 60, 90);
    let (d, a, x) = (during.mbps(0..9), after.mbps(0..9), alone.mbps(0..9));
    eprintln!("measured: Reno flows from 20 s to 50 s: auto {d:.1} Mb/s beside them, {a:.1} from 10 s after they left, {x:.1} alone");
    assert!(d < 30.0, "beside 5 Reno flows auto moved {d:.1} Mb/s");
    assert!(
        a > 0.8 * x,
        "after they left auto moved {a:.1} Mb/s, alone {x:.1}"
    );
}

#[test]
fn auto_finds_reno_flows_that_arrive_between_its_questions() {
    // Alone, the group's first question (20-25 s) finds the queue its own and the next is
    // due at 55 s; 5 Reno flows arrive as it ends. Beside the strong group they hold a share
    // and the group's delivery stays down: that brings the question forward.
    let link = "rate 100mbit limit 400 loss random 0.001% seed 4 jitter";
    let reno = arriving(26, None);
    let Trace {
        outcome: o, shared, ..
    } = traced(link, 68, &reno, 60, 90);
    let found = shared.first().copied().unwrap_or(f64::INFINITY);
    let share = o.mbps(0..9) / (o.mbps(9..14) / 5.0);
    eprintln!("measured: Reno flows arriving at 26 s: found sharing at {found:.1} s, auto {share:.2} flows' worth 60-90 s");
    // Found at 35.9 s here (the path held steady before: 3 s of a fall ask, and the yield
    // ends once a quarter of its second half saw a queue); asked only when due (55 s) and
    // then once more, at 69.2 s, before the fall asked. 1.05 flows' worth from 60 s to 90 s.
    assert!(
        found < 42.0,
        "found at {found:.1} s, no sooner than the next question"
    );
    assert!(share < 1.5, "auto took {share:.2} flows' worth");
}

#[test]
fn auto_holds_one_flows_share_steadily_once_reno_flows_arrive_beside_it() {
    // The laboratory's arriving competition: alone for 80 s on the Hacker 2004
    // path, 5 Reno flows from 80 s to 160 s. The group had the path to itself,
    // so it knows the path's rate, counts the newcomers by how fast they fill
    // the queue, and holds the path's rate split equally with them. Eight
    // draws: one draw's settling time moves by whole seconds as its first
    // share lands just inside or just outside the 10 % band.
    let mut settled = Vec::new();
    for seed in 1..=8 {
        let link = format!("rate 100mbit limit 400 loss random 0.001% seed {seed} jitter");
        let reno = arriving(80, Some(160));
        let Trace {
            outcome: o, moved, ..
        } = traced(&link, 68, &reno, 100, 160);
        let settle = settle_s(&per_second(&moved), 80.0, 160.0);
        let share = o.mbps(0..9) / (o.mbps(9..14) / 5.0);
        eprintln!("measured: seed {seed}, Reno flows from 80 s: auto settled {settle:.1} s after, {share:.2} flows' worth 100-160 s");
        assert!(
            share > 0.8 && share < 1.2,
            "seed {seed}: auto took {share:.2} flows' worth"
        );
        assert!(
            settle < 12.5,
            "seed {seed}: settled {settle:.1} s after they came"
        );
        settled.push(settle);
    }
    // Settled 7.0 to 8.1 s after (10.0 on seed 4, whose first share, counted
    // while the group ran strong, lay 10.1 % under the one the capped group
    // counted: 12.0 while six of its windows had to say it), 0.97 to 1.04
    // flows' worth. Held at a Mathis share from its
    // loss events, it settled 31 to 64 s after on six of these seeds and
    // never on two, at 0.62 to 1.20 flows' worth.
    let median = median(settled.clone());
    assert!(median <= 9.0, "settled after {settled:?}");
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
