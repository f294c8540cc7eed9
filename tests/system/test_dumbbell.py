"""The dumbbell testbed and the laboratory's traffic: built, logged, torn down, and measured."""

from __future__ import annotations

import json
import math
import time

import pytest

from braidlab import netns, traffic
from braidlab.dumbbell import Dumbbell, LinkPath
from braidlab.proc import run


def _our_namespaces(bed_id: str) -> list[str]:
    return [line.split()[0] for line in run(["ip", "netns", "list"]).splitlines() if f"-{bed_id}-" in line]


def test_dumbbell_connects_every_pair_logs_and_tears_down(record, tmp_path):
    with Dumbbell("rate 50mbit delay 5ms limit 200", "delay 5ms", pairs=3, access="100mbit",
                  run_dir=tmp_path, tag="db3", seeds={"traffic": 4}) as bed:
        assert len(_our_namespaces(bed.id)) == 3 + 3 + 3  # hosts, two switches, router
        for s, r in zip(bed.senders, bed.receivers):
            out = s.run("ping", "-c", "3", "-i", "0.05", r.addr)
            assert " 0% packet loss" in out, f"{s} cannot reach {r}"
        # A host's process logs into the run directory.
        bed.senders[1].popen(["echo", "hello from snd1"], name="hello").wait(10)
        m = json.loads((tmp_path / "manifest.json").read_text())
        bed_id = bed.id
    assert (tmp_path / "snd1-hello.out").read_text().strip() == "hello from snd1"
    assert _our_namespaces(bed_id) == [], "namespaces left behind"
    assert m["link"]["forward"].startswith("rate 50mbit") and m["link"]["pairs"] == 3
    assert m["seeds"]["traffic"] == 4
    assert m["sysctls"]["sender"]["net.ipv4.tcp_available_congestion_control"]
    assert m["offloads"] and all(v.get("tcp-segmentation-offload") == "off" and v.get("generic-receive-offload") == "off"
                                 for v in m["offloads"].values()), m["offloads"]
    assert any("tbf" in q for qs in m["qdiscs"].values() for q in qs)
    assert m["project"]["revision"] is None or len(m["project"]["revision"]) == 40
    record(namespaces=9, veths=len(m["offloads"]))


def test_dumbbell_is_removed_when_the_body_fails(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with Dumbbell("rate 10mbit", pairs=2, run_dir=tmp_path, tag="fail") as bed:
            bed_id = bed.id
            1 / 0
    assert _our_namespaces(bed_id) == []
    assert netns.stale_namespaces() == []


def test_dumbbell_refuses_bad_configuration():
    with pytest.raises(ValueError, match="pairs"):
        Dumbbell("rate 10mbit", pairs=0)
    with pytest.raises(ValueError, match="MTU"):
        Dumbbell("rate 10mbit", mtu=100)
    with pytest.raises(RuntimeError, match="braid-link exited"):
        with Dumbbell("rate fast", tag="bad"):
            pass


def _due_mbit(lo, hi, period, t0, t1):
    """Bits the sinusoid is due between t0 and t1, Mbit (Hacker 2004 Eq. 3 integrated)."""
    avg, c = (hi - lo) / 2, 0.05 * math.pi * period
    bits = lambda t: avg * c * math.sin(t / c) + (lo + avg) * t  # noqa: E731
    return bits(t1) - bits(t0)


@pytest.mark.parametrize("lo,hi", [(50, 80), (1, 10)])
def test_sinusoidal_source_follows_its_rate_per_100ms_bin(record, lo, hi, tmp_path):
    seconds = 10
    with LinkPath("rate 200mbit delay 10ms limit 5000", "delay 10ms", run_dir=tmp_path, tag="sine") as p:
        sink = traffic.udp_sink(p.receivers[0])
        src = traffic.udp_source(p.senders[0], p.RCV_ADDR, seconds, sine=(f"{lo}mbit", f"{hi}mbit"))
        source = traffic.records(src.wait(seconds + 30))[-1]
        time.sleep(0.5)
        bins, summary = traffic.SinkReport.parse(sink.stop()).only()
    assert summary.lost == 0 and summary.sent == source.packets
    packet_mbit = 1440 * 8 / 1e6
    full = [b for b in bins if b.t + 0.1 <= seconds - 0.1]
    assert len(full) >= 95
    rel, pkts = [], []
    for b in full:
        due = _due_mbit(lo, hi, 10, b.t, b.t + 0.1)
        got = b.bytes * 8 / 1e6
        rel.append(abs(got - due) / due)
        pkts.append(abs(got - due) / packet_mbit)
    # A stall of the sender's own timer (the host's scheduler: it reports its worst lateness)
    # moves what was due into the next bin: at most the rate times that lateness.
    moved = source.worst_late_us * 1e-6 * hi * 1e6 / (packet_mbit * 1e6)
    p95 = sorted(zip(rel, pkts))[int(0.95 * len(rel))]
    worst_rel, worst_pkts = max(rel), max(pkts)
    record(udp=f"{lo}-{hi}mbit", bins=len(full), worst_bin_error_pct=round(100 * worst_rel, 3),
           worst_bin_error_packets=round(worst_pkts, 2), p95_bin_error_pct=round(100 * p95[0], 3),
           worst_late_us=source.worst_late_us)
    # Over the whole run the source sends what the shape makes due.
    due_all = _due_mbit(lo, hi, 10, full[0].t, full[-1].t + 0.1)
    got_all = sum(b.bytes for b in full) * 8 / 1e6
    assert abs(got_all - due_all) / due_all <= 0.01, f"{got_all:.1f} Mbit sent against {due_all:.1f} due"
    # The shape is followed bin by bin: 95 % of bins within 2 % (or, at 1-10 Mb/s, where a bin
    # holds 9 to 87 packets, one packet's quantisation plus one moved across a bin edge). A host
    # that stalled the source's timer for longer than a few ms (CI once: 26 ms) moves packets
    # across many bins; then the bins are held to what that lateness displaces.
    stalled = source.worst_late_us > 5000
    assert p95[0] <= 0.02 or (lo < 50 and p95[1] <= 2.0) or (stalled and p95[1] <= 2.0 + moved), \
        f"95th percentile bin off by {100 * p95[0]:.2f} % (worst lateness {source.worst_late_us} us)"
    # Every bin: within that, or what the timer's measured lateness displaced.
    assert worst_rel <= 0.02 or worst_pkts <= 2.0 + moved, \
        f"worst bin off by {100 * worst_rel:.2f} % ({worst_pkts:.1f} packets; lateness moves {moved:.1f})"


def test_braidlab_path_runs_a_command_across_the_path(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "braidlab", "path", "--rate", "20mbit", "--delay", "5ms", "--run-dir", str(tmp_path),
           "--", "ping", "-c", "3", "-i", "0.1", "{peer}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "3 received" in p.stdout
    rtt_min = float(p.stdout.split("min/avg/max/mdev = ")[1].split("/")[0])
    assert 10.0 <= rtt_min < 11.0, p.stdout
    assert "forward: arrived" in p.stderr and (tmp_path / "manifest.json").exists()
    # The command's failure is the tool's failure.
    bad = subprocess.run(cmd[:-7] + ["--", "false"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
