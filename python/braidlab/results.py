"""From measured cells to the papers' metrics and the tidy tables. Pure
except for `load` and `write_tables`.

`cell_metrics` turns one cell (runner.run_cell's record) into the metrics
of the papers; `appropriations` needs all cells of a scenario, since it
compares the competitors beside each method with those beside the baseline
method; `flow_rows` is the tidy table: one row per method x repetition x
flow (every method stream, every competing flow, the UDP source), each
carrying its cell's metrics too.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from collections import defaultdict
from pathlib import Path

import dataclasses

from . import metrics
from .measured import MeasuredCell

CELL_COLUMNS = [
    "scenario", "method", "rep", "mode", "streams", "cc", "virtual_rtt", "strength", "mtu", "seconds",
    "method_mbps", "method_bytes", "method_loss_ratio", "method_srtt_ms", "capacity_mb", "effectiveness",
    "cross_mbps", "ratio_to_cross", "appropriation", "udp_loss", "sqrt_p", "rtt_median_ms", "rtt_p99_ms", "utilisation",
    "link_drop_ratio", "jain", "jain_1s", "loss_events", "p_events", "mathis_mbps",
    "mbps_alone", "mbps_beside", "mbps_after", "settle_arrive_s", "settle_leave_s", "reach_arrive_s",
    "reach_leave_s", "each_beside_mbps", "ratio_beside", "windows_repaired", "link_overruns",
]
FLOW_COLUMNS = ["experiment", *CELL_COLUMNS[:3], "role", "flow", "flow_cc", "flow_bytes", "flow_mbps",
                "flow_retransmits", "flow_loss_ratio", *CELL_COLUMNS[3:]]


def mss_of(mtu: int, timestamps: bool = True) -> int:
    """TCP payload per segment on an Ethernet path of this MTU (IPv4)."""
    return mtu - 40 - (12 if timestamps else 0)


def _stream_srtt_ms(cell: MeasuredCell, after: float) -> dict[int, float]:
    by: dict[int, list[float]] = defaultdict(list)
    for p in cell.series:
        if p.srtt_ms > 0 and p.t >= after:
            by[p.stream].append(p.srtt_ms)
    return {k: statistics.median(v) for k, v in by.items()}


def measured(cell: MeasuredCell) -> tuple[list, float, int, float]:
    """(per-stream counters, seconds, bytes moved, loss ratio) of the method
    over its measured window: all of it, or what came after the omitted
    start (slow start's overshoot) when the variant set `omit`."""
    b = cell.bench
    seconds = b.seconds or cell.seconds
    start = cell.at_omit
    if not start:
        moved = b.peer_bytes if b.peer_bytes is not None else b.bytes
        return cell.streams, seconds, moved, b.loss_ratio
    mss = mss_of(cell.mtu, cell.timestamps)
    streams = []
    for s in cell.streams:
        s0 = start["streams"].get(str(s.stream), {"bytes": 0, "retransmits": 0})
        nbytes = s.bytes - s0["bytes"]
        # Segments counted from bytes: TCP_INFO's segment count is only in the summary.
        streams.append(dataclasses.replace(s, bytes=nbytes, retransmits=s.retransmits - s0["retransmits"],
                                           data_segs_out=max(1, nbytes // mss)))
    lost = sum(s.retransmits for s in streams)
    sent = sum(s.data_segs_out for s in streams)
    return streams, seconds - start["t"], sum(s.bytes for s in streams), metrics.loss_ratio(lost, sent)


def cell_metrics(cell: MeasuredCell) -> dict:
    """The papers' metrics of one cell (appropriation is filled in by `appropriations`)."""
    streams, seconds, moved, loss = measured(cell)
    mss = mss_of(cell.mtu, cell.timestamps)
    start = cell.at_omit
    st = cell.setting
    m = {
        "scenario": cell.scenario, "method": cell.method, "rep": cell.rep, "mode": st.mode,
        "streams": st.streams, "cc": st.cc or "", "virtual_rtt": st.virtual_rtt,
        "strength": st.strength, "mtu": cell.mtu, "seconds": seconds,
        "method_bytes": moved, "method_mbps": moved * 8 / seconds / 1e6,
        "method_loss_ratio": loss, "appropriation": None, "windows_repaired": cell.windows_repaired,
    }
    srtt = _stream_srtt_ms(cell, start["t"] if start else 0.0)
    m["method_srtt_ms"] = statistics.median(srtt.values()) if srtt else None
    cap = cell.capacity_bytes
    m["capacity_mb"] = cap / 1e6 if cap else None
    m["effectiveness"] = metrics.effectiveness(moved, cap) if cap else None
    cross = cell.cross_tcp
    m["cross_mbps"] = sum(f.mbps for f in cross) if cross else None
    # Cho-Bettati's comparison: the group against the competing flow(s).
    m["ratio_to_cross"] = m["method_mbps"] / m["cross_mbps"] if m["cross_mbps"] else None
    udp = cell.udp
    m["udp_loss"] = udp.loss_ratio if udp else None
    m["sqrt_p"] = metrics.sqrt_p(udp.loss_ratio) if udp else None
    ping = cell.ping
    m["rtt_median_ms"] = ping.median_ms if ping else None
    m["rtt_p99_ms"] = ping.p99_ms if ping else None
    link = cell.link
    m["utilisation"] = metrics.utilisation(link.get("departed_bytes", 0), cell.rate_bps,
                                           cell.link_seconds or cell.seconds)
    dropped = sum(link.get(k, 0) for k in ("dropped_loss", "dropped_queue", "dropped_red"))
    m["link_drop_ratio"] = metrics.loss_ratio(dropped, link.get("arrived", 0))
    # Cells measured before braid-link counted them have none on record: unknown, not zero.
    m["link_overruns"] = link.get("overruns")
    per = [s.bytes for s in streams]
    m["jain"] = metrics.jain(per) if len(per) > 1 else None
    # Hacker 2002's p: loss episodes (recoveries and timeouts) per packet sent, from the kernel's
    # counters of the sender's namespace; without them, each stream's retransmitted share.
    kern = cell.sender_tcp
    events = sum(kern.get(k, 0) for k in ("TCPRenoRecovery", "TCPSackRecovery", "TCPTimeouts")) if kern else None
    m["loss_events"] = events
    m["p_events"] = metrics.loss_ratio(events, kern["OutSegs"]) if kern and kern.get("OutSegs") else None
    lossy = [(mss, srtt[s.stream] / 1e3,
              m["p_events"] if m["p_events"] is not None else metrics.loss_ratio(s.retransmits, s.data_segs_out))
             for s in streams if s.stream in srtt]
    agg = metrics.mathis_aggregate(lossy) if lossy else None
    m["mathis_mbps"] = agg / 1e6 if agg is not None and agg != float("inf") else None
    ts, per = _binned(cell, start["t"] if start else 0.0)
    m["jain_1s"] = metrics.binned_jain(ts, per)
    m.update(_phases(cell, ts, [sum(x) for x in zip(*per)] if per else []))
    m.update(_beside_each(cell, m["mbps_beside"]))
    m.update(_shares(cell, mss, m["method_mbps"]))
    return m


def _shares(cell: MeasuredCell, mss: int, mbps: float) -> dict:
    """What the generality experiment judges a cell against: the path, the equal share (the
    bottleneck's payload rate over the long flows on it, the method counting as one), how long a
    change may take to settle (the longer of 10 s and 20 round trips), the least a window-based
    flow moves there (two segments a round trip, a scavenger's least window: RFC 6817's
    MIN_CWND), and a second braid beside it (its rate, and Jain's index of the two)."""
    cb = cell.cross_braid
    return {
        "rate_mbps": cell.rate_bps / 1e6, "rtt_ms": cell.rtt_s * 1e3, "long_flows": cell.long_flows,
        "equal_share_mbps": (cell.rate_bps * mss / cell.mtu / 1e6 / (cell.long_flows + 1)
                             if cell.long_flows is not None else None),
        "settle_bound_s": max(10.0, 20 * cell.rtt_s),
        "least_window_mbps": 2 * mss * 8 / cell.rtt_s / 1e6 if cell.rtt_s else None,
        "cross_braid_mbps": cb["mbps"] if cb else None,
        "pair_jain": metrics.jain([mbps, cb["mbps"]]) if cb else None,
    }


def _beside_each(cell: MeasuredCell, beside: float | None) -> dict:
    """Against competitors that came and went: each one's mean rate while it was there (they run
    from the arrival to the departure) and the method's rate beside them over it. That is the
    method against one flow's share as the flows sharing the path had it; one flow that was
    there first may have less (the newcomers' slow starts cut it down)."""
    if not cell.changes or not cell.cross_tcp or beside is None:
        return {"each_beside_mbps": None, "ratio_beside": None}
    arrive, leave = cell.changes
    each = statistics.fmean(f.bytes * 8 / (leave - arrive) / 1e6 for f in cell.cross_tcp)
    return {"each_beside_mbps": each, "ratio_beside": beside / each if each > 0 else None}


def _binned(cell: MeasuredCell, after: float) -> tuple[list[float], list[list[float]]]:
    """The series after `after` as (interval times, each stream's Mb/s per interval); a stream
    absent from an interval (not yet dialled, or gone) counts as 0. An interval past the bench's
    duration is its tail, after the sender stopped (what the last second acknowledged, at half
    the rate or less): counted, it took a transfer that held its rate out of the settled band."""
    by_t: dict[float, dict[int, float]] = defaultdict(dict)
    last = cell.omit + cell.seconds + 1e-6
    for p in cell.series:
        if after < p.t <= last:
            by_t[p.t][p.stream] = p.mbps
    ts = sorted(by_t)
    streams = sorted({s for v in by_t.values() for s in v})
    return ts, [[by_t[t].get(s, 0.0) for t in ts] for s in streams]


def _phases(cell: MeasuredCell, ts: list[float], total: list[float]) -> dict:
    """With competitors that arrive and leave: the method's rate alone, beside them and after
    they left, and how long it took to settle after each change (metrics.settle_time) and to
    first come near its new rate (metrics.reach_time)."""
    keys = ("mbps_alone", "mbps_beside", "mbps_after", "settle_arrive_s", "settle_leave_s", "reach_arrive_s",
            "reach_leave_s")
    if not cell.changes or not ts:
        return dict.fromkeys(keys)
    arrive, leave = cell.changes
    end = ts[-1]

    def mean(lo, hi):
        xs = [r for t, r in zip(ts, total) if lo < t <= hi]
        return statistics.fmean(xs) if xs else None

    return {"mbps_alone": mean(ts[0] - 1e-9, arrive), "mbps_beside": mean(arrive, leave),
            "mbps_after": mean(leave, end) if leave < end else None,
            "settle_arrive_s": metrics.settle_time(ts, total, arrive, leave)[0],
            "settle_leave_s": metrics.settle_time(ts, total, leave, end)[0] if leave < end else None,
            "reach_arrive_s": metrics.reach_time(ts, total, arrive, leave),
            "reach_leave_s": metrics.reach_time(ts, total, leave, end) if leave < end else None}


def appropriations(rows: list[dict], baseline: str | None) -> None:
    """Fills `appropriation` in place: per scenario with competing TCP flows,
    against the median competitors' aggregate beside the baseline method."""
    if not baseline:
        return
    base: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["method"] == baseline and r["cross_mbps"] is not None:
            base[r["scenario"]].append(r["cross_mbps"])
    for r in rows:
        ref = base.get(r["scenario"])
        if ref and r["cross_mbps"] is not None and statistics.median(ref) > 0:
            r["appropriation"] = metrics.appropriation(r["cross_mbps"], statistics.median(ref))


def flow_rows(experiment: str, cell: MeasuredCell, m: dict) -> list[dict]:
    rows = []
    common = {"experiment": experiment, **m}

    def add(role, flow, cc, nbytes, mbps, retx, loss):
        rows.append({**common, "role": role, "flow": flow, "flow_cc": cc, "flow_bytes": nbytes, "flow_mbps": mbps,
                     "flow_retransmits": retx, "flow_loss_ratio": loss})

    streams, seconds, _moved, _loss = measured(cell)
    for s in streams:
        add("method", f"s{s.stream}", s.cc, s.bytes, s.bytes * 8 / seconds / 1e6, s.retransmits,
            metrics.loss_ratio(s.retransmits, s.data_segs_out))
    for f in cell.cross_tcp or []:
        add("cross", f.flow, f.cc or "", f.bytes, f.mbps, f.retransmits, None)
    if cell.udp:
        u = cell.udp
        add("udp", "udp", "", u.bytes, u.mbps, None, u.loss_ratio)
    return rows


def load(run_dir: Path) -> tuple[dict, list[MeasuredCell]]:
    """(run.json, the finished cells in plan order)."""
    meta = json.loads((run_dir / "run.json").read_text())
    cells = []
    for scenario, method, rep in meta["plan"]:
        p = run_dir / "cells" / f"{scenario}.{method}.r{rep}.json"
        if p.exists():
            cells.append(MeasuredCell.from_json(json.loads(p.read_text())))
    return meta, cells


def table(cells: list[MeasuredCell], baseline: str | None) -> list[dict]:
    rows = [cell_metrics(c) for c in cells]
    appropriations(rows, baseline)
    return rows


def _csv(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]))
                    for k in columns})
    return buf.getvalue()


def write_atomic(path: Path, text: str) -> None:
    """Whole or not at all: a reader never sees half a file, a crash never leaves one."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_tables(exp, run_dir: Path) -> None:
    """cells.csv (one row per cell), flows.csv (one per flow), series.csv."""
    _meta, cells = load(run_dir)
    rows = table(cells, exp.baseline)
    by_id = {(r["scenario"], r["method"], r["rep"]): r for r in rows}
    flows = []
    series = ["scenario,method,rep,t,stream,mbps,cwnd,srtt_ms"]
    for c in cells:
        flows += flow_rows(exp.name, c, by_id[(c.scenario, c.method, c.rep)])
        series += [f"{c.scenario},{c.method},{c.rep},{p.t},{p.stream},{p.mbps},{p.cwnd},{p.srtt_ms}"
                   for p in c.series]
    write_atomic(run_dir / "cells.csv", _csv(rows, CELL_COLUMNS))
    write_atomic(run_dir / "flows.csv", _csv(flows, FLOW_COLUMNS))
    write_atomic(run_dir / "series.csv", "\n".join(series) + "\n")


def one_line(cell: MeasuredCell) -> str:
    m = cell_metrics(cell)
    parts = [f"{m['method_mbps']:.1f} Mb/s", f"loss {100 * m['method_loss_ratio']:.3f} %"]
    if m["effectiveness"] is not None:
        parts.append(f"effectiveness {100 * m['effectiveness']:.1f} %")
    if m["cross_mbps"] is not None:
        parts.append(f"competitors {m['cross_mbps']:.1f} Mb/s")
    if m["rtt_median_ms"] is not None:
        parts.append(f"RTT {m['rtt_median_ms']:.1f} ms")
    if m["sqrt_p"] is not None:
        parts.append(f"sqrt(p) {m['sqrt_p']:.3f}")
    parts.append(f"link {100 * m['utilisation']:.0f} % used")
    return ", ".join(parts)
