"""Text sparklines: a time series in one line of a terminal."""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = 60) -> str:
    """`values` resampled to `width` columns (mean per column), scaled from 0 to their maximum."""
    if not values:
        return ""
    n = len(values)
    cols = []
    for c in range(min(width, n)):
        lo = c * n // min(width, n)
        hi = max(lo + 1, (c + 1) * n // min(width, n))
        chunk = values[lo:hi]
        cols.append(sum(chunk) / len(chunk))
    top = max(cols)
    if top <= 0:
        return BARS[0] * len(cols)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] for v in cols)
