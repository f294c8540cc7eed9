"""braidlab command line: `braidlab demo|run|report|sim-cells|controls|path|clean|scheduler|worker`."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

from . import netns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="braidlab", description="braid's laboratory")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="the quick Hacker 2004 experiment, its table beside the paper's, an HTML report",
                       description="Runs `braidlab run hacker2004 --quick` (single, parallel-9, combined-9, "
                                   "tcpp-9 and bbr against 5 TCP flows and against stiff UDP 1-10 Mb/s), prints "
                                   "our table beside the paper's and the claims' verdicts, writes the report.")
    d.add_argument("--out", help="results directory (default runs/hacker2004-quick-TIME)")
    c = sub.add_parser("controls", help="braid's congestion controls at work on a namespace path")
    c.add_argument("--seconds", type=float, default=6.0, help="sending time per control")
    sub.add_parser("clean", help="remove testbeds left behind by killed runs")
    r = sub.add_parser("run", help="run an experiment of experiments/ on emulated dumbbells",
                       description="Runs every method x scenario x repetition of EXPERIMENT (a name from "
                                   "experiments/ or a .toml path) in random order. Give the same --out again to "
                                   "continue an interrupted run.")
    r.add_argument("experiment")
    size = r.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the short variant (the default)")
    size.add_argument("--full", action="store_true", help="the paper's durations and repetitions")
    r.add_argument("--repeat", type=int, help="repetitions of every cell (default: the variant's)")
    r.add_argument("--out", help="results directory (default runs/EXPERIMENT-VARIANT-TIME)")
    r.add_argument("--seed", type=int, help="seed of the cells' random order")
    r.add_argument("--methods", metavar="PATTERNS",
                   help="only these of the variant's methods: names or shell patterns, comma-separated "
                        "(parallel-1,parallel-1?); kept in run.json for a continuation")
    r.add_argument("--scenarios", metavar="PATTERNS", help="only these of the variant's scenarios, as --methods")
    tls_help = "the cluster's certificates (made by `braidlab scheduler`; default ~/.braidlab/cluster)"
    r.add_argument("--cluster", metavar="tls://HOST:8786",
                   help="measure the cells on a Dask cluster (one cell per machine at a time: workers started "
                        "with `braidlab worker`); the results land here as without it. Mutual TLS; a plain "
                        "tcp:// address only on loopback")
    r.add_argument("--tls-dir", help=tls_help)
    sch = sub.add_parser("scheduler", help="a Dask scheduler for `braidlab run --cluster`",
                         description="Runs Dask's scheduler behind mutual TLS: it makes a certificate authority "
                                     "and certificates for the scheduler, workers and clients in --tls-dir unless "
                                     "they are there. With a loopback --host only, plain TCP on that address.")
    sch.add_argument("--port", type=int, default=8786)
    sch.add_argument("--host", help="the address to listen on (default: every address, with TLS)")
    sch.add_argument("--tls-dir", help=tls_help)
    w = sub.add_parser("worker", help="join this machine to a cluster for `braidlab run --cluster`",
                       description="Runs a Dask worker with one thread and one unit of the resource 'testbed', "
                                   "so this machine measures one cell at a time. Needs root, and the cluster's "
                                   "certificates (a plain tcp:// scheduler only on loopback).")
    w.add_argument("scheduler", help="the scheduler's address, tls://HOST:8786")
    w.add_argument("--name", help="the worker's name (default: the host name)")
    w.add_argument("--tls-dir", help=tls_help)
    rep = sub.add_parser("report", help="markdown and HTML report of run directories",
                         description="Writes report.md and a self-contained report.html (figures inlined) from "
                                     "the results directories of `braidlab run`.")
    rep.add_argument("results", nargs="+", help="run directories")
    rep.add_argument("--out", help="where the report goes (default: RESULTS/report of the first)")
    rep.add_argument("--leave-out", action="append", metavar="DIR=METHOD[,METHOD...]",
                     help="leave these methods' cells of run DIR out of the pooled report (another run "
                          "measured them again, e.g. on a newer build); repeatable")
    rep.add_argument("--claims", choices=("recorded", "today"), default="recorded",
                     help="judge by the claims each run recorded when it was measured (default), or by "
                          "today's experiment file, with a table of the verdicts that changes")
    sc = sub.add_parser("sim-cells", help="a matrix experiment's cells as braid-sim's matrix example reads them",
                        description="Prints the cells of a matrix experiment (NAME KIND RTT_MS RATE_MBPS LINK...) "
                                    "for `BRAID_SIM_CELLS=FILE cargo run --release -p braid-sim --example matrix`: "
                                    "braid-sim on the laboratory's own paths.")
    sc.add_argument("experiment")
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
    p.add_argument("--run-dir", help="where the manifest, link stats and logs go (default: a new directory under /tmp, kept and named on stderr)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        from . import demo

        return demo.main(args)
    if args.cmd == "controls":
        from . import controls

        controls.run(seconds=args.seconds)
    elif args.cmd == "path":
        from . import path

        return path.main(args)
    elif args.cmd == "run":
        from . import runner

        return runner.main(args)
    elif args.cmd == "sim-cells":
        from . import experiment

        try:
            print("\n".join(experiment.sim_cells(experiment.load(args.experiment))))
        except experiment.ExperimentError as e:
            print(f"braidlab sim-cells: {e}", file=sys.stderr)
            return 2
    elif args.cmd == "report":
        from . import report

        return report.main(args)
    elif args.cmd in ("scheduler", "worker"):
        from . import cluster

        tls_dir = Path(args.tls_dir) if args.tls_dir else None
        if args.cmd == "scheduler":
            return cluster.scheduler_main(args.port, args.host, tls_dir)
        return cluster.worker_main(args.scheduler, args.name, tls_dir)
    elif args.cmd == "clean":
        removed = netns.clean()
        print(f"removed {len(removed)} stale namespace(s)" + (": " + " ".join(removed) if removed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
