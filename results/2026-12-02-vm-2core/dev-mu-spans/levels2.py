"""µ as braid's estimator reads it (2 % bands, clusters over ±3 bands, the fastest strong cluster no
slower than what arrived) over spans of one reader's consecutive reads at least S long, for several S,
in 16 s windows of a stamp dump. python3 levels.py DIR [DIR...]. Development only."""
import array, bisect, glob, math, sys
BAND, SPREAD, SLOWEST, FASTEST = 0.02, 3, 1e4, 1e12
NB = int(math.ceil(math.log(FASTEST / SLOWEST) / math.log(1 + BAND))) + 1
LEVELS = [0, 64e3, 128e3, 256e3]
WIN = 16e9

def band_of(r):
    return round(math.log(r / SLOWEST) / math.log(1 + BAND)) if SLOWEST <= r < FASTEST else None

def rate_of(b):
    return SLOWEST * (1 + BAND) ** b

def is_peak(m, b):
    below = m[b - 1] if b > 0 else 0
    above = m[b + 1] if b + 1 < len(m) else 0
    return m[b] > 0 and m[b] >= below and m[b] > above

def stands_apart(m):
    top = m[-1]; lowest = top
    for x in reversed(m[:-1]):
        if x > top:
            return 2 * lowest <= top
        lowest = min(lowest, x)
    return True

def estimate(hist, arrived):
    bands = [0] * NB
    for b, x in hist.items():
        bands[b] += x
    lo_b = max(0, min(hist) - 10); hi_b = min(NB, max(hist) + 10)
    mass = [sum(bands[max(0, b - SPREAD):b + SPREAD + 1]) for b in range(NB)]
    first = band_of(arrived) or 0
    counted = mass[first:]
    strongest = max(counted)
    if strongest == 0:
        return None
    for b in range(len(counted) - 1, -1, -1):
        if 2 * counted[b] >= strongest and is_peak(counted, b) and stands_apart(counted[:b + 1]):
            peak = first + b; break
    else:
        return None
    lowest = min(mass[max(0, peak - 2 * SPREAD - 1):peak + 1])
    global STOOD
    STOOD = 2 * lowest <= mass[peak] or (peak > first + SPREAD)
    w = l = 0.0
    for b in range(max(0, peak - SPREAD), min(NB, peak + SPREAD + 1)):
        w += bands[b]; l += bands[b] * math.log(rate_of(b))
    return math.exp(l / w)

def readers(d, pid):
    for f in sorted(glob.glob(d + f"/stamps/s-{pid}-*.bin")):
        a = array.array("Q"); a.frombytes(open(f, "rb").read())
        yield list(a[0::2]), list(a[1::2])

def span_rates(t, n, S):
    """(stamp, rate, bytes of the last read) over the shortest span of reads back to a stamp at least S before."""
    cum = [0]
    for x in n:
        cum.append(cum[-1] + x)
    out = []
    for j in range(1, len(t)):
        # the latest i < j with t[j] - t[i] >= S
        i = bisect.bisect_right(t, t[j] - S, 0, j) - 1 if S > 0 else j - 1
        if i < 0:
            continue
        dt = t[j] - t[i]
        if dt <= 0:
            continue
        out.append((t[j], (cum[j + 1] - cum[i + 1]) * 1e9 / dt, n[j]))
    return out

def main(d, pid):
    rs = [r for r in readers(d, pid) if len(r[0]) > 1]
    if not rs:
        return
    t0 = min(t[0] for t, _ in rs if t); t1 = max(t[-1] for t, _ in rs if t)
    print(f"== {d.split('/')[-1]} pid {pid}  readers {len(rs)}  {(t1 - t0) / 1e9:.0f} s")
    wins = []
    w = t0 + WIN
    while w <= t1 + 1:
        wins.append((w - WIN, w)); w += WIN
    by_level = {}
    for S in LEVELS:
        rates = []
        for t, n in rs:
            rates += span_rates(t, n, S)
        by_level[S] = rates
    for a, b in wins:
        tot = sum(x for t, n in rs for tt, x in zip(t, n) if a <= tt < b)
        arrived = tot / (WIN / 1e9)
        row = [f"{(a - t0) / 1e9:3.0f}-{(b - t0) / 1e9:3.0f}s arrived {arrived * 8 / 1e6:6.0f}:"]
        for S in LEVELS:
            h = {}
            for tt, r, x in by_level[S]:
                if a <= tt < b:
                    k = band_of(r)
                    if k is not None:
                        h[k] = h.get(k, 0) + x
            e = estimate(h, arrived) if h else None
            row.append(f"{S / 1e3:.0f}us {e * 8 / 1e6 if e else 0:6.0f}{'' if not e else ('+' if STOOD else '.')}")
        print("  ".join(row))

for d in sys.argv[1:]:
    d = d.rstrip("/")
    for pid in sorted({f.split("/")[-1].split("-")[1] for f in glob.glob(d + "/stamps/*.bin")}):
        main(d, pid)
