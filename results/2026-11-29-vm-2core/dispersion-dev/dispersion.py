"""What a receiving end can see of the bottleneck's rate: a development measurement.

    .venv/bin/python results/2026-11-29-vm-2core/dispersion-dev/dispersion.py [--seconds S] [--only NAME]
        [--readers one,four,batched] [--out DIR] [--keep]

auto cannot tell others who carry a tenth of the path from an idle lossy path
by anything its sender sees (docs/auto.md); the bottleneck's rate mu would tell
them apart, and braid owns the receiving end too. Packets of one group that the
bottleneck sends back to back reach the receiver spaced by their size over mu,
whoever else is on the path (packet pairs, Keshav 1991); cross traffic between
them, or an idle bottleneck, only widens the spacing. Unprivileged, a TCP
receiver gets the kernel's software receive timestamp of the last segment of
each read (SO_TIMESTAMPNS): each read's bytes over the time since the previous
read's last segment is the rate those segments arrived at.

On a braid-link dumbbell: CUBIC streams from a plain socket sender, the
receiver recording (timestamp, bytes) of every read, beside no one, beside
loss-limited Reno or CUBIC flows, beside a stiff UDP source; prints the
estimate of mu (the densest bin of the reads' rates) over the run and over
each second, as fractions of the link's payload rate. Readers (--readers): one
stream read as segments come, four streams on four threads merged by time, one
stream read 4 MiB at a time after 2 ms pauses. Development paths only;
nothing here judges.
"""

from __future__ import annotations

import argparse
import array
import json
import math
import socket
import struct
import sys
import time
from pathlib import Path

SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
PORT = 5301
REPO = Path(__file__).resolve().parents[3]
# Frame bytes per payload byte on the wire (1448 payload in a 1514-byte frame: Ethernet, IP,
# TCP with timestamps).
WIRE_PER_PAYLOAD = 1514 / 1448


def _read_one(c: socket.socket, end: float, pause_s: float, out: list) -> None:
    c.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    space = socket.CMSG_SPACE(16)
    while time.monotonic() < end:
        if pause_s:
            # A reader busy elsewhere between reads (writing a block to disk) drains in large reads.
            time.sleep(pause_s)
        data, anc, _, _ = c.recvmsg(1 << 22 if pause_s else 1 << 18, space)
        if not data:
            break
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
                s, ns = struct.unpack("qq", blob[:16])
                out.append((s * 1_000_000_000 + ns, len(data)))
    c.close()


def recv_main(out: Path, seconds: float, streams: int = 1, pause_s: float = 0.0) -> None:
    """Reads `streams` connections, each on its own thread; their reads merged by time (one
    group's packets, whichever stream carried them)."""
    import threading

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", PORT))
    ls.listen(streams)
    conns = [ls.accept()[0] for _ in range(streams)]
    end = time.monotonic() + seconds
    reads: list[list] = [[] for _ in conns]
    threads = [threading.Thread(target=_read_one, args=(c, end, pause_s, r)) for c, r in zip(conns, reads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    merged = sorted(x for r in reads for x in r)
    ts = array.array("q", (t for t, _ in merged))
    nb = array.array("q", (n for _, n in merged))
    with out.open("wb") as f:
        f.write(struct.pack("q", len(ts)))
        ts.tofile(f)
        nb.tofile(f)


def send_main(addr: str, seconds: float, streams: int = 1) -> None:
    import threading

    def one() -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        s.connect((addr, PORT))
        buf = b"\0" * (1 << 16)
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                s.send(buf)
        except OSError:
            pass
        s.close()

    threads = [threading.Thread(target=one) for _ in range(streams)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join()


def load(path: Path) -> tuple[list[int], list[int]]:
    raw = path.read_bytes()
    (n,) = struct.unpack_from("q", raw)
    ts = array.array("q")
    ts.frombytes(raw[8:8 + 8 * n])
    nb = array.array("q")
    nb.frombytes(raw[8 + 8 * n:8 + 16 * n])
    return list(ts), list(nb)


def read_rates(ts: list[int], nb: list[int], lo: int, hi: int):
    """(payload bit/s, bytes) of reads lo..hi-1: each read's bytes over the time since the read
    before it (reads stamped at the same instant are left out)."""
    for i in range(max(lo, 1), hi):
        dt = ts[i] - ts[i - 1]
        if dt > 0:
            yield nb[i] * 8 / (dt / 1e9), nb[i]


def mode_rate(ts: list[int], nb: list[int], lo: int, hi: int) -> float | None:
    """The densest 2 % bin (on a log scale) of the rates reads lo..hi-1 arrived at, each read
    weighted by its bytes: a packet that left the bottleneck right behind one of its group's
    counts once at mu whatever else did. Payload bit/s; knows nothing of the link."""
    bins: dict[int, float] = {}
    for rate, n in read_rates(ts, nb, lo, hi):
        b = round(math.log(rate) / math.log(1.02))
        bins[b] = bins.get(b, 0.0) + n
    if not bins:
        return None
    return 1.02 ** max(bins, key=bins.get)


def analyse(ts: list[int], nb: list[int], rate_bps: float, skip_s: float) -> dict:
    """The mode estimate of mu over the run after `skip_s`, and over each second of it, as
    fractions of the link's payload rate; and each read's rate's percentiles."""
    payload_bps = rate_bps / WIRE_PER_PAYLOAD
    t0 = ts[0]
    first = next((i for i, t in enumerate(ts) if t - t0 >= skip_s * 1e9), len(ts))
    if first >= len(ts) - 1:
        return {}
    fr = sorted(rate / payload_bps for rate, _ in read_rates(ts, nb, first, len(ts)))
    q = lambda p: fr[min(len(fr) - 1, int(p * len(fr)))]
    span = (ts[-1] - ts[first]) / 1e9
    whole = mode_rate(ts, nb, first, len(ts))
    # Each second on its own: how soon and how steadily the estimate is there.
    secs, i = [], first
    while i < len(ts):
        j = i
        while j < len(ts) and ts[j] - ts[i] < 1e9:
            j += 1
        if ts[j - 1] - ts[i] >= 0.9e9:
            m = mode_rate(ts, nb, i, j)
            if m is not None:
                secs.append(m / payload_bps)
        i = j
    return {"reads": len(fr), "goodput_of_link": sum(nb[first:]) * 8 / max(span, 1e-9) / payload_bps,
            "mu_estimate_of_link": whole / payload_bps if whole else None,
            "seconds": len(secs),
            "seconds_within_5pct": sum(1 for m in secs if abs(m - 1) <= 0.05) / max(len(secs), 1),
            "second_estimates_min_max": [min(secs), max(secs)] if secs else None,
            "read_rate_p10_p50_p90": [q(0.1), q(0.5), q(0.9)]}


SCENARIOS = [
    # name, forward spec, reverse spec, link rate bit/s, cross traffic (traffic.iperf3_client's options)
    ("100M-40ms-idle", "rate 100mbit delay 20ms limit 333", "delay 20ms", 100e6, None),
    ("100M-40ms-idle-1e-4", "rate 100mbit delay 20ms limit 333 loss random 0.01%", "delay 20ms", 100e6, None),
    ("100M-40ms-4reno-1e-4", "rate 100mbit delay 20ms limit 333 loss random 0.01%", "delay 20ms", 100e6,
     {"parallel": 4, "cc": "reno"}),
    ("100M-40ms-4cubic", "rate 100mbit delay 20ms limit 333", "delay 20ms", 100e6, {"parallel": 4, "cc": "cubic"}),
    ("100M-40ms-udp40", "rate 100mbit delay 20ms limit 333", "delay 20ms", 100e6, {"udp_rate": "40M"}),
    ("500M-100ms-4cubic-1e-4", "rate 500mbit delay 50ms limit 4167 loss random 0.01%", "delay 50ms", 500e6,
     {"parallel": 4, "cc": "cubic"}),
    ("1G-40ms-idle-1e-5", "rate 1gbit delay 20ms limit 3333 loss random 0.001%", "delay 20ms", 1e9, None),
    ("1G-100ms-4cubic-1e-4", "rate 1gbit delay 50ms limit 8333 loss random 0.01%", "delay 50ms", 1e9,
     {"parallel": 4, "cc": "cubic"}),
    ("1G-100ms-1cubic", "rate 1gbit delay 50ms limit 8333", "delay 50ms", 1e9, {"parallel": 1, "cc": "cubic"}),
    ("100M-10ms-16reno", "rate 100mbit delay 5ms limit 83", "delay 5ms", 100e6, {"parallel": 16, "cc": "reno"}),
]


# How the receiving end reads: (name, streams, pause between reads in seconds).
READERS = {"one": (1, 0.0), "four": (4, 0.0), "batched": (1, 0.002)}


def run(seconds: float, only: str | None, out_dir: Path, keep: bool = False,
        readers: tuple[str, ...] = ("one",)) -> None:
    sys.path.insert(0, str(REPO / "python"))
    from braidlab import traffic
    from braidlab.dumbbell import Dumbbell
    from braidlab.netns import stop

    me = str(Path(__file__).resolve())
    py = sys.executable
    rows = []
    for (name, fwd, rev, rate, cross), reader in ((sc, rd) for sc in SCENARIOS for rd in readers):
        if only and only not in name:
            continue
        streams, pause = READERS[reader]
        with Dumbbell(fwd, rev, pairs=2, tag="disp") as db:
            snd, rcv = db.senders[0], db.receivers[0]
            procs = []
            if cross:
                procs.append(traffic.iperf3_server(db.receivers[1], name="cross-s"))
                procs.append(traffic.iperf3_client(db.senders[1], db.receivers[1].addr, seconds + 8,
                                                   name="cross-c", **cross))
                time.sleep(5)
            trace = out_dir / f"{name}-{reader}.bin"
            r = rcv.popen([py, me, "recv", str(trace), str(seconds), str(streams), str(pause)], name="disp-r")
            time.sleep(0.3)
            s = snd.popen([py, me, "send", rcv.addr, str(seconds + 1), str(streams)], name="disp-s")
            r.wait(seconds + 30)
            s.wait(30)
            for p in procs:
                # Ended mid-test: their exit status says nothing of the measurement.
                stop(p.proc)
            ts, nb = load(trace)
            row = {"scenario": name, "reader": reader, **analyse(ts, nb, rate, skip_s=5.0)}
            if not keep:
                trace.unlink()
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out_dir / "dispersion.json").write_text(json.dumps(rows, indent=1) + "\n")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "recv":
        recv_main(Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "send":
        send_main(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--only", default=None)
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "dispersion")
    ap.add_argument("--keep", action="store_true", help="keep each scenario's reads (.bin)")
    ap.add_argument("--readers", default="one", help="comma-separated, of " + ", ".join(READERS))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    run(a.seconds, a.only, a.out, a.keep, tuple(a.readers.split(",")))


if __name__ == "__main__":
    main()
