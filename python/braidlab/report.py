"""`braidlab report RESULTS...`: markdown and self-contained HTML from run
directories alone (the experiment file is kept in each run.json).

Per experiment: how it ran, the calibration, per scenario our medians beside
the paper's numbers, every claim's verdict, and figures: box plots with
notches of each method's throughput, throughput/loss/fairness against the
number of streams where a method family sweeps it, and time series of
throughput and cwnd per stream.

The report is a list of blocks rendered twice, so the markdown and the HTML
never say different things.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import statistics
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from . import claims as claims_mod
from . import cwnd, metrics, results
from .experiment import ExperimentError, load, parse
from .measured import MeasuredCell

# The metrics a scenario's table may show, in order, with their headings.
METRICS = [
    ("method_mbps", "Mb/s"), ("effectiveness", "effectiveness"), ("appropriation", "appropriation"),
    ("cross_mbps", "competitors Mb/s"), ("ratio_to_cross", "method / competitors"), ("rtt_median_ms", "RTT median ms"), ("sqrt_p", "sqrt(p %) UDP"),
    ("method_loss_ratio", "TCP loss"), ("method_srtt_ms", "sRTT ms"), ("utilisation", "link used"),
    ("link_drop_ratio", "link drops"), ("jain", "Jain"), ("jain_1s", "Jain, 1 s bins"),
    ("p_events", "p (loss events)"), ("mathis_mbps", "Mathis Mb/s"),
    ("mbps_alone", "Mb/s alone"), ("mbps_beside", "Mb/s beside them"),
    ("each_beside_mbps", "each of them Mb/s"), ("ratio_beside", "beside / each"), ("mbps_after", "Mb/s after"),
    ("settle_arrive_s", "settles after arrival, s"), ("settle_leave_s", "settles after departure, s"),
    ("reach_arrive_s", "reaches after arrival, s"), ("reach_leave_s", "reaches after departure, s"),
]
PERCENT = {"effectiveness", "appropriation", "method_loss_ratio", "utilisation", "udp_loss", "jain",
           "jain_1s", "link_drop_ratio"}


@dataclass
class Block:
    kind: str  # h1 h2 h3 p pre table img list
    body: object
    extra: object = None


# What a sweep figure may plot against n or k.
SWEPT = {"method_mbps", "cross_mbps", "ratio_to_cross", "method_loss_ratio", "jain", "jain_1s", "utilisation", "mathis_mbps",
         "p_events"}
LOSSES = {"method_loss_ratio", "udp_loss", "link_drop_ratio", "p_events"}


def fmt(metric: str, x) -> str:
    if x is None:
        return "-"
    if metric in LOSSES:
        return f"{100 * x:.3f} %"
    if metric in PERCENT:
        return f"{100 * x:.1f} %"
    if metric == "sqrt_p":
        return f"{x:.3f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    _plt().close(fig)
    return path


def box_figure(rows: list[dict], scenario: str, methods: list[str], metric: str, label: str, path: Path) -> Path:
    plt = _plt()
    data = [[r[metric] for r in rows if r["scenario"] == scenario and r["method"] == m and r[metric] is not None]
            for m in methods]
    keep = [(m, d) for m, d in zip(methods, data) if d]
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(keep) + 1.5), 3.4))
    scale = 100 if metric in PERCENT else 1
    ax.boxplot([[x * scale for x in d] for _, d in keep], notch=all(len(d) >= 5 for _, d in keep),
               tick_labels=[m for m, _ in keep])
    ax.set_ylabel(label + (" (%)" if scale == 100 else ""))
    ax.set_title(f"{scenario}: {label}")
    ax.tick_params(axis="x", rotation=30)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def sweep_figure(scenario: str, families: dict[str, tuple[str, list[dict]]], metrics_: list[tuple[str, str]],
                 path: Path) -> Path:
    """Each family's median of each metric against what it varies (streams n, or strength k)."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(metrics_), figsize=(4.2 * len(metrics_), 3.4), squeeze=False)
    xlabels = {x for x, _ in families.values()}
    for ax, (metric, label) in zip(axes[0], metrics_):
        scale = 100 if metric in PERCENT else 1
        for fam, (x, frows) in families.items():
            per_x: dict[float, list[float]] = defaultdict(list)
            for r in frows:
                if r[metric] is not None:
                    per_x[r[x]].append(r[metric] * scale)
            xs = sorted(per_x)
            if xs:
                ax.plot(xs, [statistics.median(per_x[v]) for v in xs], marker="o", ms=3, label=fam)
        ax.set_xlabel(" or ".join("streams n" if x == "streams" else "strength k" for x in sorted(xlabels)))
        ax.set_ylabel(label + (" (%)" if scale == 100 else ""))
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(scenario)
    return _save(fig, path)


def series_figure(cells: list[MeasuredCell], scenario: str, path: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(2, len(cells), figsize=(3.6 * len(cells), 5), squeeze=False, sharex=True)
    for col, c in enumerate(cells):
        per: dict[int, list] = defaultdict(list)
        for t, s, mbps, cwnd, _rtt in ((p.t, p.stream, p.mbps, p.cwnd, p.srtt_ms) for p in c.series):
            per[s].append((t, mbps, cwnd))
        for s, pts in sorted(per.items()):
            pts.sort()
            axes[0][col].plot([p[0] for p in pts], [p[1] for p in pts], lw=0.8)
            axes[1][col].plot([p[0] for p in pts], [p[2] for p in pts], lw=0.8)
        axes[0][col].set_title(c.method, fontsize=9)
        axes[1][col].set_xlabel("s")
    axes[0][0].set_ylabel("Mb/s per stream")
    axes[1][0].set_ylabel("cwnd (packets)")
    fig.suptitle(f"{scenario}: each stream, each method's first repetition")
    return _save(fig, path)


# Where a point's label goes, in points from it: right of it, a row above first, then a row below,
# then higher and lower. Two labels whose points lie close would otherwise print over each other.
_PLACES = ((4, 4), (4, -11), (4, 15), (4, -22))


def label_places(points: list[tuple[float, float]], labels: list[str], size: tuple[float, float] = (340, 250),
                 char: float = 4.8, line: float = 9.0) -> list[tuple[int, int]]:
    """Each point's label offset: the first of _PLACES where the label's box (its text `char`
    points a character wide, `line` high, on axes `size` points wide and high) overlaps no label
    placed before it."""
    if not points:
        return []
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, y0 = min(xs), min(ys)
    # The axes' span with matplotlib's 5 % margins, so data map to points as on the page.
    wx, wy = ((max(xs) - x0) or 1.0) * 1.1, ((max(ys) - y0) or 1.0) * 1.1
    boxes: list[tuple[float, float, float, float]] = []
    chosen = []
    for (x, y), text in zip(points, labels):
        px, py = (x - x0) / wx * size[0], (y - y0) / wy * size[1]

        def box(place):
            dx, dy = place
            return px + dx, py + dy, px + dx + char * len(text), py + dy + line

        def free(a):
            return not any(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3] for b in boxes)

        place = next((pl for pl in _PLACES if free(box(pl))), _PLACES[0])
        boxes.append(box(place))
        chosen.append(place)
    return chosen


def frontier_figure(rows: list[dict], idle: str, busy: str, path: Path) -> Path | None:
    """Each method as a point: its effectiveness on the idle path (up is faster) against its
    appropriation on the busy one (left is fairer). The corner to reach is top left."""
    eff = claims_mod.medians(rows, "effectiveness", idle)
    app = claims_mod.medians(rows, "appropriation", busy)
    both = [m for m in eff if m in app]
    if not both:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    points = [(100 * app[m], 100 * eff[m]) for m in both]
    for m, xy, offset in zip(both, points, label_places(points, both)):
        ax.scatter(*xy, s=30)
        ax.annotate(m, xy, textcoords="offset points", xytext=offset, fontsize=8)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_xlabel(f"appropriation from the competitors, % ({busy})")
    ax.set_ylabel(f"effectiveness, % ({idle})")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def frontier_table(rows: list[dict], idle: str, busy: str) -> list[list[str]] | None:
    eff = claims_mod.medians(rows, "effectiveness", idle)
    app = claims_mod.medians(rows, "appropriation", busy)
    both = sorted((m for m in eff if m in app), key=lambda m: (app[m], -eff[m]))
    if not both:
        return None
    return [["method", f"effectiveness ({idle})", f"appropriation ({busy})"]] + [
        [m, fmt("effectiveness", eff[m]), fmt("appropriation", app[m])] for m in both]


def model_table(rows: list[dict]) -> list[list[str]] | None:
    """Rows of streams, measured, the Mathis aggregate (Eq. 5, C = sqrt(3/2)) and the same with
    the C of Reno under random loss (braid-link drops at random, one loss every 1/p packets is
    Eq. 5's premise), each with measured minus it and a 90 % t interval over repetitions."""
    per_n: dict[int, list[tuple[float, float, float | None]]] = defaultdict(list)
    for r in rows:
        if r.get("mathis_mbps") is not None:
            p = r.get("p_events")
            rand = r["mathis_mbps"] * cwnd.reno_random_loss_c(p) / metrics.MATHIS_C if p else None
            per_n[r["streams"]].append((r["method_mbps"], r["mathis_mbps"], rand))
    if not per_n:
        return None

    def diff(pairs: list[tuple[float, float]]) -> list[str]:
        if not pairs:
            return ["-", "-", "-"]
        mean, lo, hi = metrics.mean_ci([a - e for a, e in pairs], 0.90)
        return [f"{statistics.median(e for _, e in pairs):.1f}", f"{mean:+.1f}",
                f"{lo:+.1f} .. {hi:+.1f}" if len(pairs) > 1 else "(one run)"]

    out = [["streams", "measured Mb/s", "Mathis Mb/s", "measured - Mathis", "90 % interval",
            "Mathis, random-loss C", "measured - it", "90 % interval"]]
    for n in sorted(per_n):
        runs = per_n[n]
        out.append([str(n), f"{statistics.median(a for a, _, _ in runs):.1f}"]
                   + diff([(a, e) for a, e, _ in runs])
                   + diff([(a, x) for a, _, x in runs if x is not None]))
    return out


def _families(rows: list[dict]) -> dict[str, tuple[str, list[dict]]]:
    """Methods that differ only in their number of streams (or, at a fixed number, only in their
    strength), when 3 or more of them were measured: label -> (what varies, rows)."""
    out = {}
    for x, fixed in (("streams", "strength"), ("strength", "streams")):
        fam: dict[tuple, list[dict]] = defaultdict(list)
        for r in rows:
            fam[(r["mode"], r["cc"], r["virtual_rtt"], r[fixed])].append(r)
        for (mode, cc, m, other), frs in fam.items():
            if len({r[x] for r in frs}) < 3:
                continue
            shown = f"k={other:g}" if x == "streams" and other else f"n={other}" if x == "strength" else ""
            label = " ".join(str(v) for v in (mode, cc, f"m={m:g}" if m else "", shown) if v)
            out[label] = (x, frs)
    return out


LeaveOut = dict[Path, set[str]]


@dataclasses.dataclass(frozen=True)
class _Run:
    """One run directory, read once per report: its run.json, every cell it measured, and the
    methods left out of it."""

    dir: Path
    meta: dict
    cells: list[MeasuredCell]
    gone: frozenset[str] = frozenset()

    @property
    def kept(self) -> list[MeasuredCell]:
        """The cells the report pools: all but those of the methods left out."""
        return [c for c in self.cells if c.method not in self.gone]


def _read(run_dirs: list[Path], leave_out: LeaveOut | None = None) -> list[_Run]:
    runs = []
    for d in run_dirs:
        if not (d / "run.json").exists():
            raise FileNotFoundError(f"{d} is not a braidlab run directory (no run.json)")
        meta, cells = results.load(d)
        runs.append(_Run(d, meta, cells, frozenset((leave_out or {}).get(d, ()))))
    return runs


def _merged(runs: list[_Run]) -> tuple[list[dict], list[MeasuredCell]]:
    """(each run's run.json, all their cells): runs of one experiment and variant pool their
    repetitions, renumbered after one another. A method left out of a run (a later run measured
    it again, on a newer build) pools only the cells of the runs that keep it."""
    metas, cells = [], []
    offset = 0
    for r in runs:
        metas.append(r.meta)
        cells += [dataclasses.replace(c, rep=c.rep + offset) for c in r.kept]
        offset += r.meta["repeat"]
    return metas, cells


def parse_leave_out(specs: list[str], run_dirs: list[Path]) -> LeaveOut:
    """`DIR=METHOD[,METHOD...]` options as {run directory: methods}. DIR must be one of the runs
    reported and each method one it measured: a typo would otherwise pool what it meant to drop."""
    out: LeaveOut = {}
    known = {d.resolve(): d for d in run_dirs}
    for spec in specs:
        where, sep, names = spec.rpartition("=")
        methods = {m.strip() for m in names.split(",") if m.strip()}
        if not sep or not where or not methods:
            raise ValueError(f"--leave-out {spec!r}: expected DIR=METHOD[,METHOD...]")
        d = known.get(Path(where).resolve())
        if d is None:
            raise ValueError(f"--leave-out {spec!r}: {where} is not one of the run directories reported")
        measured = {c.method for c in results.load(d)[1]}
        missing = sorted(methods - measured)
        if missing:
            raise ValueError(f"--leave-out {spec!r}: {d} has no cells of {', '.join(missing)} "
                             f"(it measured {', '.join(sorted(measured))})")
        out.setdefault(d, set()).update(methods)
    return out


def experiment_blocks(run_dirs: list[Path], fig_dir: Path, claims: str = "recorded") -> list[Block]:
    return _experiment(_read(run_dirs), fig_dir, claims)[0]


def _builds(cells: list[MeasuredCell]) -> str:
    """A sentence naming the builds that measured the cells, when a continued run used more than one."""
    seen: dict[str, int] = {}
    unknown = 0
    for c in cells:
        b = c.build
        if not b:
            unknown += 1
            continue
        key = (b["git"].get("revision") or "?")[:12] + (" (with local changes)" if b["git"].get("dirty") else "")
        seen[key] = seen.get(key, 0) + 1
    if len(seen) + (unknown > 0) <= 1:
        return ""
    parts = [f"{n} cell(s) by {k}" for k, n in seen.items()]
    if unknown:
        parts.append(f"{unknown} by a build not recorded")
    return " The cells were measured by more than one build: " + ", ".join(parts) + "."


def _left_out(run: _Run) -> str:
    if not run.gone:
        return ""
    n = len(run.cells) - len(run.kept)
    return (f" Its {n} cell(s) of {', '.join(sorted(run.gone))} are left out of this report (`--leave-out`): "
            "another run reported here measured them again.")


def _repaired(cells: list[MeasuredCell]) -> str:
    """The cells whose sender's controls found a window or threshold out of bounds and put it back
    (bpf/math/reno.h): rare, and a reader should know which numbers came through one."""
    hit = [c for c in cells if c.windows_repaired]
    if not hit:
        return ""
    return (" The controls put back a window or threshold out of bounds in " + ", ".join(
        f"`{c.id}` ({c.windows_repaired})" for c in hit) + ".")


def _overruns(cells: list[MeasuredCell]) -> str:
    """The cells in which braid-link could not take every frame offered to it (its receive ring
    full): those frames were lost before the emulated link, so the path was not the one asked for."""
    hit = [c for c in cells if c.link.get("overruns")]
    if not hit:
        return ""
    return (" braid-link was overrun (frames lost before the emulated link) in " + ", ".join(
        f"`{c.id}` ({c.link['overruns']} frames)" for c in hit) + ": those cells did not see their path.")


def _machines(cells: list[MeasuredCell]) -> str:
    """A warning when the cells came from machines that differ in kernel, core count or build
    (a cluster run, or a run continued elsewhere): their numbers may not be comparable."""
    kinds: dict[tuple, list[str]] = {}
    for c in cells:
        m = c.machine
        if not m:
            continue
        b = m.get("build") or {}
        key = (m.get("kernel"), m.get("cores"), (b.get("binary") or "")[:12] or (b.get("git") or {}).get("revision"))
        kinds.setdefault(key, []).append(m.get("host", "?"))
    if len(kinds) <= 1:
        return ""
    parts = [f"{len(hosts)} cell(s) on {', '.join(sorted(set(hosts)))} (Linux {k}, {n} cores, build {b})"
             for (k, n, b), hosts in kinds.items()]
    return (" **Warning: the cells were measured on machines that differ in kernel, cores or build**: "
            + "; ".join(parts) + ".")


def _recorded(meta: dict, root: Path | None = None, claims: str = "recorded"):
    """The experiment as the run recorded it, with each claim's note (and the frontier to draw,
    and the columns shown) from its file today.

    A note explains a verdict, so it is often written after the measurement; the checks
    themselves stay as they were run. A claim whose check has changed since keeps its old note.
    With `claims` "today" the run is judged by today's file's claims instead (a claim revised
    to read as its paper does, judged again on the cells already measured)."""
    exp = parse(tomllib.loads(meta["experiment_file"]))
    try:
        today = load(exp.name, root)
    except ExperimentError:
        if claims == "today":
            raise
        return exp
    if claims == "today":
        exp.claims = [dict(c) for c in today.claims]
    now = {c["id"]: c for c in today.claims}
    # How the report draws the frontier is presentation, like a note: today's file may add it.
    if exp.frontier is None and today.frontier and all(s in exp.scenarios for s in today.frontier.values()):
        exp.frontier = today.frontier
    # So are the columns shown: today's file may show metrics the run's cells already allow.
    if today.columns and exp.columns and set(exp.columns) <= set(today.columns):
        exp.columns = today.columns

    def check(c: dict) -> dict:
        return {k: v for k, v in c.items() if k != "note"}

    for c in exp.claims:
        cur = now.get(c["id"])
        if cur is not None and check(c) == check(cur) and cur.get("note"):
            c["note"] = cur["note"]
    # A claim today's file adds is checked on the run's cells too, and says it came afterwards.
    recorded = {c["id"] for c in exp.claims}
    exp.claims += [{**c, "text": c["text"] + " (a claim added after the run)"}
                   for c in today.claims if c["id"] not in recorded]
    return exp


def _describe(spec) -> str:
    """A matrix cell's path and competition in a few words."""
    p = spec.path
    words = [f"{p.rate} {p.rtt} {p.limit}p {p.queue}" + (f" loss {p.loss:g}" if p.loss else "")]
    words += [f"{g['flows']} {g.get('cc', '')}" + (" arriving" if g.get("during") else "") for g in spec.tcp_groups]
    if spec.udp:
        words.append(f"udp {spec.udp.get('rate') or spec.udp['min'] + '-' + spec.udp['max']}")
    if spec.poisson:
        words.append(f"web {spec.poisson['load']}")
    if spec.braid:
        words.append(f"braid {spec.braid['mode']}")
    return ", ".join(words)


def matrix_figure(claims: list[dict], per: dict[str, dict[str, bool | None]], path: Path) -> Path:
    """Where each claim holds: a row per claim, a column per cell it judges (green holds, red
    does not, grey not measured)."""
    plt = _plt()
    scenarios = sorted({sc for c in claims for sc in per[c["id"]]})
    fig, ax = plt.subplots(figsize=(max(6, 0.16 * len(scenarios) + 3), 0.45 * len(claims) + 1.6))
    colour = {True: (0.30, 0.69, 0.31), False: (0.90, 0.30, 0.25), None: (0.85, 0.85, 0.85)}
    for y, c in enumerate(claims):
        for x, sc in enumerate(scenarios):
            if sc in per[c["id"]]:
                ax.add_patch(plt.Rectangle((x, y), 0.92, 0.85, color=colour[per[c["id"]][sc]]))
    ax.set_xlim(0, len(scenarios))
    ax.set_ylim(0, len(claims))
    ax.set_yticks([y + 0.42 for y in range(len(claims))], [c["id"] for c in claims], fontsize=8)
    ax.set_xticks([x + 0.46 for x in range(len(scenarios))], scenarios, rotation=90, fontsize=6)
    ax.invert_yaxis()
    ax.set_title("where each claim holds (green), does not (red), or was not measured (grey)", fontsize=9)
    return _save(fig, path)


def matrix_blocks(exp, rows: list[dict], fig_dir: Path) -> list[Block]:
    """A matrix experiment's cells in one table (the judged method against its yardsticks, medians
    over repetitions) and the map of its claims."""
    b = [Block("h3", f"{exp.name}: the cells")]
    measured = [sc for sc in exp.scenarios if any(r["scenario"] == sc for r in rows)]
    methods = [m for m in exp.methods if any(r["method"] == m for r in rows)]
    table = [["cell", "path and competition", "E Mb/s"] + methods]
    for sc in measured:
        meds = claims_mod.medians(rows, "method_mbps", sc)
        es = [r["equal_share_mbps"] for r in rows if r["scenario"] == sc and r.get("equal_share_mbps") is not None]
        table.append([sc, _describe(exp.scenarios[sc]), fmt("method_mbps", statistics.median(es)) if es else "-"]
                     + [fmt("method_mbps", meds[m]) if m in meds else "-" for m in methods])
    b.append(Block("p", "Each cell's throughput in Mb/s (medians over repetitions) and E, the equal share (the "
                        "bottleneck's payload rate over the long flows on it, braid counting as one)."))
    b.append(Block("table", table))
    share = [c for c in exp.claims if c["check"] == "share_of_cells"]
    if share:
        per = {c["id"]: claims_mod.cell_results(c, rows) for c in share}
        if any(per.values()):
            b.append(Block("img", matrix_figure(share, per, fig_dir / f"{exp.name}-matrix.png"),
                           "where each claim holds"))
    return b


def _experiment(runs: list[_Run], fig_dir: Path, claims: str = "recorded") -> tuple[list[Block], list, str, int]:
    """(blocks, the claims' verdicts, the experiment's name, the cells pooled)."""
    metas, cells = _merged(runs)
    exp = _recorded(metas[-1], claims=claims)
    rows = results.table(cells, exp.baseline)
    b: list[Block] = [Block("h2", exp.title)]
    for r in runs:
        meta = r.meta
        vs = meta["variant_settings"]
        b.append(Block("p", f"Run `{r.dir.name}`: variant **{meta['variant']}**, {meta['repeat']} repetition(s), "
                            f"{len(r.cells)} of {len(meta['plan'])} cells measured, {vs['seconds']:g} s "
                            f"per method ({vs.get('omit', 0):g} s before that left out) after {vs['warmup']:g} s "
                            f"of cross traffic; {meta['created']} on {meta['host']} (Linux {meta['kernel']}), "
                            f"braid {(meta['git'].get('revision') or '?')[:12]}"
                            f"{' (with local changes)' if meta['git'].get('dirty') else ''}."
                            f"{_builds(r.cells)}{_machines(r.cells)}{_left_out(r)}{_repaired(r.kept)}"
                            f"{_overruns(r.kept)}"))
    if exp.calibration:
        b.append(Block("p", "Calibration: " + " ".join(exp.calibration.split())))
    refs: dict[tuple[str, str], dict] = {(r["scenario"], r["metric"]): r for r in exp.references}
    fig_dir.mkdir(parents=True, exist_ok=True)
    if exp.matrix:
        b += matrix_blocks(exp, rows, fig_dir)
    for sc in ([] if exp.matrix else exp.scenarios):
        srows = [r for r in rows if r["scenario"] == sc]
        if not srows:
            continue
        spec = exp.scenarios[sc]
        what = [f"{spec.path.rate} bottleneck, {spec.path.rtt} RTT, {spec.path.queue} queue of "
                f"{spec.path.limit} packets, loss {spec.path.loss:g}, MTU {spec.path.mtu}"]
        if spec.udp:
            what.append(f"stiff UDP {spec.udp.get('rate') or spec.udp['min'] + '-' + spec.udp['max']}")
        for g in spec.tcp_groups:
            what.append(f"{g['flows']} {g.get('cc', '')} TCP flows")
        if spec.poisson:
            what.append(f"Poisson TCP flows at {spec.poisson['load']}")
        b.append(Block("h3", f"{exp.name} / {sc}"))
        b.append(Block("p", "; ".join(what) + ". Medians over repetitions; the paper's value in brackets."))
        # A pooled run may have measured methods the last run's file does not name: listed after.
        methods = [m for m in exp.methods if any(r["method"] == m for r in srows)]
        methods += list(dict.fromkeys(r["method"] for r in srows if r["method"] not in methods))
        cols = [(k, h) for k, h in METRICS if any(r.get(k) is not None for r in srows)
                and (exp.columns is None or k in exp.columns)]
        table = [["method", "runs"] + [h for _, h in cols]]
        for m in methods:
            mr = [r for r in srows if r["method"] == m]
            line = [m, str(len(mr))]
            for k, _h in cols:
                vals = [r[k] for r in mr if r[k] is not None]
                cell = fmt(k, statistics.median(vals)) if vals else "-"
                ref = refs.get((sc, k))
                if ref and m in ref["values"]:
                    cell += f" [{fmt(k, ref['values'][m])}]"
                line.append(cell)
            table.append(line)
        b.append(Block("table", table))
        srcs = sorted({r["source"] for r in exp.references if r["scenario"] == sc and "source" in r})
        if srcs:
            b.append(Block("p", "Paper values from " + ", ".join(srcs) + "."))
        fams = _families(srows)
        if fams:
            ms = [(k, h) for k, h in cols if k in SWEPT][:4]
            b.append(Block("img", sweep_figure(sc, fams, ms, fig_dir / f"{exp.name}-{sc}-sweep.png"),
                           f"{sc}: against the number of streams" + (" or the strength" if any(
                               x == "strength" for x, _ in fams.values()) else "")))
            if exp.columns is None or "mathis_mbps" in exp.columns:
                diff = model_table(srows)
                if diff:
                    b.append(Block("p", "Measured minus the Mathis aggregate (Eq. 5) per number of streams, "
                                        "mean and 90 % confidence interval over repetitions (Hacker 2002 Fig. 10); "
                                        "an interval below zero: the model bounds the measurement from above. "
                                        "Eq. 5's C = sqrt(3/2) = 1.22 assumes one loss every 1/p packets; the last "
                                        "three columns use the C of Reno under random loss (about 1.30, found by "
                                        "simulation at each run's p), the paper's own advice to fit C to the path."))
                    b.append(Block("table", diff))
        else:
            b.append(Block("img", box_figure(rows, sc, methods, "method_mbps", "Mb/s",
                                             fig_dir / f"{exp.name}-{sc}-box.png"), f"{sc}: throughput"))
            if any(r["appropriation"] is not None for r in srows):
                b.append(Block("img", box_figure(rows, sc, methods, "cross_mbps", "competitors Mb/s",
                                                 fig_dir / f"{exp.name}-{sc}-cross.png"),
                               f"{sc}: the competing flows' aggregate beside each method"))
        # Each method's first repetition: in a pooled report a method may start after rep 0.
        first: dict[str, MeasuredCell] = {}
        for c in sorted((c for c in cells if c.scenario == sc), key=lambda c: c.rep):
            first.setdefault(c.method, c)
        shown = list(first.values())[:5]
        if shown:
            b.append(Block("img", series_figure(shown, sc, fig_dir / f"{exp.name}-{sc}-series.png"),
                           f"{sc}: throughput and cwnd per stream"))
    if exp.frontier:
        idle, busy = exp.frontier["effectiveness"], exp.frontier["appropriation"]
        table = frontier_table(rows, idle, busy)
        if table:
            b.append(Block("h3", f"{exp.name}: the frontier"))
            b.append(Block("p", f"Every method measured on both paths: how effective it is beside {idle} against "
                                f"what it takes from the flows of {busy}. Fast and fair is the top left."))
            b.append(Block("table", table))
            b.append(Block("img", frontier_figure(rows, idle, busy, fig_dir / f"{exp.name}-frontier.png"),
                           "effectiveness against appropriation"))
    verdicts = claims_mod.check_all(exp.claims, rows)
    if verdicts:
        b.append(Block("h3", f"{exp.name}: the paper's claims"))
        items = []
        for v in verdicts:
            line = f"**{v.status}**: {v.text}. Measured: {v.detail}."
            if v.status == "does not hold" and v.note:
                line += " Why: " + " ".join(v.note.split())
            if v.status == "retired":
                line = f"**retired** ({v.measured} as measured): {v.text}. Measured: {v.detail}. Retired: {v.note}"
            items.append(line)
        b.append(Block("list", items))
    if claims == "today":
        # Only what the run recorded: the claims added since are today's either way.
        ran = parse(tomllib.loads(metas[-1]["experiment_file"])).claims
        b += _changed(claims_mod.check_all(ran, rows), verdicts, exp.name)
    return b, verdicts, exp.name, len(cells)


def changed_verdicts(was: list[claims_mod.Verdict], now: list[claims_mod.Verdict]) -> list[list[str]]:
    """Rows of (claim, as the run's own claims judged it, as today's claims do) for every claim
    whose verdict differs or that only one side has."""
    before, after = {v.id: v.status for v in was}, {v.id: v.status for v in now}
    ids = list(before) + [i for i in after if i not in before]
    return [[i, before.get(i, "(not a claim then)"), after.get(i, "(not a claim now)")]
            for i in ids if before.get(i) != after.get(i)]


def _changed(was: list[claims_mod.Verdict], now: list[claims_mod.Verdict], name: str) -> list[Block]:
    rows = changed_verdicts(was, now)
    head = Block("h3", f"{name}: verdicts that today's claims change")
    if not rows:
        return [head, Block("p", "None: every claim falls as the run's own claims judged it.")]
    return [head, Block("p", "The run's cells judged by the claims of today's experiment file, beside the "
                             "claims the run recorded when it was measured:"),
            Block("table", [["claim", "the run's claims", "today's claims"], *rows])]


def render_md(blocks: list[Block], base: Path | None) -> str:
    """Markdown; without `base` (a terminal) figures are left out."""
    out = []
    for bl in blocks:
        if bl.kind == "img" and base is None:
            continue
        if bl.kind in ("h1", "h2", "h3"):
            out.append("#" * int(bl.kind[1]) + " " + bl.body)
        elif bl.kind == "p":
            out.append(bl.body)
        elif bl.kind == "pre":
            out.append("```\n" + bl.body + "\n```")
        elif bl.kind == "list":
            out.append("\n".join(f"- {x}" for x in bl.body))
        elif bl.kind == "table":
            head, *rest = bl.body
            lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(r) + " |" for r in rest]
            out.append("\n".join(lines))
        elif bl.kind == "img":
            out.append(f"![{bl.extra}]({bl.body.relative_to(base)})")
    return "\n\n".join(out) + "\n"


def _inline_md(text: str) -> str:
    # Only what the report itself writes: **bold** and `code`.
    t = html.escape(text)
    parts = t.split("**")
    t = "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))
    parts = t.split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(blocks: list[Block], title: str) -> str:
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
           "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.4}"
           "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:.25em .5em;"
           "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
           "code{background:#f4f4f4}</style></head><body>"]
    for bl in blocks:
        if bl.kind in ("h1", "h2", "h3"):
            out.append(f"<{bl.kind}>{html.escape(bl.body)}</{bl.kind}>")
        elif bl.kind == "p":
            out.append(f"<p>{_inline_md(bl.body)}</p>")
        elif bl.kind == "pre":
            out.append(f"<pre>{html.escape(bl.body)}</pre>")
        elif bl.kind == "list":
            out.append("<ul>" + "".join(f"<li>{_inline_md(x)}</li>" for x in bl.body) + "</ul>")
        elif bl.kind == "table":
            head, *rest = bl.body
            out.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rest)
                       + "</table>")
        elif bl.kind == "img":
            data = base64.b64encode(bl.body.read_bytes()).decode()
            out.append(f"<figure><img alt='{html.escape(bl.extra)}' src='data:image/png;base64,{data}'>"
                       f"<figcaption>{html.escape(bl.extra)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def make(run_dirs: list[Path], out: Path, leave_out: LeaveOut | None = None,
         claims: str = "recorded") -> tuple[Path, Path]:
    """report.md and report.html in `out`; runs of the same experiment and variant are pooled,
    but for the methods `leave_out` drops from a run. `claims`: "recorded" (as the run was
    judged when measured) or "today" (today's experiment file)."""
    groups: dict[tuple[str, str], list[_Run]] = {}
    for r in _read(run_dirs, leave_out):
        groups.setdefault((r.meta["experiment"], r.meta["variant"]), []).append(r)
    out.mkdir(parents=True, exist_ok=True)
    blocks = [Block("h1", "braid: the papers' experiments, measured")]
    blocks.append(Block("p", "Each section is one experiment, redrawn from its results directories alone. "
                             "Numbers are medians over repetitions; the paper's in brackets."))
    kinds = ["holds", "does not hold", "not measured"]
    summary, body = [], []
    for runs in groups.values():
        bl, verdicts, name, cells = _experiment(runs, out / "figures", claims)
        body += bl
        summary.append((name, cells, verdicts))
    if any(v.status == "retired" for *_, verdicts in summary for v in verdicts):
        kinds.append("retired")
    summary = [["experiment", "cells", *kinds]] + [
        [name, str(cells), *(str(sum(v.status == k for v in verdicts)) for k in kinds)]
        for name, cells, verdicts in summary]
    blocks += [Block("p", "The papers' claims, checked on these measurements:"), Block("table", summary), *body]
    md, page = out / "report.md", out / "report.html"
    md.write_text(render_md(blocks, out))
    page.write_text(render_html(blocks, "braid: the papers' experiments"))
    return md, page


def terminal(run_dir: Path) -> str:
    """The tables and verdicts of one run, for a terminal."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        blocks = experiment_blocks([run_dir], Path(tmp))
    return render_md([b for b in blocks if b.kind != "img"], None)


def verdicts(run_dir: Path, claims: str = "recorded") -> list[claims_mod.Verdict]:
    meta, cells = results.load(run_dir)
    exp = _recorded(meta, claims=claims)
    return claims_mod.check_all(exp.claims, results.table(cells, exp.baseline))


def main(args) -> int:
    dirs = [Path(d) for d in args.results]
    out = Path(args.out) if args.out else dirs[0] / "report"
    try:
        claims = getattr(args, "claims", "recorded")
        md, page = make(dirs, out, parse_leave_out(args.leave_out or [], dirs), claims)
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"braidlab report: {e}", file=sys.stderr)
        return 2
    print(f"report: {md} and {page}")
    return 0
