"""Each braid log's phase changes (time:phase+streams) and its end, from the --json steer records.

    python3 phases.py logs/*.log
"""

import json
import sys

for path in sys.argv[1:]:
    out, prev = [], None
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if d["type"] == "steer" and (d["phase"], d["streams"]) != prev:
                prev = (d["phase"], d["streams"])
                out.append(f"{d['t']:.1f}:{d['phase']}{d['streams']}")
            elif d["type"] == "summary":
                out.append(f"end {d['seconds']:.1f}")
    print(path.rsplit("/", 1)[-1], " ".join(out))
