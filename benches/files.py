"""Many small files over loopback: braid against an rsync daemon and
`tar | nc | tar`, in one run; prints figures, asserts nothing.

    make bench-files      (or: .venv/bin/python benches/files.py)

A tree of 10,000 files (59 MB in all, sizes spread from 0 to 12 KB over 100
directories) on the machine's disk is copied to an empty directory on the
same disk by each tool, `sync` included in the time, so every tool pays for
making its data durable. braid also makes each file durable and publishes it
only once its BLAKE3 matches (verified, atomic); rsync and tar do neither.
Runs interleave the tools (--runs rounds, default 3) so a slow moment of the
machine falls on all of them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BRAID = Path(os.environ.get("BRAID_BIN", ROOT / "target" / "release" / "braid"))
TOKEN = "bench-files-token"
FILES = 10_000
DIRS = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tree(top: Path) -> int:
    rng = random.Random(7)
    total = 0
    for i in range(FILES):
        d = top / f"d{i % DIRS:02d}"
        d.mkdir(parents=True, exist_ok=True)
        n = rng.randint(0, 11_800)
        (d / f"f{i:05d}").write_bytes(rng.randbytes(n))
        total += n
    return total


def wait_port(port: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def timed(fn) -> float:
    subprocess.run(["sync"], check=True)
    t = time.monotonic()
    fn()
    subprocess.run(["sync"], check=True)
    return time.monotonic() - t


def fresh(d: Path) -> Path:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def count(d: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(d))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to work (default: a new directory in /var/tmp)")
    a = ap.parse_args()
    for tool in ("rsync", "nc", "tar"):
        if not shutil.which(tool):
            sys.exit(f"bench-files: {tool} is missing (make setup installs it)")
    work = Path(tempfile.mkdtemp(prefix="braid-bench-files-", dir=a.dir or "/var/tmp"))
    procs = []
    try:
        src = work / "tree"
        size = make_tree(src)
        print(f"tree: {FILES} files in {DIRS} directories, {size / 1e6:.1f} MB, on {work}")
        dst = {k: work / k for k in ("braid", "rsync", "tar")}
        for d in dst.values():
            d.mkdir()
        bport = free_port()
        env = dict(os.environ, BRAID_TOKEN=TOKEN)
        procs.append(subprocess.Popen([str(BRAID), "serve", "--listen", f"127.0.0.1:{bport}", "--root",
                                       str(dst["braid"])], env=env, stderr=subprocess.DEVNULL))
        rport = free_port()
        conf = work / "rsyncd.conf"
        conf.write_text(f"use chroot = no\n[m]\npath = {dst['rsync']}\nread only = no\nuid = root\ngid = root\n")
        procs.append(subprocess.Popen(["rsync", "--daemon", "--no-detach", f"--port={rport}", f"--config={conf}",
                                       "--address=127.0.0.1"]))
        wait_port(bport)
        wait_port(rport)

        def braid() -> None:
            fresh(dst["braid"])
            subprocess.run([str(BRAID), "send", str(src), f"127.0.0.1:{bport}:", "--ssh", "never", "-n", "4"],
                           env=env, check=True, stdout=subprocess.DEVNULL)

        def rsync() -> None:
            fresh(dst["rsync"])
            subprocess.run(["rsync", "-a", str(src), f"rsync://127.0.0.1:{rport}/m/"], check=True)

        def tar() -> None:
            out = fresh(dst["tar"])
            port = free_port()
            rx = subprocess.Popen(f"nc -l 127.0.0.1 {port} | tar -x -C {out}", shell=True)
            wait_port(port)
            subprocess.run(f"tar -c -C {work} tree | nc -N 127.0.0.1 {port}", shell=True, check=True)
            rx.wait(120)

        tools = {"braid": braid, "rsync daemon": rsync, "tar | nc | tar": tar}
        times: dict[str, list[float]] = {k: [] for k in tools}
        for r in range(a.runs):
            order = list(tools)
            random.Random(r).shuffle(order)
            for name in order:
                times[name].append(timed(tools[name]))
            print(f"run {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in tools))
        for name, d in zip(tools, dst.values()):
            got = count(d)
            if got != FILES:
                print(f"warning: {name} left {got} files, not {FILES}")
        print()
        print("| tool | runs (s) | median s | files/s |")
        print("|---|---|---|---|")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"| {name} | {' / '.join(f'{t:.2f}' for t in ts)} | {med:.2f} | {FILES / med:,.0f} |")
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
