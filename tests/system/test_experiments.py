"""The papers' experiments, quick variants, end to end: `braidlab demo` (the
quick Hacker 2004 run) and `braidlab run X --quick` for the other three, each
on fresh emulated dumbbells, then the report made from the results alone.

The assertions are what stays true on a noisy 2-core machine in a few
seconds per cell: the direction of the papers' main effects with a margin,
and that every metric lands in its possible range. The claims' verdicts are
recorded, not asserted: short runs are not the papers' 240 s.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from braidlab import report, results


def _run(args: list[str], timeout: float) -> str:
    p = subprocess.run([sys.executable, "-m", "braidlab", *args], capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"braidlab {' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _table(run_dir):
    meta, cells = results.load(run_dir)
    assert len(cells) == len(meta["plan"]), "every planned cell was measured"
    for c in cells:
        assert (run_dir / "raw" / c.id / "manifest.json").exists()
    from braidlab.experiment import load

    return results.table(cells, load(meta["experiment"]).baseline)


def _one(rows, scenario, method):
    (r,) = [r for r in rows if r["scenario"] == scenario and r["method"] == method]
    return r


def _again(experiment: str, methods: str, scenarios: str, out) -> list[dict]:
    """A second sample of a few quick cells: a 12 s repetition is one noisy sample, so a main
    effect that misses its margin once is measured again, and must show then."""
    _run(["run", experiment, "--quick", "--methods", methods, "--scenarios", scenarios, "--out", str(out)],
         timeout=400)
    return _table(out)


def _verdicts(record, run_dir):
    record(verdicts={v.id: v.status for v in report.verdicts(run_dir)})


def _sane(rows):
    for r in rows:
        assert r["method_mbps"] > 0
        assert 0 <= r["method_loss_ratio"] < 0.2
        # A loss-limited stream may leave most of the link idle; none can use more than all of it.
        assert 0 < r["utilisation"] <= 1.05, f"{r['method']}: link used {r['utilisation']:.3f}"
        if r["jain"] is not None:
            assert 0 < r["jain"] <= 1 + 1e-9


def test_demo_hacker2004_quick(controls, record, tmp_path):
    out = tmp_path / "demo"
    text = _run(["demo", "--out", str(out)], timeout=600)
    assert "| combined-9 |" in text and "[58.0 %]" in text, "the table beside the paper's is printed"
    assert (out / "report" / "report.html").exists() and (out / "flows.csv").exists()
    rows = _table(out)
    assert {r["method"] for r in rows} == {"single", "parallel-9", "combined-9", "tcpp-9", "bbr", "auto"}
    assert "hacker2004: the frontier" in text and "| auto |" in text, "braid's default is on the frontier"
    _sane(rows)
    par, comb, single = (_one(rows, "tcp-5", m) for m in ("parallel-9", "combined-9", "single"))
    record(appropriation={r["method"]: round(r["appropriation"], 3) for r in rows if r["scenario"] == "tcp-5"},
           mbps_vs_5_tcp={r["method"]: round(r["method_mbps"], 1) for r in rows if r["scenario"] == "tcp-5"},
           effectiveness_udp_1_10={r["method"]: round(r["effectiveness"], 3)
                                   for r in rows if r["scenario"] == "udp-1-10"})
    _verdicts(record, out)
    # Hacker 2004's main result: combined-9 takes clearly less from 5 TCP flows than parallel-9
    # (the claim asks for a gap of 0.1; one 12 s repetition of each, against one baseline, gets
    # a little slack, and a second sample if the first misses it).
    if not comb["appropriation"] < par["appropriation"] - 0.05:
        again = _again("hacker2004", "single,parallel-9,combined-9", "tcp-5", tmp_path / "again")
        par, comb = (_one(again, "tcp-5", m) for m in ("parallel-9", "combined-9"))
        record(second_sample={"parallel-9": round(par["appropriation"], 3),
                              "combined-9": round(comb["appropriation"], 3)})
    assert comb["appropriation"] < par["appropriation"] - 0.05
    # Parallel-9 takes more than one stream does (how much more varies: one Reno stream against
    # five in 15 s may get anything from 1/8 to 1/3 of the link).
    assert par["method_mbps"] > single["method_mbps"]
    for r in rows:
        if r["scenario"] == "udp-1-10":
            # T (Eq. 8) is what the UDP and the probes leave: nothing beats it by more than counting slack.
            # Below, only a working transfer is asked for: at 1e-5 random loss a 12 s cell meets about
            # one loss, and a method that grows as one flow (single, tcpp-9 at k = 1: a packet per RTT
            # for the whole window) takes longer than the cell to regain a halving, so where the loss
            # falls sets its effectiveness anywhere from about 0.4 to 0.9 (tcpp-9: 0.872 and 0.445 in
            # two runs of the same build).
            assert 0.25 < r["effectiveness"] < 1.03, f"{r['method']}: effectiveness {r['effectiveness']:.3f}"
            assert r["rtt_median_ms"] >= 68 and r["sqrt_p"] is not None


def test_cho_bettati_quick(controls, record, tmp_path):
    out = tmp_path / "cb"
    _run(["run", "cho-bettati", "--quick", "--out", str(out)], timeout=400)
    rows = _table(out)
    _sane(rows)
    ratio = {r["method"]: r["ratio_to_cross"] for r in rows}
    record(group_over_single_flow={m: round(x, 2) for m, x in ratio.items()})
    _verdicts(record, out)
    # 10 TCP-P flows of strength 1 against one flow: near one flow's share; 4 plain flows take far more;
    # strength 4 makes the group stronger than strength 1. The three are compared with each other, so
    # a first sample that misses any of them is replaced by a second sample of all three.
    def holds(x):
        return x["tcpp-10"] < 2.5 and x["plain-4"] > 1.5 * x["tcpp-10"] and x["tcpp10-k4"] > x["tcpp-10"]

    if not holds(ratio):
        rows = _again("cho-bettati", "plain-4,tcpp-10,tcpp10-k4", "*", tmp_path / "again")
        again = {r["method"]: r["ratio_to_cross"] for r in rows}
        ratio.update(again)
        record(second_sample={m: round(x, 2) for m, x in again.items()})
    assert ratio["tcpp-10"] < 2.5
    assert ratio["plain-4"] > 1.5 * ratio["tcpp-10"]
    assert ratio["tcpp10-k4"] > ratio["tcpp-10"]


def test_hacker2002_quick(record, tmp_path):
    out = tmp_path / "h2"
    _run(["run", "hacker2002", "--quick", "--out", str(out)], timeout=400)
    rows = _table(out)
    _sane(rows)
    mbps = {(r["scenario"], r["streams"]): r["method_mbps"] for r in rows}
    record(mbps={f"{s} n={n}": round(x, 1) for (s, n), x in sorted(mbps.items())},
           mathis={f"{r['scenario']} n={r['streams']}": round(r["mathis_mbps"] or 0, 1) for r in rows})
    _verdicts(record, out)
    # A loss-limited path: more streams, more throughput, and bigger packets, more per stream.
    # A single stream's measured 4 s meet a loss or two at 1e-4, and where they fall (in slow
    # start, or not at all) sets its rate: at MTU 4418 it moved 27.3 and 37.9 Mb/s against MTU
    # 1500's 32.4 and 43.0 in two runs, where Mathis has 3 times as much; at MTU 1500 it moved 67.6
    # once, where three times that is more than the 200 Mb/s path. So while either margin is
    # missed, the two single streams are sampled again (up to three samples each), and the
    # margins are judged on their means.
    singles = {sc: [mbps[(sc, 1)]] for sc in ("mtu-1500", "mtu-4418")}

    def margins():
        one = {sc: sum(v) / len(v) for sc, v in singles.items()}
        return mbps[("mtu-1500", 12)] > 3 * one["mtu-1500"], one["mtu-4418"] > 1.5 * one["mtu-1500"]
    for i in range(2):
        if all(margins()):
            break
        again = _again("hacker2002", "parallel-1", "mtu-1500,mtu-4418", tmp_path / f"again-{i}")
        for r in again:
            singles[r["scenario"]].append(r["method_mbps"])
    record(single_samples={sc: [round(x, 1) for x in v] for sc, v in singles.items()})
    more_streams, bigger_packets = margins()
    assert more_streams, (mbps, singles)
    assert bigger_packets, (mbps, singles)


def test_variants_quick(controls, record, tmp_path):
    out = tmp_path / "v"
    _run(["run", "variants", "--quick", "--out", str(out)], timeout=400)
    rows = _table(out)
    _sane(rows)
    record(utilisation={r["method"]: round(r["utilisation"], 3) for r in rows},
           loss={r["method"]: round(r["method_loss_ratio"], 4) for r in rows},
           jain={r["method"]: round(r["jain"], 3) for r in rows if r["jain"] is not None})
    _verdicts(record, out)
    reno, stcp = (_one(rows, "red-10mbit", m) for m in ("reno-10", "braid_stcp-10"))
    assert reno["utilisation"] > 0.85 and stcp["utilisation"] > 0.85
    # Reno's ten streams come to even shares within seconds (additive increase lets the small
    # ones catch up). Scalable's need not within a 9 s sample: multiplicative increase keeps the
    # ratios that slow start's losses left, and once a stream that escaped the start's timeouts
    # held 3.98 of 8.99 Mb/s (Jain 0.37); over the full variant's 1000 s they come out at 0.9999.
    # What Scalable shows within seconds is the loss it drives (Fig. 7).
    assert reno["jain"] > 0.5
    assert stcp["method_loss_ratio"] > reno["method_loss_ratio"]


def test_adaptive_quick(controls, record, tmp_path):
    out = tmp_path / "ad"
    _run(["run", "adaptive", "--quick", "--out", str(out)], timeout=400)
    rows = _table(out)
    _sane(rows)
    record(appropriation={r["method"]: round(r["appropriation"], 3) for r in rows if r["scenario"] == "tcp-5"},
           effectiveness_udp_1_10={r["method"]: round(r["effectiveness"], 3)
                                   for r in rows if r["scenario"] == "udp-1-10"})
    _verdicts(record, out)

    # The quick window (12 s after 7) is shorter than auto's decisions take on this path (a doubling
    # of streams is judged after 3 s, an ask lasts 3 s and it asks twice before it steps aside), so
    # the quick run judges the pipeline and the steer; speed and share are the experiment's claims
    # on its full variant and the generality matrix's. What the steer must show already: beside five
    # Reno flows it met a queue it did not hold down and asked whose it was.
    from braidlab.engine import Report
    busy = Report.parse((out / "raw" / "tcp-5.auto-9.r0" / "snd0-bench.out").read_text())
    assert "ask" in {s.phase for s in busy.steering}
    # On the idle lossy path it grew and found the path's edge: past its first streams, or with
    # them moving the bottleneck's rate as the receiving end measured it (the queue then was its
    # own, and it was capped a margin below that rate without an ask); every stream ran the host's
    # default control.
    rep = Report.parse((out / "raw" / "udp-1-10.auto-9.r0" / "snd0-bench.out").read_text())
    assert rep.steering
    edge = [s for s in rep.steering if s.phase == "full" and s.share_mbps and s.bottleneck_mbps]
    assert max(s.streams for s in rep.steering) > 2 or (
        edge and max(s.share_mbps / s.bottleneck_mbps for s in edge) >= 0.7), rep.steering[-1]
    assert 1 <= len(rep.controls) <= 9 and set(rep.controls) == {"cubic"}


def test_auto_gives_way_when_reno_flows_arrive_and_takes_the_path_back_when_they_leave(controls, record, tmp_path):
    from braidlab.braid import ROOT

    # The adaptive experiment's tcp-arrive scenario, measured for 48 s: 5 Reno flows from 16 s to 32 s.
    text = (ROOT / "experiments" / "adaptive.toml").read_text()
    quick = text[text.index("[quick]"):text.index("[full]")]
    exp = tmp_path / "adaptive.toml"
    exp.write_text(text.replace(quick, '[quick]\nseconds = 48\nomit = 5\nwarmup = 1\npause = 0\nrepeat = 1\n'
                                       'methods = ["auto-9"]\nscenarios = ["tcp-arrive"]\n\n'))
    out = tmp_path / "arrive"
    _run(["run", str(exp), "--quick", "--out", str(out)], timeout=300)
    (r,) = _table(out)
    record(**{k: round(r[k], 2) for k in ("mbps_alone", "mbps_beside", "mbps_after", "settle_arrive_s",
                                           "settle_leave_s", "cross_mbps")})
    # Alone on the path it fills it; the five Reno flows take their part when they arrive (a queue
    # that does not fall under auto's cap: it asks, twice, and is one ordinary flow), and when they
    # leave no queue stands for 25 base RTTs and it grows back to the streams the path needed.
    assert r["mbps_alone"] > 70
    assert r["mbps_beside"] < 0.85 * r["mbps_alone"] and r["mbps_after"] > 1.1 * r["mbps_beside"]
    assert r["settle_arrive_s"] is not None and r["settle_leave_s"] is not None


def test_generality_quick(controls, record, tmp_path):
    # The generality matrix's pipeline on two small paths of its own: braid with no options, one
    # CUBIC stream and parallel-16 of CUBIC, idle (lossy) and beside two CUBIC flows.
    out = tmp_path / "gen"
    _run(["run", "generality", "--quick", "--out", str(out)], timeout=400)
    rows = _table(out)
    _sane(rows)
    assert {(r["scenario"], r["method"]) for r in rows} == {
        (s, m) for s in ("quick-idle", "quick-cubic-2") for m in ("single", "parallel-16", "auto")}
    busy = _one(rows, "quick-cubic-2", "auto")
    # Two long flows beside it, braid counting as one: a third of 50 Mb/s of payload.
    assert busy["long_flows"] == 2
    assert busy["equal_share_mbps"] == pytest.approx(50 * 1448 / 1500 / 3, rel=0.01)
    assert _one(rows, "quick-idle", "auto")["long_flows"] == 0
    record(mbps={f"{r['scenario']} {r['method']}": round(r["method_mbps"], 1) for r in rows},
           equal_share_mbps=round(busy["equal_share_mbps"], 2))
    text = report.make([out], out / "report")[0].read_text()
    assert "generality: the cells" in text and "| quick-cubic-2 |" in text


def test_a_bad_experiment_is_refused_before_anything_is_built(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[[scenario]]\nname = "a"\n[[method]]\nname = "x"\nmode = "turbo"\n'
                   '[quick]\nseconds = 1\n[full]\nseconds = 1\n')
    p = subprocess.run([sys.executable, "-m", "braidlab", "run", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "mode 'turbo'" in p.stderr
    assert not (tmp_path / "o").exists()


def test_lfn_quick_hosts_take_the_path_s_tcp_buffer(controls, record, tmp_path):
    # 500 Mb/s, 100 ms, no loss: one CUBIC stream can carry the whole path only with a send buffer
    # of more than its bandwidth-delay product (6.25 MB). The host's default here (4 MiB) allows
    # at most 4 MiB a round trip, 335 Mb/s; the file gives the hosts 256 MiB.
    out = tmp_path / "lfn"
    _run(["run", "lfn", "--quick", "--out", str(out)], timeout=300)
    rows = _table(out)
    _sane(rows)
    single = _one(rows, "quick-500m", "single")
    record(single_mbps=round(single["method_mbps"], 1), link_overruns=single["link_overruns"])
    assert single["method_mbps"] > 400, f"one CUBIC stream moved {single['method_mbps']:.0f} Mb/s: window-limited"
    assert single["link_overruns"] == 0


@pytest.mark.parametrize("experiment", ["hacker2004", "cho-bettati", "hacker2002", "variants", "adaptive",
                                        "generality", "lfn", "scavenger"])
def test_every_experiment_passes_preflight(experiment, controls):
    from braidlab import runner
    from braidlab.experiment import load

    x = load(experiment)
    for v in ("quick", "full"):
        runner.preflight(x, x.variant(v))


def test_a_terminated_run_tears_down_and_continues(controls, tmp_path):
    """SIGTERM mid-cell (as a job scheduler sends): the testbed goes, the controls the run found
    stay, finished cells are kept, and the same command finishes the rest."""
    import signal
    import time

    exp = tmp_path / "small.toml"
    exp.write_text('name = "small"\n[path]\nrate = "20mbit"\nrtt = "20ms"\n[[scenario]]\nname = "idle"\n'
                   '[[method]]\nname = "tcpp-{streams}"\nmode = "tcpp"\nstreams = [2, 3]\n'
                   '[quick]\nseconds = 4\nwarmup = 0\npause = 0\n[full]\nseconds = 4\n')
    out = tmp_path / "small"
    argv = [sys.executable, "-m", "braidlab", "run", str(exp), "--quick", "--out", str(out)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    raw = out / "raw"
    deadline = time.monotonic() + 60
    while not (raw.exists() and any(d.is_dir() for d in raw.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "continue it with" in err, err
    assert not _ours(p.pid), "the testbed was left behind"
    from braidlab import braid

    assert braid.cc_status()["installed"], "the controls the run found installed were removed"
    assert not list((out / "cells").glob("*.json")), "the interrupted cell was kept as if measured"
    _run(["run", str(exp), "--quick", "--out", str(out)], timeout=120)
    meta, cells = results.load(out)
    assert len(cells) == len(meta["plan"]) == 2


def _ours(pid: int) -> list[str]:
    from braidlab.proc import run

    return [n.split()[0] for n in run(["ip", "netns", "list"]).splitlines() if n.startswith(f"braid-{pid}-")]
