"""braid-sim beside the laboratory, cell by cell, on the judged generality paths.

    .venv/bin/python results/2026-12-05-vm-2core/sim-lab-agreement/compare.py

Reads sim.txt (braid-sim's matrix example on the cells of cells.txt, `braidlab sim-cells
generality`) and the laboratory's judged runs of the same cells (generality-judged-c5795cb's idle
and busy kinds, generality-judged-baf6ed8's udp, web, pairs and arrivals), and prints, claim by
claim, in how many cells the two give the same verdict, and for the idle and busy cells auto's
figure on each side (idle: auto over the best of parallel-4 and parallel-16; busy: auto over an
equal share). The laboratory's verdicts are braidlab's own (claims.cell_results).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "python"))

from braidlab import claims, experiment, results  # noqa: E402

LAB = [ROOT / "results/2026-12-04-vm-2core/generality-judged-c5795cb" / k for k in ("idle", "busy")] + [
    ROOT / "results/2026-12-04-vm-2core/generality-judged-baf6ed8" / k for k in ("udp", "web", "pairs", "arrive")]


def sim_cells(text: str) -> dict[str, dict]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+-\d\d)\s", line)
        if not m:
            continue
        verdicts = dict(re.findall(r" ([a-z-]+):(holds|FAILS)", line))
        fig = {}
        if a := re.search(r"auto ([\d.]+) \(\d+ streams\), best parallel ([\d.]+)", line):
            fig["idle_ratio"] = float(a.group(1)) / float(a.group(2))
        if a := re.search(r"auto ([\d.]+), equal ([\d.]+), single ([\d.]+)", line):
            fig["of_equal"] = float(a.group(1)) / float(a.group(2))
        if a := re.search(r"auto ([\d.]+), single ([\d.]+)", line):
            fig["of_single"] = float(a.group(1)) / float(a.group(2))
        out[m.group(1)] = {"verdicts": {k: v == "holds" for k, v in verdicts.items()}, **fig}
    return out


def lab_rows() -> list[dict]:
    rows = []
    for d in LAB:
        _, cells = results.load(d)
        rows += results.table(cells, "single")
    return rows


def main() -> None:
    sim = sim_cells((HERE / "sim.txt").read_text())
    rows = lab_rows()
    exp = experiment.load("generality")
    print("| claim | cells | both hold | both fail | braid-sim only holds | lab only holds | agree |")
    print("|---|---|---|---|---|---|---|")
    total = agree_all = 0
    for c in exp.claims:
        if c["a"] != "auto":
            continue
        lab = {sc: ok for sc, ok in claims.cell_results(c, rows).items() if ok is not None}
        both = [(sc, lab[sc], sim[sc]["verdicts"][c["id"]]) for sc in sorted(lab)
                if sc in sim and c["id"] in sim[sc]["verdicts"]]
        if not both:
            continue
        hh = sum(l and s for _, l, s in both)
        ff = sum(not l and not s for _, l, s in both)
        so = [sc for sc, l, s in both if s and not l]
        lo = [sc for sc, l, s in both if l and not s]
        total += len(both)
        agree_all += hh + ff
        print(f"| {c['id']} | {len(both)} | {hh} | {ff} | {len(so)}{' (' + ', '.join(so) + ')' if so else ''} "
              f"| {len(lo)}{' (' + ', '.join(lo) + ')' if lo else ''} | {hh + ff} of {len(both)} |")
    print(f"\nverdicts alike in {agree_all} of {total} cell-claims ({100 * agree_all / total:.0f} %)\n")

    def med(sc: str, method: str, metric: str) -> float | None:
        xs = [r[metric] for r in rows if r["scenario"] == sc and r["method"] == method and r.get(metric) is not None]
        return statistics.median(xs) if xs else None

    print("| cell | lab | braid-sim |")
    print("|---|---|---|")
    pairs = []
    for sc in sorted(sim):
        if sc.startswith("idle-"):
            best = max(x for m in ("parallel-4", "parallel-16") if (x := med(sc, m, "method_mbps")) is not None)
            lab_x, sim_x, what = med(sc, "auto", "method_mbps") / best, sim[sc].get("idle_ratio"), "x best parallel-N"
        elif re.match(r"(reno|cubic)-\d+-|mix-", sc):
            lab_x = med(sc, "auto", "method_mbps") / med(sc, "auto", "equal_share_mbps")
            sim_x, what = sim[sc].get("of_equal"), "x an equal share"
        else:
            continue
        pairs.append((sc, lab_x, sim_x))
        print(f"| {sc} | {lab_x:.2f} {what} | {sim_x:.2f} |")
    for kind in ("idle-", "busy"):
        ps = [(l, s) for sc, l, s in pairs if (sc.startswith(kind) if kind == "idle-" else not sc.startswith("idle-"))]
        diffs = sorted(abs(s - l) / l for l, s in ps)
        print(f"\n{kind.rstrip('-')}: {len(ps)} cells; |braid-sim - lab| / lab median {statistics.median(diffs):.2f}, "
              f"within 10 % in {sum(d <= 0.1 for d in diffs)}, within 25 % in {sum(d <= 0.25 for d in diffs)}")


if __name__ == "__main__":
    main()
