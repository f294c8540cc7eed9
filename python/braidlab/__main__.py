"""braidlab command line: `python -m braidlab demo|clean`."""

from __future__ import annotations

import argparse
import sys

from . import netns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="braidlab", description="braid's laboratory")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="braid's congestion controls at work on a namespace path")
    d.add_argument("--seconds", type=float, default=6.0, help="sending time per control")
    sub.add_parser("clean", help="remove testbeds left behind by killed runs")
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        from . import demo

        demo.run(seconds=args.seconds)
    elif args.cmd == "clean":
        removed = netns.clean()
        print(f"removed {len(removed)} stale namespace(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
