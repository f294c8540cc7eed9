//! The generality matrix's claims on virtual time, for design: paths and
//! competition drawn from a development seed (never the judgement's, which
//! is experiments/generality.toml's), braid's auto beside the fixed methods,
//! each claim reported as the share of cells where it holds.
//!
//!     cargo run --release -p braid-sim --example matrix -- [SEED] [CELLS_PER_KIND] [KIND,...]
//!
//! Kinds: idle reno-1 reno-4 reno-16 cubic-1 cubic-4 cubic-16 bbr-1 bbr-4 mix
//! cubic-arrive reno-arrive web udp auto-pair. BRAID_SIM_TRACE=1 prints auto's phases;
//! BRAID_SIM_CELL=N runs each kind's N-th cell alone; BRAID_SIM_MU scales the
//! bottleneck's rate the sessions are told (0: none is told); BRAID_SIM_FAIR
//! sets their `--fair-share` (0: they yield entirely while others are there).
//!
//! BRAID_SIM_CELLS=FILE runs the cells FILE lists instead of drawing them, a
//! line each: `NAME KIND RTT_MS RATE_MBPS LINK...` (braid-link's words for the
//! forward direction). `braidlab sim-cells EXPERIMENT` writes a matrix
//! experiment's cells so, to set braid-sim beside the laboratory on the same
//! paths: how well the two agree, not a design seed.

#[path = "../tests/harness/mod.rs"]
mod harness;

use braid::steer::auto::path::NOISE;
use braid::steer::auto::MU_WITHIN;
use braid_cc::native::Arith;
use braid_link::rng::Rng;
use braid_sim::{jain, poisson, Flow, MSS, WIRE};
use harness::*;

const KINDS: [&str; 15] = [
    "idle",
    "reno-1",
    "reno-4",
    "reno-16",
    "cubic-1",
    "cubic-4",
    "cubic-16",
    "bbr-1",
    "bbr-4",
    "mix",
    "cubic-arrive",
    "reno-arrive",
    "web",
    "udp",
    "auto-pair",
];
/// Measured from WARM to END seconds (the full variant's 60 s after its warm-up).
const WARM: u64 = 10;
const END: u64 = 70;
/// Idle cells are measured from the start too, over this long: a copy of a
/// few gigabytes on a fast path, where the first seconds count.
const START: u64 = 30;

#[derive(Clone, Debug)]
struct Cell {
    /// The laboratory's name of the cell, for cells read from a file.
    name: String,
    kind: &'static str,
    rtt_ms: f64,
    rate_mbps: f64,
    link: String,
}

fn draw(rng: &mut Rng, kind: &'static str, seed: u64) -> Cell {
    let pick = |rng: &mut Rng, n: usize| (rng.next_u64() % n as u64) as usize;
    let rtt_ms = [10.0, 40.0, 100.0, 200.0][pick(rng, 4)];
    let rate_mbps = [20.0, 100.0, 500.0, 1000.0][pick(rng, 4)];
    let buffer: f64 = [0.25, 1.0, 4.0][pick(rng, 3)];
    let loss = [0.0, 1e-5, 1e-4][pick(rng, 3)];
    let red = pick(rng, 2) == 1;
    let bdp = rate_mbps * 1e6 * rtt_ms / 1e3 / 8.0 / 1500.0;
    let limit = (buffer * bdp).round().clamp(8.0, 100_000.0) as u64;
    let mut link = format!("rate {rate_mbps}mbit");
    if red {
        let lo = (limit / 8).max(2);
        let hi = (3 * lo).min(limit - 1);
        link += &format!(
            " red limit {} min {} max {} avpkt 1500 probability 0.1 bandwidth {rate_mbps}mbit",
            limit * 1500,
            lo * 1500,
            hi * 1500
        );
    } else {
        link += &format!(" limit {limit}");
    }
    if loss > 0.0 {
        link += &format!(" loss random {}%", loss * 100.0);
    }
    link += &format!(" seed {seed}");
    Cell {
        name: String::new(),
        kind,
        rtt_ms,
        rate_mbps,
        link,
    }
}

/// The cells a file lists (BRAID_SIM_CELLS), each with the seed of its
/// Poisson arrivals: its line's number.
fn listed(path: &str) -> Vec<(Cell, u64)> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("BRAID_SIM_CELLS {path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .enumerate()
        .map(|(i, line)| {
            let mut w = line.split_whitespace();
            let mut next = |what: &str| {
                w.next()
                    .unwrap_or_else(|| panic!("{path} line {}: no {what}", i + 1))
                    .to_string()
            };
            let (name, kind) = (next("NAME"), next("KIND"));
            let num = |x: String, what: &str| -> f64 {
                x.parse().unwrap_or_else(|_| {
                    panic!("{path} line {}: {what} {x:?} is not a number", i + 1)
                })
            };
            let rtt_ms = num(next("RTT_MS"), "RTT_MS");
            let rate_mbps = num(next("RATE_MBPS"), "RATE_MBPS");
            let link: Vec<&str> = w.collect();
            assert!(!link.is_empty(), "{path} line {}: no LINK", i + 1);
            let cell = Cell {
                name,
                kind: Box::leak(kind.into_boxed_str()),
                rtt_ms,
                rate_mbps,
                link: link.join(" "),
            };
            (cell, i as u64 + 1)
        })
        .collect()
}

/// The competition of a kind, for a path of `rate_mbps`.
fn others(kind: &str, rate_mbps: f64, seed: u64) -> Vec<Flow> {
    let third = (END - WARM) / 3;
    let during = |f: Flow| Flow {
        start_ns: f.start_ns + (WARM + third) * S,
        stop_ns: (WARM + 2 * third) * S,
        ..f
    };
    match kind {
        "idle" | "auto-pair" => vec![],
        "mix" => {
            let mut v = many(2, Flow::new(Arith::Reno));
            v.extend(many(2, Flow::cubic()));
            v.push(Flow::bbr());
            v
        }
        "cubic-arrive" => many(4, Flow::cubic()).into_iter().map(during).collect(),
        "reno-arrive" => many(4, Flow::new(Arith::Reno))
            .into_iter()
            .map(during)
            .collect(),
        "web" => poisson(
            Flow::cubic(),
            0.2 * rate_mbps * 1e6,
            200e3,
            0,
            END * S,
            seed,
        ),
        "udp" => vec![Flow::stiff(
            0.1 * rate_mbps * 1e6,
            0.4 * rate_mbps * 1e6,
            7 * S,
        )],
        k => {
            let (cc, n) = k.split_once('-').expect("a kind is CC-N");
            let f = match cc {
                "reno" => Flow::new(Arith::Reno),
                "cubic" => Flow::cubic(),
                "bbr" => Flow::bbr(),
                _ => panic!("unknown kind {k}"),
            };
            many(n.parse().expect("a count"), f)
        }
    }
}

fn long_flows(kind: &str) -> usize {
    match kind {
        "idle" | "web" | "udp" => 0,
        "auto-pair" => 1,
        "mix" => 5,
        "cubic-arrive" | "reno-arrive" => 4,
        k => k
            .split_once('-')
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or(0),
    }
}

/// One cell's verdicts: (claim, holds), and a line to print.
fn judge(c: &Cell, seed: u64) -> (Vec<(&'static str, bool)>, String) {
    let o = others(c.kind, c.rate_mbps, seed);
    // What the path carries of payload, Mb/s, and an equal share of it.
    let payload = c.rate_mbps * MSS as f64 / WIRE as f64;
    let equal = payload / (long_flows(c.kind) + 1) as f64;
    let mut v = Vec::new();
    let line;
    match c.kind {
        "auto-pair" => {
            let t = autos(&c.link, c.rtt_ms, 2, &[0, 5 * S], &[], WARM, END);
            let (a, b) = (t.mbps(0), t.mbps(1));
            let j = jain(&[a, b]);
            v.push(("two-autos-fair", j >= 0.95));
            line = format!("auto {a:.1} and {b:.1} Jain {j:.3}");
        }
        "cubic-arrive" | "reno-arrive" => {
            let t = autos(&c.link, c.rtt_ms, 1, &[], &o, WARM, END);
            let rates = per_second(&t.moved[0]);
            let third = ((END - WARM) / 3) as f64;
            let (arrive, leave) = (WARM as f64 + third, WARM as f64 + 2.0 * third);
            let beside = mean_between(&rates, arrive, leave);
            let single_beside = single(&c.link, c.rtt_ms, &o, arrive as u64, leave as u64);
            let bound = 10f64.max(20.0 * c.rtt_ms / 1e3);
            let (sa, sl) = (
                settle_s(&rates, arrive, leave),
                settle_s(&rates, leave, END as f64),
            );
            v.push((
                "arrivals-band",
                beside >= 0.7 * equal.min(single_beside) && beside <= 1.25 * equal,
            ));
            v.push(("settles-on-arrival", sa <= bound));
            v.push(("settles-on-departure", sl <= bound));
            line = format!(
                "beside {beside:.1} (equal {equal:.1}, single {single_beside:.1}); settled {sa:.0} s, {sl:.0} s (bound {bound:.0}); {}",
                notes(&t)
            );
        }
        kind => {
            let t = autos(&c.link, c.rtt_ms, 1, &[], &o, WARM, END);
            let a = t.mbps(0);
            let (one, others_beside_one) = single_beside(&c.link, c.rtt_ms, &o, WARM, END);
            if matches!(kind, "idle" | "web" | "udp") {
                let best = best_parallel(&c.link, c.rtt_ms, &o, WARM, END);
                let claim = match kind {
                    "idle" => "idle-fast",
                    "web" => "web-fast",
                    _ => "udp-fast",
                };
                v.push((claim, a >= 0.9 * best));
                let mut l = format!(
                    "auto {a:.1} ({} streams), best parallel {best:.1}, single {one:.1}; {}",
                    t.streams[0],
                    notes(&t)
                );
                if kind == "idle" {
                    // What a user's copy of a few seconds' worth sees: the start counts.
                    let a0 = autos(&c.link, c.rtt_ms, 1, &[], &o, 0, START).mbps(0);
                    let best0 = best_parallel(&c.link, c.rtt_ms, &o, 0, START);
                    v.push(("idle-fast-from-start", a0 >= 0.9 * best0));
                    l += &format!("; first {START} s: auto {a0:.1}, best parallel {best0:.1}");
                }
                line = l;
            } else if kind.starts_with("bbr") {
                v.push(("bbr-floor", a >= 0.7 * one));
                line = format!("auto {a:.1}, single {one:.1}; {}", notes(&t));
            } else {
                v.push((
                    "shared-band",
                    a >= 0.7 * equal.min(one) && a <= 1.25 * equal,
                ));
                // How full the path was: where auto and the others together leave
                // much of it unused, nobody's rate was held by the bottleneck.
                let others = t.others(1, o.len());
                // What auto took from the others beyond what an ordinary transfer
                // takes: they move at least 0.9 x what they move beside one CUBIC
                // stream (a development reading, not one of the judged claims;
                // the same 0.9 as the idle claim's "as fast as").
                let kept = others / others_beside_one;
                v.push(("others-kept", kept >= 0.9));
                // Whether any design that holds idle-fast can hold the band here. On the
                // cell's idle twin (the same path, nobody on it) such a design moves 0.9 x
                // the best parallel-N at least. Here it tells the cell from its twin only by
                // something the others do to its packets: where it can fill the room they
                // leave (the most 32 CUBIC streams move on the twin reaches the room, short
                // of µ's error), a queue stands while it moves less than µ, and it can. Where
                // it cannot, at the most it can move the others' packets meet its own only in
                // passing if the bottleneck drops nothing for its queue beyond what random
                // loss explains (two standard deviations of the random drops' count, with a
                // constant stream at that rate beside the others): then no sender can tell
                // the cell from its twin, and above 1.25 x an equal share the band is out
                // of reach.
                let twin = best_parallel(&c.link, c.rtt_ms, &[], WARM, END);
                let room = payload - others_beside_one;
                let most = fixed(&c.link, c.rtt_ms, &many(32, Flow::cubic()), WARM, END)
                    .mbps(0..32)
                    .max(twin);
                let blind = 0.9 * twin > 1.25 * equal && most < room * (1.0 - MU_WITHIN);
                let beside_most = blind.then(|| {
                    let wire_bps = most * 1e6 * WIRE as f64 / MSS as f64;
                    let stream = Flow::stiff(wire_bps, wire_bps, 0);
                    fixed(&c.link, c.rtt_ms, &beside(vec![stream], &o), WARM, END)
                });
                let forced = beside_most.as_ref().is_some_and(|x| {
                    x.congestion_drops as f64 <= 2.0 * (x.random_drops as f64).sqrt()
                });
                v.push(("band-reachable", !forced));
                line = format!(
                    "auto {a:.1}, equal {equal:.1}, single {one:.1}; others {others:.1} (beside single {others_beside_one:.1}, kept {kept:.2}), path used {:.2}; idle twin's best parallel {twin:.1}, room {room:.1}{}{}; {}",
                    (a + others) / payload,
                    beside_most.map_or(String::new(), |x| format!(
                        ", the most 32 streams move there {most:.1}: a constant stream at it meets drops for the queue {} (random {})",
                        x.congestion_drops,
                        x.random_drops
                    )),
                    if forced { " (the band out of reach)" } else { "" },
                    notes(&t)
                );
            }
        }
    }
    (v, line)
}

/// What held the first auto: its phases over the measured time, and the
/// queue it read while its group moved less than µ (by more than µ's
/// error): the median, and how often it was under the RTT's noise
/// (`path::NOISE`, the level below which auto reads no queue).
/// With others on a busy bottleneck the queue seldom clears; on a path
/// that is not full it does.
fn notes(t: &harness::Trace) -> String {
    let mut s = t.phase_shares(0);
    if let Some((median, clear)) = t.queue_short_of_mu(0, NOISE.as_secs_f64() * 1e3) {
        s += &format!(
            "; short of mu: queue {median:.1} ms, clear {:.0} %",
            100.0 * clear
        );
    }
    let l = &t.losses[0];
    if let (Some(p), Some(rtt)) = (l.event_rate(), l.rtt_s()) {
        let (reno, cubic) = one_flow_mbps(p, rtt);
        s += &format!(
            "; loss events {p:.1e} at {:.0} ms: one Reno flow {reno:.1}, one CUBIC flow {cubic:.1}",
            rtt * 1e3
        );
    }
    s
}

/// What one flow moves, Mb/s, at a loss event rate `p` and an RTT of
/// `rtt` s, by the response functions: Reno's 1.22 / sqrt(p) packets a
/// round trip (Mathis et al. 1997), and CUBIC's average window
/// (C (3 + b) / (4 (1 - b)))^(1/4) (RTT / p)^(3/4) with C = 0.4 and b =
/// 0.7, or Reno's where that is more (its Reno-friendly region; RFC 9438).
fn one_flow_mbps(p: f64, rtt: f64) -> (f64, f64) {
    let pkts = |w: f64| w * MSS as f64 * 8.0 / rtt / 1e6;
    let reno = (1.5 / p).sqrt();
    let (c, b): (f64, f64) = (0.4, 0.7);
    let cubic = (c * (3.0 + b) / (4.0 * (1.0 - b))).powf(0.25) * (rtt / p).powf(0.75);
    (pkts(reno), pkts(cubic.max(reno)))
}

/// Wilson's 95 % interval of `k` of `n`.
fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, 1.96f64);
    let d = 1.0 + z * z / n;
    let c = (p + z * z / (2.0 * n)) / d;
    let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    (c - h, c + h)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seed: u64 = args
        .first()
        .map_or(1, |s| s.parse().expect("SEED is a number"));
    let per: usize = args
        .get(1)
        .map_or(2, |s| s.parse().expect("CELLS_PER_KIND is a number"));
    let drawing = std::env::var_os("BRAID_SIM_CELLS").is_none();
    let kinds: Vec<&'static str> = match args.get(2).filter(|_| drawing) {
        Some(list) => list
            .split(',')
            .map(|k| {
                *KINDS
                    .iter()
                    .find(|x| **x == k)
                    .unwrap_or_else(|| panic!("unknown kind {k}"))
            })
            .collect(),
        None => KINDS.to_vec(),
    };
    // Each cell's path from its own generator (the seed, its kind, its number), so that a
    // kind run alone draws the same paths as in the whole matrix.
    let listed_cells = std::env::var("BRAID_SIM_CELLS").ok().map(|f| {
        // KIND,... picks the listed cells of those kinds (any the file names).
        let only: Option<Vec<&str>> = args.get(2).map(|l| l.split(',').collect());
        listed(&f)
            .into_iter()
            .filter(|(c, _)| only.as_ref().is_none_or(|o| o.contains(&c.kind)))
            .collect::<Vec<_>>()
    });
    let cells: Vec<(Cell, u64)> = if let Some(cells) = listed_cells {
        cells
    } else {
        kinds
            .iter()
            .flat_map(|k| (0..per).map(move |i| (*k, i)))
            .map(|(k, i)| {
                let kind_no = KINDS.iter().position(|x| *x == k).expect("a kind") as u64;
                let s = seed * 1_000_000 + kind_no * 1000 + i as u64;
                (draw(&mut Rng::new(s), k, s), s)
            })
            // BRAID_SIM_CELL=N: only each kind's N-th cell (to trace one).
            .filter(|(_, s)| {
                std::env::var("BRAID_SIM_CELL")
                    .ok()
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_none_or(|n| s % 1000 == n)
            })
            .collect()
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((c, s)) = cells.get(i) else { break };
                let (v, line) = judge(c, *s);
                let verdicts: String = v
                    .iter()
                    .map(|(n, h)| format!(" {n}:{}", if *h { "holds" } else { "FAILS" }))
                    .collect();
                println!(
                    "{:13} {:>4} ms {:>5} Mb/s  {:<60} {line}{verdicts}",
                    if c.name.is_empty() { c.kind } else { &c.name },
                    c.rtt_ms,
                    c.rate_mbps,
                    c.link
                );
                results.lock().unwrap().extend(v);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut claims: Vec<&str> = results.iter().map(|(c, _)| *c).collect();
    claims.sort();
    claims.dedup();
    println!("\nclaim                  holds   share  95 % interval");
    for c in claims {
        let n = results.iter().filter(|(x, _)| *x == c).count();
        let k = results.iter().filter(|(x, h)| *x == c && *h).count();
        let (lo, hi) = wilson(k, n);
        println!(
            "{c:22} {k:>2}/{n:<3} {:>5.0} %  {:.0}-{:.0} %",
            100.0 * k as f64 / n as f64,
            100.0 * lo,
            100.0 * hi
        );
    }
}
