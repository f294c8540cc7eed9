"""Per cell: the bottleneck's payload rate, braid's receiver's estimate as the sender heard it at the end,
and the share of interval records (after the first 5 s) whose estimate is within 2 % and 5 %.

    python3 mu_table.py RUN [--save estimates3.json]  (from RUN/raw, as braidlab run wrote it)
    python3 mu_table.py run --load estimates3.json    (here: from the series kept beside this script)
"""
import json, sys
from pathlib import Path

run = Path(sys.argv[1])
WIRE = 1514 / 1448
series = {}
if "--load" in sys.argv:
    series = json.loads(Path(sys.argv[sys.argv.index("--load") + 1]).read_text())
for cell in sorted((run / "cells").glob("*.json")):
    d = json.loads(cell.read_text())
    truth = d["rate_bps"] / WIRE / 1e6
    if d["id"] not in series:
        out = run / "raw" / d["id"] / "snd0-bench.out"
        series[d["id"]] = [[r["t"], r["mbps"], r.get("bottleneck_mbps")]
                           for r in map(json.loads, out.read_text().splitlines()) if r.get("type") == "interval"]
    vals = [b / truth for t, _, b in series[d["id"]] if t >= 5 and b]
    w2 = sum(abs(v - 1) <= 0.02 for v in vals) / max(len(vals), 1)
    w5 = sum(abs(v - 1) <= 0.05 for v in vals) / max(len(vals), 1)
    end = d.get("bottleneck_mbps")
    print(f"{d['id']:42s} mu {truth:7.1f}  end {end if end is None else round(end / truth, 3)!s:>6}  "
          f"within 2 %: {w2:4.0%}  5 %: {w5:4.0%}  of {len(vals)}  min {min(vals, default=0):.3f} max {max(vals, default=0):.3f}  "
          f"moved {d['bench']['mbps']:.1f}")
if "--save" in sys.argv:
    Path(sys.argv[sys.argv.index("--save") + 1]).write_text(json.dumps(series))
