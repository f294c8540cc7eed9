"""How quiet the machine is before a cell: the share of its cores' time used while none of the
laboratory's work runs. A cell measures what else the machine does as much as its methods (two
cores carry the senders, the receivers and braid-link); a run on a machine that something else
loads is not comparable with one on a quiet machine, so each cell records the share it started on.
"""

from __future__ import annotations

import time
from pathlib import Path

#: Above this share of all cores' time busy with nothing of ours running, a cell's start is
#: reported as not quiet: a tenth of one core on a two-core machine, many times what an idle
#: machine's housekeeping (timers, the kernel's threads) takes.
NOT_QUIET = 0.05


def cpu_times(stat_text: str) -> tuple[int, int]:
    """(busy, total) jiffies of all cores from /proc/stat's text; idle and iowait are not busy."""
    first = stat_text.splitlines()[0].split()
    if not first or first[0] != "cpu":
        raise ValueError(f"not /proc/stat's first line: {' '.join(first)[:80]!r}")
    f = [int(x) for x in first[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is counted in
    # user and nice already, so it is left out of the total.
    total = sum(f[:8])
    return total - f[3] - f[4], total


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the cores' time that was busy between two cpu_times readings."""
    d_busy, d_total = after[0] - before[0], after[1] - before[1]
    return d_busy / d_total if d_total > 0 else 0.0


def measure(seconds: float = 1.0, stat: Path = Path("/proc/stat")) -> float:
    """The cores' busy share over the next `seconds`, this process sleeping through them."""
    before = cpu_times(stat.read_text())
    time.sleep(seconds)
    return busy_share(before, cpu_times(stat.read_text()))
