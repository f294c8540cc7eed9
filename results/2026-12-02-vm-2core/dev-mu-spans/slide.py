"""Per second: the 128 µs span estimate over the last 16 s of one receiving process's reads (as the
prototype's window), and what arrived. python3 slide.py DIR"""
import glob, pathlib, sys
# levels.py's estimator, without its own main loop.
src = (pathlib.Path(__file__).parent / "levels.py").read_text().split("for d in sys.argv[1:]:")[0]
lv = {}
exec(src, lv)
d = sys.argv[1].rstrip("/")
S = float(sys.argv[2]) if len(sys.argv) > 2 else 128e3
for pid in sorted({f.split("/")[-1].split("-")[1] for f in glob.glob(d + "/stamps/*.bin")}):
    rs = [r for r in lv["readers"](d, pid) if len(r[0]) > 1]
    if not rs:
        continue
    rates = []
    for t, n in rs:
        rates += lv["span_rates"](t, n, S)
    allreads = sorted((tt, x) for t, n in rs for tt, x in zip(t, n))
    t0 = allreads[0][0] // 10**9
    sec = {}
    for tt, r, x in rates:
        k = lv["band_of"](r)
        if k is None:
            continue
        s = tt // 10**9
        sec.setdefault(s, {}).setdefault(k, 0)
        sec[s][k] += x
    arr = {}
    for tt, x in allreads:
        arr[tt // 10**9] = arr.get(tt // 10**9, 0) + x
    out = []
    last = max(arr)
    for s in range(t0 + 1, last + 1):
        live = [q for q in range(s - 15, s + 1) if q in arr]
        h = {}
        for q in live:
            for k, x in sec.get(q, {}).items():
                h[k] = h.get(k, 0) + x
        arrived = sum(arr[q] for q in live) / len(live)
        e = lv["estimate"](h, arrived) if h else None
        out.append(f"{s - t0}:{arr.get(s, 0) * 8 / 1e6:.0f}/{(e or 0) * 8 / 1e6:.0f}")
    print("== pid", pid, "readers", len(rs), "(s: Mb/s that second / window's estimate)")
    for i in range(0, len(out), 10):
        print("   ", "  ".join(out[i:i + 10]))
