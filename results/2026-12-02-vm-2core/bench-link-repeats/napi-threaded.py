"""Does moving the receiving host's stack off braid-link's core (veth NAPI, threaded, pinned to the
load's core) shorten braid-link's lateness at 1 Gb/s? Run from the repository's root as root:
.venv/bin/python results/2026-12-02-vm-2core/bench-link-repeats/napi-threaded.py [ROUNDS]"""
import json, subprocess, sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "benches"))
from link import _udp, _late, LINK_CPU, LOAD_CPU, SECONDS
from braidlab.dumbbell import LinkPath

def napi_threaded(p):
    p.rcv.run("ethtool", "-K", "eth0", "gro", "on", "rx-udp-gro-forwarding", "on", "rx-gro-list", "on")
    p.rcv.run("sh", "-c", "echo 1 > /sys/class/net/eth0/threaded")
    time.sleep(0.2)
    out = subprocess.run(["pgrep", "-f", "napi/eth0"], capture_output=True, text=True).stdout.split()
    for pid in out:
        subprocess.run(["taskset", "-p", "-c", str(LOAD_CPU), pid], capture_output=True)
    return out

def one(rate, mode):
    with LinkPath(f"rate {rate}mbit delay 10ms limit 1000", "delay 10ms", tag="bnap", cpu=LINK_CPU) as p:
        pids = napi_threaded(p) if mode == "napi" else []
        udp = _udp(p, f"{rate * 1.2}M", SECONDS)
        st = p.stats()
        if mode == "napi":
            stat = p.rcv.run("sh", "-c", "ethtool -S eth0 | grep -i xdp_packets | head -3; cat /sys/class/net/eth0/threaded")
        else:
            stat = ""
    late = _late(st)
    c = st["ab"]["counters"]
    wire = c["departed_bytes"] * 8 / st["seconds"] / 1e6
    woke = st.get("wake_late_ns", {})
    print(f"{rate} {mode:5} late p50 {late['p50']:.4f} p99 {late['p99']:.4f} max {late['max']:.3f} "
          f"goodput {udp['received_gbps']*1e3:.1f} of {rate*1472/1514:.1f} woke p99 {woke.get('p99',0)/1e6:.4f} "
          f"link {wire:.1f} cpu {st['cpu_seconds']/st['seconds']:.2f} napi {pids} {stat.strip()!r}", flush=True)

for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
    for mode in ("base", "napi"):
        one(1000, mode)
