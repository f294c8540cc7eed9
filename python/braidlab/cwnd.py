"""Window arithmetic on TCP_INFO samples: how fast a control grows its window.

In congestion avoidance Reno adds one packet per window of ACKed packets,
so over an interval without loss d(cwnd^2 / 2) = packets ACKed. A control
that grows at a fraction f of Reno's rate gives f instead of 1. That ratio
is what `growth_per_ack` estimates, from samples of (cwnd, ssthresh,
bytes_acked, ca_state).
"""

from __future__ import annotations

import math
import random
import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache

from .records import TcpInfo

CA_OPEN = 0


def growth_per_ack(samples: Sequence[TcpInfo], mss: int | None = None) -> float | None:
    """d(cwnd^2/2) / d(packets ACKed), summed over consecutive sample pairs in
    congestion avoidance with no loss between them; None without such pairs.

    Each sample is the `info` of a braid trace sample (cwnd, ssthresh,
    bytes_acked, ca_state and mss are read).
    """
    num = 0.0
    den = 0.0
    for a, b in zip(samples, samples[1:]):
        seg = mss or a.mss or 1448
        in_ca = a.cwnd >= a.ssthresh and b.cwnd >= b.ssthresh
        steady = a.ca_state == CA_OPEN and b.ca_state == CA_OPEN and b.ssthresh == a.ssthresh
        if not (in_ca and steady and b.cwnd >= a.cwnd):
            continue
        acked = (b.bytes_acked - a.bytes_acked) / seg
        if acked <= 0:
            continue
        num += (b.cwnd ** 2 - a.cwnd ** 2) / 2.0
        den += acked
    if den == 0:
        return None
    return num / den


def aimd_mean_window(p: float, increase, decrease, *, rtts: int = 200_000, seed: int = 1) -> float:
    """Time-average window, in packets, of an AIMD control under Bernoulli
    packet loss `p`, stepped once per RTT: the window's packets all see the
    loss, at most one reduction per RTT (as SACK recovery does), otherwise
    `increase(w)` packets are added; a loss takes `decrease(w)` of w away.

    The closed forms (Mathis, RFC 3649's 0.12/p^0.835) assume one loss every
    1/p packets. Under random loss a control whose increase grows with w in
    integer steps (HighSpeed TCP's table) averages a larger window than its
    closed form says; this gives the expectation to test a real one against.
    """
    if not 0 < p < 1:
        raise ValueError(f"loss rate {p} is not between 0 and 1")
    rng = random.Random(seed)
    keep = 1 - p
    w, total = 10.0, 0.0
    settle = rtts // 10  # the start from w = 10 is not the steady state
    for i in range(rtts + settle):
        if i >= settle:
            total += w
        if rng.random() < 1 - keep ** w:
            w = max(w * (1 - decrease(w)), 2.0)
        else:
            w += increase(w)
    return total / rtts


def reno_random_loss_c(p: float) -> float:
    """C of Mathis' W = C / sqrt(p) for Reno under Bernoulli loss `p`: about 1.30, where
    one loss every 1/p packets gives sqrt(3/2) = 1.22. Found from aimd_mean_window, with p
    taken to two significant digits so that a table of many runs costs one simulation per
    distinct rate."""
    return _reno_c(float(f"{p:.2g}"))


@lru_cache(maxsize=256)
def _reno_c(p: float) -> float:
    return aimd_mean_window(p, lambda w: 1.0, lambda w: 0.5) * math.sqrt(p)


def hstcp_table(header: str) -> list[tuple[int, float]]:
    """(up to cwnd, b) rows of bpf/math/hstcp_table.h; row i adds i + 1 packets per RTT."""
    rows = [(int(c), int(b) / 256) for c, b in re.findall(r"\{\s*(\d+),\s*(\d+)\s*\}", header)]
    if not rows or any(b <= 0 or b >= 1 for _, b in rows):
        raise ValueError("no HighSpeed TCP table in that text")
    return rows


def hstcp_mean_window(p: float, rows: list[tuple[int, float]], **kw) -> float:
    """aimd_mean_window for HighSpeed TCP as its table defines it (a(w) = row + 1, b(w))."""
    bounds = [c for c, _ in rows]

    def row(w: float) -> int:
        return min(bisect_left(bounds, w), len(rows) - 1)

    return aimd_mean_window(p, lambda w: row(w) + 1, lambda w: rows[row(w)][1], **kw)
