"""`braidlab controls`: braid's congestion controls at work on a namespace path.

Every control sends for a few seconds through the same 20 Mb/s bottleneck;
it prints each one's rate, retransmissions, window growth per ACK
(1 for Reno in congestion avoidance) and its congestion window over time,
then shows what TCP-P does to fairness: 4 TCP-P flows against 1 Reno flow,
beside 4 plain Reno flows against 1. Raw samples go to runs/controls-<time>/.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from . import braid, records
from .cwnd import growth_per_ack
from .spark import sparkline
from .testbed import Bottleneck, Line

METHODS = [
    # label, control, streams, per-socket options
    ("reno", "reno", 1, {}),
    ("cubic", "cubic", 1, {}),
    ("braid_stcp", "braid_stcp", 1, {}),
    ("braid_hstcp", "braid_hstcp", 1, {}),
    ("braid_htcp", "braid_htcp", 1, {}),
    ("braid_frac m=10", "braid_frac", 1, {"frac_cwnd": 100}),
    ("braid_tcpp n=4 k=1", "braid_tcpp", 4, {}),
]


def run(seconds: float = 6.0, fairness_seconds: float = 10.0, out_root: Path | None = None) -> Path:
    if os.geteuid() != 0:
        raise SystemExit("braidlab controls builds network namespaces and loads BPF: run it as root")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = (out_root or braid.ROOT / "runs") / f"controls-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    installed_here = not braid.cc_status()["installed"]
    braid.cc("install")
    try:
        bottleneck = Bottleneck(rate_mbit=20, queue_bytes=150_000)
        print(f"path: sender -> router -> receiver, tbf bottleneck {bottleneck.rate_mbit:g} Mb/s, "
              f"{bottleneck.queue_bytes // 1000} KB queue; {seconds:g} s per control\n")
        rows = []
        with Line(bottleneck, tag="ctl") as line:
            braid.start_sink(line.rcv)
            target = f"{line.RCV_ADDR}:{braid.SINK_PORT}"
            print(f"{'control':<20} {'Mb/s':>6} {'retx':>5} {'cwnd':>5} {'growth':>7}  cwnd over time (sum of streams)")
            for label, cc, n, opts in METHODS:
                p = line.snd.popen(braid.trace_argv(target, cc, streams=n, seconds=seconds, interval_ms=50, **opts))
                t = braid.finish(p, seconds + 30)
                (out / f"{cc}-{n}.jsonl").write_text(
                    "\n".join(json.dumps(records.to_json(r)) for r in [*t.samples, *t.summaries, t.total]) + "\n")
                per_t: dict[float, int] = {}
                for s in t.samples:
                    per_t[s.t] = per_t.get(s.t, 0) + s.info.cwnd
                cwnds = [per_t[k] for k in sorted(per_t)]
                g = growth_per_ack([s.info for s in t.stream(0)])
                row = {"control": label, "streams": n, "mbps": t.total.mbps, "retransmits": t.total.retransmits,
                       "mean_cwnd": round(sum(cwnds) / len(cwnds), 1) if cwnds else 0, "growth": g}
                rows.append(row)
                gtxt = f"{g:.3f}" if g is not None else "-"
                print(f"{label:<20} {row['mbps']:>6.1f} {row['retransmits']:>5} {row['mean_cwnd']:>5.0f} {gtxt:>7}  "
                      f"{sparkline(cwnds, 48)}")

            print(f"\nfairness, {fairness_seconds:g} s each: 4 streams against 1 Reno stream")
            fair = {}
            for cc in ("braid_tcpp", "reno"):
                group, reno = braid.share_against_reno(line.snd, target, cc, fairness_seconds)
                ratio = group / reno if reno else float("inf")
                fair[cc] = {"group_mbps": group, "reno_mbps": reno, "ratio": ratio}
                print(f"  4 x {cc:<11} {group:>6.1f} Mb/s   1 x reno {reno:>6.1f} Mb/s   ratio {ratio:.2f}")
            print("  (TCP-P with k = 1 aims at a ratio of 1; plain parallel streams take about 4)")
        (out / "summary.json").write_text(json.dumps({"bottleneck": vars(bottleneck), "controls": rows,
                                                      "fairness": fair}, indent=2) + "\n")
        print(f"\nraw samples and summary: {out}")
        print("growth = d(cwnd^2/2) per ACKed packet in congestion avoidance: 1 for Reno, 0.1 for braid_frac m=10")
    finally:
        if installed_here:
            braid.cc("uninstall")
    return out
