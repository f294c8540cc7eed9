#!/usr/bin/env python3
"""Keeps results/ small: every clone carries all of it.

A run folder committed under results/ (a folder holding a run.json) keeps what its report is made
from — run.json, cells/, cells.csv, flows.csv, series.csv — and not the raw/ captures; a report/
folder keeps report.md, report.html and its figures. Folders dated from SINCE on are held to the
limits below; the older ones were committed before the limit and are left as they are (history is
not rewritten). Run by scripts/fast.sh; exits 1 naming each folder over its limit.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SINCE = "2026-11-28"
RUN_LIMIT = 2 << 20      # bytes in one run folder
REPORT_LIMIT = 1 << 20   # bytes in one report folder
DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})-")


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def problems(results: Path) -> list[str]:
    found = []
    for day in sorted(p for p in results.iterdir() if p.is_dir()):
        m = DATED.match(day.name)
        if not m or m.group(1) < SINCE:
            continue
        for run in sorted({p.parent for p in day.rglob("run.json")}):
            if (run / "raw").exists():
                found.append(f"{run}: raw/ is the run's captures, not its results; remove it before committing")
            n = size(run)
            if n > RUN_LIMIT:
                found.append(f"{run}: {n / 2**20:.1f} MiB, over the {RUN_LIMIT >> 20} MiB a run folder may hold")
        for report in sorted(p for p in day.rglob("report") if p.is_dir()):
            n = size(report)
            if n > REPORT_LIMIT:
                found.append(f"{report}: {n / 2**20:.1f} MiB, over the {REPORT_LIMIT >> 20} MiB a report may hold")
    return found


def main() -> int:
    results = Path(__file__).resolve().parent.parent / "results"
    found = problems(results)
    for f in found:
        print(f"results too large: {f}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
