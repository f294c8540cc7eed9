"""braidlab command line: `braidlab demo|path|clean`."""

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
    p = sub.add_parser("path", help="run a command across an emulated path built by hand",
                       description="Builds sender -> braid-link -> receiver, runs COMMAND on the sender with "
                                   "{peer} replaced by the receiver's address, then removes the path.")
    p.add_argument("--rate", help="bottleneck rate, sender to receiver (e.g. 100mbit)")
    p.add_argument("--delay", help="one-way delay, each direction (e.g. 34ms: a 68 ms RTT)")
    p.add_argument("--loss", help="random loss, sender to receiver (e.g. 0.01%%)")
    p.add_argument("--limit", help="queue limit in packets (e.g. 580)")
    p.add_argument("--reverse-rate", help="rate of the receiver-to-sender direction (default unlimited)")
    p.add_argument("--spec", help="more braid-link words for the forward direction (e.g. 'red min 30000 ...')")
    p.add_argument("--server", help="a command to run on the receiver for the time of COMMAND (e.g. 'iperf3 -s')")
    p.add_argument("--run-dir", help="where the manifest, link stats and logs go (default: a new temporary directory)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        from . import demo

        demo.run(seconds=args.seconds)
    elif args.cmd == "path":
        from . import path

        return path.main(args)
    elif args.cmd == "clean":
        removed = netns.clean()
        print(f"removed {len(removed)} stale namespace(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
