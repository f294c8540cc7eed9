"""Each braid sender's steer changes and its streams' smoothed RTTs, second by second, from a cell's raw folder.

    python3 trace.py RAW_CELL_DIR [FROM_S TO_S]
"""
import json
import sys
from pathlib import Path

cell = Path(sys.argv[1])
lo, hi = (float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else (0.0, 1e9)
for out in sorted(cell.glob("snd*.out")):
    print(f"== {out.name}")
    last = None
    for line in out.open():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "steer":
            key = (r["phase"], r["streams"])
            if key != last:
                print(f"  {r['t']:6.1f} s  {r['phase']:5} streams {r['streams']:2}  cap {r['share_mbps']}  queue {r['queue_ms']} ms  mu {r['bottleneck_mbps']}")
                last = key
        elif r.get("type") == "interval" and lo <= r["t"] <= hi:
            rtts = " ".join(f"{s['srtt_us'] / 1000:.0f}" for s in r["streams"])
            print(f"  {r['t']:6.1f} s  {r['mbps']:6.0f} Mb/s  srtt ms: {rtts}")
