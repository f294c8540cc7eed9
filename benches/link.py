"""braid-link's forwarding benchmark: prints figures, asserts nothing.

    make bench-link        (or: .venv/bin/python benches/link.py [--also OTHER-BRAID-LINK])

With --also, every figure is measured for that braid-link too, in the same run (a
build from before a change, beside this one).

1. Forwarding ceiling: braid-link with no rate, delay or loss between two
   namespaces; iperf3 UDP datagrams that fill the MTU (1514-byte frames at MTU
   1500, 9014 at MTU 9000) offered without limit, and one TCP stream. What the receiver got is
   the forwarding throughput: the hosts' stacks and braid-link together, on two cores.
   braid-link's own ceiling: frames offered faster than it forwards them by
   crates/braid-traffic/examples/flood.rs on the other core (injected into the router's
   interface by the kernel at MTU 1500, sent from the sending host's at 9000), addressed so
   that the receiving host drops each at its first check; what braid-link sent is its ceiling.
2. Delay error: braid-link's release lateness (how long after its due time
   each frame left) at 100 Mb/s up to 1.2 Gb/s, with a 10 ms delay line and
   UDP offered at 1.2x the rate ("offered": what iperf3 managed to send, of the rate; below
   1x the link had less to send than its rate); "link held" is what braid-link sent over the test's
   middle against the configured rate, the goodput what the receiving iperf3 got of
   the payload rate (with a 4 MiB socket buffer; what a busy receiving host drops after
   the link is the host's). Twice: braid-link sleeping until each frame is due (as the
   laboratory runs it), and with --busy-wait (polling when a frame is due sooner than
   the machine wakes); beside them, how late the machine woke braid-link from its timed
   sleeps, and how long the hypervisor held braid-link's core for others ("stolen", from
   /proc/stat). Lateness swings with a VM's neighbours, so the table runs --repeat times
   (default 3) and ends with each row's median and range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from braidlab import traffic
from braidlab.dumbbell import LinkPath

SECONDS = 8
# 100 Mb/s (the papers' paths) up to past the 1 Gb/s target.
RATES = (100, 500, 1000, 1200)
FRAME = 1514
# braid-link runs on LINK_CPU and the load (iperf3 at both ends, the frame source) on LOAD_CPU,
# so that neither takes the other's core and braid-link's lateness is its own.
LINK_CPU, LOAD_CPU = 0, 1
# The receiving socket's buffer in the lateness tests (iperf3 -w, capped by net.core.rmem_max).
RECV_BUFFER = "4M"
# braid-link's departures are counted between these seconds of each lateness test.
HELD_BETWEEN = (2.0, SECONDS - 1.0)


def _udp(path, rate: str, seconds: float, length: int = 1472, buffer: str | None = None,
         sample_at: tuple[float, ...] = ()) -> dict:
    """One iperf3 UDP test; braid-link's counters read `sample_at` seconds into it (with when)."""
    server = traffic.iperf3_server(path.receivers[0], cpu=LOAD_CPU)
    client = traffic.iperf3_client(path.senders[0], path.RCV_ADDR, seconds, udp_rate=rate, length=length,
                                   cpu=LOAD_CPU, buffer=buffer)
    samples = path.counters_at(time.monotonic(), sample_at)
    s = json.loads(client.wait(seconds + 30))["end"]["sum"]
    server.wait(30)
    delivered = s["packets"] - s["lost_packets"]
    return {"received_gbps": delivered * length * 8 / s["seconds"] / 1e9,
            "offered_gbps": s["bits_per_second"] / 1e9, "lost_percent": s["lost_percent"], "samples": samples}


def _tcp(path, seconds: float) -> float:
    server = traffic.iperf3_server(path.receivers[0], cpu=LOAD_CPU)
    r = traffic.parse_iperf3(traffic.iperf3_client(path.senders[0], path.RCV_ADDR, seconds, cc="cubic",
                                                   cpu=LOAD_CPU).wait(seconds + 30))
    server.wait(30)
    return r.mbps / 1e3


def _late(stats: dict) -> dict:
    late = stats["ab"]["late_ns"]
    return {k: late[k] / 1e6 for k in ("p50", "p99", "max")}


def ceiling(mtu: int = 1500) -> dict:
    # A UDP datagram that fills the MTU: 28 bytes of IP and UDP headers, 14 of Ethernet.
    length, frame = mtu - 28, mtu + 14
    with LinkPath("", "", tag="bfwd", cpu=LINK_CPU, mtu=mtu) as p:
        udp = _udp(p, "0", SECONDS, length)
        tcp = _tcp(p, SECONDS)
        st = p.stats()
    frames = udp["received_gbps"] * 1e9 / (length * 8)
    return {"mtu": mtu, "udp_goodput_gbps": round(udp["received_gbps"], 3),
            "udp_offered_gbps": round(udp["offered_gbps"], 3), "frames_per_s": round(frames),
            "wire_gbps": round(frames * frame * 8 / 1e9, 3), "tcp_cubic_gbps": round(tcp, 3),
            "link_cpu_s_per_s": round(st["cpu_seconds"] / st["seconds"], 2)}


def flood_binary() -> Path:
    """The frame source, built beside braid (cargo build --release -p braid-traffic --example flood): the
    same source for every braid-link measured, --also's included."""
    from braidlab.braid import binary
    return Path(binary()).parent / "examples" / "flood"


def ceiling_alone(mtu: int = 1500, seconds: float = SECONDS) -> dict:
    flood = flood_binary()
    if not flood.exists():
        raise SystemExit(f"{flood} is missing: cargo build --release -p braid-traffic --example flood")
    frame = mtu + 14
    # The kernel injects frames up to a page into the router's interface; larger ones are sent
    # from the sending host's (examples/flood.rs says why).
    via = "xdp" if frame <= 3000 else "packet"
    with LinkPath("", "", tag="bfld", cpu=LINK_CPU, mtu=mtu) as p:
        where, dev = (p.rtr, "r0") if via == "xdp" else (p.snd, "eth0")
        src = where.popen([str(flood), "--dev", dev, "--via", via, "--seconds", str(seconds + 2),
                           "--len", str(frame), "--cpu", str(LOAD_CPU)], log=p.run_dir / "flood.out")
        # A second for the rings to fill, then braid-link's counters over `seconds`.
        time.sleep(1)
        a = p.stats()
        time.sleep(seconds)
        b = p.stats()
        if src.wait(seconds + 30) != 0:
            raise RuntimeError(f"flood failed: {(p.run_dir / 'flood.out.err').read_text().strip()}")
        offered = json.loads((p.run_dir / "flood.out").read_text())
    dt = b["seconds"] - a["seconds"]
    sent = b["ab"]["counters"]["departed"] - a["ab"]["counters"]["departed"]
    cpu = b["cpu_seconds"] - a["cpu_seconds"]
    fps = sent / dt
    return {"mtu": mtu, "via": via, "offered_frames_per_s": offered["frames_per_s"], "frames_per_s": round(fps),
            "wire_gbps": round(fps * frame * 8 / 1e9, 3),
            # A build from before the drops were counted has no such field.
            "overruns_per_s": round((b["ab"]["rx_kernel_drops"] - a["ab"]["rx_kernel_drops"]) / dt)
            if "rx_kernel_drops" in b["ab"] else None,
            "tx_errors": b["ab"]["tx_errors"] - a["ab"]["tx_errors"],
            "link_cpu_s_per_s": round(cpu / dt, 2), "cpu_us_per_frame": round(cpu / sent * 1e6, 2) if sent else None}


def stolen_ms(cpu: int) -> float:
    """The time the hypervisor has run something else while `cpu` had work (the steal column of
    /proc/stat, in the kernel's clock ticks): a VM's own figure for how long its neighbours held it."""
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0] == f"cpu{cpu}":
            return int(f[8]) * 1e3 / os.sysconf("SC_CLK_TCK")
    raise RuntimeError(f"/proc/stat has no line for cpu{cpu}")


def delay_error(rate_mbit: float, busy_wait: bool = False) -> dict:
    # The receiver asks for a socket buffer of RECV_BUFFER: at a gigabit the default (208 KiB) holds
    # about 2 ms of datagrams, less than the receiving host may be kept from reading on a busy
    # machine, and what it drops there is the host's, not the link's.
    with LinkPath(f"rate {rate_mbit}mbit delay 10ms limit 1000", "delay 10ms", tag="bdly", cpu=LINK_CPU,
                  busy_wait=busy_wait) as p:
        stolen = stolen_ms(LINK_CPU)
        udp = _udp(p, f"{rate_mbit * 1.2}M", SECONDS, buffer=RECV_BUFFER, sample_at=HELD_BETWEEN)
        st = p.stats()
        stolen = stolen_ms(LINK_CPU) - stolen
    late = _late(st)
    c = st["ab"]["counters"]
    (t0, c0), (t1, c1) = udp["samples"]
    # The link's own rate over the test's middle, away from the start and the end.
    held = (c1["departed_bytes"] - c0["departed_bytes"]) * 8 / (t1 - t0) / 1e6
    # A build from before braid-link measured its wakes has no such field.
    woke = st.get("wake_late_ns", {})
    return {"rate_mbit": rate_mbit, "busy_wait": busy_wait, "late_p50_ms": round(late["p50"], 4),
            "late_p99_ms": round(late["p99"], 4), "late_max_ms": round(late["max"], 3),
            "delivered_goodput_mbit": round(udp["received_gbps"] * 1e3, 1),
            "offered_mbit": round(udp["offered_gbps"] * 1e3, 1),
            "frames": c["departed"], "link_mbit_held": round(held, 1),
            "wake_late_p50_ms": woke["p50"] / 1e6 if woke else None,
            "wake_late_p99_ms": woke["p99"] / 1e6 if woke else None,
            "link_cpu_s_per_s": round(st["cpu_seconds"] / st["seconds"], 2), "stolen_ms": round(stolen)}


def _has_busy_wait(binary: str) -> bool:
    """Whether this braid-link can poll instead of sleeping (a build from before cannot)."""
    return "--busy-wait" in subprocess.run([binary, "--help"], capture_output=True, text=True).stdout


def lateness(label: str, repeat: int) -> list[dict]:
    """The lateness table, each rate and mode `repeat` times (one round after the other: a VM's
    neighbours change from minute to minute, and a run says more beside its repetitions)."""
    print(f"{'rate':>10} {'wait':>6} {'late p50':>10} {'late p99':>10} {'late max':>10} {'offered':>8} {'link held':>10} "
          f"{'goodput':>12} {'of payload':>11} {'woke p50':>10} {'woke p99':>10} {'CPU':>6} {'stolen':>8}")
    rows = []
    modes = (False, True) if _has_busy_wait(label) else (False,)
    for _ in range(repeat):
        for busy in modes:
            for rate in RATES:
                r = delay_error(rate, busy)
                rows.append(r)
                share = r["delivered_goodput_mbit"] / (rate * 1472 / FRAME)
                woke = (f"{r['wake_late_p50_ms']:>8.4f}ms {r['wake_late_p99_ms']:>8.4f}ms"
                        if r["wake_late_p50_ms"] is not None else f"{'-':>10} {'-':>10}")
                print(f"{rate:>6.0f}Mb/s {'poll' if busy else 'sleep':>6} {r['late_p50_ms']:>8.4f}ms "
                      f"{r['late_p99_ms']:>8.4f}ms {r['late_max_ms']:>8.3f}ms {r['offered_mbit'] / rate:>7.2f}x "
                      f"{100 * r['link_mbit_held'] / rate:>9.1f}% "
                      f"{r['delivered_goodput_mbit']:>8.1f}Mb/s {100 * share:>10.1f}% {woke} "
                      f"{r['link_cpu_s_per_s']:>6.2f} {r['stolen_ms']:>6.0f}ms", flush=True)
    if repeat > 1:
        print(f"over {repeat} runs: {'rate':>10} {'wait':>6} {'late p99 median':>16} {'range':>20} "
              f"{'link held, least':>17}")
        for busy in modes:
            for rate in RATES:
                these = [r for r in rows if r["rate_mbit"] == rate and r["busy_wait"] == busy]
                p99 = sorted(r["late_p99_ms"] for r in these)
                held = min(r["link_mbit_held"] for r in these) / rate
                print(f"{'':>10}{rate:>6.0f}Mb/s {'poll' if busy else 'sleep':>6} {statistics.median(p99):>14.4f}ms "
                      f"{p99[0]:>8.4f}-{p99[-1]:.4f}ms {100 * held:>16.1f}%", flush=True)
    return rows


def measure(label: str, repeat: int = 1, lateness_only: bool = False) -> dict:
    print(f"braid-link benchmark: {label} (braid-link pinned to CPU {LINK_CPU}, the load to CPU {LOAD_CPU})",
          flush=True)
    tops, alone = [], []
    if not lateness_only:
        tops = [ceiling(mtu) for mtu in (1500, 9000)]
        for top in tops:
            print(f"forwarding ceiling, MTU {top['mtu']}: UDP {top['udp_goodput_gbps']} Gb/s goodput = "
                  f"{top['wire_gbps']} Gb/s of frames ({top['frames_per_s']} frames/s); one cubic TCP stream "
                  f"{top['tcp_cubic_gbps']} Gb/s; braid-link CPU {top['link_cpu_s_per_s']} s/s", flush=True)
        alone = [ceiling_alone(mtu) for mtu in (1500, 9000)]
        for top in alone:
            print(f"braid-link's own ceiling, MTU {top['mtu']} (frames by {top['via']}): {top['frames_per_s']} "
                  f"frames/s = {top['wire_gbps']} Gb/s of frames ({top['offered_frames_per_s']:.0f} offered, "
                  f"{top['overruns_per_s']} a second overran its ring); braid-link CPU {top['link_cpu_s_per_s']} "
                  f"s/s, {top['cpu_us_per_frame']} us a frame", flush=True)
    rows = lateness(label, repeat)
    return {"benchmark": "braid-link", "binary": label, "ceiling": tops, "ceiling_alone": alone, "delay_error": rows,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--also", help="another braid-link binary, measured the same way in the same run")
    ap.add_argument("--repeat", type=int, default=3, metavar="K",
                    help="the lateness table K times, with each figure's median and range (default 3)")
    ap.add_argument("--lateness-only", action="store_true", help="the lateness table alone, not the ceilings")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error(f"--repeat must be at least 1, not {a.repeat}")
    from braidlab.dumbbell import link_binary
    runs = [(link_binary(), None)] + ([(a.also, a.also)] if a.also else [])
    for label, override in runs:
        if override:
            os.environ["BRAID_LINK_BIN"] = override
        print(json.dumps(measure(label, a.repeat, a.lateness_only)), flush=True)
        os.environ.pop("BRAID_LINK_BIN", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
