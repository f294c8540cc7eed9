"""Cell by cell, braid-sim's matrix output of the default (first folder) beside a yielding group's
(second folder, BRAID_SIM_FAIR=0), then a summary of the busy kinds.

    python3 compare.py sim/default sim/yield

Columns: kind, cell seed, Mb/s default, Mb/s yielding, others kept (default), others kept (yielding;
what the long flows moved over what they moved beside one CUBIC stream), RED, the equal share, one
CUBIC stream there, the yielding group's phases. Idle cells: kind, seed, default, yielding."""
import glob
import re
import statistics as st
import sys


def cells(d):
    out = {}
    for f in sorted(glob.glob(d + "/*.txt")):
        for line in open(f):
            m = re.search(r"seed (\d+)\s+(.*)$", line)
            if not m:
                continue
            kind, seed, rest = line.split()[0], m.group(1), m.group(2)
            a = re.search(r"auto ([\d.]+)", rest)
            b = re.search(r"beside ([\d.]+) \(equal ([\d.]+), single ([\d.]+)\)", rest)
            o = re.search(r"others ([\d.]+) \(beside single ([\d.]+), kept ([\d.]+)\)", rest)
            e = re.search(r"equal ([\d.]+)", rest)
            s = re.search(r"single ([\d.]+)", rest)
            ph = re.search(r"(?:room [\d.]+|single [\d.]+\)?); ([a-z -]+[\d %,a-z-]*?); short", rest)
            out[(kind, seed)] = dict(
                kind=kind, red=" red " in line,
                auto=float(a.group(1)) if a else (float(b.group(1)) if b else None),
                kept=float(o.group(3)) if o else None,
                equal=float(e.group(1)) if e else None, single=float(s.group(1)) if s else None,
                phases=ph.group(1) if ph else "")
    return out


A, B = cells(sys.argv[1]), cells(sys.argv[2])
busy = []
for k, a in A.items():
    b = B.get(k)
    if not b:
        continue
    if a["kind"] == "idle":
        print("idle", k[1], a["auto"], b["auto"])
        continue
    print(a["kind"], k[1], a["auto"], b["auto"], a["kept"], b["kept"], a["red"], a["equal"], a["single"], b["phases"])
    if a["kept"] is not None and not a["kind"].startswith("bbr") and "arrive" not in a["kind"]:
        busy.append((a, b))
idle = [(A[k]["auto"], B[k]["auto"]) for k in A if A[k]["kind"] == "idle" and k in B]
print()
print(f"idle: {sum(x == y for x, y in idle)} of {len(idle)} cells alike")
print(f"beside Reno, CUBIC and mixes: {len(busy)} cells; the yielding group moved at most a tenth of the "
      f"equal share in {sum(b['auto'] <= 0.1 * a['equal'] for a, b in busy)}, at most half what the default "
      f"moved in {sum(b['auto'] <= 0.5 * a['auto'] for a, b in busy)}; in all {sum(b['auto'] for a, b in busy) / sum(a['auto'] for a, b in busy):.2f} x "
      f"the default's Mb/s")
print(f"others kept (median): {st.median(a['kept'] for a, b in busy):.2f} beside the default, "
      f"{st.median(b['kept'] for a, b in busy):.2f} beside the yielding group; more by over 0.05 in "
      f"{sum(b['kept'] > a['kept'] + 0.05 for a, b in busy)} cells, less in {sum(b['kept'] < a['kept'] - 0.05 for a, b in busy)}")
