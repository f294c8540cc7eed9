"""Window arithmetic on TCP_INFO samples: how fast a control grows its window.

In congestion avoidance Reno adds one packet per window of ACKed packets,
so over an interval without loss d(cwnd^2 / 2) = packets ACKed. A control
that grows at a fraction f of Reno's rate gives f instead of 1. That ratio
is what `growth_per_ack` estimates, from samples of (cwnd, ssthresh,
bytes_acked, ca_state).
"""

from __future__ import annotations

from collections.abc import Sequence

CA_OPEN = 0


def growth_per_ack(samples: Sequence[dict], mss: int | None = None) -> float | None:
    """d(cwnd^2/2) / d(packets ACKed), summed over consecutive sample pairs in
    congestion avoidance with no loss between them; None without such pairs.

    Each sample is a dict with cwnd, ssthresh, bytes_acked, ca_state and mss
    (the `info` object of a braid trace sample).
    """
    num = 0.0
    den = 0.0
    for a, b in zip(samples, samples[1:]):
        seg = mss or a.get("mss") or 1448
        in_ca = a["cwnd"] >= a["ssthresh"] and b["cwnd"] >= b["ssthresh"]
        steady = a["ca_state"] == CA_OPEN and b["ca_state"] == CA_OPEN and b["ssthresh"] == a["ssthresh"]
        if not (in_ca and steady and b["cwnd"] >= a["cwnd"]):
            continue
        acked = (b["bytes_acked"] - a["bytes_acked"]) / seg
        if acked <= 0:
            continue
        num += (b["cwnd"] ** 2 - a["cwnd"] ** 2) / 2.0
        den += acked
    if den == 0:
        return None
    return num / den
