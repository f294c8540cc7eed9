"""µ as the receiving end estimates it, by the rule before and the rule now, from stamped reads.

    python3 mu_from_stamps.py DIR

DIR holds one file per receiving stream, s-PID-K.bin: (stamp ns, bytes) of each read as little-endian
u64 pairs, written by a braid built with stamp-dump.patch and run with BRAID_STAMP_DUMP=DIR. For each
receiving process (a cell), each second's estimate over the 16 s window ending there (as
path/dispersion.rs keeps it), by the rule before (the fastest band holding half the strongest's
bytes, then down its flank to a top) and now (the fastest peak that holds half the strongest's bytes
and stands apart from every stronger one: a valley at half its height between them). Payload Mb/s.
Development only; nothing here judges.
"""
import glob, math, sys, array, collections, os
SLOWEST, FASTEST, BAND, SPREAD = 1e4, 1e12, 0.02, 3
def band(r): return round(math.log(r / SLOWEST) / math.log(1 + BAND)) if SLOWEST <= r < FASTEST else None
def rate(b): return SLOWEST * (1 + BAND) ** b
def est(slots, new):
    byt = collections.Counter()
    for s in slots: byt.update(s)
    if not byt: return None
    lo, hi = min(byt) - SPREAD, max(byt) + SPREAD
    mass = {b: sum(byt.get(x, 0) for x in range(b - SPREAD, b + SPREAD + 1)) for b in range(lo, hi + 1)}
    first = max(band(sum(byt.values()) / len(slots)) or lo, lo)
    strongest = max(m for b, m in mass.items() if b >= first)
    M = lambda b: mass.get(b, 0) if b >= first else 0
    if new:
        peak = None
        for p in range(hi, first - 1, -1):
            if not (M(p) > 0 and M(p) >= M(p - 1) and M(p) > M(p + 1) and 2 * M(p) >= strongest): continue
            low = M(p); ok = True
            for b in range(p - 1, first - 1, -1):
                if M(b) > M(p): ok = 2 * low <= M(p); break
                low = min(low, M(b))
            if ok: peak = p; break
    else:
        peak = max(b for b in range(first, hi + 1) if 2 * M(b) >= strongest)
        while peak > first and M(peak - 1) > M(peak): peak -= 1
    w = sum(byt.get(b, 0) for b in range(peak - SPREAD, peak + SPREAD + 1))
    l = sum(byt.get(b, 0) * math.log(rate(b)) for b in range(peak - SPREAD, peak + SPREAD + 1))
    return math.exp(l / w)
d = sys.argv[1]
by = collections.defaultdict(list)
for f in glob.glob(d + "/*.bin"):
    by[f.split("/")[-1].split("-")[1]].append(f)
for pid, files in sorted(by.items(), key=lambda kv: min(os.path.getmtime(f) for f in kv[1])):
    secs = collections.defaultdict(collections.Counter); nreads = collections.Counter()
    for f in files:
        a = array.array("Q"); a.frombytes(open(f, "rb").read())
        prev = None
        for i in range(0, len(a), 2):
            at, n = a[i], a[i + 1]
            if prev is not None and at > prev and n:
                b = band(n * 1e9 / (at - prev))
                if b is not None: secs[at // 10**9][b] += n; nreads[at // 10**9] += 1
            prev = max(at, prev or 0)
    ks = sorted(secs)
    rows = []
    for s in ks:
        win = [k for k in ks if s - 16 < k <= s]
        if sum(nreads[k] for k in win) < 100: continue
        slots = [secs[k] for k in win]
        arrived = sum(sum(x.values()) for x in slots) / len(slots)
        rows.append((s - ks[0], est(slots, False) * 8e-6, est(slots, True) * 8e-6, arrived * 8e-6))
    med_arr = sorted(r[3] for r in rows)[len(rows) // 2]
    print(f"pid {pid} streams {len(files)} seconds {len(rows)} arrived-median {med_arr:.1f}")
    for name, i in (("old", 1), ("new", 2)):
        v = sorted(r[i] for r in rows)
        print(f"  {name}: min {v[0]:.1f} p10 {v[len(v)//10]:.1f} median {v[len(v)//2]:.1f} p90 {v[9*len(v)//10]:.1f} max {v[-1]:.1f}")
