"""`braidlab demo` (`make demo`): the quick Hacker 2004 experiment end to end.

The papers' methods (one Reno stream, 9 parallel Reno streams, combined-9
with a virtual RTT of 10, 9 TCP-P streams with strength 1, one BBR stream)
and braid as a user runs it (no options: auto), each beside 5 Reno flows and
beside the stiff 1-10 Mb/s UDP source on a 100 Mb/s, 68 ms emulated path;
then the table beside the paper's, the frontier (how fast idle against how
much it takes from others), the claims' verdicts, and the HTML report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import report, runner
from .experiment import ExperimentError, load


def main(args) -> int:
    runner.stop_on_signals()
    try:
        exp = load("hacker2004")
        out = Path(args.out) if args.out else runner.default_out(exp, "quick")
        runner.run(exp, "quick", out)
    except (ExperimentError, runner.RunError) as e:
        print(f"braidlab demo: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("braidlab demo: interrupted", file=sys.stderr)
        return 130
    md, page = report.make([out], out / "report")
    print()
    print(report.terminal(out))
    print(f"results: {out}\nreport:  {page} (and {md.name})")
    return 0
