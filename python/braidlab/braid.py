"""Driving the `braid` binary: its location, `braid cc`, and trace runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import records
from .proc import communicate_all, run

ROOT = Path(__file__).resolve().parents[2]


def binary() -> str:
    """The braid executable: $BRAID_BIN, else the workspace's release build, else debug."""
    env = os.environ.get("BRAID_BIN")
    if env:
        return env
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "braid"
        if p.exists():
            return str(p)
    raise FileNotFoundError("no braid binary: run `cargo build --release` (scripts/setup.sh does) or set BRAID_BIN")


def cc(*args: str) -> str:
    return run([binary(), "cc", *args])


def cc_status() -> dict:
    return json.loads(cc("status", "--json"))


def trace_argv(connect: str, cc_name: str, *, streams: int = 1, seconds: float = 5.0,
               interval_ms: int = 100, frac_cwnd: int | None = None, strength: float | None = None,
               group: int | None = None, summary_only: bool = False) -> list[str]:
    argv = [binary(), "cc", "trace", "--connect", connect, "--cc", cc_name, "-n", str(streams),
            "-t", str(seconds), "--interval-ms", str(interval_ms)]
    if frac_cwnd is not None:
        argv += ["--frac-cwnd", str(frac_cwnd)]
    if strength is not None:
        argv += ["--strength", str(strength)]
    if group is not None:
        argv += ["--group", str(group)]
    if summary_only:
        argv.append("--summary-only")
    return argv


@dataclass
class Trace:
    """What one `braid cc trace` printed, by record type."""

    samples: list[records.TraceSample] = field(default_factory=list)
    summaries: list[records.TraceStream] = field(default_factory=list)
    total: records.TraceTotal | None = None

    @classmethod
    def parse(cls, text: str) -> "Trace":
        t = cls()
        for rec in records.load(text):
            if isinstance(rec, records.TraceSample):
                t.samples.append(rec)
            elif isinstance(rec, records.TraceStream):
                t.summaries.append(rec)
            elif isinstance(rec, records.TraceTotal):
                t.total = rec
        return t

    def stream(self, i: int) -> list[records.TraceSample]:
        return [s for s in self.samples if s.stream == i]

    def mbps_from(self, t0: float) -> float:
        """All streams' acknowledged payload per second from the first sample at or after
        `t0` to each stream's last sample, in Mb/s."""
        bits, span = 0.0, 0.0
        for i in sorted({s.stream for s in self.samples}):
            later = [s for s in self.stream(i) if s.t >= t0]
            if len(later) < 2:
                raise ValueError(f"stream {i} has fewer than two samples after {t0} s")
            first, last = later[0], later[-1]
            bits += 8.0 * (last.info.bytes_acked - first.info.bytes_acked)
            span = max(span, last.t - first.t)
        if span <= 0:
            raise ValueError(f"no time measured after {t0} s")
        return bits / span / 1e6


def finish(p: subprocess.Popen, timeout: float) -> Trace:
    """Waits for a trace process and parses its output; a failure raises with its stderr."""
    return finish_all([p], timeout)[0]


def finish_all(procs: list[subprocess.Popen], timeout: float) -> list[Trace]:
    """Waits for trace processes that run at once, reading them all together (see
    `proc.communicate_all`: read one after another, the later ones stop sampling)."""
    traces = []
    for p, (out, err) in zip(procs, communicate_all(procs, timeout)):
        if p.returncode != 0:
            raise RuntimeError(f"braid cc trace exited {p.returncode}: {err.strip()}")
        traces.append(Trace.parse(out))
    return traces


SINK_PORT = 5400


def start_sink(host, port: int = SINK_PORT) -> subprocess.Popen:
    """`braid cc sink` on a testbed host (a Namespace), ready for connections when this returns."""
    p = host.popen([binary(), "cc", "sink", "--listen", f"0.0.0.0:{port}"])
    time.sleep(0.2)
    return p


def share_against_reno(sender, target: str, group_cc: str, seconds: float, streams: int = 4,
                       omit: float = 0.0) -> tuple[float, float]:
    """Runs `streams` streams of `group_cc` beside one Reno stream to `target`, from the
    same sender; returns (aggregate Mb/s of the group, Mb/s of the Reno stream), counted
    from `omit` seconds on (the start, where five flows slow-start into one queue and a
    flow's early timeouts decide much of a short run, left out)."""
    # Counting from the start needs only the totals; from later on, samples.
    kw = {"summary_only": True} if omit <= 0 else {"interval_ms": 500}
    a = sender.popen(trace_argv(target, group_cc, streams=streams, seconds=seconds, **kw))
    b = sender.popen(trace_argv(target, "reno", streams=1, seconds=seconds, **kw))
    ta, tb = finish_all([a, b], seconds + 30)
    if omit <= 0:
        return ta.total.mbps, tb.total.mbps
    return ta.mbps_from(omit), tb.mbps_from(omit)
