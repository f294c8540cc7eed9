"""braid-link's forwarding benchmark: prints figures, asserts nothing.

    make bench-link        (or: .venv/bin/python benches/link.py [--also OTHER-BRAID-LINK])

With --also, every figure is measured for that braid-link too, in the same run (a
build from before a change, beside this one).

1. Forwarding ceiling: braid-link with no rate, delay or loss between two
   namespaces; iperf3 UDP datagrams that fill the MTU (1514-byte frames at MTU
   1500, 9014 at MTU 9000) offered without limit, and one TCP stream. What the receiver got is
   the forwarding throughput.
2. Delay error: braid-link's release lateness (how long after its due time
   each frame left) at 100 Mb/s up to 1.2 Gb/s, with a 10 ms delay line and
   UDP offered at 1.2x the rate; the goodput column shows whether the rate
   was sustained (100 % = every frame the configured rate allows).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from braidlab import traffic
from braidlab.dumbbell import LinkPath

SECONDS = 8
# 100 Mb/s (the papers' paths) up to past the 1 Gb/s target.
RATES = (100, 500, 1000, 1200)
FRAME = 1514


def _udp(path, rate: str, seconds: float, length: int = 1472) -> dict:
    server = traffic.iperf3_server(path.receivers[0])
    client = traffic.iperf3_client(path.senders[0], path.RCV_ADDR, seconds, udp_rate=rate, length=length)
    s = json.loads(client.wait(seconds + 30))["end"]["sum"]
    server.wait(30)
    delivered = s["packets"] - s["lost_packets"]
    return {"received_gbps": delivered * length * 8 / s["seconds"] / 1e9,
            "offered_gbps": s["bits_per_second"] / 1e9, "lost_percent": s["lost_percent"]}


def _tcp(path, seconds: float) -> float:
    server = traffic.iperf3_server(path.receivers[0])
    r = traffic.parse_iperf3(traffic.iperf3_client(path.senders[0], path.RCV_ADDR, seconds, cc="cubic").wait(seconds + 30))
    server.wait(30)
    return r.mbps / 1e3


def _late(stats: dict) -> dict:
    late = stats["ab"]["late_ns"]
    return {k: late[k] / 1e6 for k in ("p50", "p99", "max")}


def ceiling(mtu: int = 1500) -> dict:
    # A UDP datagram that fills the MTU: 28 bytes of IP and UDP headers, 14 of Ethernet.
    length, frame = mtu - 28, mtu + 14
    with LinkPath("", "", tag="bfwd", cpu=0, mtu=mtu) as p:
        udp = _udp(p, "0", SECONDS, length)
        tcp = _tcp(p, SECONDS)
        st = p.stats()
    frames = udp["received_gbps"] * 1e9 / (length * 8)
    return {"mtu": mtu, "udp_goodput_gbps": round(udp["received_gbps"], 3),
            "udp_offered_gbps": round(udp["offered_gbps"], 3), "frames_per_s": round(frames),
            "wire_gbps": round(frames * frame * 8 / 1e9, 3), "tcp_cubic_gbps": round(tcp, 3),
            "link_cpu_s_per_s": round(st["cpu_seconds"] / st["seconds"], 2)}


def delay_error(rate_mbit: float) -> dict:
    with LinkPath(f"rate {rate_mbit}mbit delay 10ms limit 1000", "delay 10ms", tag="bdly", cpu=0) as p:
        udp = _udp(p, f"{rate_mbit * 1.2}M", SECONDS)
        st = p.stats()
    late = _late(st)
    c = st["ab"]["counters"]
    wire = c["departed_bytes"] * 8 / st["seconds"] / 1e6
    return {"rate_mbit": rate_mbit, "late_p50_ms": round(late["p50"], 4), "late_p99_ms": round(late["p99"], 4),
            "late_max_ms": round(late["max"], 3), "delivered_goodput_mbit": round(udp["received_gbps"] * 1e3, 1),
            "frames": c["departed"], "link_wire_mbit_avg": round(wire, 1)}


def measure(label: str) -> dict:
    print(f"braid-link benchmark: {label} (braid-link pinned to CPU 0)", flush=True)
    tops = [ceiling(mtu) for mtu in (1500, 9000)]
    for top in tops:
        print(f"forwarding ceiling, MTU {top['mtu']}: UDP {top['udp_goodput_gbps']} Gb/s goodput = "
              f"{top['wire_gbps']} Gb/s of frames ({top['frames_per_s']} frames/s); one cubic TCP stream "
              f"{top['tcp_cubic_gbps']} Gb/s; braid-link CPU {top['link_cpu_s_per_s']} s/s", flush=True)
    print(f"{'rate':>10} {'late p50':>10} {'late p99':>10} {'late max':>10} {'goodput':>12} {'of payload rate':>16}")
    rows = []
    for rate in RATES:
        r = delay_error(rate)
        rows.append(r)
        share = r["delivered_goodput_mbit"] / (rate * 1472 / FRAME)
        print(f"{rate:>6.0f}Mb/s {r['late_p50_ms']:>8.4f}ms {r['late_p99_ms']:>8.4f}ms "
              f"{r['late_max_ms']:>8.3f}ms {r['delivered_goodput_mbit']:>8.1f}Mb/s {100 * share:>15.1f}%", flush=True)
    return {"benchmark": "braid-link", "binary": label, "ceiling": tops, "delay_error": rows,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--also", help="another braid-link binary, measured the same way in the same run")
    a = ap.parse_args()
    from braidlab.dumbbell import link_binary
    runs = [(link_binary(), None)] + ([(a.also, a.also)] if a.also else [])
    for label, override in runs:
        if override:
            os.environ["BRAID_LINK_BIN"] = override
        print(json.dumps(measure(label)), flush=True)
        os.environ.pop("BRAID_LINK_BIN", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
