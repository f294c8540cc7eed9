"""The papers' metrics as plain functions: no I/O, no clocks.

- Hacker 2004 Eq. 3-8: the capacity T left to TCP beside a stiff sinusoidal
  UDP source and the ICMP probes, and effectiveness = bytes moved / T;
  appropriation = how much the competing flows lose against the single-stream
  baseline (section VII.C);
- Jain's fairness index (the variants paper, Eq. 3);
- loss ratio, median, sqrt(p) (Tables IV-V), link utilisation;
- the Mathis model of one stream and of n streams (Hacker 2002 Eq. 3-5);
- a Student-t confidence interval for a mean (Hacker 2002 Fig. 10).

Rates are in bits per second, sizes in bytes, times in seconds, unless a name
says otherwise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

MATHIS_C = math.sqrt(1.5)


def probe_rate(size: int = 1440, interval: float = 0.01) -> float:
    """I of Eq. 4: the ICMP probes' rate, size bytes of data every interval seconds."""
    if size < 0 or interval <= 0:
        raise ValueError(f"probe of {size} B every {interval} s is not a rate")
    return size * 8 / interval


def sine_volume(seconds: float, udp_min: float, udp_max: float, period: float) -> float:
    """Bits the stiff source f(t) = Avg cos(t/c) + Min + Avg (Eq. 3) sends in
    [0, seconds]: Avg (c sin(t/c) + t Min/Avg + t), the right half of Eq. 8,
    with c = 0.05 pi period as the paper defines it."""
    if udp_max < udp_min or udp_min < 0:
        raise ValueError(f"UDP range {udp_min}-{udp_max} b/s is not a range")
    avg = (udp_max - udp_min) / 2
    if avg == 0:
        return udp_min * seconds
    c = 0.05 * math.pi * period
    return avg * c * math.sin(seconds / c) + udp_min * seconds + avg * seconds


def capacity(link: float, seconds: float, *, udp: tuple[float, float] | None = None, period: float = 10.0,
             probe: float = 0.0) -> float:
    """T of Eq. 8 in bytes: what a link of `link` b/s leaves to TCP over
    `seconds` beside the probes (`probe` b/s, I) and the sinusoidal UDP
    source (`udp` = (Min, Max) b/s) if there is one."""
    if link <= 0 or seconds <= 0:
        raise ValueError(f"capacity of a {link} b/s link over {seconds} s")
    bits = (link - probe) * seconds
    if udp is not None:
        bits -= sine_volume(seconds, udp[0], udp[1], period)
    return bits / 8


def effectiveness(moved: float, capacity_bytes: float) -> float:
    """Section VI.A: the fraction of the capacity T the method moved."""
    if capacity_bytes <= 0:
        raise ValueError("effectiveness needs a positive capacity")
    return moved / capacity_bytes


def appropriation(competitors: float, baseline: float) -> float:
    """Section VII.C: 1 - (the competing flows' aggregate beside the method) /
    (their aggregate beside one plain stream). Negative: they got more."""
    if baseline <= 0:
        raise ValueError("appropriation needs the competitors' baseline aggregate above 0")
    return 1 - competitors / baseline


def jain(xs: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal,
    1/n when one flow has everything."""
    if not xs:
        raise ValueError("Jain's index of no flows")
    if any(x < 0 for x in xs):
        raise ValueError("Jain's index of a negative throughput")
    sq = sum(x * x for x in xs)
    if sq == 0:
        return 1.0
    return sum(xs) ** 2 / (len(xs) * sq)


def loss_ratio(lost: float, sent: float) -> float:
    """Lost (or retransmitted) over sent; 0 when nothing was sent."""
    if lost < 0 or sent < 0:
        raise ValueError(f"loss ratio of {lost} lost in {sent} sent")
    return lost / sent if sent else 0.0


def utilisation(departed_bytes: float, link: float, seconds: float) -> float:
    """The fraction of a link's capacity the departed bytes filled."""
    if link <= 0 or seconds <= 0:
        raise ValueError(f"utilisation of a {link} b/s link over {seconds} s")
    return departed_bytes * 8 / (link * seconds)


def median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def sqrt_p(p: float) -> float:
    """The sqrt(p) column of Tables IV-V, with p in percent as the paper's
    numbers only make sense that way (0.648 would be 42 % loss otherwise)."""
    if p < 0:
        raise ValueError(f"loss rate {p} < 0")
    return math.sqrt(100 * p)


def mathis(mss: float, rtt: float, p: float) -> float:
    """Mathis et al.: one stream's rate bound MSS C / (RTT sqrt(p)), b/s
    (Hacker 2004 Eq. 9, Hacker 2002 Eq. 3). Infinite without loss."""
    if mss <= 0 or rtt <= 0 or p < 0:
        raise ValueError(f"Mathis model of MSS {mss}, RTT {rtt}, p {p}")
    if p == 0:
        return math.inf
    return mss * 8 * MATHIS_C / (rtt * math.sqrt(p))


def padhye(mss: float, rtt: float, p: float, rto: float, b: float = 1.0, wmax: float | None = None) -> float:
    """Padhye, Firoiu, Towsley and Kurose's model with timeouts (their Eq. 31), b/s: `b`
    packets per ACK, `rto` the first timeout, `wmax` the receiver's window in packets.
    The engine's braid::model::padhye_bps; crates/braid/vectors/models.json holds both."""
    cap = math.inf if wmax is None else wmax / rtt
    if p <= 0:
        return cap * mss * 8
    fast = rtt * math.sqrt(2 * b * p / 3)
    timeouts = rto * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return min(1 / (fast + timeouts), cap) * mss * 8


def knee_streams(one_stream_bps: float, rate_bps: float) -> int:
    """The knee as the model sees it: the fewest streams whose aggregate (Hacker 2002 Eq. 4,
    n times one stream) reaches the path's rate; at least one."""
    if not one_stream_bps > 0 or one_stream_bps >= rate_bps:
        return 1
    return math.ceil(rate_bps / one_stream_bps)


def mathis_aggregate(streams: Sequence[tuple[float, float, float]]) -> float:
    """Hacker 2002 Eq. 5: the sum of each stream's Mathis bound, given
    (mss, rtt, p) per stream; streams that saw no loss are left out, since
    the model says nothing of them (returns inf if none saw loss)."""
    lossy = [mathis(m, r, p) for m, r, p in streams if p > 0]
    return sum(lossy) if lossy else math.inf


def _t_cdf(t: float, dof: int) -> float:
    # Student's t CDF by Simpson's rule on its density; dof is small here
    # (repetitions), and 2000 panels keep the error far below what a CI needs.
    if t < 0:
        return 1 - _t_cdf(-t, dof)
    logk = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def pdf(x: float) -> float:
        return math.exp(logk - (dof + 1) / 2 * math.log1p(x * x / dof))

    n = 2000
    h = t / n
    s = pdf(0) + pdf(t) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, n))
    return 0.5 + s * h / 3


def t_quantile(q: float, dof: int) -> float:
    """The q-quantile of Student's t with dof degrees of freedom (q in (0.5, 1))."""
    if not 0.5 < q < 1 or dof < 1:
        raise ValueError(f"t quantile {q} with {dof} degrees of freedom")
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, dof) < q:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, dof) < q else (lo, mid)
    return (lo + hi) / 2


def mean_ci(xs: Sequence[float], level: float = 0.90) -> tuple[float, float, float]:
    """(mean, low, high): a two-sided Student-t interval for the mean; with one
    sample the interval is that sample alone."""
    if not xs:
        raise ValueError("a confidence interval of no samples")
    m = statistics.fmean(xs)
    if len(xs) == 1:
        return m, m, m
    half = t_quantile(0.5 + level / 2, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - half, m + half


def knee(ns: Sequence[float], ys: Sequence[float], frac: float = 0.9) -> float | None:
    """Hacker 2002 section 4.1's knee, made measurable: the fewest streams
    whose aggregate reaches `frac` of the best aggregate seen. Past it more
    streams buy little but congestion."""
    pts = sorted((n, y) for n, y in zip(ns, ys) if y is not None)
    if not pts:
        return None
    best = max(y for _, y in pts)
    return next(n for n, y in pts if y >= frac * best)


def rolling_mean(ts: Sequence[float], xs: Sequence[float], window: float) -> list[float]:
    """Each point's mean over the points in the `window` seconds that end at it."""
    out = []
    for i, t in enumerate(ts):
        inside = [x for s, x in zip(ts[: i + 1], xs[: i + 1]) if s > t - window + 1e-9]
        out.append(statistics.fmean(inside))
    return out


def _band(ts: Sequence[float], rates: Sequence[float], change: float, end: float, tol: float,
          window: float) -> tuple[list[float], list[bool], float] | None:
    """The phase (change, end]'s times, whether the rolling mean at each is within `tol` of the
    phase's settled rate (the median over its second half), and that rate; None when the phase
    holds fewer than four points."""
    pts = [(t, r) for t, r in zip(ts, rates) if change < t <= end]
    if len(pts) < 4:
        return None
    half = (change + end) / 2
    settled = statistics.median([r for t, r in pts if t > half] or [pts[-1][1]])
    ts_, rs = [t for t, _ in pts], [r for _, r in pts]
    inside = [abs(m - settled) <= tol * max(settled, 1e-9) for m in rolling_mean(ts_, rs, window)]
    return ts_, inside, settled


def settle_time(ts: Sequence[float], rates: Sequence[float], change: float, end: float,
                tol: float = 0.1, window: float = 3.0) -> tuple[float | None, float | None]:
    """(seconds to settle, the settled rate) after the path changed at `change`.
    The settled rate is the median over the second half of (change, end]; the
    transfer has settled at the first point from which the mean of its rate
    over the last `window` seconds (points after the change only) stays within
    `tol` of it until `end`, for a window at least. The time counts to the end of that window, so it
    includes the window's lag: an upper bound. Infinite when it never settles;
    None when the phase holds fewer than four points."""
    band = _band(ts, rates, change, end, tol, window)
    if band is None:
        return None, None
    ts_, inside, settled = band
    # Staying means for at least one more window: the last few points alone prove nothing.
    for i in range(len(ts_)):
        if ts_[-1] - ts_[i] < window - 1e-9:
            break
        if all(inside[i:]):
            return ts_[i] - change, settled
    return math.inf, settled


def reach_time(ts: Sequence[float], rates: Sequence[float], change: float, end: float,
               tol: float = 0.1, window: float = 3.0) -> float | None:
    """Seconds after `change` until the rolling mean first comes within `tol` of the rate
    settle_time settles at, whether or not it stays: how fast a transfer answers a change,
    where settle_time also asks how steadily it holds the new rate (a rate that swings by more
    than `tol`, as one Reno flow's does beside others, reaches but never settles). Infinite
    when it never comes within; None when the phase holds fewer than four points."""
    band = _band(ts, rates, change, end, tol, window)
    if band is None:
        return None
    ts_, inside, _ = band
    return next((t - change for t, ok in zip(ts_, inside) if ok), math.inf)


def binned_jain(ts: Sequence[float], per_stream: Sequence[Sequence[float]]) -> float | None:
    """The variants paper's fairness over short bins: Jain's index of the streams'
    rates in each bin (one interval of the series), averaged over the bins.
    Whole-run totals even out what a bin shows. `per_stream[i][j]` is stream i's
    rate in bin j."""
    if len(per_stream) < 2 or not ts:
        return None
    vals = [jain([s[j] for s in per_stream]) for j in range(len(ts))
            if sum(s[j] for s in per_stream) > 0]
    return statistics.fmean(vals) if vals else None


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share k / n (95 % at z = 1.96): unlike the normal
    approximation it stays inside [0, 1] and is honest about a few cells."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
