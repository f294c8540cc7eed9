"""Many small files over loopback: braid against an rsync daemon and
`tar | nc | tar`, in one run; prints figures, asserts nothing.

    make bench-files      (or: .venv/bin/python benches/files.py)

A tree of 10,000 files (59 MB in all, sizes spread from 0 to 12 KB over 100
directories) on the machine's disk is copied to an empty directory on the
same disk by each tool, `sync` included in the time, so every tool pays for
making its data durable. braid also makes each file durable and publishes it
only once its BLAKE3 matches (verified, atomic); rsync and tar do neither.
Runs interleave the tools (--runs rounds, default 3) so a slow moment of the
machine falls on all of them. Start it a minute after deleting many files on
the same filesystem (another run's cleanup included): ext4 passes over
recently deleted inodes when it makes new ones, which slows every tool.
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


def wait_listening(port: int, timeout: float = 10.0) -> None:
    """Waits for a listener without connecting to it (nc -l accepts only one)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def timed(fn, dest: Path) -> float:
    # A new directory each time: creating files right after deleting as many makes
    # ext4 search past the recently deleted inodes, which would slow every tool.
    fresh(dest)
    subprocess.run(["sync"], check=True)
    t = time.monotonic()
    fn()
    subprocess.run(["sync"], check=True)
    return time.monotonic() - t


def fresh(d: Path) -> None:
    """Moves the last copy aside, to be deleted at the end, and makes `d` anew."""
    if d.exists():
        d.rename(d.with_name(f"old{time.monotonic_ns()}"))
    d.mkdir(parents=True)


def count(d: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(d))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to work (default: a new directory in /var/tmp)")
    ap.add_argument("--also", type=Path, default=None, metavar="BIN",
                    help="another braid binary (an older build, say) measured in the same rounds")
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
        dst = {k: work / k for k in ("braid", "rsync", "tar", "also")}
        for d in dst.values():
            d.mkdir()
        dst = {k: d / "run" for k, d in dst.items()}
        bport = free_port()
        env = dict(os.environ, BRAID_TOKEN=TOKEN)
        procs.append(subprocess.Popen([str(BRAID), "serve", "--listen", f"127.0.0.1:{bport}", "--root",
                                       str(dst["braid"].parent)], env=env, stderr=subprocess.DEVNULL))
        rport = free_port()
        conf = work / "rsyncd.conf"
        conf.write_text(f"use chroot = no\n[m]\npath = {dst['rsync'].parent}\nread only = no\nuid = root\ngid = root\n")
        procs.append(subprocess.Popen(["rsync", "--daemon", "--no-detach", f"--port={rport}", f"--config={conf}",
                                       "--address=127.0.0.1"]))
        aport = free_port()
        if a.also:
            procs.append(subprocess.Popen([str(a.also), "serve", "--listen", f"127.0.0.1:{aport}", "--root",
                                           str(dst["also"].parent)], env=env, stderr=subprocess.DEVNULL))
            wait_port(aport)
        wait_port(bport)
        wait_port(rport)

        def send(binary: Path, port: int, dest: Path) -> None:
            p = subprocess.run([str(binary), "send", str(src), f"127.0.0.1:{port}:{dest.name}", "--ssh",
                                "never", "-n", "4"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
            if p.returncode != 0:
                sys.exit(f"bench-files: {binary} send failed ({p.returncode}): {p.stderr}")

        def braid() -> None:
            send(BRAID, bport, dst["braid"])

        def rsync() -> None:
            subprocess.run(["rsync", "-a", str(src), f"rsync://127.0.0.1:{rport}/m/{dst['rsync'].name}/"], check=True)

        def tar() -> None:
            out = dst["tar"]
            port = free_port()
            rx = subprocess.Popen(f"nc -l 127.0.0.1 {port} | tar -x -C {out}", shell=True)
            wait_listening(port)
            subprocess.run(f"tar -c -C {work} tree | nc -N 127.0.0.1 {port}", shell=True, check=True)
            rx.wait(120)

        tools = {"braid": (braid, dst["braid"]), "rsync daemon": (rsync, dst["rsync"]),
                 "tar | nc | tar": (tar, dst["tar"])}
        if a.also:
            tools[f"braid ({a.also})"] = (lambda: send(a.also, aport, dst["also"]), dst["also"])
        times: dict[str, list[float]] = {k: [] for k in tools}
        for r in range(a.runs):
            order = list(tools)
            random.Random(r).shuffle(order)
            for name in order:
                times[name].append(timed(*tools[name]))
            print(f"run {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in tools))
        for name, (_, d) in tools.items():
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
        # ext4 passes over inodes deleted in the last 5 minutes while their table is dirty,
        # 30 s once it is written: a run right after another would create files slowly.
        subprocess.run(["sync"], check=False)


if __name__ == "__main__":
    main()
