"""`braidlab run`: every cell of an experiment on a fresh dumbbell.

A run directory holds:
  run.json            the experiment, variant, seed and the cells' order (the plan)
  cells/<id>.json     one finished cell: what was measured (written atomically)
  raw/<id>/           the cell's manifest, link stats and every tool's output
  flows.csv           the tidy table (results.py): one row per method x repetition x flow
  cells.csv           one row per cell; both rewritten after every cell
  series.csv          per-second rate, window and RTT of every method stream

Running the same command with the same --out continues an interrupted run:
finished cells are kept, the rest run in the planned order.

Each cell: build the dumbbell (pair 0 carries the method, pair 1 the cross
traffic), start the cross traffic, wait the warm-up, run `braid bench` for
the variant's seconds while the probes run, read braid-link's counters
before and after, and tear everything down.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import subprocess
import time
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

from . import braid, cluster, engine, manifest, metrics, netns, quiet, records, results, traffic
from .dumbbell import Dumbbell
from .experiment import Cell, Experiment, Scenario, Variant, rate_bps, seconds_of
from .measured import MeasuredCell

RUN_VERSION = 1
TCP_PORT = 5201
FLOWS_PORT = 5400


class RunError(RuntimeError):
    pass


def _write_json(path: Path, data: dict, indent: int | None = None) -> None:
    results.write_atomic(path, json.dumps(data, indent=indent, separators=None if indent else (",", ":")) + "\n")


def preflight(exp: Experiment, variant: Variant) -> None:
    """What a run needs, checked before anything is built."""
    if os.geteuid() != 0:
        raise RunError("braidlab run builds network namespaces: run it as root")
    braid.binary()
    if any(exp.scenarios[s].tcp for s in variant.scenarios) and not shutil.which("iperf3"):
        raise RunError("iperf3 is not installed (scripts/setup.sh installs it)")
    wanted = {cc for m in variant.methods for cc in exp.methods[m].method.controls() if cc}
    allowed = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = {cc for cc in wanted if not cc.startswith("braid_") and cc not in allowed}
    if missing:
        raise RunError(f"the kernel lacks congestion control(s) {', '.join(sorted(missing))}")


def _host_sysctls(bed: Dumbbell, sc: Scenario) -> None:
    # The paper flushed cached TCP metrics before each test; we never save them.
    words = ["net.ipv4.tcp_no_metrics_save=1", f"net.ipv4.tcp_sack={int(sc.path.sack)}",
             f"net.ipv4.tcp_timestamps={int(sc.path.timestamps)}"]
    for h in bed.senders + bed.receivers:
        h.run("sysctl", "-qw", *words)
        if sc.path.tcp_buffer is not None:
            h.ns.tcp_buffers(sc.path.tcp_buffer)


def _window_bytes(intervals: list[dict], lo: float, hi: float) -> float:
    """Bytes an iperf3 stream carried in [lo, hi] of its clock, intervals pro rata."""
    total = 0.0
    for iv in intervals:
        a, b = iv["start"], iv["end"]
        if b <= a:
            continue
        overlap = max(0.0, min(b, hi) - max(a, lo))
        total += iv["bytes"] * overlap / (b - a)
    return total


def _iperf_flows(client: str, server: str | None, lo: float, hi: float) -> list[dict]:
    """Each competing flow's bytes in [lo, hi]: what the iperf3 server received
    (the client's interval bytes are what it wrote into its socket buffer),
    and the client's retransmissions."""
    sent = json.loads(client)
    if "error" in sent:
        raise RunError(f"iperf3: {sent['error']}")
    got = json.loads(server) if server else sent

    def per_stream(data):
        per: dict[int, list[dict]] = {}
        for iv in data.get("intervals", []):
            for s in iv["streams"]:
                per.setdefault(s["socket"], []).append(s)
        return [ivs for _sock, ivs in sorted(per.items())]

    retx = [s["sender"].get("retransmits", 0)
            for s in sorted(sent["end"].get("streams", []), key=lambda s: s["sender"]["socket"])]
    out = []
    for i, ivs in enumerate(per_stream(got)):
        b = _window_bytes(ivs, lo, hi)
        out.append({"flow": f"tcp{i}", "bytes": round(b), "mbps": b * 8 / (hi - lo) / 1e6,
                    "retransmits": retx[i] if i < len(retx) else 0,
                    "cc": sent["end"].get("sender_tcp_congestion")})
    return out


def _window_mbps(intervals: list[records.Interval], lo: float, hi: float) -> float:
    """A braid bench's Mb/s over [lo, hi] of its own clock, from its interval records' byte counts
    (the first record at or after each end)."""
    def bytes_at(t: float) -> int:
        for iv in intervals:
            if iv.t >= t:
                return iv.bytes
        return intervals[-1].bytes if intervals else 0
    return (bytes_at(hi) - bytes_at(lo)) * 8 / (hi - lo) / 1e6 if hi > lo else 0.0


def _udp_window(text: str, lo: float, hi: float) -> dict:
    bins, _ = traffic.SinkReport.parse(text).only()
    inside = [b for b in bins if lo <= b.t < hi]
    packets = sum(b.packets for b in inside)
    lost = sum(b.lost for b in inside)
    nbytes = sum(b.bytes for b in inside)
    return {"packets": packets, "lost": lost, "bytes": nbytes, "mbps": nbytes * 8 / (hi - lo) / 1e6,
            "loss_ratio": metrics.loss_ratio(lost, packets + lost)}


def _counters(stats: dict) -> dict:
    d = dict(stats["ab"]["counters"])
    # Frames the emulator itself failed to take (its receive ring full, or a frame longer than
    # its slots): they never met the configured link, so a cell with any ran another path.
    d["overruns"] = stats["ab"].get("rx_kernel_drops", 0) + stats["ab"].get("rx_truncated", 0)
    return d


def window_counters(before: dict, after: dict) -> dict:
    """The link's counters over the measured window: each running total's increase, and each
    running maximum (`max_...`) where the window raised it, its new value; None where it did not
    (the deepest of the window was no deeper than one before it, by how much the counter cannot
    say). A maximum's increase is no figure of the window."""
    out = {}
    for k, v in after.items():
        if not isinstance(v, int):
            continue
        was = before.get(k, 0)
        if k.startswith("max_"):
            out[k] = v if v > was else None
        else:
            out[k] = v - was
    return out


def series_rows(intervals: list[records.Interval]) -> list[list[float]]:
    """[t, stream, Mb/s, cwnd, sRTT ms] for each stream of each interval record. The rate is
    the bytes its TCP saw acknowledged in the interval, when the sender reports them: the
    engine counts a stream's bytes in whole blocks as they complete, which at a few Mb/s per
    stream is one or two blocks a second, and a rate counted in them swings by half from one
    second to the next with nothing on the path changing. A receiver's records (nothing
    acknowledged) keep the blocks' count. A connection that starts again counts from zero."""
    acked = any(st.bytes_acked for iv in intervals for st in iv.streams)
    prev: dict[int, int] = {}
    prev_t = 0.0
    rows = []
    for iv in intervals:
        dt = iv.t - prev_t
        prev_t = iv.t
        for st in iv.streams:
            mbps = st.mbps
            if acked and dt > 0:
                before = prev.get(st.stream, 0)
                moved = st.bytes_acked - before if st.bytes_acked >= before else st.bytes_acked
                mbps = round(moved * 8 / dt / 1e6, 3)
            prev[st.stream] = st.bytes_acked
            rows.append([iv.t, st.stream, mbps, st.cwnd, st.srtt_us / 1e3])
    return rows


def at_omit(intervals: list[records.Interval], omit: float) -> dict:
    """Each stream's counters at the first interval record at or after `omit`
    seconds: what the measured window starts from."""
    rec = next((iv for iv in intervals if iv.t >= omit - 1e-6), None)
    if rec is None:
        raise RunError(f"braid bench reported no interval after the {omit:g} s left out")
    return {"t": rec.t, "streams": {str(st.stream): {"bytes": st.bytes, "retransmits": st.retransmits}
                                    for st in rec.streams}}


class _Later:
    """A tool started `delay` seconds from now on a thread of its own, so the cell's timeline
    goes on. The thread lives as long as the tool: tools die with the thread that started them
    (netns.popen), so it waits for the tool's end itself. Leaving the context first cancels a
    tool not yet started and stops one that runs (a cell that failed leaves nothing behind)."""

    def __init__(self, delay: float, start, limit: float):
        self._stop = threading.Event()
        self._running = None
        self._out: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(delay, start, limit), daemon=True)

    def _run(self, delay, start, limit):
        if self._stop.wait(delay):
            return
        try:
            self._running = start()
            self._out = self._running.wait(limit)
        except BaseException as e:  # handed to wait()
            self._error = e

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive() and self._running is not None:
            self._running.stop()
        self._thread.join()

    def wait(self, timeout: float) -> str:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RunError(f"the cross traffic that arrives mid-cell did not end within {timeout:.0f} s")
        if self._error is not None:
            raise RunError(f"the cross traffic that arrives mid-cell: {self._error}")
        if self._out is None:
            raise RunError("the cross traffic that arrives mid-cell never started")
        return self._out


def run_cell(exp: Experiment, variant: Variant, cell: Cell, raw: Path, token: Path, index: int,
             seed: int) -> dict:
    """One cell on this machine; `seed` is its draws' (Experiment.cell_seed)."""
    sc = exp.scenarios[cell.scenario]
    nm = exp.methods[cell.method]
    p = replace(sc.path, seed=seed)
    cross_seed = seed + 1
    seconds, warmup, omit = variant.seconds, variant.warmup, variant.omit
    cross_time = warmup + omit + seconds + 1
    pairs = 2 if (sc.cross_kinds or sc.probe) else 1
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # Competitors that arrive and leave mid-cell: seconds after t0 (the method starts at warmup).
    during = sc.during
    if during:
        arrive, leave = (warmup + omit + f * seconds for f in during)
    groups = sc.tcp_groups
    with Dumbbell(p.forward_spec(), p.reverse_spec(), pairs=pairs, access=p.access, mtu=p.mtu, tag=f"x{index}",
                  run_dir=raw, seeds={"link": seed, "cross": cross_seed}) as bed, contextlib.ExitStack() as later:
        _host_sysctls(bed, sc)
        snd, rcv = bed.senders[0], bed.receivers[0]
        (raw / "serve-root").mkdir()
        server = engine.serve(rcv.ns, raw / "serve-root", token, once=True, log=raw / "serve.jsonl")
        cross = {}
        if pairs == 2:
            cs, cr = bed.senders[1], bed.receivers[1]
            if sc.udp:
                cross["sink"] = traffic.udp_sink(cr)
                udp = sc.udp
                if "rate" in udp:
                    cross["udp"] = traffic.udp_source(cs, cr.addr, cross_time, rate=udp["rate"], seed=cross_seed)
                else:
                    cross["udp"] = traffic.udp_source(cs, cr.addr, cross_time, sine=(udp["min"], udp["max"]),
                                                      period=udp.get("period", "10s"), seed=cross_seed)
            # One iperf3 client (and server, on a port of its own) per group of a mix.
            for g, grp in enumerate(groups):
                cross[f"tcp-server{g}"] = traffic.iperf3_server(cr, TCP_PORT + g)
                if not during:
                    cross[f"tcp{g}"] = traffic.iperf3_client(cs, cr.addr, cross_time, port=TCP_PORT + g,
                                                             cc=grp.get("cc"), parallel=grp["flows"])
            if sc.braid:
                # A second braid from the cross host to a server of its own (a second port).
                (raw / "cross-root").mkdir()
                cross["braid-server"] = engine.serve(cr.ns, raw / "cross-root", token, port=engine.PORT + 1,
                                                     once=True, log=raw / "cross-serve.jsonl")
                time.sleep(0.3)
                cross["braid"] = traffic.start(cs, engine.bench_argv(
                    f"{cr.addr}:{engine.PORT + 1}", cross_time, token, engine.Method(mode=sc.braid["mode"],
                                                                                    streams=None)), "cross-braid")
            if sc.poisson:
                braid.start_sink(cr.ns, FLOWS_PORT)
                pz = sc.poisson
                cross["poisson"] = traffic.poisson_flows(cs, cr.addr, FLOWS_PORT, pz["load"], cross_time,
                                                         mean_size=pz.get("mean_size", "100k"),
                                                         cc=pz.get("cc", "reno"), seed=cross_seed)
        t0 = time.monotonic()
        if during:
            for g, grp in enumerate(groups):
                cross[f"tcp{g}"] = later.enter_context(_Later(arrive, functools.partial(
                    traffic.iperf3_client, cs, cr.addr, round(leave - arrive), port=TCP_PORT + g, cc=grp.get("cc"),
                    parallel=grp["flows"]), limit=cross_time + 30))
        time.sleep(warmup)
        bench = traffic.start(snd, engine.bench_argv(rcv.addr, omit + seconds, token, nm.method), "bench")
        time.sleep(omit)
        # The measured window opens here: the link's counters, the probes, the cross traffic's share.
        before = _counters(bed.stats())
        tcp_before = traffic.tcp_counters(snd)
        offset = time.monotonic() - t0
        t_before = time.monotonic()
        probe = traffic.ping(bed.senders[1], bed.receivers[1].addr, seconds) if sc.probe else None
        report = engine.Report.parse(bench.wait(omit + seconds + 60))
        after = _counters(bed.stats())
        tcp_after = traffic.tcp_counters(snd)
        link_seconds = time.monotonic() - t_before
        outs = {k: (r.wait(cross_time + 30) if k not in ("sink", "braid-server") else None)
                for k, r in cross.items()}
        if "braid-server" in cross:
            try:
                cross["braid-server"].wait(10)
            except subprocess.TimeoutExpired:
                raise RunError(f"{cell.id}: the second braid serve --once still ran 10 s after its bench") from None
        if "sink" in cross:
            time.sleep(0.3)
            outs["sink"] = cross["sink"].stop()
        ping = traffic.ping_report(probe.wait(30))[0] if probe else None
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            raise RunError(f"{cell.id}: braid serve --once still ran 10 s after the bench ended") from None
    if report.summary is None:
        raise RunError(f"{cell.id}: braid bench printed no summary")
    s = report.summary
    window = (offset, offset + seconds)
    link = window_counters(before, after)
    out = {
        "version": RUN_VERSION, "id": cell.id, "scenario": cell.scenario, "method": cell.method, "rep": cell.rep,
        "started": started, "seconds": seconds, "offset": round(offset, 3),
        "setting": asdict(nm.method), "mtu": p.mtu, "timestamps": p.timestamps, "rate_bps": p.rate_bps, "rtt_s": seconds_of(p.rtt),
        "bench": {k: getattr(s, k) for k in ("seconds", "bytes", "peer_bytes", "mbps", "retransmits",
                                             "data_segs_out", "loss_ratio", "cpu_seconds")},
        "streams": [asdict(st) for st in s.streams],
        "series": series_rows(report.intervals),
        "link": link, "link_seconds": round(link_seconds, 3), "omit": omit,
        # The method's sender is alone in its namespace: these are its streams' own.
        "sender_tcp": {k: tcp_after[k] - tcp_before[k] for k in tcp_after},
    }
    if omit:
        out["at_omit"] = at_omit(report.intervals, omit)
    if s.windows_repaired is not None:
        out["windows_repaired"] = s.windows_repaired
    if s.steer_cpu_seconds is not None:
        out["steer_cpu_seconds"] = s.steer_cpu_seconds
    phases = report.phases
    if phases:
        out["steer"] = phases
    if s.bottleneck_mbps is not None:
        # The receiving end's view of the bottleneck (its arrivals' dispersion), as the sender heard it.
        out["bottleneck_mbps"] = s.bottleneck_mbps
    if groups:
        # iperf3's clock starts when its test does, a moment after the process: close enough at 1 s bins.
        # A delayed start moves iperf3's clock: its zero is the arrival.
        shift = arrive if during else 0.0
        flows = []
        for g in range(len(groups)):
            for f in _iperf_flows(outs[f"tcp{g}"], outs.get(f"tcp-server{g}"), window[0] - shift,
                                  window[1] - shift):
                flows.append({**f, "flow": f"tcp{len(flows)}"})
        out["cross_tcp"] = flows
    out["long_flows"] = sc.long_flows
    if "braid" in outs:
        other = engine.Report.parse(outs["braid"])
        if other.summary is None:
            raise RunError(f"{cell.id}: the second braid printed no summary")
        out["cross_braid"] = {"mbps": _window_mbps(other.intervals, *window), "mode": sc.braid["mode"],
                              "phases": other.phases}
    if during:
        # In the bench's clock, which starts with the method (warmup after t0).
        out["changes"] = [round(arrive - warmup, 3), round(leave - warmup, 3)]
    if "sink" in outs:
        out["udp"] = _udp_window(outs["sink"], *window)
        if "min" in sc.udp:
            u = (rate_bps(sc.udp["min"]), rate_bps(sc.udp["max"]))
            period = seconds_of(sc.udp.get("period", "10s"))
            lo, hi = window
            udp_bits = metrics.sine_volume(hi, *u, period) - metrics.sine_volume(lo, *u, period)
        else:
            udp_bits = rate_bps(sc.udp["rate"]) * seconds
        probe_bps = metrics.probe_rate() if sc.probe else 0.0
        out["capacity_bytes"] = metrics.capacity(p.rate_bps, seconds, probe=probe_bps) - udp_bits / 8
    if ping:
        out["ping"] = {k: getattr(ping, k) for k in ("sent", "received", "lost", "median_ms", "p99_ms", "mean_ms")}
    return out


def run(exp: Experiment, which: str, out: Path, *, repeat: int | None = None, seed: int | None = None,
        methods: list[str] | None = None, scenarios: list[str] | None = None, progress=print,
        cluster_address: str | None = None, tls_dir: Path | None = None) -> Path:
    variant = exp.narrow(exp.variant(which, repeat), methods, scenarios)
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "run.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("version") != RUN_VERSION:
            raise RunError(f"{out}: run format {meta.get('version')}, this braidlab writes {RUN_VERSION}")
        if (meta["experiment"], meta["variant"]) != (exp.name, which):
            raise RunError(f"{out} holds a run of {meta['experiment']} --{meta['variant']}, not {exp.name} --{which}")
        if methods or scenarios:
            raise RunError(f"{out} keeps the plan it was started with; continue it without --methods and "
                           f"--scenarios, or start a new --out")
        if repeat is not None and repeat != meta["repeat"]:
            raise RunError(f"{out} was planned with --repeat {meta['repeat']}; continue it without --repeat "
                           f"or start a new --out")
        variant = exp.variant(which, meta["repeat"])
        plan = [Cell(*c) for c in meta["plan"]]
        progress(f"continuing {out}: {sum((out / 'cells' / f'{c.id}.json').exists() for c in plan)} "
                 f"of {len(plan)} cells done")
    else:
        seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        plan = exp.plan(variant, seed)
        meta = {"version": RUN_VERSION, "experiment": exp.name, "variant": which, "repeat": variant.repeat,
                "seed": seed, "variant_settings": asdict(variant), "source": str(exp.source),
                "experiment_file": exp.source.read_text() if exp.source else None,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "host": os.uname().nodename, "kernel": os.uname().release,
                "git": manifest.git_revision(braid.ROOT), "plan": [[c.scenario, c.method, c.rep] for c in plan]}
        _write_json(meta_path, meta, indent=1)
    cells_dir = out / "cells"
    cells_dir.mkdir(exist_ok=True)
    token = engine.token_file(out / "raw")
    todo = [c for c in plan if not (cells_dir / f"{c.id}.json").exists()]

    def keep(cell: Cell, data: dict, where: dict) -> None:
        # Checked against the record results reads, before it is kept.
        record = MeasuredCell.from_json({**data, "build": where["build"], "machine": where})
        _write_json(cells_dir / f"{cell.id}.json", record.to_json())
        progress("    " + results.one_line(record))
        results.write_tables(exp, out)

    # From run.json's seed, so a continued run draws what its first invocation would have.
    seed_of = functools.partial(exp.cell_seed, meta["seed"])
    if cluster_address:
        _on_cluster(cluster_address, exp, variant, plan, todo, out, keep, progress, seed_of, tls_dir)
    else:
        _embedded(exp, variant, plan, todo, out, token, keep, progress, seed_of)
    results.write_tables(exp, out)
    missing = [c.id for c in plan if not (cells_dir / f"{c.id}.json").exists()]
    if missing:
        raise RunError(f"{len(missing)} cell(s) did not finish ({', '.join(missing[:5])}"
                       f"{', ...' if len(missing) > 5 else ''}); their logs are in {out / 'raw'}; "
                       f"run the same command again to retry them")
    return out


def _warn_if_busy(busy: float, progress) -> None:
    """`busy` is the cores' busy share in the second before a cell, measured with nothing of the
    laboratory's running (quiet.py)."""
    if busy > quiet.NOT_QUIET:
        progress(f"    the machine's cores were {busy:.0%} busy before this cell with nothing of the "
                 f"laboratory's running: something else loads it, and the cell measures that too")


def _embedded(exp, variant, plan, todo, out, token, keep, progress, seed_of) -> None:
    """The cells one after another in this process, on this machine."""
    _signalled.clear()
    preflight(exp, variant)
    installed_here = False
    needs_ours = any(cc and cc.startswith("braid_") for m in variant.methods
                     for cc in exp.methods[m].method.controls())
    if needs_ours and not braid.cc_status()["installed"]:
        braid.cc("install")
        installed_here = True
    # A run continued days later may use another build: each cell names the machine and build
    # that measured it.
    here = cluster.machine()
    try:
        per_cell = variant.warmup + variant.seconds + variant.pause + 4
        for i, cell in enumerate(todo):
            left = (len(todo) - i) * per_cell
            progress(f"[{len(plan) - len(todo) + i + 1}/{len(plan)}] {cell.id}  "
                     f"(about {left / 60:.1f} min left)")
            busy = quiet.measure()
            _warn_if_busy(busy, progress)
            data = None
            for attempt in (1, 2):
                raw = out / "raw" / cell.id
                if raw.exists():
                    shutil.rmtree(raw)  # a half-run cell from an interrupted run or a failed attempt
                try:
                    data = run_cell(exp, variant, cell, raw, token, plan.index(cell), seed_of(cell))
                    break
                except (RunError, RuntimeError, OSError, ValueError, KeyError) as e:
                    # A signal's unwinding can surface as a tool that exited (the testbed's
                    # teardown ends them): that is the run stopping, not the cell failing.
                    if _signalled.is_set():
                        raise KeyboardInterrupt(f"stopped during {cell.id}") from e
                    # One cell's failure (a tool that exited, a report that did not parse) must not
                    # throw away hours of others: try once more, then leave it for a continuation.
                    progress(f"    attempt {attempt} failed: {e}")
            if data is None:
                continue
            keep(cell, data, {**here, "busy_before": round(busy, 3)})
            if i + 1 < len(todo):
                time.sleep(variant.pause)
    finally:
        if installed_here:
            braid.cc("uninstall")


CELL_DIR_PREFIX = "braidlab-cell-"


def stale_cell_dirs(root: Path | None = None) -> list[Path]:
    """Cell directories (`measure`'s, named after the process that made them) whose process is gone."""
    root = Path(root or tempfile.gettempdir())
    out = []
    for d in root.glob(f"{CELL_DIR_PREFIX}*-*"):
        pid = d.name[len(CELL_DIR_PREFIX):].split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and not netns.alive(int(pid)):
            out.append(d)
    return out


def measure(exp: Experiment, variant: Variant, cell: Cell, index: int, seed: int) -> dict:
    """On a cluster's worker: one cell, start to finish, in a directory of its own, with a token
    of its own (no secret travels in a task). Returns the cell's record, its raw files
    ({relative path: bytes}) and the machine."""
    # A worker killed in the middle of a cell leaves its namespaces behind, and its cell's
    # directory with the cell's token in it: their creator is gone, so they are this machine's to
    # remove before it builds again.
    netns.clean()
    for d in stale_cell_dirs():
        shutil.rmtree(d, ignore_errors=True)
    preflight(exp, variant)
    wanted = {cc for cc in exp.methods[cell.method].method.controls() if cc}
    installed_here = any(cc.startswith("braid_") for cc in wanted) and not braid.cc_status()["installed"]
    if installed_here:
        braid.cc("install")
    # After the cleaning and before anything of this cell starts, as _embedded measures it.
    busy = quiet.measure()
    work = Path(tempfile.mkdtemp(prefix=f"{CELL_DIR_PREFIX}{os.getpid()}-"))
    try:
        raw = work / "raw"
        data = run_cell(exp, variant, cell, raw, engine.token_file(work), index, seed)
        files = {}
        for p in sorted(raw.rglob("*")):
            if p.is_file() and not p.is_symlink():
                files[str(p.relative_to(raw))] = p.read_bytes()
        return {"data": data, "raw": files, "machine": {**cluster.machine(), "busy_before": round(busy, 3)}}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if installed_here:
            braid.cc("uninstall")


def _on_cluster(address, exp, variant, plan, todo, out, keep, progress, seed_of, tls_dir) -> None:
    """The cells on a Dask cluster, one per machine at a time; results land here as they come."""
    progress(f"{len(todo)} of {len(plan)} cells to measure on {address}")
    done = [0]

    def arrived(cell: Cell, result: dict) -> None:
        done[0] += 1
        progress(f"[{len(plan) - len(todo) + done[0]}/{len(plan)}] {cell.id}  "
                 f"(measured on {result['machine']['host']})")
        if "busy_before" in result["machine"]:  # a worker of an older build does not say
            _warn_if_busy(result["machine"]["busy_before"], progress)
        raw = out / "raw" / cell.id
        if raw.exists():
            shutil.rmtree(raw)
        cluster.write_raw(raw, result["raw"])
        keep(cell, result["data"], result["machine"])

    try:
        cluster.run_cells(address, todo, measure, lambda c: (exp, variant, c, plan.index(c), seed_of(c)),
                          arrived, progress, tls_dir)
    except (OSError, ValueError) as e:
        raise RunError(f"the cluster at {address}: {e}") from e


def default_out(exp: Experiment, which: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return braid.ROOT / "runs" / f"{exp.name}-{which}-{stamp}"


# Set by a SIGINT or SIGTERM this process took, until the next run starts.
_signalled = threading.Event()


def _interrupt(signum, frame):
    _signalled.set()
    raise KeyboardInterrupt(f"signal {signum}")


def stop_on_signals() -> None:
    """SIGTERM and SIGINT unwind like a Ctrl-C: the cell's testbed is torn down, the controls
    this run installed are removed, and the finished cells stay for a continuation. (A shell
    starts background jobs with SIGINT ignored; a long run is often one.)"""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def _patterns(arg: str | None) -> list[str] | None:
    return [p.strip() for p in arg.split(",") if p.strip()] if arg else None


def main(args) -> int:
    from .experiment import ExperimentError, load

    stop_on_signals()
    which = "full" if args.full else "quick"
    out = None
    try:
        exp = load(args.experiment)
        out = Path(args.out) if args.out else default_out(exp, which)
        run(exp, which, out, repeat=args.repeat, seed=args.seed, methods=_patterns(args.methods),
            scenarios=_patterns(args.scenarios), cluster_address=args.cluster,
            tls_dir=Path(args.tls_dir) if args.tls_dir else None)
    except (ExperimentError, RunError) as e:
        print(f"braidlab run: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        again = f"; continue it with: braidlab run {args.experiment} --{which} --out {out}" if out else ""
        print(f"braidlab run: interrupted{again}", file=sys.stderr)
        return 130
    print(f"results: {out}  (tables: {out / 'flows.csv'}; report: braidlab report {out})")
    return 0
