"""A paper's claims checked against our measurements: pure functions from
the per-cell table (results.table) and a claim (a [[claim]] of the
experiment file) to a verdict.

A claim compares medians over repetitions of one metric. `a` and `b` name a
method or a shell pattern of methods ("reno-*"): a pattern stands for the
mean of its methods' medians. When both are patterns with one `*` each
("reno-*" against "cubic-*"), only what the `*` stands for in both counts:
two variants are compared at the numbers of streams measured for both, so
a sweep measured in part does not set one variant's 30 streams against
another's 10. Kinds:
  less          a + margin < b               (margin in the metric's units)
  ratio_within  low <= a / b <= high
  within        low <= a <= high, for every method `a` matches
  bound         `metric` <= `other` in at least `fraction` of the cells of `a`
  knee_order    the knee (metrics.knee over `streams`) falls at no fewer streams in
                each listed scenario than in the next (among those measured, at least two)
  share_of_cells  in at least `share` of the scenarios matching `scenarios`, `a`'s median
                `metric` lies within its bounds: `low` and `high` are each {times, of,
                combine}: `times` x the `combine` (min or max, default min) of the terms
                in `of`, each a method pattern (the best of its methods' medians of
                `metric` there), a column of `a`'s rows (its median: equal_share_mbps,
                settle_bound_s, least_window_mbps) or {times, of} (one such term scaled, so
                that a bound may be the larger of a quarter of one term and the whole of
                another). Reported as the share with its 95 % Wilson interval.
  like_flows    `a` (a pattern with one `*`: N flows, or a group of strength k) has the effect
                of `flows` members of `b`'s sweep (a pattern with one `*`, the number of flows;
                without `flows`, the number `a`'s `*` stands for): its median `metric` lies between
                `b`'s curve at flows - 1/2 and at flows + 1/2, nearer that many flows than one more
                or one fewer. `b`'s curve is its medians joined by straight lines, through `none`
                at 0 flows (default 0: no flows take nothing), extended past its last point by its
                last segment's slope. Every method `a` matches must hold, in each scenario.
  grows         `a`'s median `metric` (a pattern with one `*`, a number of streams) rises with the
                number, in each scenario: `between` "all" (default), "to-knee" (from the fewest
                streams to the knee, metrics.knee over `knee_metric`, default `metric`) or
                "from-knee"; `steps` "each" (every measured step rises) or "ends" (the last point
                above the first); `falls = true` for a metric that should fall instead.
  order         the mean medians of the patterns in `a` (a list, each with one `*`, the highest
                first; an entry that is itself a list is a tie the claim leaves unordered), over
                the `*` parts measured for all, fall in that order.
A `within` claim with `pooled = true` checks the mean of the medians of the methods `a` matches
instead of each. A claim may name a `scenario`; else every scenario counts. A `note` is shown
when the claim does not hold: what is known about why.

A claim is never loosened once runs have judged it, but one whose yardstick a later rule replaced
may be retired: `retired` says why and names the claim that replaces it. It is still measured and
its verdict shown ("retired (does not hold as measured)"), but it counts as neither holding nor
failing.
"""

from __future__ import annotations

import fnmatch
import statistics
from collections import defaultdict
from dataclasses import dataclass

from . import metrics


@dataclass
class Verdict:
    id: str
    text: str
    status: str  # holds | does not hold | not measured | retired
    detail: str
    note: str = ""
    # What the measurements say of a retired claim (holds, does not hold, not measured).
    measured: str = ""

    @property
    def holds(self) -> bool:
        return self.status == "holds"


def _fmt(metric: str, x: float) -> str:
    if metric in ("appropriation", "effectiveness", "utilisation", "method_loss_ratio", "udp_loss",
                  "link_drop_ratio", "jain", "jain_1s"):
        return f"{100 * x:.1f} %"
    return f"{x:.3g}"


def medians(rows: list[dict], metric: str, scenario: str | None = None) -> dict[str, float]:
    """Median of `metric` per method, over the repetitions that measured it."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if (scenario is None or r["scenario"] == scenario) and r.get(metric) is not None:
            by[r["method"]].append(r[metric])
    return {m: statistics.median(v) for m, v in by.items()}


def _value(meds: dict[str, float], pattern: str) -> float | None:
    hit = [v for m, v in meds.items() if fnmatch.fnmatchcase(m, pattern)]
    return statistics.fmean(hit) if hit else None


def _star(pattern: str, method: str) -> str | None:
    """What the one `*` of `pattern` stands for in `method`; None if it does not match."""
    if not fnmatch.fnmatchcase(method, pattern):
        return None
    head, tail = pattern.split("*")
    return method[len(head):len(method) - len(tail)]


def _paired(meds: dict[str, float], a: str, b: str) -> tuple[dict[str, float], list[str]] | None:
    """For two patterns of one plain `*` each: the medians of the methods whose `*` part both
    measured, and those parts; None when the patterns are not of that shape."""
    if a.count("*") != 1 or b.count("*") != 1 or any(c in a + b for c in "?["):
        return None
    parts = [{x: m for m in meds if (x := _star(p, m)) is not None} for p in (a, b)]
    common = sorted(parts[0].keys() & parts[1].keys(), key=lambda x: (len(x), x))
    keep = {side[x] for side in parts for x in common}
    return {m: v for m, v in meds.items() if m in keep}, common


def check(claim: dict, rows: list[dict]) -> Verdict:
    v = _judge(claim, rows)
    if claim.get("retired"):
        v.measured, v.status = v.status, "retired"
        v.note = " ".join(str(claim["retired"]).split())
    return v


def _judge(claim: dict, rows: list[dict]) -> Verdict:
    kind, metric = claim["check"], claim.get("metric", "")
    scenario = claim.get("scenario")
    v = Verdict(claim["id"], claim["text"], "not measured", "", claim.get("note", ""))
    meds = medians(rows, metric, scenario) if metric else {}
    where = f" ({scenario})" if scenario else ""
    if kind in ("less", "ratio_within"):
        paired = _paired(meds, claim["a"], claim["b"])
        if paired is not None:
            meds, common = paired
            if not common:
                v.detail = f"{metric}{where}: {claim['a']} and {claim['b']} have no '*' measured for both"
                return v
            where += f" (both over {', '.join(common)})"
        a, b = _value(meds, claim["a"]), _value(meds, claim["b"])
        if a is None or b is None:
            v.detail = f"{metric}{where}: no data for {claim['a'] if a is None else claim['b']}"
            return v
        if kind == "less":
            margin = claim.get("margin", 0.0)
            ok = a + margin < b
            v.detail = (f"{metric}{where}: {claim['a']} {_fmt(metric, a)} vs {claim['b']} {_fmt(metric, b)}"
                        + (f" (needs a gap above {_fmt(metric, margin)})" if margin else ""))
        else:
            ratio = a / b if b else float("inf")
            ok = claim["low"] <= ratio <= claim["high"]
            v.detail = (f"{metric}{where}: {claim['a']} / {claim['b']} = {_fmt(metric, a)} / {_fmt(metric, b)} = "
                        f"{ratio:.2f} (want {claim['low']}-{claim['high']})")
    elif kind == "within":
        hit = {m: x for m, x in meds.items() if fnmatch.fnmatchcase(m, claim["a"])}
        if not hit:
            v.detail = f"{metric}{where}: no data for {claim['a']}"
            return v
        if claim.get("pooled"):
            hit = {f"mean of {claim['a']} ({len(hit)})": statistics.fmean(hit.values())}
        lo, hi = claim.get("low", float("-inf")), claim.get("high", float("inf"))
        bad = {m: x for m, x in hit.items() if not lo <= x <= hi}
        ok = not bad
        shown = bad or hit
        v.detail = (f"{metric}{where}: " + ", ".join(f"{m} {_fmt(metric, x)}" for m, x in sorted(shown.items()))
                    + f" (want {_fmt(metric, lo) if lo != float('-inf') else '-'} to "
                      f"{_fmt(metric, hi) if hi != float('inf') else '-'})")
    elif kind == "bound":
        other = claim["other"]
        pairs = [(r[metric], r[other]) for r in rows
                 if fnmatch.fnmatchcase(r["method"], claim["a"]) and (scenario is None or r["scenario"] == scenario)
                 and r.get(metric) is not None and r.get(other) is not None]
        if not pairs:
            v.detail = f"{metric} against {other}: no cells"
            return v
        share = sum(x <= y for x, y in pairs) / len(pairs)
        ok = share >= claim.get("fraction", 1.0)
        v.detail = (f"{metric} <= {other} in {sum(x <= y for x, y in pairs)} of {len(pairs)} cells "
                    f"(want {100 * claim.get('fraction', 1.0):.0f} %)")
    elif kind == "knee_order":
        knees = []
        for sc in claim["scenarios"]:
            per_n: dict[int, list[float]] = defaultdict(list)
            for r in rows:
                if r["scenario"] == sc and fnmatch.fnmatchcase(r["method"], claim.get("a", "*")):
                    per_n[r["streams"]].append(r[metric])
            ns = sorted(per_n)
            knees.append(metrics.knee(ns, [statistics.median(per_n[n]) for n in ns]) if ns else None)
        # A first pass may leave a scenario out: the order is checked among those measured.
        have = [(sc, k) for sc, k in zip(claim["scenarios"], knees) if k is not None]
        absent = [sc for sc, k in zip(claim["scenarios"], knees) if k is None]
        if len(have) < 2:
            v.detail = f"knee: no data for {', '.join(absent)}"
            return v
        ok = all(x >= y for (_, x), (_, y) in zip(have, have[1:]))
        v.detail = "knee (fewest streams reaching 90 % of the best): " + ", ".join(
            f"{sc} {k:g}" for sc, k in have) + (f"; no data for {', '.join(absent)}" if absent else "")
    elif kind == "share_of_cells":
        per = cell_results(claim, rows)
        judged = {sc: ok for sc, ok in per.items() if ok is not None}
        if not judged:
            v.detail = f"{metric}: no cell of {', '.join(claim['scenarios'])} measured for {claim['a']} and its yardsticks"
            return v
        k, n = sum(judged.values()), len(judged)
        lo, hi = metrics.wilson(k, n)
        want = claim["share"]
        ok = k / n >= want
        failing = sorted(sc for sc, x in judged.items() if not x)
        v.detail = (f"{metric}: {k} of {n} cells ({100 * k / n:.0f} %, 95 % interval {100 * lo:.0f}-"
                    f"{100 * hi:.0f} %; want {100 * want:.0f} %)"
                    + (f"; not in: {', '.join(failing[:12])}{' ...' if len(failing) > 12 else ''}" if failing else ""))
    elif kind in ("like_flows", "grows", "order"):
        outcome = {"like_flows": _like_flows, "grows": _grows, "order": _order}[kind](claim, rows)
        if outcome is None:
            v.detail = f"{metric}{where}: not enough measured for {claim['a']}"
            return v
        ok, v.detail = outcome
    else:
        raise ValueError(f"claim {claim['id']}: unknown check {kind!r}")
    v.status = "holds" if ok else "does not hold"
    return v


def _numbered(meds: dict[str, float], pattern: str) -> dict[float, float]:
    """The medians of the methods a one-`*` pattern matches, by the number the `*` stands for."""
    out = {}
    for m, x in meds.items():
        part = _star(pattern, m)
        try:
            out[float(part)] = x
        except (TypeError, ValueError):
            continue
    return out


def _scenarios(claim: dict, rows: list[dict]) -> list[str]:
    return [claim["scenario"]] if claim.get("scenario") else sorted({r["scenario"] for r in rows})


def curve_at(points: dict[float, float], x: float) -> float | None:
    """A curve through `points` joined by straight lines, at x; past either end, the end
    segment's line; None with fewer than two points."""
    xs = sorted(points)
    if len(xs) < 2:
        return None
    i = 1
    while i < len(xs) - 1 and xs[i] < x:
        i += 1
    x0, x1 = xs[i - 1], xs[i]
    y0, y1 = points[x0], points[x1]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _like_flows(claim: dict, rows: list[dict]) -> tuple[bool, str] | None:
    metric, bad, seen = claim["metric"], [], []
    for sc in _scenarios(claim, rows):
        meds = medians(rows, metric, sc)
        curve = {0.0: float(claim.get("none", 0.0)), **_numbered(meds, claim["b"])}
        for n, x in sorted(_numbered(meds, claim["a"]).items()):
            k = float(claim.get("flows", n))
            ends = [curve_at(curve, k - 0.5), curve_at(curve, k + 0.5)]
            if None in ends:
                continue
            lo, hi = min(ends), max(ends)
            seen.append(n)
            if not lo <= x <= hi:
                bad.append(f"{sc} {claim['a'].replace('*', f'{n:g}')} {_fmt(metric, x)} "
                           f"(as {k:g} flows: {_fmt(metric, lo)} to {_fmt(metric, hi)})")
    if not seen:
        return None
    return not bad, (f"{metric}: {len(seen) - len(bad)} of {len(seen)} within the band of their number of "
                     f"{claim['b']} flows" + (f"; not: {'; '.join(bad)}" if bad else ""))


def _grows(claim: dict, rows: list[dict]) -> tuple[bool, str] | None:
    metric, between, steps = claim["metric"], claim.get("between", "all"), claim.get("steps", "each")
    sign = -1 if claim.get("falls") else 1
    verdicts = []
    for sc in _scenarios(claim, rows):
        pts = sorted(_numbered(medians(rows, metric, sc), claim["a"]).items())
        if between != "all":
            km = claim.get("knee_metric", metric)
            kp = sorted(_numbered(medians(rows, km, sc), claim["a"]).items())
            knee = metrics.knee([n for n, _ in kp], [y for _, y in kp])
            if knee is None:
                continue
            pts = [(n, y) for n, y in pts if (n <= knee if between == "to-knee" else n >= knee)]
        if len(pts) < 2:
            continue
        pairs = list(zip(pts, pts[1:])) if steps == "each" else [(pts[0], pts[-1])]
        ok = all(sign * (y1 - y0) > 0 for (_, y0), (_, y1) in pairs)
        verdicts.append((ok, f"{sc}: " + ", ".join(f"{n:g} {_fmt(metric, y)}" for n, y in pts)))
    if not verdicts:
        return None
    return all(ok for ok, _ in verdicts), (
        f"{metric} {'falling' if sign < 0 else 'rising'} ({between}, {steps}): "
        + "; ".join(d + ("" if ok else " (no)") for ok, d in verdicts))


def _order(claim: dict, rows: list[dict]) -> tuple[bool, str] | None:
    metric = claim["metric"]
    meds = medians(rows, metric, claim.get("scenario"))
    ranks = [[r] if isinstance(r, str) else list(r) for r in claim["a"]]
    sides = {p: _numbered(meds, p) for rank in ranks for p in rank}
    common = set.intersection(*(set(s) for s in sides.values())) if sides else set()
    if not common:
        return None
    mean = {p: statistics.fmean(s[n] for n in common) for p, s in sides.items()}
    # A rank of several patterns is a tie the claim does not order: all of it above the next.
    ok = all(min(mean[p] for p in hi) > max(mean[p] for p in lo) for hi, lo in zip(ranks, ranks[1:]))
    return ok, (f"{metric} over {', '.join(f'{n:g}' for n in sorted(common))}: "
                + " > ".join(" = ".join(f"{p} {_fmt(metric, mean[p])}" for p in rank) for rank in ranks))


def _term(rows: list[dict], scenario: str, a: str, metric: str, term: str | float | dict) -> float | None:
    """One yardstick of a cell: a number, a method pattern's best median of `metric` there, the
    median of a column of `a`'s own rows there, or `{times, of}`: one of those scaled."""
    if isinstance(term, dict):
        inner = _term(rows, scenario, a, metric, term["of"])
        return None if inner is None else term.get("times", 1.0) * inner
    if isinstance(term, (int, float)):
        return float(term)
    mine = [r[term] for r in rows if r["scenario"] == scenario and fnmatch.fnmatchcase(r["method"], a)
            and r.get(term) is not None]
    if mine:
        return statistics.median(mine)
    meds = [x for m, x in medians(rows, metric, scenario).items() if fnmatch.fnmatchcase(m, term)]
    return max(meds) if meds else None


def _bound(rows: list[dict], scenario: str, a: str, metric: str, b: dict | None) -> float | None:
    terms = [_term(rows, scenario, a, metric, t) for t in b["of"]]
    if any(t is None for t in terms):
        return None
    return b.get("times", 1.0) * (max(terms) if b.get("combine") == "max" else min(terms))


def cell_results(claim: dict, rows: list[dict]) -> dict[str, bool | None]:
    """A `share_of_cells` claim cell by cell: whether it holds in each matching scenario (None:
    not measured there, for the method or a yardstick)."""
    metric, a = claim["metric"], claim["a"]
    patterns = claim["scenarios"] if isinstance(claim["scenarios"], list) else [claim["scenarios"]]
    out: dict[str, bool | None] = {}
    for sc in sorted({r["scenario"] for r in rows if any(fnmatch.fnmatchcase(r["scenario"], p) for p in patterns)}):
        x = _value(medians(rows, metric, sc), a)
        lo = _bound(rows, sc, a, metric, claim["low"]) if "low" in claim else float("-inf")
        hi = _bound(rows, sc, a, metric, claim["high"]) if "high" in claim else float("inf")
        out[sc] = None if x is None or lo is None or hi is None else lo <= x <= hi
    return out


def check_all(claims: list[dict], rows: list[dict]) -> list[Verdict]:
    return [check(c, rows) for c in claims]
