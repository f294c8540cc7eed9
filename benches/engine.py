"""braid's engine against iperf3: prints figures, asserts nothing.

    make bench-engine      (or: .venv/bin/python benches/engine.py)

On a veth pair between two namespaces with no emulated delay (offloads on,
as between two real hosts), in one run:
1. memory to memory, 1, 4 and 9 streams of cubic: `braid bench` sealed (the
   default), `braid bench --plain` (unsealed, both ends consenting) and
   `iperf3 -P n`, throughput and CPU seconds per GB moved (both ends);
2. file mode: `braid send` of a page-cached 2 GiB file (4 streams) into a
   server root on tmpfs, sealed and plain alternating, against `braid bench`
   with the same streams; run --file-runs times each after one warm-up send
   (each printed, then the medians), as one run on a shared 2-core machine
   swings by a quarter.

3. with --auto-cost: what steering costs. `--mode auto -n N` against
   `--mode parallel -n N` of the same control (cubic), for N = 2 (auto
   cannot add streams: the difference is the steer's own work, its
   TCP_INFO reads and rate caps) and N = 9 (auto chooses how many of the
   9 carry), memory to memory, alternating, --file-runs times each; CPU
   seconds per GB (both ends), each run printed, then the medians and the
   difference; and the steer's own CPU time (its ticks and looks, counted
   on the thread that runs them: the summary's steer_cpu_seconds) per GB,
   against the fixed mode's whole cost, which a difference of two noisy
   process totals cannot show at a few per cent.

4. with --against OLD_BRAID: this build against another, memory to memory,
   4 and 9 streams of cubic, --file-runs rounds, the order alternating
   from round to round (each build's server and client are its own): the
   machine's drift falls on both, which back-to-back tables cannot say.

Options: --file-runs N (default 3), --file-only (skip the iperf3 table;
the file rows are then compared with one 4-stream `braid bench`),
--auto-cost (only part 3), --against OLD_BRAID (only part 4).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from braidlab import engine
from braidlab.engine import Method, Report
from braidlab.netns import wait_until
from braidlab.testbed import Pair

SECONDS = 6
STREAMS = (1, 4, 9)
FILE_BYTES = 2 << 30


def _iperf3(pair, n: int) -> dict:
    server = pair.rcv.popen(["iperf3", "-s", "-1", "-p", "5201"])
    time.sleep(0.3)
    out = pair.snd.run("iperf3", "-c", pair.RCV_ADDR, "-p", "5201", "-P", str(n), "-t", str(SECONDS), "-C", "cubic",
                       "-J", timeout=SECONDS + 30)
    server.wait(30)
    end = json.loads(out)["end"]
    secs = end["sum_received"]["seconds"]
    cpu = end["cpu_utilization_percent"]
    gb = end["sum_received"]["bytes"] / 1e9
    return {"gbps": end["sum_received"]["bits_per_second"] / 1e9,
            "cpu_s_per_gb": (cpu["host_total"] + cpu["remote_total"]) / 100 * secs / gb}


def _server_cpu(log: Path) -> float:
    s = Report.summaries(log)
    return s[-1].cpu_seconds if s else 0.0


def _braid(pair, n: int, log: Path, method: Method | None = None, plain: bool = False) -> dict:
    before = _server_cpu(log)
    argv = engine.bench_argv(f"{pair.RCV_ADDR}:{engine.PORT}", SECONDS, pair.token,
                             method or Method("parallel", n, cc="cubic")) + (["--plain"] if plain else [])
    rep = Report.parse(pair.snd.run(*argv, timeout=SECONDS + 60))
    assert (rep.summary.sealed == "plain") == plain, rep.summary.sealed
    wait_until(lambda: len(Report.summaries(log)) > pair.sessions, timeout=10)
    pair.sessions += 1
    s = rep.summary
    gb = s.peer_bytes / 1e9
    return {"gbps": s.peer_bytes * 8 / s.seconds / 1e9,
            "cpu_s_per_gb": (s.cpu_seconds + _server_cpu(log) - before) / gb,
            "steer_s_per_gb": None if s.steer_cpu_seconds is None else s.steer_cpu_seconds / gb}


def _auto_cost(pair, log: Path, runs: int) -> None:
    print(f"steering's cost: cubic streams, {SECONDS} s memory to memory, veth pair")
    for n in (2, 9):
        fixed, auto = Method("parallel", n, cc="cubic"), Method("auto", n, cc="cubic")
        cost: dict[str, list[float]] = {"fixed": [], "auto": []}
        steer: list[float] = []
        for _ in range(runs):
            for name, m in (("fixed", fixed), ("auto", auto)):
                r = _braid(pair, n, log, m)
                cost[name].append(r["cpu_s_per_gb"])
                label = f"{'parallel' if name == 'fixed' else 'auto'}-{n}"
                own = ""
                if name == "auto":
                    steer.append(r["steer_s_per_gb"])
                    own = f"  of which the steer {r['steer_s_per_gb'] * 1000:.2f} ms/GB"
                print(f"  {label:11} {r['gbps']:6.2f} Gb/s  {r['cpu_s_per_gb']:.3f} CPU s/GB{own}", flush=True)
        a, f = statistics.median(cost["auto"]), statistics.median(cost["fixed"])
        st = statistics.median(steer)
        print(f"  median  parallel-{n} {f:.3f}, auto -n {n} {a:.3f} CPU s/GB: auto {100 * (a - f) / f:+.1f} %; "
              f"the steer's own {st * 1000:.2f} ms/GB = {100 * st / f:.2f} % of parallel-{n}'s", flush=True)


def _against(pair, scratch: Path, shm: Path, other: str, rounds: int) -> None:
    builds = {"this": engine.binary(), "other": other}
    ports = {"this": engine.PORT + 1, "other": engine.PORT + 2}
    servers = []
    for name, binary in builds.items():
        argv = [binary, "serve", "--listen", f"0.0.0.0:{ports[name]}", "--root", str(shm), "--token-file",
                str(pair.token), "--json"]
        servers.append(pair.rcv.popen(argv, log=scratch / f"serve-{name}.jsonl"))
    try:
        assert wait_until(lambda: all(str(p) in pair.rcv.run("ss", "-tlnH") for p in ports.values()), timeout=10)
        print(f"this build ({builds['this']}) against {other}: memory to memory, {SECONDS} s, cubic, "
              f"{rounds} rounds, the order alternating")
        got: dict[tuple[str, int], list[float]] = {}
        for r in range(rounds):
            order = ("this", "other") if r % 2 == 0 else ("other", "this")
            for n in (4, 9):
                for name in order:
                    argv = engine.bench_argv(f"{pair.RCV_ADDR}:{ports[name]}", SECONDS, pair.token,
                                             Method("parallel", n, cc="cubic"))
                    argv[0] = builds[name]
                    s = Report.parse(pair.snd.run(*argv, timeout=SECONDS + 60)).summary
                    got.setdefault((name, n), []).append(s.peer_bytes * 8 / s.seconds / 1e9)
        for n in (4, 9):
            a, b = (statistics.median(got[(name, n)]) for name in ("this", "other"))
            runs = "  ".join(f"{name} " + " ".join(f"{x:.1f}" for x in got[(name, n)]) for name in ("this", "other"))
            print(f"  {n} streams: median this {a:.2f} Gb/s, other {b:.2f} Gb/s ({100 * (a - b) / b:+.1f} %)   {runs}")
    finally:
        for p in servers:
            p.kill()
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file-runs", type=int, default=3, help="file-mode sends to take the median of")
    ap.add_argument("--file-only", action="store_true", help="skip the memory-to-memory table against iperf3")
    ap.add_argument("--auto-cost", action="store_true", help="only the CPU cost of --mode auto's steering")
    ap.add_argument("--against", metavar="OLD_BRAID", help="only this build against another braid, interleaved")
    args = ap.parse_args()
    if args.file_runs < 1:
        ap.error("--file-runs must be at least 1")
    shm = Path(tempfile.mkdtemp(prefix="braid-bench-", dir="/dev/shm"))
    scratch = Path(tempfile.mkdtemp(prefix="braid-bench-", dir="/var/tmp"))
    try:
        with Pair(tag="bench") as pair:
            pair.token = engine.token_file(scratch)
            pair.sessions = 0
            log = scratch / "serve.jsonl"
            server = engine.serve(pair.rcv, shm, pair.token, log=log, extra=["--allow-plain"])
            assert wait_until(lambda: str(engine.PORT) in pair.rcv.run("ss", "-tlnH"), timeout=10)
            results = {}
            if args.against:
                _against(pair, scratch, shm, args.against, args.file_runs)
                server.kill()
                server.wait()
                return 0
            if args.auto_cost:
                _auto_cost(pair, log, args.file_runs)
                server.kill()
                server.wait()
                return 0
            if args.file_only:
                results[4] = _braid(pair, 4, log)
            else:
                print(f"memory to memory, {SECONDS} s, cubic, veth pair (offloads on); braid sealed "
                      f"(the default) and --plain")
                print(f"{'streams':>7}  {'iperf3':>7}  {'sealed':>7}  {'plain':>7}  {'sealed/plain':>12}  "
                      f"{'CPU s/GB: iperf3':>16}  {'sealed':>6}  {'plain':>6}   (Gb/s)")
                for n in STREAMS:
                    i = _iperf3(pair, n)
                    b = _braid(pair, n, log)
                    p = _braid(pair, n, log, plain=True)
                    results[n] = b
                    print(f"{n:>7}  {i['gbps']:>7.2f}  {b['gbps']:>7.2f}  {p['gbps']:>7.2f}  "
                          f"{b['gbps'] / p['gbps']:>12.2f}  {i['cpu_s_per_gb']:>16.3f}  "
                          f"{b['cpu_s_per_gb']:>6.3f}  {p['cpu_s_per_gb']:>6.3f}", flush=True)

            src = scratch / "file.bin"
            with open(src, "wb") as f:
                block = os.urandom(1 << 24)
                for k in range(FILE_BYTES // len(block)):
                    f.write(block[k:] + block[:k])
                # Clean pages: otherwise the disk writeback of a just-written file runs during the send.
                f.flush()
                os.fsync(f.fileno())
            subprocess.run(["cat", str(src)], stdout=subprocess.DEVNULL, check=True)  # into the page cache
            mem = results[4]
            print(f"\nfile mode, page-cached {FILE_BYTES >> 30} GiB, 4 streams, into tmpfs, BLAKE3 at both ends; "
                  f"memory mode (sealed) {mem['gbps']:.2f} Gb/s")
            runs: dict[str, list[tuple[float, float]]] = {"sealed": [], "plain": []}
            # Run 0 is not counted: the first 2 GiB written into tmpfs land on pages this VM has
            # never touched, and the host's first-touch faults halve that run's rate.
            for k in range(2 * args.file_runs + 1):
                plain = k % 2 == 0 and k > 0
                before = _server_cpu(log)
                argv = engine.client_argv("send", str(src), f"{pair.RCV_ADDR}:{engine.PORT}:f{k}",
                                          token=pair.token, method=Method("parallel", 4, cc="cubic"))
                rep = Report.parse(pair.snd.run(*argv, *(["--plain"] if plain else []), timeout=300))
                wait_until(lambda: len(Report.summaries(log)) > pair.sessions, timeout=10)
                pair.sessions += 1
                s = rep.summary
                gbps = s.bytes * 8 / s.seconds / 1e9
                cpu = (s.cpu_seconds + _server_cpu(log) - before) / (s.bytes / 1e9)
                if k == 0:
                    print(f"  warm-up       {gbps:6.2f} Gb/s  (not counted)", flush=True)
                else:
                    runs["plain" if plain else "sealed"].append((gbps, cpu))
                    print(f"  send {s.sealed:<17} {gbps:6.2f} Gb/s  {cpu:.3f} CPU s/GB", flush=True)
                shutil.rmtree(shm / f"f{k}", ignore_errors=True)  # tmpfs is memory: keep one copy at a time
            for name, rs in runs.items():
                gbps = statistics.median(r[0] for r in rs)
                cpu = statistics.median(r[1] for r in rs)
                print(f"  median {name:<6} {gbps:6.2f} Gb/s  {cpu:.3f} CPU s/GB  = {gbps / mem['gbps'] * 100:.0f} % "
                      f"of memory mode")
            server.kill()
            server.wait()
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
