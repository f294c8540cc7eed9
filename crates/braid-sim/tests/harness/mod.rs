//! braid's `--mode auto` (braid::steer::auto::Auto) on virtual time: each session
//! is `MOST` CUBIC streams, steered as the engine steers them (how many
//! carry, each one's rate cap) from what TCP_INFO would say of each, beside
//! other flows. Shared by the auto tests and the design matrix
//! (examples/matrix.rs).
#![allow(dead_code)] // each user takes its own part

use std::time::Duration;

use braid::proto::steer::{Looks, Steer, Steering, StreamView};
use braid::steer::auto::{Auto, MU_WITHIN};
use braid_sim::{Flow, FlowView, Outcome, Run, SimSteering, MSS};

pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;
/// A session's streams at the most (the CLI's default `-n` for auto).
pub const MOST: usize = 32;

/// A path one way: braid-link's words, and half the RTT of delay with 1 ms of jitter.
pub fn cfg(link: &str, rtt_ms: f64) -> braid_link::Config {
    braid_link::spec::parse(&format!("{link} delay {}ms 1ms", rtt_ms / 2.0))
        .expect("a valid link spec")
}

/// `n` flows like `f`, 37 ms apart (flows started together lose in lockstep).
pub fn many(n: usize, f: Flow) -> Vec<Flow> {
    (0..n)
        .map(|i| Flow {
            start_ns: f.start_ns + i as u64 * 37 * MS,
            ..f
        })
        .collect()
}

/// What a run of sessions saw: its outcome (each session's streams first,
/// then the others), and each session's packets delivered at each tick.
pub struct Trace {
    pub outcome: Outcome,
    pub moved: Vec<Vec<(f64, u64)>>,
    /// Each session's carrying streams at its last tick.
    pub streams: Vec<usize>,
    /// Each session's seconds in each phase over the measured time (`full`
    /// split into `full-capped` and `full`): which rule held the group.
    pub phases: Vec<Vec<(&'static str, f64)>>,
    /// Each session's queue at each tick of the measured time, ms, and
    /// whether the group then moved less than µ by more than µ's error.
    pub queues: Vec<Vec<(f64, bool)>>,
    /// Each session's packets sent, loss events (a stream's slow-start
    /// threshold moved) and RTT samples (the carrying streams' smoothed
    /// RTTs, s) over the measured time.
    pub losses: Vec<Losses>,
}

/// What a session's streams saw of the path's losses over the measured time.
#[derive(Clone, Debug, Default)]
pub struct Losses {
    pub sent: u64,
    pub events: u64,
    rtt_sum: f64,
    rtt_n: u64,
}

impl Losses {
    /// Loss events per packet sent.
    pub fn event_rate(&self) -> Option<f64> {
        (self.sent > 0 && self.events > 0).then(|| self.events as f64 / self.sent as f64)
    }

    /// The mean of the streams' smoothed RTTs, s.
    pub fn rtt_s(&self) -> Option<f64> {
        (self.rtt_n > 0).then(|| self.rtt_sum / self.rtt_n as f64)
    }
}

impl Trace {
    /// Session `i`'s Mb/s over the measured time.
    pub fn mbps(&self, i: usize) -> f64 {
        self.outcome.mbps(i * MOST..(i + 1) * MOST)
    }

    /// The others' flows, from the first after the sessions.
    pub fn others(&self, sessions: usize, n: usize) -> f64 {
        self.outcome.mbps(sessions * MOST..sessions * MOST + n)
    }

    /// Session `i`'s queue while its group moved less than µ (by more than
    /// µ's error): the median, ms, and the share of those ticks with less
    /// than `clear_ms` (with others on the bottleneck it is busy, and the
    /// queue seldom clears). None if no tick was short of µ.
    pub fn queue_short_of_mu(&self, i: usize, clear_ms: f64) -> Option<(f64, f64)> {
        let mut q: Vec<f64> = self.queues[i].iter().filter(|x| x.1).map(|x| x.0).collect();
        if q.is_empty() {
            return None;
        }
        q.sort_by(|a, b| a.total_cmp(b));
        let clear = q.iter().filter(|x| **x < clear_ms).count() as f64 / q.len() as f64;
        Some((q[q.len() / 2], clear))
    }

    /// Session `i`'s phases as shares of the measured time, the longest first.
    pub fn phase_shares(&self, i: usize) -> String {
        let mut p = self.phases[i].clone();
        let total: f64 = p.iter().map(|x| x.1).sum();
        p.sort_by(|a, b| b.1.total_cmp(&a.1));
        p.iter()
            .map(|(name, s)| format!("{name} {:.0} %", 100.0 * s / total.max(1e-9)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A session's payload bytes a second over its last tick, from what it had
/// delivered at each tick.
fn last_tick_rate(moved: &[(f64, u64)]) -> Option<f64> {
    let [.., (t0, n0), (t1, n1)] = moved else {
        return None;
    };
    Some((n1 - n0) as f64 * MSS as f64 / (t1 - t0))
}

/// One session's view of its streams, as the engine builds it from TCP_INFO.
fn stream_views(views: &[FlowView]) -> Vec<StreamView> {
    views
        .iter()
        .enumerate()
        .map(|(i, v)| StreamView {
            stream: i,
            wanted: v.carrying,
            bytes: v.delivered * MSS as u64,
            info: (v.active && v.carrying && v.srtt_ns > 0).then(|| braid_cc::TcpInfo {
                srtt_us: (v.srtt_ns / 1000) as u32,
                min_rtt_us: (v.min_srtt_ns / 1000) as u32,
                cwnd: v.cwnd,
                ssthresh: v.ssthresh.min(i32::MAX as u32),
                unacked: v.in_flight,
                ca_state: if v.recovering { 3 } else { 0 },
                mss: MSS as u32,
                bytes_acked: v.delivered * MSS as u64,
                delivered: v.delivered as u32,
                data_segs_out: v.sent as u32,
                total_retrans: v.lost as u32,
                ..Default::default()
            }),
        })
        .collect()
}

/// `sessions` autos, the k-th starting at `starts_ns[k]` (0 if not given),
/// then `others`, through `link` at `rtt_ms`, measured from `from_s` to `to_s`.
/// BRAID_SIM_TRACE=1 prints each change of phase.
pub fn autos(
    link: &str,
    rtt_ms: f64,
    sessions: usize,
    starts_ns: &[u64],
    others: &[Flow],
    from_s: u64,
    to_s: u64,
) -> Trace {
    let start = |k: usize| starts_ns.get(k).copied().unwrap_or(0);
    let mut flows = Vec::new();
    for k in 0..sessions {
        flows.extend((0..MOST).map(|_| Flow {
            start_ns: start(k),
            ..Flow::cubic().in_session()
        }));
    }
    let flows = beside(flows, others);
    // BRAID_SIM_FAIR: the sessions' `--fair-share` (1 unless given; 0: they yield entirely).
    let fair = std::env::var("BRAID_SIM_FAIR").map_or(1, |v| v.parse().unwrap_or(1));
    let mut autos: Vec<Auto> = (0..sessions).map(|_| Auto::new(MOST, fair, true)).collect();
    let mut due: Vec<u64> = (0..sessions).map(start).collect();
    // Each session's next look between its ticks (`Steer::sample`).
    let mut look: Vec<u64> = (0..sessions).map(start).collect();
    let mut moved: Vec<Vec<(f64, u64)>> = vec![Vec::new(); sessions];
    let mut phases: Vec<Vec<(&'static str, f64)>> = vec![Vec::new(); sessions];
    // Each session's phase since its last tick, and when that tick was.
    let mut held: Vec<Option<(&'static str, f64)>> = vec![None; sessions];
    let mut queues: Vec<Vec<(f64, bool)>> = vec![Vec::new(); sessions];
    let mut losses: Vec<Losses> = vec![Losses::default(); sessions];
    // Each stream's (sent, ssthresh) at its session's last tick.
    let mut last: Vec<Vec<(u64, u32)>> = vec![vec![(0, u32::MAX); MOST]; sessions];
    let trace = std::env::var_os("BRAID_SIM_TRACE").is_some();
    // BRAID_SIM_TRACE=2: every tick; 3: every tick's carrying streams too.
    let level = std::env::var("BRAID_SIM_TRACE").map_or(0, |v| v.parse().unwrap_or(1));
    let ticks = level >= 2;
    // The bottleneck's rate as the receiving end would tell it (payload bytes
    // a second), times BRAID_SIM_MU (1 unless given; 0: nobody tells it, as
    // from a peer that does not measure it).
    let mu_scale: f64 = std::env::var("BRAID_SIM_MU").map_or(1.0, |v| v.parse().unwrap_or(1.0));
    let path = cfg(link, rtt_ms);
    let mu = path
        .rate_bps
        .map(|bps| bps as f64 / 8.0 * MSS as f64 / braid_sim::WIRE as f64 * mu_scale)
        .filter(|m| *m > 0.0);
    let mut steer = |now: u64, views: &[FlowView]| {
        let t = now as f64 / 1e9;
        let mut asked = Vec::new();
        for k in 0..sessions {
            let mine = &views[k * MOST..(k + 1) * MOST];
            if now < due[k] {
                if now >= look[k] && now >= start(k) {
                    let a = &mut autos[k];
                    a.sample(Duration::from_nanos(now - start(k)), &stream_views(mine));
                    // The next on the tick's grid, as the engine's senders take them.
                    let every = a
                        .looks()
                        .map_or(u64::MAX / 4, |l| l.every.as_nanos() as u64);
                    look[k] = Looks::next_on_grid(look[k], every, now);
                }
                continue;
            }
            // A tick reads every stream as a look would, as in the engine:
            // the looks it asks for are of the next tick.
            look[k] = now
                + autos[k]
                    .looks()
                    .map_or(u64::MAX / 4, |l| l.first.as_nanos() as u64);
            moved[k].push((t, mine.iter().map(|v| v.delivered).sum()));
            let a = &mut autos[k];
            // The phase since the last tick, counted over the measured time.
            if let Some((name, since)) = held[k] {
                let (lo, hi) = (since.max(from_s as f64), t.min(to_s as f64));
                if hi > lo {
                    match phases[k].iter_mut().find(|x| x.0 == name) {
                        Some(x) => x.1 += hi - lo,
                        None => phases[k].push((name, hi - lo)),
                    }
                }
            }
            let before = a.phase().name();
            let since = Duration::from_nanos(now - start(k));
            if let Some(mu) = mu {
                a.bottleneck(mu);
            }
            for s in a.tick(since, &stream_views(mine)) {
                match s {
                    Steering::Streams(n) => asked
                        .extend((0..MOST).map(|i| SimSteering::Carry(k * MOST + i, i < n.max(1)))),
                    Steering::Pace(i, rate) => asked.push(SimSteering::Pace(k * MOST + i, rate)),
                    Steering::Control(..) => {}
                }
            }
            if ticks {
                let st = a.state().expect("auto tells its state");
                let rate = last_tick_rate(&moved[k]).map(|r| r * 8.0 / 1e6);
                eprintln!(
                    "  [{k}] {t:7.2} s  {:6} n {:2}  queue {:6.1} ms  cap {:>7.1}  moved {:>7.1} Mb/s",
                    a.phase().name(),
                    a.streams(),
                    st.queue_us.unwrap_or(0) as f64 / 1000.0,
                    st.share_bps.map_or(f64::NAN, |b| b * 8.0 / 1e6),
                    rate.unwrap_or(f64::NAN)
                );
            }
            if level >= 3 {
                for (i, v) in mine.iter().enumerate().filter(|(_, v)| v.carrying) {
                    eprintln!(
                        "  [{k}.{i}] cwnd {} ssthresh {} srtt {:.1} ms min {:.1} ms lost {}",
                        v.cwnd,
                        v.ssthresh,
                        v.srtt_ns as f64 / 1e6,
                        v.min_srtt_ns as f64 / 1e6,
                        v.lost
                    );
                }
            }
            if trace && a.phase().name() != before {
                let st = a.state().expect("auto tells its state");
                eprintln!(
                    "  [{k}] {t:7.2} s  {before} -> {}  streams {}  queue {:.1} ms  cap {:?} Mb/s",
                    a.phase().name(),
                    a.streams(),
                    st.queue_us.unwrap_or(0) as f64 / 1000.0,
                    st.share_bps.map(|b| (b * 8.0 / 1e6).round())
                );
            }
            let st = a.state().expect("auto tells its state");
            let name = match (a.phase().name(), st.share_bps) {
                ("full", Some(_)) => "full-capped",
                (n, _) => n,
            };
            held[k] = Some((name, t));
            if t >= from_s as f64 && t <= to_s as f64 {
                // Short of µ by more than auto's own allowance for µ's error.
                let short = last_tick_rate(&moved[k])
                    .zip(mu)
                    .is_some_and(|(r, mu)| r < mu * (1.0 - MU_WITHIN));
                queues[k].push((st.queue_us.unwrap_or(0) as f64 / 1000.0, short));
                let l = &mut losses[k];
                for (i, v) in mine.iter().enumerate() {
                    let (sent, ssthresh) = last[k][i];
                    l.sent += v.sent.saturating_sub(sent);
                    if v.ssthresh != ssthresh && v.ssthresh != u32::MAX {
                        l.events += 1;
                    }
                    if v.carrying && v.srtt_ns > 0 {
                        l.rtt_sum += v.srtt_ns as f64 / 1e9;
                        l.rtt_n += 1;
                    }
                }
            }
            for (i, v) in mine.iter().enumerate() {
                last[k][i] = (v.sent, v.ssthresh);
            }
            due[k] = now + a.interval().as_nanos() as u64;
        }
        let next = due
            .iter()
            .chain(&look)
            .map(|d| d.saturating_sub(now))
            .min()
            .unwrap_or(u64::MAX);
        (asked, next.max(1))
    };
    // Until its first tick a session's streams beyond auto's first do not carry.
    let first = braid::steer::auto::first_streams(MOST, 1);
    let mut run = Run::new(path, (rtt_ms / 2.0 * 1e6) as u64, &flows);
    let parked: Vec<SimSteering> = (0..sessions)
        .flat_map(|k| (first..MOST).map(move |i| SimSteering::Carry(k * MOST + i, false)))
        .collect();
    run.steer_now(&parked);
    let outcome = run.measure_steered(from_s * S, to_s * S, 0, &mut steer);
    Trace {
        outcome,
        moved,
        streams: autos.iter().map(|a| a.streams()).collect(),
        phases,
        queues,
        losses,
    }
}

/// `flows` alone (the fixed methods) through the same path.
pub fn fixed(link: &str, rtt_ms: f64, flows: &[Flow], from_s: u64, to_s: u64) -> Outcome {
    Run::new(cfg(link, rtt_ms), (rtt_ms / 2.0 * 1e6) as u64, flows).measure(from_s * S, to_s * S)
}

/// The best of parallel-4 and parallel-16 of CUBIC beside `others`: the idle yardstick.
pub fn best_parallel(link: &str, rtt_ms: f64, others: &[Flow], from_s: u64, to_s: u64) -> f64 {
    [4usize, 16]
        .into_iter()
        .map(|n| {
            fixed(
                link,
                rtt_ms,
                &beside(many(n, Flow::cubic()), others),
                from_s,
                to_s,
            )
            .mbps(0..n)
        })
        .fold(0.0, f64::max)
}

/// One CUBIC stream beside `others`, as the `single` method runs.
pub fn single(link: &str, rtt_ms: f64, others: &[Flow], from_s: u64, to_s: u64) -> f64 {
    single_beside(link, rtt_ms, others, from_s, to_s).0
}

/// One CUBIC stream beside `others`: what it moves, and what they move
/// beside it (the rate an ordinary transfer leaves them).
pub fn single_beside(
    link: &str,
    rtt_ms: f64,
    others: &[Flow],
    from_s: u64,
    to_s: u64,
) -> (f64, f64) {
    let out = fixed(
        link,
        rtt_ms,
        &beside(vec![Flow::cubic()], others),
        from_s,
        to_s,
    );
    (out.mbps(0..1), out.mbps(1..1 + others.len()))
}

/// A method's `flows`, then `others`, each 17 ms after its own start: the
/// same offset for every method, so that each meets the competition alike.
pub fn beside(mut flows: Vec<Flow>, others: &[Flow]) -> Vec<Flow> {
    flows.extend(others.iter().map(|o| Flow {
        start_ns: o.start_ns + 17 * MS,
        ..*o
    }));
    flows
}

/// The rate in Mb/s over each second.
pub fn per_second(moved: &[(f64, u64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let Some(&first) = moved.first() else {
        return out;
    };
    let mut last = first;
    for &(t, n) in moved {
        if t.floor() > last.0.floor() {
            out.push((
                t,
                (n - last.1) as f64 * MSS as f64 * 8.0 / (t - last.0) / 1e6,
            ));
            last = (t, n);
        }
    }
    out
}

/// The mean of per-second rates in (lo, hi].
pub fn mean_between(rates: &[(f64, f64)], lo: f64, hi: f64) -> f64 {
    let r: Vec<f64> = rates
        .iter()
        .filter(|(t, _)| *t > lo && *t <= hi)
        .map(|x| x.1)
        .collect();
    r.iter().sum::<f64>() / r.len().max(1) as f64
}

/// Seconds after `change` until the rate settled, as braidlab.metrics.settle_time
/// judges it: from then to `end` every mean over the last 3 s lies within 10 % of
/// the median over the phase's second half. Infinite if it never did.
pub fn settle_s(rates: &[(f64, f64)], change: f64, end: f64) -> f64 {
    let pts: Vec<(f64, f64)> = rates
        .iter()
        .copied()
        .filter(|(t, _)| *t > change && *t <= end)
        .collect();
    let mut tail: Vec<f64> = pts
        .iter()
        .filter(|(t, _)| *t > (change + end) / 2.0)
        .map(|(_, r)| *r)
        .collect();
    if tail.is_empty() {
        return f64::INFINITY;
    }
    tail.sort_by(|a, b| a.total_cmp(b));
    let settled = tail[tail.len() / 2];
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
