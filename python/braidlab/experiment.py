"""Experiments are data: one TOML file per paper in experiments/, read here
into a plan of cells (scenario x method x repetition). Pure: no I/O beyond
reading the file.

A file has a `[path]` (the emulated dumbbell every scenario starts from),
`[[scenario]]`s (cross traffic and path changes), `[[method]]`s (how braid
moves data; a list in any field makes one method per value, and the name is
a template over the fields: "parallel-{streams}") and `[quick]`/`[full]`
variants choosing methods, scenarios, durations and repetitions.
See experiments/README.md for every key.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import random
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from .engine import Method

VARIANTS = ("quick", "full")
MODES = ("single", "parallel", "combined", "tcpp", "auto", "falcon")
_RATE = re.compile(r"^\d+(\.\d+)?(bit|kbit|mbit|gbit)$")
_TIME = re.compile(r"^\d+(\.\d+)?(us|ms|s)$")


class ExperimentError(ValueError):
    """An experiment file that cannot be run, and why."""


def rate_bps(text: str) -> float:
    """tc's words: 100mbit -> 1e8."""
    if not isinstance(text, str) or not _RATE.match(text):
        raise ExperimentError(f"rate {text!r}: want a number and bit|kbit|mbit|gbit, e.g. 100mbit")
    n, unit = re.match(r"^([\d.]+)(\w+)$", text).groups()
    return float(n) * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit]


def seconds_of(text: str) -> float:
    """34ms -> 0.034."""
    if not isinstance(text, str) or not _TIME.match(text):
        raise ExperimentError(f"time {text!r}: want a number and us|ms|s, e.g. 34ms")
    n, unit = re.match(r"^([\d.]+)(\w+)$", text).groups()
    return float(n) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@dataclass(frozen=True)
class PathSpec:
    """The dumbbell: bottleneck rate, round-trip delay, queue, random loss."""

    rate: str = "100mbit"
    rtt: str = "68ms"
    queue: str = "droptail"  # droptail | red
    limit: int = 300  # packets (drop-tail), or RED's hard limit in packets
    red: dict = field(default_factory=dict)  # min, max (packets), probability
    loss: float = 0.0  # random loss probability, forward direction
    access: str | None = None  # hosts' link rate; None: unlimited
    mtu: int = 1500
    sack: bool = True
    timestamps: bool = True
    # The hosts' largest TCP socket buffer, MiB (the last of tcp_rmem and tcp_wmem); None: the
    # host's own. A stream's window is capped by it: a long fat path needs about twice its
    # bandwidth-delay product, as a data-transfer node is tuned.
    tcp_buffer: int | None = None
    seed: int = 1

    def check(self) -> None:
        rate_bps(self.rate)
        seconds_of(self.rtt)
        if self.access is not None:
            rate_bps(self.access)
        if self.queue not in ("droptail", "red"):
            raise ExperimentError(f"path.queue {self.queue!r}: want droptail or red")
        if not 1 <= self.limit <= 100_000:
            raise ExperimentError(f"path.limit {self.limit}: want 1..100000 packets")
        if not 0 <= self.loss < 1:
            raise ExperimentError(f"path.loss {self.loss}: want a probability in [0, 1)")
        if not 576 <= self.mtu <= 9000:
            raise ExperimentError(f"path.mtu {self.mtu}: want 576..9000")
        if self.tcp_buffer is not None and (isinstance(self.tcp_buffer, bool) or not isinstance(self.tcp_buffer, int)
                                            or not 1 <= self.tcp_buffer <= 4096):
            raise ExperimentError(f"path.tcp_buffer {self.tcp_buffer!r}: want 1..4096 MiB")
        if self.queue == "red":
            missing = {"min", "max", "probability"} - set(self.red)
            if missing:
                raise ExperimentError(f"path.red lacks {', '.join(sorted(missing))}")
            if not 0 < self.red["min"] < self.red["max"] <= self.limit:
                raise ExperimentError(f"path.red: want 0 < min < max <= limit, got {self.red} limit {self.limit}")

    @property
    def rate_bps(self) -> float:
        return rate_bps(self.rate)

    def forward_spec(self) -> str:
        """braid-link's words for the sender -> receiver direction."""
        one_way = seconds_of(self.rtt) / 2
        words = [f"rate {self.rate}", f"delay {one_way * 1e3:g}ms"]
        if self.queue == "red":
            # RED thresholds in packets of the path's MTU, as the papers give them.
            avpkt = self.mtu
            words.append(f"red limit {self.limit * avpkt} min {self.red['min'] * avpkt} "
                         f"max {self.red['max'] * avpkt} avpkt {avpkt} probability {self.red['probability']} "
                         f"bandwidth {self.rate}")
        else:
            words.append(f"limit {self.limit}")
        if self.loss:
            words.append(f"loss random {self.loss * 100:g}%")
        words.append(f"seed {self.seed}")
        return " ".join(words)

    def reverse_spec(self) -> str:
        return f"delay {seconds_of(self.rtt) / 2 * 1e3:g}ms"


@dataclass(frozen=True)
class Scenario:
    """What the method competes with, and how the path differs from [path]."""

    name: str
    path: PathSpec
    udp: dict | None = None  # {min, max, period} (the Eq. 3 sinusoid) or {rate}
    # {flows, cc, during}: iperf3 flows from the cross host; with during = [a, b] they arrive
    # and leave at those fractions of the method's measured time, else they run throughout.
    # A list of them is a mix (each group an iperf3 client of its own control).
    tcp: dict | list | None = None
    poisson: dict | None = None  # {load, mean_size, cc}: Poisson TCP flow arrivals
    probe: bool = False  # 1440-byte ICMP probes every 10 ms from the cross host
    # {mode}: a second braid (`braid bench` with no options but the mode) from the cross host
    # for the whole cell: auto beside auto.
    braid: dict | None = None

    @property
    def cross_kinds(self) -> list[str]:
        return [k for k in ("udp", "tcp", "poisson", "braid") if getattr(self, k)]

    @property
    def tcp_groups(self) -> list[dict]:
        """The competing TCP flows as groups of one control each."""
        if self.tcp is None:
            return []
        return list(self.tcp) if isinstance(self.tcp, list) else [self.tcp]

    @property
    def during(self) -> list[float] | None:
        """When the competing TCP flows arrive and leave (fractions of the measured time), if they do."""
        spans = {tuple(g["during"]) for g in self.tcp_groups if g.get("during")}
        return list(next(iter(spans))) if spans else None

    @property
    def long_flows(self) -> int:
        """Long flows beside the method for the equal share: the TCP flows (those that arrive
        count, as they are there for the share that is judged) and a second braid (one flow's
        worth: it keeps to one). Short flows and a stiff source are not long flows."""
        return sum(g["flows"] for g in self.tcp_groups) + (1 if self.braid else 0)


@dataclass(frozen=True)
class NamedMethod:
    name: str
    method: Method


@dataclass(frozen=True)
class Cell:
    """One measurement: a method in a scenario, one repetition."""

    scenario: str
    method: str
    rep: int

    @property
    def id(self) -> str:
        return f"{self.scenario}.{self.method}.r{self.rep}"


@dataclass(frozen=True)
class Variant:
    seconds: float
    warmup: float  # seconds of cross traffic before the method starts
    pause: float
    repeat: int
    methods: tuple[str, ...]
    scenarios: tuple[str, ...]
    omit: float = 0.0  # seconds at the method's start left out of its measurements (iperf3's -O)


@dataclass
class Experiment:
    name: str
    title: str
    paper: str
    calibration: str
    scenarios: dict[str, Scenario]
    methods: dict[str, NamedMethod]
    variants: dict[str, Variant]
    claims: list[dict]
    references: list[dict] = field(default_factory=list)
    baseline: str | None = None  # the method whose competitors' aggregate appropriation compares with
    columns: list[str] | None = None  # the report's metrics, in order; None: every one measured
    source: Path | None = None
    # The report's frontier figure: each method's effectiveness in one scenario against its
    # appropriation in another ({effectiveness = SCENARIO, appropriation = SCENARIO}).
    frontier: dict | None = None
    # A sampled matrix of paths x competition (its scenarios are among `scenarios`): the report
    # gives one table of its cells and a map of where each claim holds, not a section each.
    matrix: dict | None = None

    def variant(self, which: str, repeat: int | None = None) -> Variant:
        if which not in self.variants:
            raise ExperimentError(f"{self.name} has no [{which}] variant")
        v = self.variants[which]
        return replace(v, repeat=repeat) if repeat is not None else v

    def narrow(self, variant: Variant, methods: list[str] | None = None,
               scenarios: list[str] | None = None) -> Variant:
        """The variant restricted to the given names or patterns (of its own methods and scenarios):
        a first pass over a long sweep."""
        return replace(
            variant,
            methods=_select(methods, list(variant.methods), "method", f"{self.name} --methods")
            if methods else variant.methods,
            scenarios=_select(scenarios, list(variant.scenarios), "scenario", f"{self.name} --scenarios")
            if scenarios else variant.scenarios)

    def cells(self, variant: Variant) -> list[Cell]:
        return [Cell(s, m, r) for s in variant.scenarios for m in variant.methods for r in range(variant.repeat)]

    def plan(self, variant: Variant, seed: int) -> list[Cell]:
        """Every cell in a random order (seeded, so a continued run keeps it)."""
        cells = self.cells(variant)
        random.Random(seed).shuffle(cells)
        return cells

    def cell_seed(self, run_seed: int, cell: Cell) -> int:
        """The seed of a cell's random draws (the link's loss, the cross traffic's swings and
        arrivals), from the run's seed, the path's own and the cell's scenario and repetition:
        every method of one scenario and repetition meets the same draws, so a difference
        between them is theirs and not the dice's, and each repetition and each run meets new
        ones, so repetitions are independent samples."""
        path_seed = self.scenarios[cell.scenario].path.seed
        key = f"{run_seed}/{path_seed}/{cell.scenario}/{cell.rep}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") % (2**31 - 1) + 1


_METHOD_KEYS = {"name", "mode", "streams", "cc", "virtual_rtt", "strength", "default", "no_controls"}
_SCENARIO_KEYS = {"name", "path", "udp", "tcp", "poisson", "probe", "braid"}
_VARIANT_KEYS = {"seconds", "warmup", "omit", "pause", "repeat", "methods", "scenarios"}
_TOP_KEYS = {"name", "title", "paper", "calibration", "baseline", "columns", "frontier", "path", "scenario", "method", "claim", "reference",
             "matrix", *VARIANTS}
_MATRIX_KEYS = {"seed", "rtt", "rate", "buffer", "loss", "queue", "competition"}
_COMPETITION_KEYS = {"name", "cells", "udp", "tcp", "poisson", "probe", "braid"}


def _unknown(where: str, got: dict, allowed: set[str]) -> None:
    extra = set(got) - allowed
    if extra:
        raise ExperimentError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; "
                              f"known: {', '.join(sorted(allowed))}")


def _path(raw: dict, base: PathSpec | None, where: str) -> PathSpec:
    known = set(PathSpec.__dataclass_fields__)
    _unknown(where, raw, known)
    try:
        p = replace(base, **raw) if base else PathSpec(**raw)
    except TypeError as e:
        raise ExperimentError(f"{where}: {e}") from None
    try:
        p.check()
    except ExperimentError as e:
        raise ExperimentError(f"{where}: {e}") from None
    return p


def _methods(raw: dict, where: str) -> list[NamedMethod]:
    _unknown(where, raw, _METHOD_KEYS)
    if "name" not in raw or "mode" not in raw:
        raise ExperimentError(f"{where}: a method needs a name and a mode")
    fields = {k: v for k, v in raw.items() if k != "name"}
    keys = list(fields)
    values = [v if isinstance(v, list) else [v] for v in fields.values()]
    out = []
    for combo in itertools.product(*values):
        f = dict(zip(keys, combo))
        if f["mode"] not in MODES:
            raise ExperimentError(f"{where}: mode {f['mode']!r}; want one of {', '.join(MODES)}")
        try:
            name = raw["name"].format(**f)
        except KeyError as e:
            raise ExperimentError(f"{where}: name {raw['name']!r} names {e}, which the method does not set") from None
        # Without streams: one for single mode, else braid's own default (auto's and falcon's most).
        n = f.get("streams", 1 if f["mode"] == "single" else None)
        if n is not None and (not isinstance(n, int) or not 1 <= n <= 64):
            raise ExperimentError(f"{where}: streams {n!r}; want 1..64")
        if f.get("default") and set(f) - {"mode", "default", "no_controls"}:
            raise ExperimentError(f"{where}: a method run with braid's defaults takes no settings but mode "
                                  f"(the default mode, for the reports) and no_controls")
        if f["mode"] == "single" and n != 1:
            raise ExperimentError(f"{where}: single mode has one stream")
        if f["mode"] == "combined" and n < 2:
            raise ExperimentError(f"{where}: combined mode needs 2 or more streams")
        out.append(NamedMethod(name, Method(mode=f["mode"], streams=n, cc=f.get("cc"),
                                            virtual_rtt=f.get("virtual_rtt"), strength=f.get("strength"),
                                            default=bool(f.get("default", False)),
                                            no_controls=bool(f.get("no_controls", False)))))
    return out


def _select(names: list[str], pool: list[str], what: str, where: str) -> tuple[str, ...]:
    """Names or shell patterns ("parallel-*") against the defined ones, in definition order."""
    chosen = []
    for pat in names:
        hit = [n for n in pool if fnmatch.fnmatchcase(n, pat)]
        if not hit:
            raise ExperimentError(f"{where}: no {what} matches {pat!r}; defined: {', '.join(pool)}")
        chosen += [n for n in hit if n not in chosen]
    return tuple(n for n in pool if n in chosen)


def matrix_scenarios(matrix: dict, where: str) -> list[dict]:
    """A sampled plan of paths x competition: `[[matrix.competition]]` entries each ask for `cells`
    scenarios, and each scenario's path is drawn from the matrix's axes (rtt, rate, buffer in BDPs,
    loss, queue) by a generator seeded with the matrix's seed, the competition and the cell's
    number: the same file always gives the same scenarios. A scenario is named
    COMPETITION-NN and is a plain [[scenario]] with its path and the competition's cross traffic."""
    _unknown(f"{where} [matrix]", matrix, _MATRIX_KEYS)
    for k in ("seed", "rtt", "rate", "buffer", "loss", "queue", "competition"):
        if k not in matrix:
            raise ExperimentError(f"{where} [matrix]: missing {k!r}")
    out = []
    for comp in matrix["competition"]:
        w = f"{where} [[matrix.competition]] {comp.get('name', '?')}"
        _unknown(w, comp, _COMPETITION_KEYS)
        if "name" not in comp or not isinstance(comp.get("cells"), int) or comp["cells"] < 1:
            raise ExperimentError(f"{w}: a competition needs a name and cells >= 1")
        for c in range(comp["cells"]):
            key = f"{matrix['seed']}/{comp['name']}/{c}".encode()
            rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
            rtt, rate = rng.choice(matrix["rtt"]), rng.choice(matrix["rate"])
            buffer, loss, queue = rng.choice(matrix["buffer"]), rng.choice(matrix["loss"]), rng.choice(matrix["queue"])
            bdp = rate_bps(rate) * seconds_of(rtt) / 8 / 1500
            limit = int(min(100_000, max(8, round(buffer * bdp))))
            path = {"rtt": rtt, "rate": rate, "limit": limit, "loss": loss, "queue": queue}
            if queue == "red":
                # Floyd's guidance: max three times min, both well inside the hard limit.
                lo = max(2, limit // 8)
                path["red"] = {"min": lo, "max": min(3 * lo, limit - 1), "probability": 0.1}
            sc = {k: v for k, v in comp.items() if k not in ("name", "cells")}
            # Cross traffic given as shares of the drawn path's rate.
            bps = rate_bps(rate)
            if "udp" in sc and "min_share" in sc["udp"]:
                u = sc["udp"]
                sc["udp"] = {"min": f"{round(u['min_share'] * bps)}bit", "max": f"{round(u['max_share'] * bps)}bit",
                             "period": u.get("period", "10s")}
            if "poisson" in sc and "load_share" in sc["poisson"]:
                pz = {k: v for k, v in sc["poisson"].items() if k != "load_share"}
                sc["poisson"] = {**pz, "load": f"{round(sc['poisson']['load_share'] * bps)}bit"}
            out.append({"name": f"{comp['name']}-{c:02d}", "path": path, **sc})
    return out


def _tcp_group(g: dict, w: str) -> None:
    _unknown(f"{w} tcp", g, {"flows", "cc", "during"})
    if not isinstance(g.get("flows"), int) or not 1 <= g["flows"] <= 64:
        raise ExperimentError(f"{w} tcp: flows must be 1..64")
    during = g.get("during")
    if during is not None and not (
            isinstance(during, list) and len(during) == 2
            and all(isinstance(x, (int, float)) for x in during) and 0 < during[0] < during[1] <= 1):
        raise ExperimentError(f"{w} tcp: during must be [arrive, leave], fractions of the measured "
                              f"time with 0 < arrive < leave <= 1, not {during!r}")


def parse(data: dict, source: Path | None = None) -> Experiment:
    where = str(source or "experiment")
    _unknown(where, data, _TOP_KEYS)
    for k in ("name", "method", *VARIANTS):
        if k not in data:
            raise ExperimentError(f"{where}: missing {'[' + k + ']' if k in VARIANTS else k!r}")
    base = _path(data.get("path", {}), None, f"{where} [path]")
    raw_scenarios = list(data.get("scenario", []))
    if "matrix" in data:
        raw_scenarios += matrix_scenarios(data["matrix"], where)
    if not raw_scenarios:
        raise ExperimentError(f"{where}: no [[scenario]] and no [matrix]")
    scenarios: dict[str, Scenario] = {}
    for i, s in enumerate(raw_scenarios):
        w = f"{where} scenario {s.get('name', i + 1)}"
        _unknown(w, s, _SCENARIO_KEYS)
        if "name" not in s:
            raise ExperimentError(f"{w}: a scenario needs a name")
        if s["name"] in scenarios:
            raise ExperimentError(f"{w}: defined twice")
        udp = s.get("udp")
        if udp is not None:
            _unknown(f"{w} udp", udp, {"min", "max", "period", "rate"})
            if "rate" in udp:
                rate_bps(udp["rate"])
            elif {"min", "max"} <= set(udp):
                if rate_bps(udp["min"]) > rate_bps(udp["max"]):
                    raise ExperimentError(f"{w} udp: min above max")
                seconds_of(udp.get("period", "10s"))
            else:
                raise ExperimentError(f"{w} udp: want min and max (a sinusoid) or rate")
        tcp = s.get("tcp")
        if tcp is not None:
            groups = tcp if isinstance(tcp, list) else [tcp]
            for g in groups:
                _tcp_group(g, w)
            if len({tuple(g.get("during") or ()) for g in groups}) > 1:
                raise ExperimentError(f"{w} tcp: the groups of a mix arrive and leave together (one during)")
        braid_cross = s.get("braid")
        if braid_cross is not None:
            _unknown(f"{w} braid", braid_cross, {"mode"})
            if braid_cross.get("mode") not in MODES:
                raise ExperimentError(f"{w} braid: mode must be one of {', '.join(MODES)}")
        poisson = s.get("poisson")
        if poisson is not None:
            _unknown(f"{w} poisson", poisson, {"load", "mean_size", "cc"})
            rate_bps(poisson.get("load", ""))
        scenarios[s["name"]] = Scenario(s["name"], _path(s.get("path", {}), base, f"{w} path"), udp=udp,
                                        tcp=tcp, poisson=poisson, probe=bool(s.get("probe", False)),
                                        braid=braid_cross)
    methods: dict[str, NamedMethod] = {}
    for i, m in enumerate(data["method"]):
        for nm in _methods(m, f"{where} method {m.get('name', i + 1)}"):
            if nm.name in methods:
                raise ExperimentError(f"{where}: method {nm.name!r} is defined twice (make the name template "
                                      f"name every field that varies)")
            methods[nm.name] = nm
    variants = {}
    for v in VARIANTS:
        raw = data[v]
        w = f"{where} [{v}]"
        _unknown(w, raw, _VARIANT_KEYS)
        try:
            seconds = float(raw["seconds"])
        except (KeyError, TypeError, ValueError):
            raise ExperimentError(f"{w}: seconds (the method's sending time) is required") from None
        repeat = int(raw.get("repeat", 1))
        if seconds <= 0 or repeat < 1:
            raise ExperimentError(f"{w}: seconds > 0 and repeat >= 1, got {seconds} and {repeat}")
        variants[v] = Variant(
            seconds=seconds, warmup=float(raw.get("warmup", 2)), pause=float(raw.get("pause", 1)), repeat=repeat,
            omit=float(raw.get("omit", 0)),
            methods=_select(raw.get("methods", ["*"]), list(methods), "method", w),
            scenarios=_select(raw.get("scenarios", ["*"]), list(scenarios), "scenario", w))
    claims = data.get("claim", [])
    for c in claims:
        if not {"id", "text", "check"} <= set(c):
            raise ExperimentError(f"{where}: a claim needs id, text and check, got {sorted(c)}")
    refs = data.get("reference", [])
    for r in refs:
        if not {"scenario", "metric", "values"} <= set(r) or r["scenario"] not in scenarios:
            raise ExperimentError(f"{where}: a reference needs a defined scenario, a metric and values, got {r}")
    baseline = data.get("baseline")
    if baseline is not None and baseline not in methods:
        raise ExperimentError(f"{where}: baseline {baseline!r} is not a method")
    frontier = data.get("frontier")
    if frontier is not None:
        _unknown(f"{where} frontier", frontier, {"effectiveness", "appropriation"})
        for k in ("effectiveness", "appropriation"):
            if frontier.get(k) not in scenarios:
                raise ExperimentError(f"{where}: frontier.{k} must name a scenario, not {frontier.get(k)!r}")
    return Experiment(name=data["name"], title=data.get("title", data["name"]), paper=data.get("paper", ""),
                      calibration=data.get("calibration", "").strip(), scenarios=scenarios, methods=methods,
                      variants=variants, claims=claims, references=refs, baseline=baseline,
                      columns=data.get("columns"), source=source, frontier=frontier, matrix=data.get("matrix"))


def sim_cells(exp: Experiment) -> list[str]:
    """A matrix experiment's cells as braid-sim's matrix example reads them (BRAID_SIM_CELLS), a
    line each: NAME KIND RTT_MS RATE_MBPS and braid-link's words for the forward direction. KIND is
    the competition's name, which braid-sim's kinds follow: braid-sim on the laboratory's paths, to
    say how well the two agree."""
    if not exp.matrix:
        raise ExperimentError(f"{exp.name}: not a matrix experiment (no [matrix])")
    names = {c["name"] for c in exp.matrix["competition"]}
    out = []
    for name, sc in exp.scenarios.items():
        kind = name.rsplit("-", 1)[0]
        if kind not in names:
            continue  # a hand-written scenario beside the matrix (the quick variant's)
        p = sc.path
        out.append(f"{name} {kind} {seconds_of(p.rtt) * 1e3:g} {p.rate_bps / 1e6:g} {p.forward_spec()}")
    return out


def load(name_or_path: str | Path, root: Path | None = None) -> Experiment:
    """An experiment by file path, or by name from experiments/."""
    p = Path(name_or_path)
    if not p.suffix:
        from .braid import ROOT

        p = (root or ROOT / "experiments") / f"{name_or_path}.toml"
    if not p.exists():
        known = sorted(x.stem for x in (root or p.parent).glob("*.toml"))
        raise ExperimentError(f"no experiment {name_or_path!r} ({p}); known: {', '.join(known) or 'none'}")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{p}: {e}") from None
    return parse(data, p)
