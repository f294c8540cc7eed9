"""Driving braid's transfer engine: `braid serve` on one host, `braid bench`,
`send` and `get` from another, and their JSON lines (version 1)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from . import records
from .braid import binary

PORT = 5420


@dataclass
class Method:
    """A way to move data: a mode of braid's engine and its settings."""

    mode: str = "parallel"  # single | parallel | combined | tcpp | auto | falcon (streams: its most)
    streams: int | None = 1  # None: braid's own default (no -n)
    cc: str | None = None
    virtual_rtt: float | None = None  # combined: m
    strength: float | None = None  # tcpp: k; auto: the ordinary flows it counts as on a busy path
    # braid as a user runs it with no options (its default mode and streams); `mode` is then
    # what that default is, for the reports.
    default: bool = False
    # As on a host where braid's congestion controls are not loaded (or may not be opened).
    no_controls: bool = False

    def argv(self) -> list[str]:
        a = ["--pin-dir", "/nonexistent/braid"] if self.no_controls else []
        if self.default:
            return a
        a += ["--mode", self.mode] + (["-n", str(self.streams)] if self.streams is not None else [])
        if self.cc:
            a += ["--cc", self.cc]
        if self.virtual_rtt is not None:
            a += ["--virtual-rtt", str(self.virtual_rtt)]
        if self.strength is not None:
            a += ["--fair-share" if self.mode == "auto" else "--strength", str(self.strength)]
        return a

    def controls(self) -> list[str | None]:
        """The control each stream should end up with at the sending end (None: the default).
        A mode whose streams are its own choice (braid's default number) gives one entry: its
        streams' control, whatever their number."""
        if self.streams is None or self.default:
            return [self.cc]
        if self.mode == "combined":
            return ["reno"] + ["braid_frac"] * (self.streams - 1)
        if self.mode == "tcpp":
            return ["braid_tcpp"] * self.streams
        n = 1 if self.mode == "single" else self.streams
        return [self.cc] * n

    def matches(self, got: list[str]) -> bool:
        """Whether a report's per-stream controls are this method's (None: any default)."""
        want = self.controls()
        if self.streams is None or self.default:
            return len(got) >= 1 and all(want[0] is None or want[0] == g for g in got)
        # Falcon's search and auto's steer end with anything from one stream to their most.
        count = 1 <= len(got) <= len(want) if self.mode in ("falcon", "auto") else len(got) == len(want)
        return count and all(w is None or w == g for w, g in zip(want, got))


def token_file(run_dir: Path) -> Path:
    """A fresh token for one run, readable by root only."""
    p = run_dir / "braid.token"
    if not p.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        p.touch(mode=0o600)
        p.write_text(secrets.token_hex(16))
    return p


def serve(host, root: Path, token: Path, *, port: int = PORT, once: bool = False, extra: list[str] = (),
          log: Path | None = None):
    """Starts `braid serve --json` in `host` (a Namespace); its summaries go to `log` if given."""
    argv = [binary(), "serve", "--listen", f"0.0.0.0:{port}", "--root", str(root), "--token-file", str(token),
            "--json", *extra]
    if once:
        argv.append("--once")
    return host.popen(argv, log=log)


def client_argv(command: str, *args: str, token: Path, method: Method | None = None, interval: float = 1.0,
                json_lines: bool = True) -> list[str]:
    # The laboratory's servers are its own: a missing one is an error, never a reason to try ssh.
    argv = [binary(), command, *args, "--token-file", str(token), "-i", str(interval), "--ssh", "never"]
    if method is not None:
        argv += method.argv()
    if json_lines:
        argv.append("--json")
    return argv


def bench_argv(server: str, seconds: float, token: Path, method: Method, *, reverse: bool = False,
               interval: float = 1.0) -> list[str]:
    extra = ["-t", str(seconds)] + (["-R"] if reverse else [])
    return client_argv("bench", server, *extra, token=token, method=method, interval=interval)


@dataclass
class Report:
    """What `--json` printed: interval records, events (a stream lost, dialled again), auto mode's
    steering (its strength and the queue it answered, each time it changed) and the summary."""

    intervals: list[records.Interval] = field(default_factory=list)
    events: list[records.Event] = field(default_factory=list)
    steering: list[records.Steered] = field(default_factory=list)
    summary: records.Summary | None = None

    @classmethod
    def parse(cls, text: str) -> "Report":
        r = cls()
        for rec in records.load(text):
            if isinstance(rec, records.Interval):
                r.intervals.append(rec)
            elif isinstance(rec, records.Event):
                r.events.append(rec)
            elif isinstance(rec, records.Steered):
                r.steering.append(rec)
            elif isinstance(rec, records.Summary):
                r.summary = rec
        return r

    @classmethod
    def summaries(cls, path: Path) -> list[records.Summary]:
        """Every session summary a server has logged so far."""
        if not path.exists():
            return []
        return [r for r in records.load(path.read_text()) if isinstance(r, records.Summary)]

    @property
    def phases(self) -> list[list]:
        """Auto's phase and streams each time either changed, [t, phase, streams]: what a cell
        keeps of its steering, so that where a cell failed can be read from the run."""
        out: list[list] = []
        for s in self.steering:
            if s.phase is None:
                continue
            if not out or (out[-1][1], out[-1][2]) != (s.phase, s.streams):
                out.append([s.t, s.phase, s.streams])
        return out

    @property
    def controls(self) -> list[str]:
        return [s.cc for s in self.summary.streams]
