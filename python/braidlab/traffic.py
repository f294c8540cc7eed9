"""Traffic and probes on testbed hosts, and the parsers of what they print.

- `braid traffic udp`/`sink`: the stiff UDP source (constant, Hacker 2004
  Eq. 3 sinusoid, Poisson) and its per-interval rate and loss;
- `braid traffic flows`: Poisson TCP flow arrivals into a `braid cc sink`;
- `braid traffic ping`: 10 ms ICMP probes with 1440 bytes of data;
- iperf3: the reference competing TCP flows, a real peer, JSON parsed.

Each starter returns a `Running` whose output lands in the run directory.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import records as _records
from .braid import binary
from .netns import stop

UDP_PORT = 5300
IPERF_PORT = 5201


@dataclass
class Running:
    """A process started on a host, its stdout kept in a file."""

    proc: subprocess.Popen
    out: Path
    what: str

    def wait(self, timeout: float) -> str:
        """Waits for it to end; its output, or an error carrying its stderr."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stop(self.proc)
            raise RuntimeError(f"{self.what} did not finish within {timeout:.0f} s") from None
        return self._result()

    def stop(self) -> str:
        """Ends it with SIGTERM (our tools print their summary then) and returns its output."""
        stop(self.proc)
        return self._result(stopped=True)

    def _result(self, stopped: bool = False) -> str:
        code = self.proc.returncode
        if code != 0 and not (stopped and code in (-15, 143)):
            err = Path(str(self.out) + ".err")
            raise RuntimeError(f"{self.what} exited {code}: {err.read_text().strip() if err.exists() else ''}")
        return self.out.read_text()


def start(host, argv: list[str], name: str) -> Running:
    p = host.popen(argv, name=name)
    return Running(p, host.run_dir / f"{host.name}-{name}.out", f"{name} on {host.name}")


def records(text: str) -> list[_records.Record]:
    """A traffic tool's output as braid's records, every line checked."""
    return _records.load(text)


# --- the stiff UDP source and its sink -------------------------------------------------

@dataclass
class SinkReport:
    """What `braid traffic sink` printed: intervals and a summary per flow."""

    intervals: dict[str, list[_records.SinkInterval]] = field(default_factory=dict)
    summaries: dict[str, _records.SinkSummary] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> "SinkReport":
        r = cls()
        for rec in records(text):
            if isinstance(rec, _records.SinkInterval):
                r.intervals.setdefault(rec.flow, []).append(rec)
            elif isinstance(rec, _records.SinkSummary):
                r.summaries[rec.flow] = rec
        for bins in r.intervals.values():
            bins.sort(key=lambda b: b.t)
        return r

    def only(self) -> tuple[list[_records.SinkInterval], _records.SinkSummary]:
        """The one flow's intervals and summary."""
        if len(self.summaries) != 1:
            raise ValueError(f"expected one flow at the sink, found {sorted(self.summaries)}")
        (flow, summary), = self.summaries.items()
        return self.intervals.get(flow, []), summary


def udp_sink(host, port: int = UDP_PORT, interval: str = "100ms", name: str = "udp-sink") -> Running:
    r = start(host, [binary(), "traffic", "sink", "--listen", f"0.0.0.0:{port}", "--interval", interval], name)
    time.sleep(0.2)
    return r


def udp_source(host, to: str, seconds: float, *, port: int = UDP_PORT, rate: str | None = None,
               sine: tuple[str, str] | None = None, period: str = "10s", poisson: str | None = None,
               size: int = 1440, flow: int = 0, seed: int = 1, name: str = "udp-source") -> Running:
    argv = [binary(), "traffic", "udp", "--to", f"{to}:{port}", "-t", str(seconds), "--size", str(size),
            "--flow", str(flow), "--seed", str(seed)]
    if rate:
        argv += ["--rate", rate]
    if sine:
        argv += ["--sine", f"{sine[0]},{sine[1]}", "--period", period]
    if poisson:
        argv += ["--poisson", poisson]
    return start(host, argv, name)


def poisson_flows(host, to: str, port: int, load: str, seconds: float, *, mean_size: str = "100k",
                  cc: str = "reno", seed: int = 1, name: str = "flows") -> Running:
    return start(host, [binary(), "traffic", "flows", "--to", f"{to}:{port}", "--load", load,
                        "--mean-size", mean_size, "--cc", cc, "-t", str(seconds), "--seed", str(seed)], name)


# --- RTT probes ------------------------------------------------------------------------

def ping(host, to: str, seconds: float, *, interval: str = "10ms", size: int = 1440, samples: bool = False,
         name: str = "ping") -> Running:
    argv = [binary(), "traffic", "ping", "--to", to, "-t", str(seconds), "--interval", interval,
            "--size", str(size)]
    if samples:
        argv.append("--samples")
    return start(host, argv, name)


def ping_report(text: str) -> tuple[_records.Ping, list[_records.Rtt]]:
    """(summary, samples) of a `braid traffic ping` run."""
    recs = records(text)
    summary = next((r for r in recs if isinstance(r, _records.Ping)), None)
    if summary is None:
        raise ValueError("no ping summary in the prober's output")
    return summary, [r for r in recs if isinstance(r, _records.Rtt)]


# --- iperf3 ------------------------------------------------------------------------------

def iperf3_server(host, port: int = IPERF_PORT, name: str | None = None, cpu: int | None = None) -> Running:
    """One iperf3 server that answers one test, then exits with its JSON; `cpu` pins it there."""
    argv = ["iperf3", "-s", "-1", "-J", "-p", str(port)] + (["-A", str(cpu)] if cpu is not None else [])
    r = start(host, argv, name or f"iperf3-server-{port}")
    time.sleep(0.3)
    return r


def iperf3_client(host, server: str, seconds: float, *, port: int = IPERF_PORT, cc: str | None = None,
                  parallel: int = 1, udp_rate: str | None = None, length: int | None = None,
                  omit: int | None = None, name: str | None = None, cpu: int | None = None,
                  buffer: str | None = None) -> Running:
    """`omit`: seconds of the start (slow start) left out of the test's figures; `cpu` pins it there;
    `buffer`: both ends' socket buffer (iperf3 -w, capped by net.core.rmem_max and wmem_max)."""
    argv = ["iperf3", "-c", server, "-p", str(port), "-t", str(seconds), "-J", "-P", str(parallel)]
    if cpu is not None:
        argv += ["-A", str(cpu)]
    if omit:
        argv += ["-O", str(omit)]
    if cc:
        argv += ["-C", cc]
    if udp_rate:
        argv += ["-u", "-b", udp_rate]
    if length:
        argv += ["-l", str(length)]
    if buffer:
        argv += ["-w", buffer]
    return start(host, argv, name or f"iperf3-client-{port}")


@dataclass(frozen=True)
class IperfResult:
    """A TCP iperf3 client's view of its test."""

    seconds: float
    sent_bytes: int
    received_bytes: int
    retransmits: int
    streams: tuple[dict, ...]
    cc: str | None

    @property
    def mbps(self) -> float:
        return self.received_bytes * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0


def parse_iperf3(text: str) -> IperfResult:
    """Parses `iperf3 -c ... -J` output of a TCP test."""
    data = json.loads(text)
    if "error" in data:
        raise RuntimeError(f"iperf3: {data['error']}")
    end = data["end"]
    sent, recv = end["sum_sent"], end["sum_received"]
    streams = tuple(
        {"bytes": s["receiver"]["bytes"], "seconds": s["receiver"]["seconds"],
         "retransmits": s["sender"].get("retransmits", 0)}
        for s in end.get("streams", [])
    )
    return IperfResult(seconds=recv["seconds"], sent_bytes=sent["bytes"], received_bytes=recv["bytes"],
                       retransmits=sent.get("retransmits", 0), streams=streams,
                       cc=end.get("sender_tcp_congestion"))


# --- the kernel's TCP counters ---------------------------------------------------------------

def parse_proc_net(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/netstat or /proc/net/snmp: header and value lines in pairs,
    "TcpExt: A B ..." then "TcpExt: 1 2 ..."; {"TcpExt": {"A": 1, ...}, ...}."""
    out: dict[str, dict[str, int]] = {}
    lines = [line.split() for line in text.splitlines() if line.strip()]
    for head, vals in zip(lines[::2], lines[1::2]):
        if head[0] != vals[0] or len(head) != len(vals):
            raise ValueError(f"unpaired /proc/net lines: {head[0]} and {vals[0]}")
        out[head[0].rstrip(":")] = {k: int(v) for k, v in zip(head[1:], vals[1:])}
    return out


# What Hacker 2002 counts as p's numerator (Web100's Recoveries) and denominator (PktsOut).
LOSS_EVENT_COUNTERS = ("TCPRenoRecovery", "TCPSackRecovery", "TCPTimeouts")


def tcp_counters(host) -> dict[str, int]:
    """A namespace's loss-recovery episodes and segments sent, from the kernel."""
    ext = parse_proc_net(host.run("cat", "/proc/net/netstat"))["TcpExt"]
    tcp = parse_proc_net(host.run("cat", "/proc/net/snmp"))["Tcp"]
    return {**{k: ext.get(k, 0) for k in LOSS_EVENT_COUNTERS}, "OutSegs": tcp["OutSegs"],
            "RetransSegs": tcp["RetransSegs"]}
