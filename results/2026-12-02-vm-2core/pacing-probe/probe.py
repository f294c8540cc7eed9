"""Does the kernel's own pacing of the sender's streams make braid-link late? A development probe.

    .venv/bin/python results/2026-12-02-vm-2core/pacing-probe/probe.py [--seconds S] [--rounds R] [--out FILE]

auto caps its streams with SO_MAX_PACING_RATE, which turns on the kernel's pacing of each socket
for its life (a timer per buffer of about a millisecond of its rate); parallel streams are never
paced here (no fq qdisc). iperf3's --fq-rate sets the same option. On one lossy fat path (1 Gb/s,
60 ms, 2e-5 random loss, 5000 frames of drop-tail) this runs `iperf3 -P 16` unpaced and paced at
1 Gb/s a stream (above any stream's share, so the rate is TCP's own and only the timers differ),
alternately, and prints braid-link's lateness (p50, p99, max of its frames' departures after their
due time) and the goodput of each. Development only; nothing here judges.
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

PORT = 5211
FORWARD = "rate 1gbit delay 30ms limit 5000 loss random 0.002%"
REVERSE = "delay 30ms"


def one(paced: bool, seconds: float) -> dict:
    with LinkPath(FORWARD, REVERSE, tag="pace") as path:
        # Buffers for a 7.5 MB bandwidth-delay product shared by 16 streams.
        path.tcp_buffers(32)
        server = path.rcv.popen(["iperf3", "-s", "-1", "-p", str(PORT), "-J"])
        time.sleep(0.3)
        argv = ["iperf3", "-c", path.RCV_ADDR, "-p", str(PORT), "-P", "16", "-C", "cubic", "-t", str(seconds),
                "-J"] + (["--fq-rate", "1G"] if paced else [])
        client = path.snd.popen(argv)
        (out, _), _ = communicate_all([client, server], timeout=seconds + 60)
        late = path.stats()["ab"]["late_ns"]
    report = json.loads(out)
    if "error" in report:
        raise RuntimeError(report["error"])
    mbps = report["end"]["sum_received"]["bits_per_second"] / 1e6
    return {"paced": paced, "mbps": round(mbps, 1), "late_p50_ms": late["p50"] / 1e6,
            "late_p99_ms": late["p99"] / 1e6, "late_max_ms": late["max"] / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = []
    for r in range(a.rounds):
        for paced in (False, True):
            row = {"round": r, **one(paced, a.seconds)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
