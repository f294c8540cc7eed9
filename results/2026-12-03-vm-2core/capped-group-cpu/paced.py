"""Sixteen plain TCP streams held by SO_MAX_PACING_RATE, set once or re-set every tick. A development probe.

    .venv/bin/python results/2026-12-03-vm-2core/capped-group-cpu/paced.py [--seconds S] [--loss P] [--out FILE]

The same path as probe.py (1 Gb/s, 30 ms, 2500 frames of drop-tail, 1e-4 random loss). A Python
sender opens 16 CUBIC connections to a Python reader and caps each at 35 Mb/s (560 Mb/s in all)
two ways: once (`fixed`), and again every 100 ms at a rate drawn within 10 % of that (`reset`,
as a steer that shares a cap by what each stream moved does). Ten times a second it reads every
stream's smoothed RTT from TCP_INFO; it prints the median and the 90th percentile of the lowest
of them less 30 ms (a delay all streams share), the share of readings above 5 ms, and the rate,
with braid-link's lateness. Development only; nothing here judges.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from braidlab.dumbbell import LinkPath  # noqa: E402

FORWARD = "rate 1gbit delay 15ms limit 2500 loss random 0.01%"
REVERSE = "delay 15ms"
BASE_MS = 30.0
PORT = 5999
STREAMS = 16
RATE_BPS = 35e6 / 8

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
import json, random, socket, struct, sys, threading, time
addr, port, n, seconds, rate, reset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1"
SO_MAX_PACING_RATE = 47
socks = []
for _ in range(n):
    s = socket.create_connection((addr, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
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
rnd = random.Random(1)
while time.monotonic() < end:
    time.sleep(0.1)
    if reset:
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(rate * rnd.uniform(0.9, 1.1)))
    rtts, acked = [], 0
    for s in socks:
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        rtts.append(struct.unpack_from("I", info, 68)[0] / 1000)
        acked += struct.unpack_from("Q", info, 120)[0]
    rows.append((time.monotonic() - t0, min(rtts), acked))
print(json.dumps(rows))
sys.stdout.flush()
import os; os._exit(0)
"""


def one(way: str, seconds: float) -> dict:
    with LinkPath(FORWARD, REVERSE, tag="paced") as path:
        path.tcp_buffers(32)
        reader = path.rcv.popen([sys.executable, "-c", READER, path.RCV_ADDR, str(PORT), str(STREAMS), str(seconds + 20)])
        time.sleep(0.5)
        sender = path.snd.popen([sys.executable, "-c", SENDER, path.RCV_ADDR, str(PORT), str(STREAMS), str(seconds),
                                 str(RATE_BPS), "1" if way == "reset" else "0"])
        out, err = sender.communicate(timeout=seconds + 30)
        reader.kill()
        reader.wait()
        late = path.stats()["ab"]["late_ns"]
    rows = json.loads(out)
    after = [r for r in rows if r[0] > 5]
    q = sorted(r[1] - BASE_MS for r in after)
    mbps = (after[-1][2] - after[0][2]) * 8 / 1e6 / (after[-1][0] - after[0][0])
    return {"way": way, "mbps": round(mbps, 1), "queue_ms_median": round(q[len(q) // 2], 1),
            "queue_ms_p90": round(q[int(0.9 * len(q))], 1), "above_5ms": round(sum(x > 5 for x in q) / len(q), 2),
            "link_late_p99_ms": round(late["p99"] / 1e6, 2), "link_late_max_ms": round(late["max"] / 1e6, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = []
    for r in range(a.rounds):
        for way in ("fixed", "reset"):
            rows.append({"round": r, **one(way, a.seconds)})
            print(json.dumps(rows[-1]), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
