"""`braidlab path`: an emulated path built by hand around one command.

    braidlab path --rate 100mbit --delay 34ms --loss 0.01% --server "iperf3 -s" -- iperf3 -c {peer} -t 10

builds sender -> braid-link -> receiver, runs the server (if any) on the
receiver and the command on the sender with `{peer}` (and $BRAID_PEER) set
to the receiver's address, prints the link's counters, and removes it all.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time

from .dumbbell import LinkPath


def specs(rate: str | None, delay: str | None, loss: str | None, limit: str | None,
          extra: str | None, reverse_rate: str | None) -> tuple[str, str]:
    """braid-link specs for the forward (sender->receiver) and reverse directions."""
    fwd, rev = [], []
    if rate:
        fwd.append(f"rate {rate}")
    if reverse_rate:
        rev.append(f"rate {reverse_rate}")
    if delay:
        fwd.append(f"delay {delay}")
        rev.append(f"delay {delay}")
    if limit:
        fwd.append(f"limit {limit}")
    if loss:
        fwd.append(f"loss random {loss}")
    if extra:
        fwd.append(extra)
    return " ".join(fwd), " ".join(rev)


def main(args) -> int:
    if not args.command:
        print("braidlab path: give the command to run after --", file=sys.stderr)
        return 2
    command = args.command[1:] if args.command[0] == "--" else args.command
    forward, reverse = specs(args.rate, args.delay, args.loss, args.limit, args.spec, args.reverse_rate)
    # The run directory is named to the user, so it outlives the path.
    run_dir = args.run_dir or tempfile.mkdtemp(prefix="braidlab-path-")
    with LinkPath(forward, reverse, tag="cli", run_dir=run_dir) as p:
        peer = p.RCV_ADDR
        print(f"braidlab path: {p.SND_ADDR} -> [{forward}] -> {peer}, back [{reverse or 'unlimited'}]; "
              f"run directory {p.run_dir}", file=sys.stderr)
        server = None
        if args.server:
            server = p.receivers[0].popen(shlex.split(args.server.replace("{peer}", peer)), name="server")
            time.sleep(0.3)
        argv = [a.replace("{peer}", peer) for a in command]
        env = dict(os.environ, BRAID_PEER=peer)
        code = subprocess.run(p.snd.argv(*argv), env=env).returncode
        if server is not None and server.poll() is not None and server.returncode != 0:
            print(f"braidlab path: the server exited {server.returncode}; see {p.run_dir}/rcv0-server.out.err",
                  file=sys.stderr)
        stats = p.stats()
        for name, key in (("forward", "ab"), ("reverse", "ba")):
            c = stats[key]["counters"]
            print(f"braidlab path: {name}: " + ", ".join(f"{k} {v}" for k, v in c.items()
                                                           if isinstance(v, int)), file=sys.stderr)
    return code
