"""Where does a braid group held near half of 1 Gb/s read its queue? A development probe.

    .venv/bin/python results/2026-12-03-vm-2core/capped-group-rtt/probe.py [--seconds S] [--rounds R] [--loss P] [--out FILE]

On a 1 Gb/s, 30 ms path (2500 frames of drop-tail; `--loss` adds random loss) `braid bench` runs 16 CUBIC streams three
ways: unlimited (`--mode parallel -n 16 --cc cubic`), held by the engine's own session-wide limit
(`--limit 500mbit`: user space reserves each stream's bytes, the kernel does not pace), and as auto
(`--mode auto -n 16`: capped by SO_MAX_PACING_RATE, the kernel paces each stream). For each it prints
the goodput and, over the seconds after the first 5, the median of the lowest smoothed RTT any
stream reported, less the path's 30 ms: a queue that all streams share. Below the link's rate that
queue is the hosts'. Development only; nothing here judges.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from braidlab import engine  # noqa: E402
from braidlab.dumbbell import LinkPath  # noqa: E402
from braidlab.proc import communicate_all  # noqa: E402

FORWARD = "rate 1gbit delay 15ms limit 2500"
REVERSE = "delay 15ms"
BASE_MS = 30.0
WAYS = {
    "parallel-16": ["--mode", "parallel", "-n", "16", "--cc", "cubic"],
    "parallel-16 --limit 500mbit": ["--mode", "parallel", "-n", "16", "--cc", "cubic", "--limit", "500mbit"],
    "auto -n 16": ["--mode", "auto", "-n", "16"],
}


def one(way: str, seconds: float, scratch: Path, loss: float) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    token = engine.token_file(scratch)
    forward = FORWARD + (f" loss random {loss * 100:g}%" if loss else "")
    with LinkPath(forward, REVERSE, tag="capq") as path:
        path.tcp_buffers(32)
        root = scratch / "root"
        root.mkdir(exist_ok=True)
        server = engine.serve(path.rcv, root, token, once=True)
        time.sleep(0.5)
        argv = [engine.binary(), "bench", path.RCV_ADDR, "-t", str(seconds), "--token-file", str(token), "-i", "1",
                "--ssh", "never", "--json", *WAYS[way]]
        client = path.snd.popen(argv)
        (out, err), _ = communicate_all([client, server], timeout=seconds + 60)
    queues, mbps, streams = [], [], []
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "interval" and r["t"] > 5:
            rtts = [s["srtt_us"] / 1000 for s in r["streams"] if s.get("srtt_us")]
            if rtts:
                queues.append(min(rtts) - BASE_MS)
            mbps.append(r["mbps"])
            streams.append(len(r["streams"]))
    if not mbps:
        raise RuntimeError(f"{way}: no interval records; stderr: {err[-400:]}")
    return {"way": way, "loss": loss, "mbps": round(statistics.mean(mbps), 1), "streams_last": streams[-1],
            "queue_ms_median": round(statistics.median(queues), 1), "queue_ms_p90": round(sorted(queues)[int(0.9 * len(queues))], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/braid-capq"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--loss", type=float, default=0.0, help="random loss on the path (1e-4: auto opens 16 streams)")
    a = ap.parse_args()
    # Each round runs every way once, so that a slow minute of the machine falls on all of them.
    rows = []
    for r in range(a.rounds):
        rows += [{"round": r, **one(way, a.seconds, a.scratch, a.loss)} for way in WAYS]
        print("\n".join(json.dumps(x) for x in rows[-len(WAYS):]), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")

if __name__ == "__main__":
    main()
