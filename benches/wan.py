"""One file over an emulated WAN: braid against GridFTP, XRootD and rsync, in
one run; prints figures, asserts nothing.

    make bench-wan      (or: .venv/bin/python benches/wan.py [--busy] [--size 512M])

The path is Hacker 2004's (experiments/hacker2004.toml): 100 Mb/s, 68 ms,
random loss of 1e-5, a 400-packet drop-tail queue, braid-link in a router
namespace between two hosts. Every round copies one --size file (512 MiB
of random bytes, page-cached at the sender) with every tool, in an order
shuffled per round so that a slow moment of the machine falls on all of
them; each copy is timed to the client's exit plus a sync at the receiver
(braid answers only once the file is verified and durable; the others do
neither), then its bytes are compared with the source's. braid's copies
print their records (--json), and a second table says what each braid
copy's sending end spent of the CPU a GB, and of it, auto's steering
(the summary's steer_cpu_seconds), beside parallel -n 16's whole cost
in the same round.

With --busy, 5 Reno flows (iperf3 -P 5 between a second pair of hosts;
--busy-cc cubic for CUBIC ones) cross the same bottleneck for the whole
run. Each tool's copy runs beside them, and their rate over the --quiet seconds before the copy and during it
(bytes their receiver took in) says what the tool took from them: what
Hacker 2004 calls appropriation, with the flows' own rate just before as
the baseline. One flow's fair share of the path is a sixth of it.

The tools, all with the system's default congestion control (CUBIC): braid
as a user runs it (no options: --mode auto, as many streams as the path
rewards while idle, one flow's share while busy), braid --mode parallel -n
16, braid --mode single, globus-url-copy -p 16, -p 8 and -p 1 (GridFTP's
parallel streams in extended block mode), xrdcp --streams 8 (XRootD),
rsync to its daemon. --path and --reverse give another path (a long fat
one: `--path "rate 500mbit delay 66ms limit 4167 loss random 0.001%"`,
100 ms with the reverse 34 ms).
Needs root, the controls installed for auto (`braid cc install`), and the
Debian packages `make setup` installs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from braidlab import braid, engine, peers, records, runner
from braidlab.dumbbell import Dumbbell
from braidlab.engine import Method
from braidlab.netns import wait_until
from braidlab.peers import Peer

FORWARD = "rate 100mbit delay 34ms limit 400 loss random 0.001%"
REVERSE = "delay 34ms"
IPERF_PORT = 5201

PEERS = [
    Peer("braid", 32, Method("auto", None, default=True)),
    Peer("braid", 16, Method("parallel", 16)),
    Peer("braid", 1, Method("single", 1)),
    Peer("gridftp", 16),
    Peer("gridftp", 8),
    Peer("gridftp", 1),
    Peer("xrootd", 8),
    Peer("rsync"),
]


def kept(peer: Peer, wanted: str) -> bool:
    """Whether --only's item `wanted` names `peer`: its kind, or kind:mode
    (braid) or kind:streams."""
    kind, _, form = wanted.partition(":")
    if kind != peer.kind:
        return False
    if not form:
        return True
    if peer.method is not None:
        return form == peer.method.mode
    return form == str(peer.streams)


def size_arg(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        n = int(t[:-1]) * units[t[-1]] if t and t[-1] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (512M, 1G, 1048576)") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the file must hold at least one byte")
    return n


def make_file(path: Path, size: int) -> None:
    rng = random.Random(11)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 8 << 20)
            f.write(rng.randbytes(n))
            left -= n


def rx_bytes(host) -> int:
    """What the host's interface has taken in, in bytes (its namespace's own counters)."""
    return int(host.run("cat", "/sys/class/net/eth0/statistics/rx_bytes").strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=size_arg, default=512 << 20, help="the file's size (default 512M)")
    ap.add_argument("--runs", type=int, default=2, help="rounds of every tool (default 2)")
    ap.add_argument("--busy", action="store_true", help="5 long flows share the bottleneck throughout")
    ap.add_argument("--busy-cc", choices=("reno", "cubic"), default="reno",
                    help="--busy: the flows' congestion control (default reno; cubic is what a host's "
                         "ordinary transfers run, and fills a long fat path that loss holds Reno below)")
    ap.add_argument("--quiet", type=float, default=15.0,
                    help="--busy: seconds the flows run alone before each copy (default 15)")
    ap.add_argument("--path", default=FORWARD, help=f"braid-link's forward spec (default: {FORWARD!r})".replace("%", "%%"))
    ap.add_argument("--reverse", default=REVERSE, help=f"the reverse direction's spec (default: {REVERSE!r})".replace("%", "%%"))
    ap.add_argument("--only", default="",
                    help="comma-separated tools to keep: a kind (braid, gridftp, xrootd, rsync), or one "
                         "form of it as kind:mode for braid (braid:auto) or kind:streams (gridftp:16)")
    ap.add_argument("--logs", type=Path, default=None,
                    help="a directory for each copy's client output (braid's --json records), one file a copy")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a new dir in /var/tmp)")
    a = ap.parse_args()
    # Ctrl-C or SIGTERM unwinds: servers, namespaces and the work directory go.
    runner.stop_on_signals()
    if a.runs < 1:
        sys.exit("bench-wan: --runs must be at least 1")
    if os.geteuid() != 0:
        sys.exit("bench-wan: needs root (network namespaces)")
    chosen = [p for p in PEERS if not a.only or any(kept(p, w) for w in a.only.split(","))]
    if not chosen:
        sys.exit(f"bench-wan: --only {a.only!r} keeps no tool")
    lacking = peers.missing(chosen)
    if lacking:
        sys.exit(f"bench-wan: missing {', '.join(lacking)}; `make setup` installs them")
    installed_here = False
    if any(p.method and p.method.mode == "auto" for p in chosen) and not braid.cc_status()["installed"]:
        braid.cc("install")
        installed_here = True

    work = Path(tempfile.mkdtemp(prefix="braid-bench-wan-", dir=a.dir or "/var/tmp"))
    work.chmod(0o755)  # GridFTP's and XRootD's servers run as nobody
    try:
        src = work / "src.bin"
        make_file(src, a.size)
        want = peers.digest(src)
        print(f"file: {a.size / 2**20:.0f} MiB on {work}; path: {a.path}; reverse: {a.reverse}"
              f"{f'; beside 5 {a.busy_cc} flows' if a.busy else ''}")
        with Dumbbell(a.path, a.reverse, pairs=2 if a.busy else 1, tag="wan", run_dir=work / "testbed") as db:
            snd, rcv = db.senders[0], db.receivers[0]
            token = engine.token_file(work)
            # One server of each kind: the client asks for the mode and the streams.
            servers = {}
            for p in chosen:
                if p.kind not in servers:
                    servers[p.kind] = peers.serve(p, rcv, work / "roots" / p.kind, work / "servers" / p.kind,
                                                  token=token)
            flows = None
            if a.busy:
                flows_rcv = db.receivers[1]
                flows_rcv.ns.popen(["iperf3", "-s", "-p", str(IPERF_PORT)], log=work / "iperf3-server.out")
                wait_until(lambda: peers.listens(flows_rcv, IPERF_PORT), timeout=10)
                flows = db.senders[1].ns.popen(["iperf3", "-c", flows_rcv.addr, "-p", str(IPERF_PORT), "-P", "5",
                                                "-C", a.busy_cc, "-t", "86400", "-i", "0"],
                                               log=work / "iperf3-client.out")
            timeout = max(600.0, a.size * 8 / 1e6 * 4)
            if a.logs is not None:
                a.logs.mkdir(parents=True, exist_ok=True)
            runs: list[list[dict]] = [[] for _ in chosen]
            for r in range(a.runs):
                order = list(range(len(chosen)))
                random.Random(r).shuffle(order)
                for i in order:
                    p = chosen[i]
                    server = dataclasses.replace(servers[p.kind], peer=p)
                    row = {}
                    if flows:
                        before = rx_bytes(db.receivers[1])
                        time.sleep(a.quiet)
                        row["alone_mbps"] = (rx_bytes(db.receivers[1]) - before) * 8 / a.quiet / 1e6
                        before = rx_bytes(db.receivers[1])
                    # braid's records say what its sending end spent; the other tools say nothing.
                    log = None
                    if a.logs is not None or p.kind == "braid":
                        slug = p.name.replace(" ", "_").replace("(", "").replace(")", "")
                        log = (a.logs or work) / f"run{r + 1}-{slug}.log"
                    copied = peers.timed_copy(server, snd, src, timeout, log=log)
                    secs = copied.seconds
                    if flows:
                        row["beside_mbps"] = (rx_bytes(db.receivers[1]) - before) * 8 / secs / 1e6
                    dest = server.copy_of(src)
                    if not peers.same_bytes(src, dest, want):
                        sys.exit(f"bench-wan: {p.name} left {dest} unlike the source")
                    dest.unlink()
                    row["secs"] = secs
                    row["conns"] = copied.connections
                    row["mbps"] = a.size * 8 / secs / 1e6
                    if p.kind == "braid" and log is not None:
                        row["summary"] = sender_summary(log)
                    runs[i].append(row)
                    extra = (f", the 5 flows {row['alone_mbps']:.1f} -> {row['beside_mbps']:.1f} Mb/s"
                             if flows else "")
                    print(f"run {r + 1}: {p.name}: {secs:.1f} s, {row['mbps']:.1f} Mb/s, "
                          f"{copied.connections} connections at most{extra}", flush=True)
            for s in servers.values():
                s.stop()
        print()
        if a.busy:
            print(f"| tool | Mb/s (each run) | median Mb/s | 5 {a.busy_cc} flows alone -> beside it, Mb/s | taken from them |")
            print("|---|---|---|---|---|")
        else:
            print("| tool | seconds (each run) | median Mb/s |")
            print("|---|---|---|")
        for p, rows in zip(chosen, runs):
            med = statistics.median(x["mbps"] for x in rows)
            if a.busy:
                alone = statistics.median(x["alone_mbps"] for x in rows)
                beside = statistics.median(x["beside_mbps"] for x in rows)
                each = " / ".join(f"{x['mbps']:.1f}" for x in rows)
                print(f"| {p.name} | {each} | {med:.1f} | {alone:.1f} -> {beside:.1f} | "
                      f"{100 * (1 - beside / alone):.0f} % |")
            else:
                each = " / ".join(f"{x['secs']:.1f}" for x in rows)
                print(f"| {p.name} | {each} | {med:.1f} |")
        cpu_table(chosen, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if installed_here:
            braid.cc("uninstall")


def sender_summary(log: Path) -> records.Summary | None:
    """The sending end's summary record in a braid copy's log, if it printed one."""
    return next((r for r in records.load(log.read_text()) if isinstance(r, records.Summary)), None)


def cpu_table(chosen: list[Peer], runs: list[list[dict]]) -> None:
    """What each braid copy's sending end spent of the CPU a GB, and of it its steer's, against
    parallel -n 16's whole cost in the same round (the yardstick of a fixed mode)."""
    def per_gb(row: dict, what: str) -> float | None:
        s = row.get("summary")
        v = None if s is None else getattr(s, what)
        return None if v is None else v / (s.bytes / 1e9)

    fixed = next((rows for p, rows in zip(chosen, runs) if p.method and p.method.mode == "parallel"), None)
    braids = [(p, rows) for p, rows in zip(chosen, runs) if p.kind == "braid"]
    if not braids:
        return
    print()
    print("| braid | sending end's CPU, s/GB (each run) | of it the steer's, ms/GB | the steer / parallel -n 16's CPU |")
    print("|---|---|---|---|")
    for p, rows in braids:
        cpu = " / ".join("-" if (c := per_gb(x, "cpu_seconds")) is None else f"{c:.3f}" for x in rows)
        steer = [per_gb(x, "steer_cpu_seconds") for x in rows]
        if all(v is None for v in steer):
            print(f"| {p.name} | {cpu} | - | - |")
            continue
        own = " / ".join("-" if v is None else f"{v * 1000:.1f}" for v in steer)
        share = "-"
        if fixed is not None:
            base = [per_gb(x, "cpu_seconds") for x in fixed]
            share = " / ".join("-" if v is None or b is None else f"{100 * v / b:.1f} %" for v, b in zip(steer, base))
        print(f"| {p.name} | {cpu} | {own} | {share} |")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("bench-wan: stopped; servers, namespaces and files removed")
