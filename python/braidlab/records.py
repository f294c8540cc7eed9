"""braid's JSON lines as typed records: the laboratory's side of the contract
in crates/braid/src/records.rs (which lists who prints each record, and when).

Every line is an object with a `type` naming one record across all of braid's
commands and a `version`. `parse` builds the record's dataclass and refuses a
line of another version, of an unknown type, or with a field missing or one
too many; `load` does so for a tool's whole output, and the laboratory's
readers (engine.Report, traffic.SinkReport, braid.Trace) hold what it gives; crates/braid/vectors/records.jsonl holds one line of each record,
written by the Rust side's test and read by this side's, so a change on one
side that the other does not follow fails a fast test.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["VERSION", "VECTORS", "parse", "load", "to_json", "Record"]

VERSION = 6
VECTORS = Path(__file__).resolve().parents[2] / "crates" / "braid" / "vectors" / "records.jsonl"


@dataclass(frozen=True)
class StreamSample:
    stream: int
    bytes: int
    mbps: float
    cwnd: int
    ssthresh: int
    srtt_us: int
    rttvar_us: int
    retransmits: int
    lost: int
    delivery_rate: int
    bytes_acked: int
    busy_us: int
    rwnd_limited_us: int
    sndbuf_limited_us: int


@dataclass(frozen=True)
class Interval:
    t: float
    bytes: int
    mbps: float
    bottleneck_mbps: float | None
    streams: list[StreamSample]


@dataclass(frozen=True)
class Event:
    event: str
    stream: int
    reason: str


@dataclass(frozen=True)
class Steered:
    t: float
    streams: int
    strength: float | None
    queue_ms: float | None
    utility: float | None
    shared: bool | None
    share_mbps: float | None
    phase: str | None
    bottleneck_mbps: float | None


@dataclass(frozen=True)
class StreamSummary:
    stream: int
    cc: str
    bytes: int
    mbps: float
    retransmits: int
    data_segs_out: int
    connections: int
    cwnd: int
    srtt_us: int
    min_rtt_us: int


@dataclass(frozen=True)
class Transfer:
    """What a send or get did with its files, by what the receiver had."""
    sent: int
    resumed: int
    skipped: int
    kept: int
    removed: int
    dry_run: bool


@dataclass(frozen=True)
class Item:
    """One entry of a --dry-run, or one that --delete removed."""
    path: str
    action: str
    bytes: int


@dataclass(frozen=True)
class Skipped:
    """An entry the sender's listing left out, and why."""
    path: str
    reason: str


@dataclass(frozen=True)
class Failure:
    """A command that failed: its message and exit status."""
    message: str
    exit_code: int


@dataclass(frozen=True)
class Summary:
    kind: str
    role: str
    mode: str
    seconds: float
    bytes: int
    mbps: float
    peer_bytes: int | None
    retransmits: int
    data_segs_out: int
    loss_ratio: float
    cpu_seconds: float
    steer_cpu_seconds: float | None
    files: int
    requeued_blocks: int
    windows_repaired: int | None
    sealed: str
    bottleneck_mbps: float | None
    streams: list[StreamSummary]
    transfer: Transfer | None


@dataclass(frozen=True)
class Source:
    flow: int
    shape: str
    seconds: float
    packets: int
    bytes: int
    not_sent: int
    mbps: float
    due_mbps: float
    worst_late_us: int


@dataclass(frozen=True)
class SinkInterval:
    flow: str
    t: float
    packets: int
    bytes: int
    lost: int
    mbps: float


@dataclass(frozen=True)
class SinkSummary:
    flow: str
    packets: int
    bytes: int
    lost: int
    reordered: int
    sent: int | None
    loss_ratio: float


@dataclass(frozen=True)
class SinkMalformed:
    datagrams: int


@dataclass(frozen=True)
class Flows:
    started: int
    completed: int
    failed: int
    bytes: int
    seconds: float
    offered_mbps: float
    mbps: float
    mean_completion_ms: float


@dataclass(frozen=True)
class Rtt:
    seq: int
    t: float
    rtt_ms: float


@dataclass(frozen=True)
class Ping:
    target: str
    interval_ms: float
    size: int
    sent: int
    received: int
    lost: int
    reordered: int
    late_sends: int
    min_ms: float | None
    median_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    mean_ms: float | None


@dataclass(frozen=True)
class TcpInfo:
    ca_state: int
    cwnd: int
    ssthresh: int
    srtt_us: int
    rttvar_us: int
    min_rtt_us: int
    mss: int
    total_retrans: int
    lost: int
    data_segs_out: int
    bytes_acked: int
    bytes_sent: int
    bytes_retrans: int
    delivery_rate: int
    delivered: int
    busy_us: int
    rwnd_limited_us: int
    sndbuf_limited_us: int


@dataclass(frozen=True)
class SocketSettings:
    frac_cwnd: int | None
    strength: float | None
    group_id: int | None


@dataclass(frozen=True)
class TraceSample:
    t: float
    stream: int
    cc: str
    info: TcpInfo


@dataclass(frozen=True)
class TraceStream:
    stream: int
    cc: str
    settings: SocketSettings | None
    seconds: float
    bytes_acked: int
    mbps: float
    retransmits: int
    info: TcpInfo


@dataclass(frozen=True)
class TraceTotal:
    streams: int
    cc: str
    seconds: float
    bytes_acked: int
    mbps: float
    retransmits: int


@dataclass(frozen=True)
class PlanMode:
    mode: str
    streams: int
    predicted_bps: float


@dataclass(frozen=True)
class Plan:
    rate_bps: float
    rtt_s: float
    loss: float
    mss: float
    measured: bool
    c: float
    control: str
    one_stream_bps: float | None
    knee: int
    modes: list[PlanMode]
    recommend_mode: str
    recommend_streams: int
    reason: str


Record = (Interval | Event | Steered | Summary | Source | SinkInterval | SinkSummary | SinkMalformed | Flows | Rtt | Ping
          | TraceSample | TraceStream | TraceTotal | Plan | Item | Skipped | Failure)

TYPES: dict[str, type] = {
    "interval": Interval, "event": Event, "steer": Steered, "summary": Summary, "source": Source, "sink_interval": SinkInterval,
    "sink_summary": SinkSummary, "sink_malformed": SinkMalformed, "flows": Flows, "rtt": Rtt, "ping": Ping,
    "trace_sample": TraceSample, "trace_stream": TraceStream, "trace_total": TraceTotal, "plan": Plan,
    "item": Item, "skipped": Skipped, "error": Failure,
}

# Fields that hold records of their own.
_NESTED: dict[tuple[type, str], type] = {
    (Interval, "streams"): StreamSample, (Summary, "streams"): StreamSummary,
    (TraceSample, "info"): TcpInfo, (TraceStream, "info"): TcpInfo, (TraceStream, "settings"): SocketSettings,
    (Plan, "modes"): PlanMode, (Summary, "transfer"): Transfer,
}


def _build(cls: type, d: dict[str, Any], where: str):
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {d!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    missing = [n for n in names if n not in d]
    extra = [k for k in d if k not in names]
    if missing or extra:
        raise ValueError(f"{where}: fields missing {missing}, unknown {extra}")
    args = {}
    for n in names:
        v = d[n]
        inner = _NESTED.get((cls, n))
        if inner is not None and v is not None:
            v = [_build(inner, x, f"{where}.{n}") for x in v] if isinstance(v, list) else _build(inner, v, f"{where}.{n}")
        args[n] = v
    return cls(**args)


def parse(line: str | dict) -> Record:
    """One line (or its decoded object) as its record."""
    rec = json.loads(line) if isinstance(line, str) else dict(line)
    ty, version = rec.pop("type", None), rec.pop("version", None)
    if version != VERSION:
        raise ValueError(f"braid record version {version}, this braidlab reads {VERSION}: {str(line)[:80]}")
    if ty not in TYPES:
        raise ValueError(f"unknown braid record type {ty!r}")
    return _build(TYPES[ty], rec, ty)


def load(text: str) -> list[Record]:
    """Every record of a tool's output, each checked and built as its dataclass
    (lines that are not JSON objects, such as a banner on the same stream, are
    passed over)."""
    return [parse(line) for line in text.splitlines() if line.lstrip().startswith("{")]


_NAMES = {cls: name for name, cls in TYPES.items()}


def to_json(rec: Record) -> dict:
    """The record as braid prints it: its type, its version and its fields."""
    return {"type": _NAMES[type(rec)], "version": VERSION, **dataclasses.asdict(rec)}
