"""Is a capped auto group's shared queue the hosts' CPU? A development probe.

    .venv/bin/python results/2026-12-03-vm-2core/capped-group-cpu/probe.py [--seconds S] [--loss P] [--out FILE]

On a 1 Gb/s, 30 ms path (2500 frames of drop-tail, `--loss` random loss) `braid bench` runs
ways that move about half the link: 16 CUBIC streams held by the engine's own `--limit` (user
space holds them; the kernel sends 64 KiB buffers), and auto with 16 and with 4 streams (held by
SO_MAX_PACING_RATE; the kernel paces each stream in buffers of a millisecond of its rate). Each
second it reads the queue all streams share (the lowest smoothed RTT any stream reported, less
30 ms), how busy the machine's cores were (/proc/stat), and how many cap changes auto asked (its
`steer` records). At the end, braid-link's lateness over the run. Development only; nothing here
judges.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from braidlab import engine, quiet  # noqa: E402
from braidlab.dumbbell import LinkPath  # noqa: E402
from braidlab.proc import communicate_all  # noqa: E402

FORWARD = "rate 1gbit delay 15ms limit 2500"
REVERSE = "delay 15ms"
BASE_MS = 30.0
WAYS = {
    "parallel-16 --limit 500mbit": ["--mode", "parallel", "-n", "16", "--cc", "cubic", "--limit", "500mbit"],
    "auto -n 16": ["--mode", "auto", "-n", "16"],
    "auto -n 4": ["--mode", "auto", "-n", "4"],
    "parallel-16 --limit 650mbit": ["--mode", "parallel", "-n", "16", "--cc", "cubic", "--limit", "650mbit"],
    "parallel-16 --limit 800mbit": ["--mode", "parallel", "-n", "16", "--cc", "cubic", "--limit", "800mbit"],
}


def cpu_times() -> tuple[int, int]:
    return quiet.cpu_times(Path("/proc/stat").read_text())


def sample_cpu(stop: threading.Event, out: list) -> None:
    last = cpu_times()
    t0 = time.monotonic()
    while not stop.wait(1.0):
        now = cpu_times()
        out.append((time.monotonic() - t0, quiet.busy_share(last, now)))
        last = now


def sample_link(stop: threading.Event, path: LinkPath, out: list, every: float) -> None:
    """braid-link's forward counters every `every` seconds: what entered its queue, what its buffer dropped."""
    t0 = time.monotonic()
    while not stop.wait(every):
        c = path.stats()["ab"]["counters"]
        out.append((time.monotonic() - t0, c["arrived_bytes"], c["dropped_queue"], c["max_backlog_bytes"]))


def sample_ss(stop: threading.Event, path: LinkPath, out: list) -> None:
    """The sending streams' pacing and windows as `ss -tin` tells them, ten times a second."""
    t0 = time.monotonic()
    while not stop.wait(0.1):
        text = path.snd.run("ss", "-tinH", "dst", path.RCV_ADDR, check=False, timeout=5)
        out.append((time.monotonic() - t0, text))


def ping_excess(log: Path, t0: float) -> list:
    """(seconds since `t0`, ms above the base) of each echo `ping -D` got back: ICMP crosses
    the same link queue, rings and namespaces as the data, but no TCP socket's pacing or windows."""
    rows = []
    for line in log.read_text().splitlines():
        m = re.match(r"\[([\d.]+)\].*\btime=([\d.]+) ms", line)
        if m:
            rows.append((round(float(m.group(1)) - t0, 3), round(float(m.group(2)) - BASE_MS, 2)))
    return rows


def all_above(ss: list, ms: float, after: float = 5.0) -> tuple[int, int]:
    """(readings, readings with every data stream `ms` or more above the base): `ss -tin` samples
    taken `after` seconds in that report all the group's streams. The data streams are the CUBIC
    sockets; the session's control connection runs another control and idles near the base."""
    samples = [(t, [float(x) for x in re.findall(r"\bcubic\b[^\n]*?\brtt:([\d.]+)/", text)]) for t, text in ss]
    group = max((len(rtts) for _, rtts in samples), default=0)
    full = [rtts for t, rtts in samples if t >= after and group and len(rtts) == group]
    return len(full), sum(min(rtts) - BASE_MS >= ms for rtts in full)


def one(way: str, seconds: float, scratch: Path, loss: float, busy_wait: bool, link_every: float) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    token = engine.token_file(scratch)
    forward = FORWARD + (f" loss random {loss * 100:g}%" if loss else "")
    cpu: list = []
    link: list = []
    ss: list = []
    with LinkPath(forward, REVERSE, tag="capcpu", busy_wait=busy_wait) as path:
        path.tcp_buffers(32)
        root = scratch / "root"
        root.mkdir(exist_ok=True)
        server = engine.serve(path.rcv, root, token, once=True)
        time.sleep(0.5)
        argv = [engine.binary(), "bench", path.RCV_ADDR, "-t", str(seconds), "--token-file", str(token), "-i", "1",
                "--ssh", "never", "--json", *WAYS[way]]
        stop = threading.Event()
        samplers = [threading.Thread(target=sample_cpu, args=(stop, cpu)),
                    threading.Thread(target=sample_link, args=(stop, path, link, link_every)),
                    threading.Thread(target=sample_ss, args=(stop, path, ss))]
        for t in samplers:
            t.start()
        ping_log = scratch / "ping.log"
        wall0 = time.time()
        # Fifty echoes a second, for the run's length: a clock of the path's delay beside the streams'.
        pinger = path.snd.popen(["ping", "-n", "-D", "-i", "0.02", path.RCV_ADDR], log=ping_log)
        client = path.snd.popen(argv)
        try:
            (out, err), _ = communicate_all([client, server], timeout=seconds + 60)
        finally:
            stop.set()
            for t in samplers:
                t.join()
            pinger.send_signal(signal.SIGINT)  # ping flushes what it buffered and exits
            pinger.wait(timeout=10)
        st = path.stats()
        late, late_back, wake = st["ab"]["late_ns"], st["ba"]["late_ns"], st["wake_late_ns"]
        fwd, back = st["ab"]["counters"], st["ba"]["counters"]
    seconds_rows, steers = [], []
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "steer":
            steers.append(r)
        if r.get("type") == "interval":
            rtts = [s["srtt_us"] / 1000 for s in r["streams"] if s.get("srtt_us")]
            if rtts:
                seconds_rows.append({"t": r["t"], "mbps": r["mbps"], "queue_ms": round(min(rtts) - BASE_MS, 1),
                                     "streams": len(r["streams"])})
    if not seconds_rows:
        raise RuntimeError(f"{way}: no interval records; stderr: {err[-400:]}")
    for row in seconds_rows:
        row["cpu_busy"] = round(min(cpu, key=lambda c: abs(c[0] - row["t"]))[1], 2) if cpu else None
        row["steers"] = sum(1 for s in steers if row["t"] - 1 < s["t"] <= row["t"])
        caps = [s["share_mbps"] for s in steers if s["t"] <= row["t"]]
        row["cap_mbps"] = caps[-1] if caps else None
    after = [r for r in seconds_rows if r["t"] > 5]
    queues = sorted(r["queue_ms"] for r in after)
    busy_q = [r["cpu_busy"] for r in after if r["queue_ms"] >= 5]
    clear_q = [r["cpu_busy"] for r in after if r["queue_ms"] < 5]
    ss_readings, ss_all_above_5ms = all_above(ss, 5.0)
    pings = ping_excess(ping_log, wall0)
    late_pings = sorted(x for t, x in pings if t >= 5.0)
    return {
        "way": way, "loss": loss,
        "mbps": round(statistics.mean(r["mbps"] for r in after), 1),
        "queue_ms_median": queues[len(queues) // 2], "queue_ms_p90": queues[int(0.9 * len(queues))],
        "cpu_busy_median": round(statistics.median(r["cpu_busy"] for r in after), 2),
        "cpu_busy_when_queue": round(statistics.median(busy_q), 2) if busy_q else None,
        "cpu_busy_when_clear": round(statistics.median(clear_q), 2) if clear_q else None,
        "seconds_with_queue": len(busy_q), "steers": len(steers),
        "link_late_p99_ms": round(late["p99"] / 1e6, 2), "link_late_max_ms": round(late["max"] / 1e6, 2),
        "acks_late_p99_ms": round(late_back["p99"] / 1e6, 2), "wake_late_p99_ms": round(wake["p99"] / 1e6, 2),
        "busy_wait": busy_wait,
        "frame_bytes_mean": round(fwd["arrived_bytes"] / max(fwd["arrived"], 1)),
        "ss_readings": ss_readings, "ss_all_above_5ms": ss_all_above_5ms,
        "acks_per_frame": round(back["arrived"] / max(fwd["arrived"], 1), 3),
        "ring_wait_ms": {d: {k: round(v / 1e6, 2) for k, v in st[d]["ring_wait_ns"].items()} for d in ("ab", "ba")},
        "pings": len(late_pings),
        "ping_excess_ms_p50": late_pings[len(late_pings) // 2] if late_pings else None,
        "ping_excess_ms_p90": late_pings[int(0.9 * len(late_pings))] if late_pings else None,
        "pings_above_5ms": sum(x >= 5.0 for x in late_pings),
        "ping": pings,
        "seconds": seconds_rows,
        "link": link,
        "ss": ss,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/braid-capcpu"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--loss", type=float, default=1e-4)
    ap.add_argument("--busy-wait", action="store_true", help="braid-link polls for frames due sooner than a wake")
    ap.add_argument("--link-every", type=float, default=1.0, help="seconds between reads of braid-link's counters")
    ap.add_argument("--ways", nargs="*", default=list(WAYS))
    a = ap.parse_args()
    rows = []
    for way in a.ways:
        row = one(way, a.seconds, a.scratch, a.loss, a.busy_wait, a.link_every)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("seconds", "link", "ss", "ping")}), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
