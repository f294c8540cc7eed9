//! braid's `--mode auto` on virtual time (the harness): idle, beside flows
//! of other controls, as they come and go, beside a stiff source and beside
//! a second auto. The paths here are design paths: none is a cell of the
//! matrix that judges auto (experiments/generality.toml).

mod harness;

use braid_cc::native::Arith;
use braid_sim::{jain, Flow};
use harness::*;

/// The payload share of `rate_mbps` each of `flows` long flows would have.
fn equal_share(rate_mbps: f64, flows: usize) -> f64 {
    rate_mbps * 1448.0 / 1500.0 / flows as f64
}

#[test]
fn auto_fills_an_idle_lossy_long_fat_path_like_the_best_parallel_streams() {
    // 500 Mb/s, 100 ms, a BDP of buffer, 1e-5 random loss: one CUBIC stream
    // moves about a third of the path (RFC 9438's response function).
    let link = "rate 500mbit limit 4200 loss random 0.001% seed 5";
    let t = autos(link, 100.0, 1, &[], &[], 20, 90);
    let a = t.mbps(0);
    let best = best_parallel(link, 100.0, &[], 20, 90);
    let one = single(link, 100.0, &[], 20, 90);
    eprintln!(
        "measured: idle 500 Mb/s 100 ms 1e-5: auto {a:.1} Mb/s ({} streams), best parallel {best:.1}, single {one:.1}",
        t.streams[0]
    );
    assert!(
        a > 0.9 * best,
        "auto {a:.1} against the best parallel {best:.1}"
    );
    assert!(a > 2.0 * one);
}

#[test]
fn auto_is_one_ordinary_flow_beside_cubic_flows() {
    let link = "rate 100mbit limit 333";
    let others = many(4, Flow::cubic());
    let t = autos(link, 40.0, 1, &[], &others, 30, 120);
    let a = t.mbps(0);
    let each = t.others(1, 4) / 4.0;
    let equal = equal_share(100.0, 5);
    eprintln!("measured: beside 4 CUBIC: auto {a:.1} Mb/s, each of them {each:.1}, equal share {equal:.1}");
    assert!(
        a > 0.7 * equal && a < 1.25 * equal,
        "auto {a:.1}, equal share {equal:.1}"
    );
}

#[test]
fn auto_is_one_ordinary_flow_beside_reno_flows() {
    let link = "rate 100mbit limit 333";
    let others = many(4, Flow::new(Arith::Reno));
    let t = autos(link, 40.0, 1, &[], &others, 30, 120);
    let a = t.mbps(0);
    let each = t.others(1, 4) / 4.0;
    let equal = equal_share(100.0, 5);
    eprintln!(
        "measured: beside 4 Reno: auto {a:.1} Mb/s, each of them {each:.1}, equal share {equal:.1}"
    );
    assert!(
        a > 0.7 * equal && a < 1.25 * equal,
        "auto {a:.1}, equal share {equal:.1}"
    );
}

#[test]
fn auto_steps_aside_when_cubic_flows_arrive_and_takes_the_path_back_when_they_leave() {
    // What one flow keeps beside four CUBIC flows that arrived together
    // depends on which of them the random losses meet first: one draw of the
    // losses ranges over a fifth of an equal share either way. Five draws,
    // their median held to the band; leaving and coming back, each of them.
    let mut besides = Vec::new();
    for seed in 1..=5 {
        let link = format!("rate 200mbit limit 1000 loss random 0.001% seed {seed}");
        let others: Vec<Flow> = many(4, Flow::cubic())
            .into_iter()
            .map(|f| Flow {
                start_ns: f.start_ns + 60 * S,
                stop_ns: 120 * S,
                ..f
            })
            .collect();
        let t = autos(&link, 60.0, 1, &[], &others, 10, 180);
        let rates = per_second(&t.moved[0]);
        let (alone, beside, after) = (
            mean_between(&rates, 30.0, 60.0),
            mean_between(&rates, 90.0, 120.0),
            mean_between(&rates, 150.0, 180.0),
        );
        let leave = settle_s(&rates, 120.0, 180.0);
        eprintln!(
            "measured: losses {seed}, 4 CUBIC arrive and leave: alone {alone:.1}, beside {beside:.1}, \
             after {after:.1} Mb/s; settled {:.1} s after they came and {leave:.1} s after they left",
            settle_s(&rates, 60.0, 120.0)
        );
        assert!(
            after > 0.9 * alone,
            "losses {seed}: {after:.1} after, {alone:.1} before"
        );
        // Back within the free time (25 RTTs, 5 s at least) and a measurement's growth.
        assert!(
            leave <= 15.0,
            "losses {seed}: settled {leave:.1} s after they left"
        );
        besides.push(beside);
    }
    besides.sort_by(f64::total_cmp);
    let median = besides[besides.len() / 2];
    let equal = equal_share(200.0, 5);
    assert!(
        median < 1.4 * equal && median > 0.5 * equal,
        "{median:.1} beside them (median of {besides:?}), equal share {equal:.1}"
    );
}

#[test]
fn auto_fills_what_a_stiff_source_leaves() {
    let link = "rate 100mbit limit 333 loss random 0.001% seed 2";
    let udp = [Flow::stiff(10e6, 40e6, 7 * S)];
    let t = autos(link, 40.0, 1, &[], &udp, 20, 100);
    let a = t.mbps(0);
    let best = best_parallel(link, 40.0, &udp, 20, 100);
    eprintln!("measured: beside UDP 10-40: auto {a:.1} Mb/s, best parallel {best:.1}");
    // Capped, the group follows the room the source leaves a little behind it,
    // and half a margin below it: where parallel streams fill each rise of the
    // room at once, auto climbs to it in ticks. (The generality experiment's
    // claim asks 0.9 of it; this pins the design's regressions.)
    assert!(a > 0.8 * best, "auto {a:.1} against {best:.1}");
}

#[test]
fn auto_keeps_up_with_one_cubic_stream_beside_bbr() {
    // Two BDPs of buffer: in less, BBR v1 leaves a CUBIC stream next to nothing.
    let link = "rate 100mbit limit 667";
    let bbr = many(2, Flow::bbr());
    let t = autos(link, 40.0, 1, &[], &bbr, 30, 120);
    let a = t.mbps(0);
    let one = single(link, 40.0, &bbr, 30, 120);
    eprintln!("measured: beside 2 BBR: auto {a:.1} Mb/s, one CUBIC stream {one:.1}");
    assert!(a > 0.7 * one, "auto {a:.1} against {one:.1}");
}

#[test]
fn two_autos_share_a_path_as_evenly_as_two_ordinary_flows_do() {
    // The second starts 10 s after the first, which has the path by then.
    // Beside each other the two become ordinary CUBIC flows, and two CUBIC
    // flows on a drop-tail path may keep an uneven split for minutes (the
    // one that came first holds a larger window through shared losses):
    // evenly is a Jain index of 0.95, or as even as two CUBIC flows in
    // their places share, on each of four loss patterns.
    for seed in [8, 9, 10, 11] {
        let link = format!("rate 100mbit limit 333 loss random 0.001% seed {seed}");
        let t = autos(&link, 40.0, 2, &[0, 10 * S], &[], 40, 130);
        let (a, b) = (t.mbps(0), t.mbps(1));
        let j = jain(&[a, b]);
        let pair = [
            Flow::cubic(),
            Flow {
                start_ns: 10 * S,
                ..Flow::cubic()
            },
        ];
        let o = fixed(&link, 40.0, &pair, 40, 130);
        let cubic = jain(&[o.mbps(0..1), o.mbps(1..2)]);
        eprintln!(
            "measured: seed {seed}: two autos: {a:.1} and {b:.1} Mb/s, Jain {j:.3}; two CUBIC flows {cubic:.3}"
        );
        assert!(
            j >= cubic.min(0.95),
            "seed {seed}: {j:.3} against {cubic:.3}"
        );
    }
}
