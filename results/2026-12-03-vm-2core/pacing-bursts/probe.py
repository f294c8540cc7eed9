"""Does pacing many streams at small rates raise the RTT the hosts add? A development probe.

    .venv/bin/python results/2026-12-03-vm-2core/pacing-bursts/probe.py [--seconds S] [--rounds R] [--out FILE]

auto caps its streams with SO_MAX_PACING_RATE: a group of 16 held to 450 Mb/s sends each stream's
data in buffers of about a millisecond of 28 Mb/s, two or three segments, where an unpaced stream
sends what its window allows at once. On one clean path (1 Gb/s, 30 ms, 2500 frames of drop-tail)
this runs `iperf3 -C cubic` paced with `--fq-rate` so that the group moves about half the path (no
queue at the emulated link can stand), as 16 streams of 30 Mb/s, 4 of 120 and 1 of 480, and prints
the mean and largest smoothed RTT the sender's TCP reported for its streams, with the goodput. An
RTT above the path's 30 ms is then the hosts' (their CPUs, a receive backlog), not the link's.
Development only; nothing here judges.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from braidlab.dumbbell import LinkPath  # noqa: E402
from braidlab.proc import communicate_all  # noqa: E402

PORT = 5212
FORWARD = "rate 1gbit delay 15ms limit 2500"
REVERSE = "delay 15ms"
SHAPES = [(16, "30M"), (4, "120M"), (1, "480M")]
# --high: the same 16 streams paced so that together they would move 640 and 880 Mb/s, and unpaced
# (None): where the hosts, not the link, first hold paced streams.
HIGH = [(16, "40M"), (16, "55M"), (16, None)]


def one(streams: int, rate: str | None, seconds: float) -> dict:
    with LinkPath(FORWARD, REVERSE, tag="burst") as path:
        path.tcp_buffers(32)
        server = path.rcv.popen(["iperf3", "-s", "-1", "-p", str(PORT), "-J"])
        time.sleep(0.3)
        argv = ["iperf3", "-c", path.RCV_ADDR, "-p", str(PORT), "-P", str(streams), "-C", "cubic",
                "-t", str(seconds), "-J"] + (["--fq-rate", rate] if rate else [])
        client = path.snd.popen(argv)
        (out, _), _ = communicate_all([client, server], timeout=seconds + 60)
        late = path.stats()["ab"]["late_ns"]
    report = json.loads(out)
    if "error" in report:
        raise RuntimeError(report["error"])
    senders = [s["sender"] for s in report["end"]["streams"]]
    mean_rtt = sum(s["mean_rtt"] for s in senders) / len(senders) / 1e3
    max_rtt = max(s["max_rtt"] for s in senders) / 1e3
    mbps = report["end"]["sum_received"]["bits_per_second"] / 1e6
    return {"streams": streams, "fq_rate": rate, "mbps": round(mbps, 1), "mean_rtt_ms": round(mean_rtt, 2),
            "max_rtt_ms": round(max_rtt, 2), "link_late_p99_ms": late["p99"] / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--high", action="store_true", help="16 streams paced to 640 and 880 Mb/s, and unpaced")
    a = ap.parse_args()
    shapes = HIGH if a.high else SHAPES
    # Rounds alternate the shapes, so that a slow minute of the machine falls on all of them.
    rows = [{"round": r, **one(n, rate, a.seconds)} for r in range(a.rounds) for n, rate in shapes]
    text = json.dumps(rows, indent=1) + "\n"
    print(text, end="")
    if a.out:
        a.out.write_text(text)

if __name__ == "__main__":
    main()
