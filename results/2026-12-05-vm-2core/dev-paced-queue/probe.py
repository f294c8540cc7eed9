"""Does a paced group's queue say whether others are on the path? A development probe.

    .venv/bin/python results/2026-12-05-vm-2core/dev-paced-queue/probe.py [--seconds S] [--rounds R] [--out FILE]

A group of four CUBIC streams (a Python sender and reader) moves data over a 100 Mb/s, 40 ms path
built of braid-link, on two development paths (hand-drawn; none of the judged matrix's cells):
drop-tail of one BDP with 0.1 % random loss (four Reno competitors, each held near 11 Mb/s by that
loss: the path is not full), and RED over a quarter of a BDP (min 10, max 30 packets) without
random loss (four CUBIC competitors, held by RED's early drops at a queue of 1-4 ms). The group
runs paced, each stream capped at 7.5 Mb/s by SO_MAX_PACING_RATE (30 Mb/s in all, under the room
the competitors leave), or unpaced; alone, or beside the four iperf3 flows. Ten times a second it
reads every stream's smoothed RTT from TCP_INFO and keeps the lowest and the lower median less the
path's 40 ms (auto's queue reading is the lower median); a ping fifty times a second reads the same
path from outside TCP. The question: paced below the room, the group's own packets queue behind
nothing, so a queue it reads there is someone else's bursts; unpaced, its own TSO bursts make one.
Development only; nothing here judges.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from braidlab.dumbbell import LinkPath  # noqa: E402

BASE_MS = 40.0
REVERSE = "delay 20ms"
PATHS = {
    # 100 Mb/s x 40 ms is 333 packets of 1500 bytes.
    "droptail-loss": ("rate 100mbit delay 20ms limit 333 loss random 0.1% seed 5", "reno"),
    "red": ("rate 100mbit delay 20ms red limit 124500 min 15000 max 45000 avpkt 1500 probability 0.1 "
            "bandwidth 100mbit seed 5", "cubic"),
}
PORT, CROSS_PORT = 5999, 5201
STREAMS = 4
PACED_BPS = 30e6 / 8 / STREAMS
LEAD = 5.0  # seconds the competitors run before the group

READER = r"""
import socket, sys, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((sys.argv[1], int(sys.argv[2]))); ls.listen(64)
def drain(c):
    buf = bytearray(1 << 20)
    while c.recv_into(buf):
        pass
for _ in range(int(sys.argv[3])):
    c, _ = ls.accept()
    threading.Thread(target=drain, args=(c,), daemon=True).start()
threading.Event().wait(float(sys.argv[4]))
"""

SENDER = r"""
import json, socket, struct, sys, threading, time
addr, port, n, seconds, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
SO_MAX_PACING_RATE = 47
socks = []
for _ in range(n):
    s = socket.create_connection((addr, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    if rate > 0:
        s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(rate))
    socks.append(s)
end = time.monotonic() + seconds
def pump(s):
    block = memoryview(bytes(1 << 20))
    while time.monotonic() < end:
        s.sendall(block)
for s in socks:
    threading.Thread(target=pump, args=(s,), daemon=True).start()
t0 = time.monotonic(); rows = []
while time.monotonic() < end:
    time.sleep(0.1)
    rtts, acked = [], 0
    for s in socks:
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        rtts.append(struct.unpack_from("I", info, 68)[0] / 1000)
        acked += struct.unpack_from("Q", info, 120)[0]
    rows.append((time.monotonic() - t0, sorted(rtts), acked))
print(json.dumps(rows))
sys.stdout.flush()
import os; os._exit(0)
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 2)


def ping_excess(log: Path) -> list[float]:
    return [float(m.group(1)) - BASE_MS for m in re.finditer(r"\btime=([\d.]+) ms", log.read_text())]


def one(path_name: str, paced: bool, beside: bool, seconds: float, scratch: Path) -> dict:
    forward, cross_cc = PATHS[path_name]
    scratch.mkdir(parents=True, exist_ok=True)
    with LinkPath(forward, REVERSE, tag="pacedq") as path:
        path.tcp_buffers(32)
        procs = []
        cross = None
        if beside:
            procs.append(path.rcv.popen(["iperf3", "-s", "-1", "-p", str(CROSS_PORT)]))
            time.sleep(0.5)
            cross = path.snd.popen(["iperf3", "-c", path.RCV_ADDR, "-p", str(CROSS_PORT), "-P", "4", "-C", cross_cc,
                                    "-t", str(seconds + LEAD + 2), "-J"])
            time.sleep(LEAD)
        reader = path.rcv.popen([sys.executable, "-c", READER, path.RCV_ADDR, str(PORT), str(STREAMS),
                                 str(seconds + 20)])
        time.sleep(0.5)
        ping_log = scratch / f"ping-{path_name}-{int(paced)}-{int(beside)}.log"
        pinger = path.snd.popen(["ping", "-n", "-i", "0.02", path.RCV_ADDR], log=ping_log)
        sender = path.snd.popen([sys.executable, "-c", SENDER, path.RCV_ADDR, str(PORT), str(STREAMS), str(seconds),
                                 str(PACED_BPS if paced else 0)])
        out, _ = sender.communicate(timeout=seconds + 30)
        pinger.send_signal(signal.SIGINT)
        pinger.wait(timeout=10)
        cross_mbps = None
        if cross is not None:
            text, _ = cross.communicate(timeout=seconds + 60)
            try:
                cross_mbps = json.loads(text)["end"]["sum_received"]["bits_per_second"] / 1e6
            except (ValueError, KeyError):
                cross_mbps = None
        for p in (reader, *procs):
            p.kill()
            p.wait()
        counters = path.stats()["ab"]["counters"]
    rows = json.loads(out)
    after = [r for r in rows if r[0] > 10]
    lowest = [r[1][0] - BASE_MS for r in after]
    lower_median = [r[1][(len(r[1]) - 1) // 2] - BASE_MS for r in after]
    mbps = (after[-1][2] - after[0][2]) * 8 / 1e6 / (after[-1][0] - after[0][0])
    pings = ping_excess(ping_log)[int(10 / 0.02):]
    return {
        "path": path_name, "paced": paced, "beside": beside, "group_mbps": round(mbps, 1),
        "cross_mbps": round(cross_mbps, 1) if cross_mbps is not None else None,
        "lower_median_ms": {"p10": pct(lower_median, 0.1), "p50": pct(lower_median, 0.5), "p90": pct(lower_median, 0.9)},
        "lowest_ms": {"p10": pct(lowest, 0.1), "p50": pct(lowest, 0.5), "p90": pct(lowest, 0.9)},
        "ping_ms": {"p10": pct(pings, 0.1), "p50": pct(pings, 0.5), "p90": pct(pings, 0.9)} if pings else None,
        "link_drops": counters.get("dropped_queue"), "link_arrived": counters.get("arrived"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/braid-pacedq"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--paths", nargs="*", default=list(PATHS))
    a = ap.parse_args()
    rows = []
    for r in range(a.rounds):
        for name in a.paths:
            for beside in (False, True):
                for paced in (True, False):
                    rows.append({"round": r, **one(name, paced, beside, a.seconds, a.scratch)})
                    print(json.dumps(rows[-1]), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
