//! Auto's phases against a path of a few lines (`Path`): a bottleneck, a
//! rate each stream's random losses hold it to, and others beside it that
//! fill whatever room there is (flows that back off and grow back) or send
//! at their own rate (a stiff source). braid-sim and the laboratory measure
//! auto on real windows; here each rule is pinned on its own.

use super::*;
use braid_cc::TcpInfo;

const MB: f64 = 1e6;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Others {
    Nobody,
    /// `m` flows that back off: they fill the path and share it per flow.
    Elastic(usize),
    /// A source at this rate, bytes a second, that does not back off.
    Stiff(f64),
}

struct Path {
    capacity: f64,
    /// What random loss holds one stream to, bytes a second.
    per_stream: f64,
    base_ms: f64,
    /// What the two hosts can move at most (their CPU): it holds the group
    /// back before the bottleneck, so no queue comes of it.
    host: f64,
    /// What each stream's socket buffer lets it move, bytes a second: a
    /// stream it holds spends its busy time held by it (the kernel's chronographs).
    buffer: f64,
    /// A queue others keep at the bottleneck without filling it (a bursty
    /// source's), ms: in every stream's RTT, taking nothing from the streams.
    kept_queue_ms: f64,
    others: Others,
    acked: Vec<u64>,
    /// Per stream: (busy, held by its buffer), µs.
    chrono: Vec<(u64, u64)>,
    /// The streams' caps as auto told them.
    caps: Vec<Option<u64>>,
    carrying: usize,
    /// Streams with blocks to send (the rest of a transfer's end is in flight
    /// on these; the others wait, moving nothing).
    with_work: usize,
    /// What the group moves swings this far above and below its mean, three
    /// ticks up and three down (a path's own noise, as auto's spread reads it).
    wobble: f64,
    ticks: u64,
}

impl Path {
    fn new(capacity: f64, per_stream: f64, base_ms: f64) -> Path {
        Path {
            capacity,
            per_stream,
            base_ms,
            host: f64::INFINITY,
            buffer: f64::INFINITY,
            kept_queue_ms: 0.0,
            others: Others::Nobody,
            acked: vec![0; 64],
            chrono: vec![(0, 0); 64],
            caps: vec![None; 64],
            carrying: 0,
            with_work: usize::MAX,
            wobble: 0.0,
            ticks: 0,
        }
    }

    /// One tick of `dt`: what the streams moved, and whether a queue stood.
    fn step(&mut self, a: &Auto, dt: Duration) -> Vec<StreamView> {
        let n = self.carrying.max(1);
        // What holds each stream short of its buffer: its losses, its cap, its work.
        let own: Vec<f64> = (0..n)
            .map(|i| {
                let cap = self.caps[i].map_or(f64::INFINITY, |c| c as f64);
                let work = if i < self.with_work {
                    f64::INFINITY
                } else {
                    0.0
                };
                self.per_stream.min(cap).min(work)
            })
            .collect();
        let want: Vec<f64> = own.iter().map(|o| o.min(self.buffer)).collect();
        let by_buffer: Vec<bool> = own.iter().map(|o| self.buffer < *o).collect();
        // Streams without a limit of their own share equally what they get.
        let want: Vec<f64> = want.iter().map(|w| w.min(self.capacity)).collect();
        let wanted: f64 = want.iter().sum();
        let demand = wanted.min(self.host);
        let (ours, standing) = match self.others {
            Others::Nobody => (demand.min(self.capacity), demand >= self.capacity),
            Others::Elastic(m) => {
                let share = self.capacity * n as f64 / (n + m) as f64;
                (
                    demand.min(share.max(self.capacity - demand.min(self.capacity))),
                    true,
                )
            }
            Others::Stiff(s) => {
                let room = (self.capacity - s).max(0.0);
                (demand.min(room), demand >= room)
            }
        };
        // Three ticks up and three down, in step with the spread's samples.
        let swing = if (self.ticks / 3) % 2 == 0 { 1.0 } else { -1.0 };
        self.ticks += 1;
        let ours = ours * (1.0 + swing * self.wobble);
        let threshold = a.delay.threshold().as_secs_f64() * 1e3;
        let srtt = self.base_ms + self.kept_queue_ms + if standing { 2.0 * threshold } else { 0.0 };
        (0..64)
            .map(|i| {
                let carrying = i < n;
                if carrying && want[i] > 0.0 {
                    self.acked[i] += (ours * want[i] / wanted.max(1.0) * dt.as_secs_f64()) as u64;
                    let us = dt.as_micros() as u64;
                    self.chrono[i].0 += us;
                    // A full path holds the stream by its losses, whatever its buffer.
                    if by_buffer[i] && !standing {
                        self.chrono[i].1 += us;
                    }
                }
                StreamView {
                    stream: i,
                    wanted: carrying,
                    bytes: self.acked[i],
                    info: (i < 32).then(|| TcpInfo {
                        srtt_us: (srtt * 1e3) as u32,
                        min_rtt_us: (self.base_ms * 1e3) as u32,
                        ssthresh: 100,
                        bytes_acked: self.acked[i],
                        delivered: (self.acked[i] / 1448) as u32,
                        mss: 1448,
                        busy_us: self.chrono[i].0,
                        sndbuf_limited_us: self.chrono[i].1,
                        ..Default::default()
                    }),
                }
            })
            .collect()
    }

    fn told(&mut self, steerings: &[Steering]) {
        for s in steerings {
            match s {
                Steering::Streams(n) => self.carrying = *n,
                Steering::Pace(i, c) => self.caps[*i] = *c,
                Steering::Control(..) => {}
            }
        }
    }
}

/// Runs auto on `path` until `until`, calling `change` at each tick first
/// (with auto's phase then).
fn run(
    a: &mut Auto,
    path: &mut Path,
    until: Duration,
    mut change: impl FnMut(Duration, &mut Path, Phase),
) {
    let mut now = Duration::ZERO;
    path.carrying = a.streams();
    while now < until {
        change(now, path, a.phase());
        let before = a.phase().name();
        let dt = a.interval();
        let views = path.step(a, dt);
        now += dt;
        let asked = a.tick(now, &views);
        if a.phase().name() != before {
            crate::errln!(
                "{now:?}: {before} -> {:?}, {} streams, cap {:?}",
                a.phase(),
                a.streams(),
                a.cap
            );
        }
        path.told(&asked);
        if !a.dials {
            path.carrying = a.streams();
        }
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn on_an_idle_lossy_path_it_adds_streams_until_the_path_is_full_then_keeps_them() {
    // 100 MB/s, each stream held to 5 MB/s by random loss: some 20 streams fill it.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut caps = Vec::new();
    run(&mut a, &mut p, secs(90), |now, p, _| {
        caps.push((now, group_cap(p)));
    });
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    assert!(a.streams() >= 16, "{}", a.streams());
    // Over the last ten seconds: a cap that climbs past the path steps back
    // a tick after the queue it raised stays.
    let cap = mean_cap(&caps, secs(80), secs(90));
    assert!(cap > 0.75 * 100.0 * MB && cap < 100.0 * MB, "{cap}");
}

/// A minute on a 100 MB/s path two streams fill, the receiving end telling
/// `mu` as the bottleneck's rate (or nothing): auto at the end, and each
/// tick's phase.
fn on_a_path_two_streams_fill(mu: Option<f64>) -> (Auto, Vec<&'static str>) {
    let mut a = Auto::new(32, 1, true);
    if let Some(mu) = mu {
        a.bottleneck(mu);
    }
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut phases = Vec::new();
    run(&mut a, &mut p, secs(60), |_, _, phase| {
        phases.push(phase.name())
    });
    (a, phases)
}

#[test]
fn a_path_two_streams_fill_is_left_at_the_first_doubling_that_bought_nothing_capped_below_it() {
    let (a, phases) = on_a_path_two_streams_fill(None);
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    assert!(phases.contains(&"ask"), "the queue was asked after");
    // Two filled it; four bought nothing more.
    assert_eq!(a.streams(), 4);
    // The cap follows the path's edge: half a margin below it when a queue
    // rises, a step above it at most before the queue answers.
    let cap = a.cap.expect("capped at the path's edge");
    assert!(cap > 0.85 * 100.0 * MB && cap < 1.1 * 100.0 * MB, "{cap}");
}

#[test]
fn told_the_bottleneck_it_fills_it_it_takes_the_queue_for_its_own_and_asks_nobody() {
    // The path of the test above, with the receiving end's word on its rate.
    let (a, phases) = on_a_path_two_streams_fill(Some(100.0 * MB));
    assert!(!phases.contains(&"ask"), "asked whose its own queue was");
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    assert_eq!(
        a.streams(),
        2,
        "the doubling that bought nothing is given back"
    );
    let cap = a.cap.expect("capped at the path's edge");
    assert!(cap > 0.85 * 100.0 * MB && cap < 1.1 * 100.0 * MB, "{cap}");
}

#[test]
fn told_the_bottleneck_a_doubling_that_took_the_rest_of_it_is_kept_however_noisy_the_rate() {
    // Two streams move 84 % of the bottleneck and four fill it, on a path whose
    // rate swings by a tenth: a margin of that noise is as wide as what the
    // doubling bought, but two streams leave the rest of an idle path unused.
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 42.0 * MB, 40.0);
    p.wobble = 0.1;
    let mut late = Vec::new();
    run(&mut a, &mut p, secs(60), |now, _, phase| {
        if now >= secs(30) {
            late.push(phase.name())
        }
    });
    assert_eq!(a.streams(), 4, "the doubling that filled the path is kept");
    assert!(
        late.iter().all(|p| *p == "full"),
        "it settles rather than doubling into its own queue again: {late:?}"
    );
}

#[test]
fn told_the_bottleneck_it_still_asks_when_it_moves_a_part_of_it() {
    // Others that back off carry most of the path: what the group moves is
    // well short of the bottleneck's rate, so the queue may be theirs.
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Elastic(4);
    run(&mut a, &mut p, secs(60), |_, _, _| {});
    assert!(matches!(a.phase(), Phase::Fair { .. }), "{:?}", a.phase());
    assert_eq!(a.streams(), 1);
}

#[test]
fn told_the_bottleneck_a_small_groups_cap_climbs_as_far_above_what_it_moves_as_a_large_ones() {
    // Two autos on one path step down together by fractions of their caps when
    // a queue rises; climbing by the same reach (a fraction of the bottleneck's
    // rate) is what makes their caps converge. Each group here is held by its
    // hosts, below the path, so no queue answers the climb.
    let headroom = |moves: f64| {
        let mut a = Auto::new(32, 1, true);
        a.bottleneck(100.0 * MB);
        a.phase = Phase::Full {
            since: Duration::ZERO,
            slack_since: None,
            peak: None,
            step: 0.0,
        };
        a.cap = Some(0.9 * moves);
        let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
        p.host = moves;
        run(&mut a, &mut p, Duration::from_millis(900), |_, _, _| {});
        assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
        a.cap.expect("still capped") - moves
    };
    let (small, large) = (headroom(20.0 * MB), headroom(70.0 * MB));
    assert!(small > 5.0 * MB, "{small}");
    assert!(
        (small - large).abs() < 0.05 * large,
        "{small} against {large}"
    );
}

#[test]
fn a_word_on_the_bottleneck_well_above_what_the_group_moves_leaves_the_ask_to_decide() {
    // A word too high (a compression after the bottleneck) must not keep the
    // group from asking: alone, the ask drains and it is capped as before.
    let (a, phases) = on_a_path_two_streams_fill(Some(300.0 * MB));
    assert!(phases.contains(&"ask"));
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
}

#[test]
fn the_first_ask_is_a_margin_sized_by_the_paths_noise_not_by_slow_starts_climb() {
    // Two streams fill 100 MB/s, after a slow start that doubles their rate
    // each 40 ms round trip from 0.5 MB/s; the path itself gives a steady rate.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut first_ask = None;
    run(&mut a, &mut p, secs(8), |now, p, phase| {
        let rtts = now.as_secs_f64() / 0.040;
        p.per_stream = (0.5 * MB * 2f64.powf(rtts)).min(1e12);
        if first_ask.is_none() && matches!(phase, Phase::Ask { .. }) {
            first_ask = Some(a_cap_of_group(p));
        }
    });
    let cap = first_ask.expect("asked");
    // The margin's floor (5 %), give or take the steps of a tick.
    assert!(cap >= 0.9 * 100.0 * MB, "asked at {cap}");
}

/// The group's cap as told: its streams' caps added up.
fn a_cap_of_group(p: &Path) -> f64 {
    p.caps[..p.carrying].iter().flatten().sum::<u64>() as f64
}

/// The group's cap as its streams were told it (None: a stream uncapped).
fn group_cap(p: &Path) -> Option<u64> {
    let caps = &p.caps[..p.carrying];
    caps.iter()
        .all(|c| c.is_some())
        .then(|| caps.iter().flatten().sum::<u64>())
}

/// The mean of the group's cap over the ticks from `from` to `to`, every one capped.
fn mean_cap(caps: &[(Duration, Option<u64>)], from: Duration, to: Duration) -> f64 {
    let within: Vec<f64> = caps
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, c)| c.expect("capped") as f64)
        .collect();
    within.iter().sum::<f64>() / within.len() as f64
}

#[test]
fn a_knee_that_one_doubling_measured_wrongly_is_left_when_no_queue_comes() {
    // 100 MB/s, each stream held to 5 MB/s by random loss; while the first four
    // streams are measured, their losses hold them to half that (a sawtooth's
    // trough): the doubling looks as if it bought nothing.
    // The next measurement of the same streams is another sawtooth's.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut knee_at = None;
    run(&mut a, &mut p, secs(90), |now, p, phase| {
        let trough = knee_at.is_none() && matches!(phase, Phase::Grow { .. }) && p.carrying == 4;
        p.per_stream = if trough { 2.5 * MB } else { 5.0 * MB };
        if knee_at.is_none() && matches!(phase, Phase::Full { .. }) {
            knee_at = Some(now);
        }
    });
    assert!(knee_at.is_some(), "the doubling was measured in its trough");
    assert!(a.streams() >= 16, "{}", a.streams());
}

#[test]
fn told_the_bottleneck_a_doubling_measured_in_the_drops_it_brought_is_kept_while_the_path_has_room()
{
    // 100 MB/s; random loss holds each stream to 20 MB/s, and while the first
    // four are measured the drops their slow start brought hold every stream
    // to half that: four move what two moved, and the path has room.
    // Told µ, the four are kept (two leave the room unused); not told, the
    // room is not known and the doubling is given back.
    for (mu, kept) in [(Some(100.0 * MB), 4), (None, 2)] {
        let mut a = Auto::new(32, 1, true);
        if let Some(mu) = mu {
            a.bottleneck(mu);
        }
        let mut p = Path::new(100.0 * MB, 20.0 * MB, 40.0);
        let mut at_knee = None;
        run(&mut a, &mut p, secs(30), |_, p, phase| {
            let first_four =
                at_knee.is_none() && matches!(phase, Phase::Grow { .. }) && p.carrying == 4;
            p.per_stream = if first_four { 10.0 * MB } else { 20.0 * MB };
            if at_knee.is_none() && matches!(phase, Phase::Full { .. }) {
                at_knee = Some(p.carrying);
            }
        });
        assert_eq!(at_knee, Some(kept), "told µ {mu:?}");
    }
}

#[test]
fn told_the_bottleneck_a_group_that_moves_it_opens_no_more_streams() {
    // 100 MB/s; random loss holds each stream to 24.25 MB/s, so four move 97
    // MB/s with no queue (within µ's error of the path, as under RED, which
    // holds a full path's queue low). Told µ, the four are held by the path:
    // eight would bring only a queue (and their slow start's drops), and no
    // FREE without a queue tries them. Not told, the four are a doubling
    // that paid, and eight are tried.
    for (mu, most_expected) in [(Some(100.0 * MB), 4), (None, 8)] {
        let mut a = Auto::new(32, 1, true);
        if let Some(mu) = mu {
            a.bottleneck(mu);
        }
        let mut p = Path::new(100.0 * MB, 24.25 * MB, 40.0);
        let mut most = 0;
        run(&mut a, &mut p, secs(60), |_, p, _| {
            most = most.max(p.carrying)
        });
        assert_eq!(most, most_expected, "told µ {mu:?}");
    }
}

#[test]
fn streams_that_cost_more_than_they_carry_are_given_back_and_a_knee_found_again_is_tried_ever_more_rarely(
) {
    // 125 MB/s, no random loss, each stream's window holds it to 30 MB/s; the
    // hosts move at most 110 MB/s with up to 8 streams and a fifth less at
    // each doubling past that (their CPU, not the path): no queue ever stands.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(125.0 * MB, 30.0 * MB, 40.0);
    let mut most = 0;
    let mut tries = Vec::new();
    let mut was = 0;
    run(&mut a, &mut p, secs(120), |now, p, _| {
        let n = p.carrying.max(1);
        if n == 8 && was == 4 {
            tries.push(now);
        }
        was = n;
        let doublings_past_8 = (n as f64 / 8.0).log2().max(0.0);
        p.host = 110.0 * MB * 0.8f64.powf(doublings_past_8);
        most = most.max(n);
    });
    assert!((4..=8).contains(&a.streams()), "{}", a.streams());
    assert!(most <= 8, "tried {most} streams");
    // Tried at 8 after one FREE, then two, then four...: fewer times than FREEs passed.
    assert!(tries.len() >= 2 && tries.len() <= 5, "{tries:?}");
    let gaps: Vec<f64> = tries
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    assert!(gaps.windows(2).all(|g| g[1] > 1.5 * g[0]), "{gaps:?}");
}

#[test]
fn a_capped_group_whose_streams_the_losses_hold_below_the_cap_adds_streams_through_noise() {
    // Two streams fill 100 MB/s at first: auto is capped at the path's edge.
    // Then random loss holds each stream to 5 MB/s, give or take a tenth from
    // one tick to the next: the cap does not hold the group, the losses do.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut tick = 0u32;
    run(&mut a, &mut p, secs(120), |now, p, _| {
        tick += 1;
        if now >= secs(40) {
            p.per_stream = if tick % 2 == 0 { 4.5 * MB } else { 5.5 * MB };
        }
    });
    assert!(a.streams() >= 16, "{}", a.streams());
}

#[test]
fn at_a_transfers_end_the_streams_left_with_work_are_not_held_to_what_the_idle_ones_move() {
    // Two streams fill 100 MB/s; the group is capped at the path's edge with
    // all the streams it may open. Then the transfer's last blocks are in
    // flight on one stream: the group moves less because it has less to
    // send, not because the path gives less. That stream may be capped
    // again for a queue of its own, but never spiral down with what the
    // idle ones (do not) move.
    for most in [4, 32] {
        let mut a = Auto::new(most, 1, true);
        let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
        let mut at_end = None;
        let mut least = f64::INFINITY;
        let mut moved_from = 0;
        run(&mut a, &mut p, secs(100), |now, p, _| {
            if now >= secs(60) {
                if at_end.is_none() {
                    at_end = Some(a_cap_per_stream(p));
                    moved_from = p.acked[0];
                }
                p.with_work = 1;
                least = least.min(a_cap_per_stream(p));
            }
        });
        let at_end = at_end.unwrap();
        assert!(
            at_end < 100.0 * MB,
            "capped before the end ({most}): {at_end}"
        );
        assert!(
            least >= at_end / 2.0,
            "the last stream's cap fell to {least} from {at_end} ({most})"
        );
        let moved = (p.acked[0] - moved_from) as f64 / 40.0;
        assert!(
            moved >= at_end,
            "the last stream moved {moved} B/s, less than before the end, {at_end} ({most})"
        );
    }
}

/// Stream 0's cap as last told, bytes a second (none: unbounded).
fn a_cap_per_stream(p: &Path) -> f64 {
    p.caps[0].map_or(f64::INFINITY, |c| c as f64)
}

#[test]
fn where_others_fill_the_path_it_is_one_ordinary_flow() {
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Elastic(4);
    let mut seen = Vec::new();
    run(&mut a, &mut p, secs(60), |now, p, phase| {
        seen.push((now, p.carrying, phase))
    });
    // Found within a measurement and two asks; from then on one flow, uncapped.
    for (now, carrying, phase) in seen.iter().filter(|(t, _, _)| *t >= secs(12)) {
        assert_eq!(*carrying, 1, "{now:?}");
        assert!(matches!(phase, Phase::Fair { .. }), "{now:?}: {phase:?}");
    }
    assert_eq!(a.cap, None);
}

#[test]
fn others_who_arrive_are_found_and_when_they_leave_the_path_is_taken_back() {
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut seen = Vec::new();
    run(&mut a, &mut p, secs(200), |now, p, _| {
        p.others = if (secs(80)..secs(140)).contains(&now) {
            Others::Elastic(4)
        } else {
            Others::Nobody
        };
        seen.push((now, p.carrying));
    });
    // At 80 s they came; within a yield and a test (2 x 3 s here) auto was one flow.
    let at = |t: u64| {
        seen.iter()
            .find(|(s, _)| *s >= secs(t))
            .map(|x| x.1)
            .unwrap()
    };
    assert!(at(75) >= 16, "alone before: {}", at(75));
    assert_eq!(at(90), 1, "one flow beside them");
    assert_eq!(at(138), 1);
    // They left at 140 s: no queue for 5 s, and back to the streams the path needed.
    assert!(at(152) >= 16, "after: {}", at(152));
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
}

#[test]
fn a_group_that_yields_entirely_keeps_one_stream_at_two_packets_a_round_trip_while_others_are_there(
) {
    let mut a = Auto::new(32, 0, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut seen = Vec::new();
    run(&mut a, &mut p, secs(200), |now, p, phase| {
        p.others = if (secs(80)..secs(140)).contains(&now) {
            Others::Elastic(4)
        } else {
            Others::Nobody
        };
        seen.push((now, p.carrying, a_cap_per_stream(p), phase));
    });
    let at = |t: u64| *seen.iter().find(|x| x.0 >= secs(t)).unwrap();
    // Alone it is the default: as many streams as the path rewards, uncapped once full.
    assert!(at(75).1 >= 16, "alone before: {:?}", at(75));
    // Beside them, found as the default finds them: one stream, paced to LEDBAT's
    // least window, two packets a base RTT (40 ms).
    for x in seen.iter().filter(|x| (secs(95)..secs(140)).contains(&x.0)) {
        assert_eq!(x.1, 1, "{x:?}");
        assert!(matches!(x.3, Phase::Fair { .. }), "{x:?}");
        assert!((x.2 - 2.0 * 1448.0 / 0.040).abs() < 1.0, "{x:?}");
    }
    // They left at 140 s: after a FREE with no queue it tried the path with one
    // stream, and doubled while no queue rose: the path is taken back, the
    // group's cap (if any) near the path's rate.
    let tried = seen
        .iter()
        .find(|x| x.0 >= secs(140) && !matches!(x.3, Phase::Fair { .. }))
        .expect("it never tried the path again");
    assert_eq!(tried.1, 1, "{tried:?}");
    assert!(at(170).1 >= 16, "after: {:?}", at(170));
    let last = seen.last().unwrap();
    assert!(last.2 * last.1 as f64 >= 0.7 * p.capacity, "{last:?}");
}

#[test]
fn told_the_bottleneck_a_group_that_yields_entirely_yields_to_a_stiff_source_too() {
    // Where the default fills the room a source that does not back off
    // leaves (the test below), a group that yields entirely steps aside as
    // soon as an ask shows someone else there: LEDBAT yields to any queue.
    let mut a = Auto::new(32, 0, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Stiff(30.0 * MB);
    let mut fair_from = None;
    let mut tries = Vec::new();
    let mut moved_from = None;
    let mut before = "start";
    run(&mut a, &mut p, secs(400), |now, p, phase| {
        if phase.name() == "fair" && fair_from.is_none() {
            fair_from = Some(now);
            moved_from = Some(p.acked.iter().sum::<u64>());
        }
        if before == "fair" && phase.name() != "fair" {
            tries.push(now);
        }
        before = phase.name();
    });
    let from = fair_from.expect("it never stepped aside");
    assert!(from < secs(30), "{from:?}");
    // Beside a source that keeps no queue it tries the path again after a FREE
    // (5 s here), and finds it there again: each wait twice the last, to 8 FREEs.
    let gaps: Vec<u64> = tries.windows(2).map(|w| (w[1] - w[0]).as_secs()).collect();
    assert!(
        gaps.len() >= 4 && gaps.windows(2).take(2).all(|g| g[1] > g[0]),
        "{tries:?}"
    );
    // Between tries: the FREE `Fair` settles for, 8 FREEs with no queue at the
    // most, and a try: one stream, doubled every SETTLE + MEASURE (3 s here)
    // through the six counts from 1 to 32 at the most (told µ, no ask after).
    assert!(gaps.iter().all(|g| *g <= 5 + 8 * 5 + 6 * 3), "{tries:?}");
    // Its tries took a fifth of the room the source left at the most (as if
    // it had stood aside four fifths of the time).
    let moved = (p.acked.iter().sum::<u64>() - moved_from.unwrap()) as f64;
    let room = 70.0 * MB * (secs(400) - from).as_secs_f64();
    assert!(moved <= 0.2 * room, "took {:.2} of the room", moved / room);
}

#[test]
fn a_group_that_yields_entirely_tries_the_path_with_one_stream_and_doubles_only_while_no_queue_rises(
) {
    // A source that does not back off keeps no queue once the group stands
    // aside, so the group tries the path again and again: each try opens one
    // stream, and doubles while the room the source leaves (30 MB/s, six
    // streams' worth) takes them without a queue; at the doubling that raises
    // one, short of µ, the group steps aside again without an ask.
    let mut a = Auto::new(32, 0, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Stiff(70.0 * MB);
    let mut tries: Vec<Vec<usize>> = Vec::new();
    let mut before = "start";
    run(&mut a, &mut p, secs(300), |_, p, phase| {
        if before == "fair" && phase.name() != "fair" {
            tries.push(Vec::new());
        }
        if phase.name() != "fair" {
            if let Some(t) = tries.last_mut() {
                t.push(p.carrying);
            }
        }
        before = phase.name();
    });
    assert!(tries.len() >= 3, "{tries:?}");
    for t in &tries {
        assert_eq!(t[0], 1, "a try opened {} streams at once: {t:?}", t[0]);
        // Doublings only, and none past the one that raised the queue.
        assert!(
            t.windows(2).all(|w| w[1] == w[0] || w[1] == 2 * w[0]),
            "{t:?}"
        );
        assert!(t.iter().all(|n| *n <= 8), "{t:?}");
    }
}

#[test]
fn a_stiff_source_is_no_reason_to_step_aside_and_its_room_is_filled() {
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut phases = Vec::new();
    let mut cap_at = Vec::new();
    run(&mut a, &mut p, secs(300), |now, p, phase| {
        p.others = Others::Stiff(match now.as_secs() {
            0..70 => 30.0 * MB,
            70..150 => 50.0 * MB,
            _ => 20.0 * MB,
        });
        phases.push(phase.name());
        cap_at.push((now, group_cap(p)));
    });
    assert!(
        !phases.contains(&"fair"),
        "it stepped aside for a stiff source"
    );
    // Below what the source leaves, and within a margin of it.
    let cap = mean_cap(&cap_at, secs(140), secs(150));
    assert!(cap > 0.7 * 50.0 * MB && cap < 50.0 * MB, "{cap}");
    // The source fell to 20: the probes found the room, and faster each time.
    let cap = a.cap.expect("capped");
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    assert!(cap > 0.7 * 80.0 * MB && cap < 80.0 * MB * 1.3, "{cap}");
}

/// What a group told µ did beside a stiff source that swings between `low`
/// and `high` every `half` seconds (a tenth to two fifths of the path, as
/// generality's).
struct Swinging {
    /// When it entered `Ask`.
    asks: Vec<Duration>,
    phases: Vec<&'static str>,
    caps: Vec<(Duration, Option<u64>)>,
}

fn beside_a_swinging_source(low: f64, high: f64, half: u64, until: u64) -> Swinging {
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut w = Swinging {
        asks: Vec::new(),
        phases: Vec::new(),
        caps: Vec::new(),
    };
    let mut before = "start";
    run(&mut a, &mut p, secs(until), |now, p, phase| {
        let high_now = (now.as_secs() / half) % 2 == 1;
        p.others = Others::Stiff(if high_now { high } else { low });
        if phase.name() == "ask" && before != "ask" {
            w.asks.push(now);
        }
        before = phase.name();
        w.phases.push(phase.name());
        w.caps.push((now, group_cap(p)));
    });
    w
}

#[test]
fn told_the_bottleneck_a_source_found_stiff_is_followed_down_and_asked_about_ever_less_often() {
    // Each rise of the source stands through a DRAIN under the cap. Asked
    // about every time, the group would spend an ASK a margin below the room
    // at each: once an ask found the room untaken while the group moved less
    // than µ, the next rises are the source's, and the cap follows them down.
    let Swinging { asks, phases, caps } = beside_a_swinging_source(10.0 * MB, 40.0 * MB, 10, 240);
    assert!(
        !phases.contains(&"fair"),
        "it stepped aside for a stiff source"
    );
    let rises = (30..240).step_by(20).count();
    let late = asks.iter().filter(|t| **t >= secs(30)).count();
    assert!(
        late * 2 < rises,
        "asked {late} times in {rises} rises: {asks:?}"
    );
    // Through each high half the cap came below the room the source leaves,
    // and within a margin of it; through each low half it climbed back into
    // the room the source's fall left.
    for k in 2..12u64 {
        let (lo, hi) = (20 * k, 20 * k + 10);
        let top = mean_cap(&caps, secs(hi + 7), secs(hi + 10));
        assert!(
            top < 60.0 * MB * 1.05 && top > 0.7 * 60.0 * MB,
            "at {hi} s: {top}"
        );
        let bottom = mean_cap(&caps, secs(lo + 7), secs(lo + 10));
        assert!(bottom > 0.8 * 90.0 * MB, "at {lo} s: {bottom}");
    }
}

#[test]
fn told_the_bottleneck_flows_that_back_off_are_found_after_a_stiff_source() {
    // A source found stiff more than once, then flows that back off in its
    // place: the cap follows their first rises down, and the asks that still
    // come (one rise in 2^BACKOFF_MAX at the most) find the room taken.
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    let mut seen = Vec::new();
    run(&mut a, &mut p, secs(200), |now, p, phase| {
        let s = now.as_secs();
        p.others = if s >= 120 {
            Others::Elastic(4)
        } else if (s / 10) % 2 == 1 {
            Others::Stiff(40.0 * MB)
        } else {
            Others::Stiff(10.0 * MB)
        };
        seen.push((now, p.carrying, phase.name()));
    });
    let fair_from = seen
        .iter()
        .find(|(t, _, ph)| *t >= secs(120) && *ph == "fair")
        .map(|x| x.0)
        .expect("never found the flows that back off");
    assert!(fair_from <= secs(180), "found at {fair_from:?}");
    for (now, carrying, phase) in seen.iter().filter(|(t, _, _)| *t >= fair_from) {
        assert_eq!(*carrying, 1, "{now:?}");
        assert_eq!(*phase, "fair", "{now:?}");
    }
}

/// Told µ, loss-limited streams (5 MB/s each) on a 100 MB/s path beside a
/// source that sends 30 MB/s and does not back off, with `kept_queue_ms` in
/// every stream's RTT however empty the link: auto after `until` (it asked,
/// and its cap follows the room), and the most streams it carried.
fn growing_beside_a_stiff_source(kept_queue_ms: f64, until: Duration) -> (Auto, usize) {
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Stiff(30.0 * MB);
    p.kept_queue_ms = kept_queue_ms;
    let mut most = 0;
    let mut asked = false;
    run(&mut a, &mut p, until, |_, p, phase| {
        most = most.max(p.carrying);
        asked |= phase.name() == "ask";
    });
    assert!(asked, "never asked");
    // The cap follows the room the source leaves.
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    let cap = a.cap.expect("capped");
    assert!(cap > 0.7 * 70.0 * MB && cap < 70.0 * MB * 1.05, "{cap}");
    (a, most)
}

#[test]
fn told_the_bottleneck_a_growing_group_whose_ask_finds_the_room_untaken_doubles_no_further() {
    // Loss-limited streams double beside a source that does not back off
    // until the room it leaves is full: the group moves less than µ while a
    // queue rises, so someone else is there, and the ask finds the room
    // untaken. That is a stiff source, or a group that was asking too, never
    // this group's own slow start (a queue of its own comes with µ moved):
    // more streams would find only the queue, or take from a group that
    // yields.
    let (_, most) = growing_beside_a_stiff_source(0.0, secs(120));
    assert_eq!(most, 16, "streams beyond the ones that filled the room");
}

#[test]
fn the_queue_the_path_shows_while_an_ask_leaves_room_untaken_is_the_floor_a_rise_is_read_above() {
    // As above, with bursts that keep 0.8 ms in every stream's RTT: the ask
    // leaves room nobody takes, and what the RTTs show meanwhile is no full
    // path's queue. The source's queue still rises above it.
    assert_eq!(Auto::new(32, 1, true).delay.floor(), Duration::ZERO);
    let (a, _) = growing_beside_a_stiff_source(0.8, secs(60));
    let floor = a.delay.floor().as_secs_f64() * 1e3;
    assert!((floor - 0.8).abs() < 0.05, "{floor} ms");
}

#[test]
fn an_end_that_does_not_dial_paces_the_streams_it_does_not_want() {
    let mut a = Auto::new(8, 1, false);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 40.0);
    p.others = Others::Elastic(4);
    let mut asked = Vec::new();
    let mut now = Duration::ZERO;
    p.carrying = 8;
    // Until it is one fair flow (not asking whether it still must be).
    while now < secs(10) || !matches!(a.phase(), Phase::Fair { .. }) {
        assert!(now < secs(60), "{:?}", a.phase());
        let views = p.step(&a, a.interval());
        now += a.interval();
        asked.extend(a.tick(now, &views));
    }
    assert!(asked.iter().all(|s| !matches!(s, Steering::Streams(_))));
    assert_eq!(a.streams(), 1);
    assert_eq!(a.told[0], None);
    assert!(
        a.told[1..8].iter().all(|c| *c == Some(TRICKLE)),
        "{:?}",
        a.told
    );
}

#[test]
fn durations_count_in_round_trips_with_floors() {
    let short = Times::of(Duration::from_millis(10));
    let long = Times::of(Duration::from_millis(200));
    assert_eq!(short.settle, secs(2));
    assert_eq!(long.settle, secs(2));
    assert_eq!(Times::of(Duration::from_millis(400)).settle, secs(4));
    assert_eq!(long.ask, secs(3));
    assert_eq!(long.free, secs(5));
    assert_eq!(short.tick, Duration::from_millis(100));
    assert_eq!(long.tick, Duration::from_millis(200));
}

#[test]
fn a_doubling_pays_by_half_of_what_it_could_bring_within_the_room_the_bottleneck_leaves() {
    let mut a = Auto::new(32, 1, true);
    // Without µ: half of the rate before, more.
    assert!(!a.paid(60.0 * MB, 89.0 * MB));
    assert!(a.paid(60.0 * MB, 91.0 * MB));
    a.bottleneck(100.0 * MB);
    // Where two times the rate before fits under µ, the same.
    assert!(!a.paid(20.0 * MB, 29.0 * MB));
    assert!(a.paid(20.0 * MB, 31.0 * MB));
    // Near µ: half of the room above the rate before.
    assert!(
        a.paid(60.0 * MB, 81.0 * MB),
        "60 -> 81 of 100 took half the room"
    );
    assert!(!a.paid(60.0 * MB, 79.0 * MB));
    assert!(a.paid(90.0 * MB, 96.0 * MB));
    // At µ already, nothing is left to buy.
    assert!(!a.paid(100.0 * MB, 120.0 * MB));
}

/// Auto in `Full` from the start, capped at `cap` (or not), told the bottleneck's rate `mu`.
fn full_from_the_start(mu: f64, cap: Option<f64>) -> Auto {
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(mu);
    a.phase = Phase::Full {
        since: Duration::ZERO,
        slack_since: None,
        peak: None,
        step: 0.0,
    };
    a.cap = cap;
    a
}

#[test]
fn told_the_bottleneck_a_queue_under_the_group_alone_is_drained_without_an_ask() {
    // Uncapped streams that fill the path alone keep a queue standing: theirs,
    // since they move all the bottleneck sends. Nobody is there to ask.
    let mut a = full_from_the_start(100.0 * MB, None);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut phases = Vec::new();
    run(&mut a, &mut p, secs(10), |_, _, phase| {
        phases.push(phase.name())
    });
    assert!(!phases.contains(&"ask"), "asked about its own queue");
    // Capped at the path's edge: below it when a queue rises, within µ's
    // error above it at most before the queue answers.
    let cap = a.cap.expect("capped at the path's edge");
    assert!(
        cap <= 100.0 * MB * (1.0 + MU_WITHIN) + 1.0 && cap > 0.75 * 100.0 * MB,
        "{cap}"
    );
}

#[test]
fn told_the_bottleneck_a_group_alone_whose_rate_swings_below_it_for_a_few_ticks_asks_nobody() {
    // Streams that fill the path alone keep its queue standing; what they are
    // acknowledged swings a tenth above and below the bottleneck's rate three
    // ticks at a time (bunched and late ACKs). Over the DRAIN the queue stood
    // through they moved all of µ: the queue is theirs, whatever its last
    // three ticks read.
    let mut a = full_from_the_start(100.0 * MB, None);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.wobble = 0.1;
    // Swinging so that the first DRAIN's last three ticks are all below µ's error.
    p.ticks = 2;
    let mut phases = Vec::new();
    run(&mut a, &mut p, secs(20), |_, _, phase| {
        phases.push(phase.name())
    });
    assert!(!phases.contains(&"ask"), "{phases:?}");
}

#[test]
fn told_the_bottleneck_the_cap_climbs_no_higher_than_it_sends() {
    // The hosts hold the group at 90 % of the path, so no queue answers the
    // climb: the cap stops at the bottleneck's rate (within its error), where
    // a margin above what the group moves would be higher.
    let mut a = full_from_the_start(100.0 * MB, Some(80.0 * MB));
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.host = 90.0 * MB;
    let mut most = 0.0f64;
    run(&mut a, &mut p, Duration::from_millis(900), |_, p, _| {
        most = most.max(a_cap_of_group(p))
    });
    assert!(most > 95.0 * MB, "it climbed: {most}");
    assert!(most <= 100.0 * MB * (1.0 + MU_WITHIN) + 1.0, "{most}");
}

#[test]
fn told_the_bottleneck_a_group_that_moves_all_it_sends_is_not_short_of_streams() {
    // The hosts hold the group within µ's error of the bottleneck's rate: the
    // path, not the streams, holds it, and more streams buy nothing.
    let mut a = full_from_the_start(100.0 * MB, Some(90.0 * MB));
    a.n = 2;
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.host = 97.0 * MB;
    let mut phases = Vec::new();
    run(&mut a, &mut p, secs(20), |_, _, phase| {
        phases.push(phase.name())
    });
    assert!(phases.iter().all(|p| *p == "full"), "{phases:?}");
    assert_eq!(a.streams(), 2);
}

#[test]
fn told_the_bottleneck_a_group_alone_steps_below_it_only_as_far_as_drains_its_queue() {
    // Two streams fill 100 MB/s and the receiving end says so: each queue the
    // cap's climb makes is the group's own, 10 ms here, and a cap 1 % below
    // the path empties it within a DRAIN (1 s). The rate the step is taken
    // from spans ticks a step below the path already, so the cap may go a
    // few percent below; half a margin below that (2.5 % at the least) goes
    // further, and leaves that much of an idle path unused each time.
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(100.0 * MB);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut lowest = f64::INFINITY;
    run(&mut a, &mut p, secs(60), |now, p, phase| {
        if now >= secs(20) && matches!(phase, Phase::Full { .. }) {
            lowest = lowest.min(a_cap_of_group(p));
        }
    });
    assert!(lowest.is_finite(), "never capped in Full");
    assert!(lowest >= 0.96 * 100.0 * MB, "{lowest}");
}

#[test]
fn a_hosts_stall_of_a_tick_is_no_queue_to_follow_down() {
    // The hosts hold the group at 96 % of the path, and every two seconds one
    // of them stalls for a tick: every stream's RTT shows 20 ms more, and the
    // ACKs held with it come at the next tick. No queue stays at the
    // bottleneck; following the stall's dip down would cut the cap by it.
    let mut a = full_from_the_start(100.0 * MB, Some(90.0 * MB));
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    let mut lowest = f64::INFINITY;
    run(&mut a, &mut p, secs(20), |now, p, _| {
        let ms = now.as_millis() % 2000;
        let stalled = (1000..1100).contains(&ms);
        let after = (1100..1200).contains(&ms);
        p.kept_queue_ms = if stalled { 20.0 } else { 0.0 };
        p.host = if stalled { 10.0 * MB } else { 96.0 * MB };
        if after {
            // What crossed the bottleneck during the stall, acknowledged now.
            let n = p.carrying.max(1);
            for acked in &mut p.acked[..n] {
                *acked += (86.0 * MB * 0.1 / n as f64) as u64;
            }
        }
        if now >= secs(1) {
            lowest = lowest.min(a_cap_of_group(p));
        }
    });
    assert!(lowest >= 0.9 * 90.0 * MB, "{lowest}");
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
}

#[test]
fn told_the_bottleneck_a_group_that_moved_all_of_it_over_a_few_ticks_asks_nobody() {
    // Two streams fill the path, their rate swinging a tenth above and below
    // it three ticks at a time; the receiving end's word is above the mean by
    // more than its error, but the group moved all of it over the swings up.
    let mut a = Auto::new(32, 1, true);
    a.bottleneck(108.0 * MB);
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.wobble = 0.1;
    let mut phases = Vec::new();
    run(&mut a, &mut p, secs(20), |_, _, phase| {
        phases.push(phase.name())
    });
    assert!(!phases.contains(&"ask"), "{phases:?}");
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
}

#[test]
fn told_the_bottleneck_a_noisy_groups_slack_is_seen_at_the_bottlenecks_rate() {
    // The hosts hold two streams at 94 % of the path (short of µ by more than
    // its error), and the rate has been noisy: half a margin above what the
    // group moves is above the highest the cap climbs (µ, within its error).
    // At that height the cap is at its ceiling all the same: more streams.
    let mut a = full_from_the_start(100.0 * MB, Some(90.0 * MB));
    a.n = 2;
    for i in 0..20 {
        a.spread
            .note(if i % 2 == 0 { 80.0 * MB } else { 120.0 * MB });
    }
    assert!(a.margin() >= 0.2, "{}", a.margin());
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.host = 94.0 * MB;
    let mut most = 0;
    run(&mut a, &mut p, secs(5), |_, p, _| {
        most = most.max(p.carrying)
    });
    // (Four buy nothing here, and are given back.)
    assert!(most > 2, "{:?}", a.phase());
}

/// Auto on a 100 MB/s path of 40 ms that no loss limits, its streams each
/// held to `buffer` by their socket buffers, the receiving end telling `mu`
/// (or nothing): the streams at each tick.
fn held_by_buffers(
    mu: Option<f64>,
    buffer: f64,
    others: Others,
    kept_queue_ms: f64,
) -> (Auto, Vec<(Duration, usize)>) {
    let mut a = Auto::new(32, 1, true);
    if let Some(mu) = mu {
        a.bottleneck(mu);
    }
    let mut p = Path::new(100.0 * MB, f64::INFINITY, 40.0);
    p.buffer = buffer;
    p.others = others;
    p.kept_queue_ms = kept_queue_ms;
    let mut streams = Vec::new();
    run(&mut a, &mut p, secs(20), |now, p, _| {
        streams.push((now, p.carrying))
    });
    (a, streams)
}

fn streams_at(streams: &[(Duration, usize)], at: Duration) -> usize {
    streams.iter().rfind(|(t, _)| *t <= at).map_or(0, |x| x.1)
}

#[test]
fn streams_their_buffers_hold_are_doubled_at_once_or_as_many_as_the_bottleneck_needs() {
    // Two streams move 60 MB/s with no queue; µ, 100 MB/s, needs 3.5 of them:
    // doubled within half a second, where slack under a cap would take a
    // SETTLE and a MEASURE to show.
    let (a, streams) = held_by_buffers(Some(100.0 * MB), 30.0 * MB, Others::Nobody, 0.0);
    assert_eq!(
        streams_at(&streams, Duration::from_millis(500)),
        4,
        "{streams:?}"
    );
    // Four fill the path: a queue, and no more streams.
    assert_eq!(a.streams(), 4, "{streams:?}");
    assert!(matches!(a.phase(), Phase::Full { .. }), "{:?}", a.phase());
    // Without µ, twice as many.
    let (_, streams) = held_by_buffers(None, 30.0 * MB, Others::Nobody, 0.0);
    assert_eq!(
        streams_at(&streams, Duration::from_millis(500)),
        4,
        "{streams:?}"
    );
    // Streams held to 10 MB/s: µ needs 10.5 of them, and gets 11 at once.
    let (a, streams) = held_by_buffers(Some(100.0 * MB), 10.0 * MB, Others::Nobody, 0.0);
    assert_eq!(
        streams_at(&streams, Duration::from_millis(500)),
        11,
        "{streams:?}"
    );
    assert_eq!(a.streams(), 11, "{streams:?}");
}

#[test]
fn streams_held_by_their_buffers_beside_others_are_not_added() {
    // Flows that back off fill the path: a queue, so the path, not the
    // buffers, is the limit, whatever the chronographs say of the slow
    // start before it.
    let (_, streams) = held_by_buffers(Some(100.0 * MB), 30.0 * MB, Others::Elastic(4), 0.0);
    assert!(streams.iter().all(|(_, n)| *n <= 2), "{streams:?}");
    // A queue others keep without filling the path: the streams' buffers hold
    // them, but someone else is there, and more streams would take from them.
    let (_, streams) = held_by_buffers(Some(100.0 * MB), 30.0 * MB, Others::Nobody, 20.0);
    let first = streams_at(&streams, secs(4));
    assert_eq!(first, 2, "{streams:?}");
}

#[test]
fn looks_are_taken_only_in_the_round_trip_a_tick_reads() {
    let ms = Duration::from_millis;
    // A 67 ms path: a tick of 100 ms, a look every 12.5 ms on its grid, but
    // only those of the 67 ms before the next tick are read.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 67.0);
    run(&mut a, &mut p, secs(2), |_, _, _| {});
    let tick = a.interval();
    assert_eq!(tick, ms(100));
    let every = tick / path::LOOKS_PER_TICK;
    assert_eq!(
        a.looks(),
        Some(Looks {
            first: every * 3,
            every
        }),
        "the first look at 37.5 ms, within 67 ms of the next tick, then on the grid"
    );
    // A path longer than the tick: every look of the tick is read.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 150.0);
    run(&mut a, &mut p, secs(2), |_, _, _| {});
    assert_eq!(
        a.looks().map(|l| l.first),
        Some(a.interval() / path::LOOKS_PER_TICK)
    );
    // A path shorter than a look's interval: none falls in the round trip
    // before the tick, and the tick is the only reading.
    let mut a = Auto::new(32, 1, true);
    let mut p = Path::new(100.0 * MB, 5.0 * MB, 10.0);
    run(&mut a, &mut p, secs(2), |_, _, _| {});
    assert!(a.looks().is_some_and(|l| l.first >= a.interval()));
}
