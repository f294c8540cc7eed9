"""auto with the span read (span-read/) beside main's (main-dumped/*-auto): Mb/s, the others, x the equal
share; development cells. The others beside a second auto: the link's use times the payload rate, less auto."""
import csv, glob, sys
PAYLOAD = {"1g": 956, "500m": 478, "50m": 48, "250m": 239, "200m": 191, "800m": 765}
N = {"4cubic": 4, "pair": 1, "idle": 0, "1cubic": 1, "16reno": 16, "bbr": 1, "1bdp": 0}
def cells(path):
    out = {}
    for f in glob.glob(path):
        for r in csv.DictReader(open(f)):
            out[r["scenario"]] = r
    return out
old = cells("main-dumped/*-auto/cells.csv")
new = {**cells("span-read/new-busy/cells.csv"), **cells("span-read/new-more/cells.csv")}
print(f"{'cell':28} {'equal':>6} | {'main auto':>9} {'others':>7} {'x eq':>5} | {'span auto':>9} {'others':>7} {'x eq':>5}")
for s in sorted(new):
    p = PAYLOAD[s.split("-")[1]]; n = N[s.split("-")[-1]]
    eq = p / (n + 1)
    row = f"{s:28} {eq:6.0f} |"
    for c in (old, new):
        r = c.get(s)
        if not r:
            row += " " * 25 + "|"; continue
        m = float(r["method_mbps"]); x = float(r["cross_mbps"] or 0)
        if "pair" in s:  # the second auto is no cross flow of the table: the link's use less this one
            x = float(r["utilisation"]) * p - m
        row += f" {m:9.1f} {x:7.1f} {m / eq:5.2f} |"
    print(row)
