"""Each second of each auto cell: t, group Mb/s, µ read, streams, phase (from the sender's records)."""
import glob, json, sys
for d in sorted(glob.glob(sys.argv[1] + "/raw/*")):
    for f in sorted(glob.glob(d + "/snd*-bench.out")):
        print("==", d.split("/")[-1], f.split("/")[-1])
        steer = {}
        rows = []
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "steer":
                steer = r
            elif r.get("type") == "interval":
                rows.append(f"{r['t']:.0f}:{r['mbps']:.0f}/{r.get('bottleneck_mbps') or 0:.0f}/{steer.get('streams')}{(steer.get('phase') or '?')[0]}")
        for i in range(0, len(rows), 8):
            print("   ", "  ".join(rows[i:i + 8]))
