"""One measured cell (a method in a scenario, one repetition) as the runner
writes it to `cells/<id>.json` and `results` reads it back: the typed record
between the two. `MeasuredCell.from_json` refuses a key it does not know and
names what is missing; the parts a cell may lack (cross traffic, the UDP
source, the probes, the omitted start, the build) are None.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .records import StreamSummary

__all__ = ["MeasuredCell", "Bench", "Setting", "CrossFlow", "UdpWindow", "PingWindow", "SeriesPoint"]

CELL_VERSION = 1


@dataclass(frozen=True)
class Bench:
    """The method's `braid bench` summary."""

    seconds: float
    bytes: int
    peer_bytes: int | None
    mbps: float
    retransmits: int
    data_segs_out: int
    loss_ratio: float
    cpu_seconds: float


@dataclass(frozen=True)
class Setting:
    """The method's mode, as the experiment file set it."""

    mode: str
    streams: int | None  # None: braid's own default (auto's and falcon's most)
    cc: str | None
    virtual_rtt: float | None
    strength: float | None
    default: bool = False  # braid with no options (`mode` is what that default is)
    no_controls: bool = False  # as on a host where braid's controls cannot be opened


@dataclass(frozen=True)
class CrossFlow:
    """One competing iperf3 flow over the method's window."""

    flow: str
    bytes: int
    mbps: float
    retransmits: int
    cc: str | None = None


@dataclass(frozen=True)
class UdpWindow:
    """The stiff UDP source at its sink over the method's window."""

    packets: int
    lost: int
    bytes: int
    mbps: float
    loss_ratio: float


@dataclass(frozen=True)
class PingWindow:
    sent: int
    received: int
    lost: int
    median_ms: float | None
    p99_ms: float | None
    mean_ms: float | None


@dataclass(frozen=True)
class SeriesPoint:
    """One stream at one interval: seconds, stream, Mb/s, cwnd, sRTT in ms."""

    t: float
    stream: int
    mbps: float
    cwnd: int
    srtt_ms: float


@dataclass(frozen=True)
class MeasuredCell:
    version: int
    id: str
    scenario: str
    method: str
    rep: int
    started: str
    seconds: float
    offset: float
    setting: Setting
    mtu: int
    timestamps: bool
    rate_bps: float
    rtt_s: float
    bench: Bench
    streams: list[StreamSummary]
    series: list[SeriesPoint]
    # braid-link's counters over the cell (an open set: the emulator's own names).
    link: dict[str, int]
    link_seconds: float | None
    omit: float
    # The sender namespace's TCP counters (/proc/net/netstat and snmp) over the cell.
    sender_tcp: dict[str, int]
    build: dict[str, Any] | None = None
    # The machine that measured it: host, kernel, cores and the build (a cluster run's cells
    # may come from several).
    machine: dict[str, Any] | None = None
    cross_tcp: list[CrossFlow] | None = None
    udp: UdpWindow | None = None
    capacity_bytes: float | None = None
    ping: PingWindow | None = None
    # Every stream's bytes and retransmits when the omitted start ended: {"t": s, "streams": {...}}.
    at_omit: dict[str, Any] | None = None
    # When competitors arrived and left, seconds in the bench's clock (a scenario's tcp.during).
    changes: list[float] | None = None
    # Windows or thresholds out of bounds that the sender's controls put back during the bench
    # (its summary's windows_repaired); None from builds whose controls did not count them.
    windows_repaired: int | None = None
    # CPU seconds the sender's steer took, its ticks and looks with the wakes for them (its
    # summary's steer_cpu_seconds); None for modes without a steer, and from builds before it.
    steer_cpu_seconds: float | None = None
    # Long flows beside the method, for the equal share (the scenario's TCP flows and a second
    # braid); None from cells of runs before it was kept.
    long_flows: int | None = None
    # A second braid beside the method (a scenario's `braid`): its mode, Mb/s over the window, and
    # (from runs since they were kept) its phases as `steer` keeps the method's.
    cross_braid: dict[str, Any] | None = None
    # Auto's phase and streams each time either changed, [t, phase, streams] in the bench's clock;
    # None for other modes, and from runs before they were kept.
    steer: list[list[Any]] | None = None
    # The path's bottleneck, Mb/s of payload, as the receiving end's arrivals showed it and the
    # sender last heard (path::dispersion); None from builds before it, or before it was seen.
    bottleneck_mbps: float | None = None

    @classmethod
    def from_json(cls, d: dict) -> MeasuredCell:
        where = d.get("id", "a cell")
        unknown = sorted(set(d) - {f.name for f in dataclasses.fields(cls)})
        required = sorted(_REQUIRED - set(d))
        if unknown or required:
            raise ValueError(f"{where}: fields missing {required}, unknown {unknown}")
        if d["version"] != CELL_VERSION:
            raise ValueError(f"{where}: cell version {d['version']}, this braidlab reads {CELL_VERSION}")

        def build(kind, v):
            return None if v is None else _strict(kind, v, where)

        return cls(**{
            **d,
            "setting": build(Setting, d["setting"]),
            "bench": build(Bench, d["bench"]),
            "streams": [_strict(StreamSummary, s, where) for s in d["streams"]],
            "series": [SeriesPoint(*p) for p in d["series"]],
            "cross_tcp": None if d.get("cross_tcp") is None
            else [_strict(CrossFlow, f, where) for f in d["cross_tcp"]],
            "udp": build(UdpWindow, d.get("udp")),
            "ping": build(PingWindow, d.get("ping")),
        })

    def to_json(self) -> dict:
        """As the runner always wrote it: an optional part that is None is left out."""
        d = dataclasses.asdict(self)
        d["series"] = [[p.t, p.stream, p.mbps, p.cwnd, p.srtt_ms] for p in self.series]
        return {k: v for k, v in d.items() if v is not None or k in _REQUIRED}


_REQUIRED = {f.name for f in dataclasses.fields(MeasuredCell) if f.default is dataclasses.MISSING}


def _strict(cls, d: dict, where: str):
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(d) - set(names))
    missing = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING and f.name not in d]
    if unknown or missing:
        raise ValueError(f"{where}: {cls.__name__}: fields missing {missing}, unknown {unknown}")
    return cls(**d)
