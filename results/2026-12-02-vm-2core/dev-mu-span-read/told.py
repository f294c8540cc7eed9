"""µ as the receiving end would tell it each second, under several readings of the same stamp dumps.
python told.py DUMPDIR... (each DUMPDIR/stamps/s-PID-K.bin: (stamp ns, bytes) u64 pairs).
Development only: one row a second per receiving process, and a summary line each."""
import glob, math, sys
import numpy as np

BAND, SPREAD, SLOWEST, FASTEST = 0.02, 3, 1e4, 1e12
NB = int(math.ceil(math.log(FASTEST / SLOWEST) / math.log(1 + BAND))) + 1
SLOTS, HOLD = 16, 64
LEVELS = [32e3 * 2**k for k in range(7)]  # 32 us .. 2048 us
TRUTH = {"1g": 956, "500m": 478, "50m": 48, "250m": 239, "200m": 191, "800m": 765}


def bands_of(r):
    ok = (r >= SLOWEST) & (r < FASTEST)
    b = np.zeros(len(r), dtype=np.int64)
    b[ok] = np.round(np.log(r[ok] / SLOWEST) / math.log(1 + BAND)).astype(np.int64)
    return b, ok


def rate_of(b):
    return SLOWEST * (1 + BAND) ** b


def estimate(bands, arrived, nslots):
    mass = np.convolve(bands, np.ones(2 * SPREAD + 1), mode="same")
    first = max(0, int(round(math.log(arrived / SLOWEST) / math.log(1 + BAND)))) if arrived >= SLOWEST else 0
    counted = mass[first:]
    strongest = counted.max() if len(counted) else 0
    if strongest == 0:
        return None
    for b in range(len(counted) - 1, -1, -1):
        if 2 * counted[b] < strongest:
            continue
        below = counted[b - 1] if b > 0 else 0
        above = counted[b + 1] if b + 1 < len(counted) else 0
        if not (counted[b] > 0 and counted[b] >= below and counted[b] > above):
            continue
        top = counted[b]; lowest = top; apart = True
        for x in counted[b - 1::-1] if b > 0 else []:
            if x > top:
                apart = 2 * lowest <= top
                break
            lowest = min(lowest, x)
        if apart:
            p = first + b
            lo, hi = max(0, p - SPREAD), min(NB, p + SPREAD + 1)
            w = bands[lo:hi]
            return float(np.exp((w * np.log(rate_of(np.arange(lo, hi)))).sum() / w.sum()))
    return None


def span_rates(t, n, S):
    cum = np.cumsum(n)
    if S == 0:
        i = np.searchsorted(t, t, side="left") - 1  # the last read stamped before
    else:
        i = np.searchsorted(t, t - S, side="right") - 1
    ok = i >= 0
    j = np.nonzero(ok)[0]
    i = i[ok]
    dt = t[j] - t[i]
    good = dt > 0
    j, i, dt = j[good], i[good], dt[good]
    if S == 0:
        by = n[j].astype(float)
    else:
        by = (cum[j] - cum[i]).astype(float)
    return t[j], by * 1e9 / dt, n[j]


def hists(rs, S, s0, ns):
    """[second, band] bytes of the rates read over spans >= S."""
    h = np.zeros((ns, NB))
    for t, n in rs:
        at, r, w = span_rates(t, n, S)
        b, ok = bands_of(r)
        sec = (at // 1_000_000_000 - s0).astype(np.int64)
        ok &= (sec >= 0) & (sec < ns)
        np.add.at(h, (sec[ok], b[ok]), w[ok])
    return h


def run(d):
    name = d.rstrip("/").split("/")[-1]
    truth = TRUTH[name.split("-")[1]]
    out = []
    for pid in sorted({f.split("/")[-1].split("-")[1] for f in glob.glob(d + "/stamps/*.bin")}):
        rs = []
        for f in sorted(glob.glob(d + f"/stamps/s-{pid}-*.bin")):
            a = np.fromfile(f, dtype=np.uint64).astype(np.int64)
            if len(a) >= 4:
                rs.append((a[0::2], a[1::2]))
        if not rs:
            continue
        s0 = min(t[0] for t, _ in rs) // 1_000_000_000
        ns = int(max(t[-1] for t, _ in rs) // 1_000_000_000 - s0 + 1)
        got = np.zeros(ns)
        for t, n in rs:
            np.add.at(got, t // 1_000_000_000 - s0, n)
        lv = [0] + LEVELS
        H = {S: hists(rs, S, s0, ns) for S in lv}
        rows = []
        held_p = held_q = None
        for k in range(ns):
            lo = max(0, k - SLOTS + 1)
            arrived = got[lo:k + 1].sum() / (k + 1 - lo)
            est = {S: estimate(H[S][lo:k + 1].sum(axis=0), arrived, k + 1 - lo) for S in lv}
            # prototype: 128 us spans, the most held HOLD s
            e = est[128e3]
            if e is not None and (held_p is None or e > held_p[0] or held_p[1] + HOLD <= k):
                held_p = (e, k)
            # plateau: the shortest span whose estimate the span twice as long agrees with
            plat = None
            tol = SPREAD * math.log(1 + BAND)
            for a, b in zip(LEVELS, LEVELS[1:]):
                if est[a] and est[b] and abs(math.log(est[a] / est[b])) <= tol:
                    plat = (est[a], a)
                    break
            if plat and (held_q is None or plat[0] > held_q[0] or held_q[1] + HOLD <= k):
                held_q = (plat[0], k)
            m = lambda x: x * 8 / 1e6 if x else 0
            rows.append((k, m(arrived), m(est[0]), m(e), m(held_p[0]) if held_p else 0,
                         m(plat[0]) if plat else 0, plat[1] / 1e3 if plat else 0,
                         m(held_q[0]) if held_q else 0, [m(est[S]) for S in LEVELS]))
        out.append((name, pid, truth, rows))
    return out


def main():
    for d in sys.argv[1:]:
        for name, pid, truth, rows in run(d):
            print(f"== {name} pid {pid} truth {truth}")
            print("  s  arrived   read  span128  proto  plateau@us   told | spans 32..2048")
            for k, arr, r0, e, p, q, at, hq, lv in rows:
                print(f"{k:3d} {arr:7.0f} {r0:6.0f} {e:7.0f} {p:6.0f} {q:6.0f}@{at:<5.0f} {hq:6.0f} | "
                      + " ".join(f"{x:5.0f}" for x in lv))
            def score(i):
                v = [r[i] for r in rows[3:]]
                within = sum(1 for x in v if x and abs(x / truth - 1) <= 0.1)
                over = sum(1 for x in v if x > truth * 1.1)
                none = sum(1 for x in v if not x)
                return f"{within}/{len(v)} within 10%, {over} over, {none} none"
            print(f"## {name} {pid}: read {score(2)}; span128 {score(3)}; proto {score(4)}")


if __name__ == "__main__":
    main()
