import json, sys, time
sys.path.insert(0, "benches")
from link import flood_binary
from braidlab.dumbbell import LinkPath
mtu = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
frame = mtu + 14
via = "xdp" if frame <= 3000 else "packet"
def rx(p):
    j = json.loads(p.rcv.run("ip", "-s", "-j", "link", "show", "eth0"))
    return j[0]["stats64"]["rx"]["packets"]
with LinkPath("", "", tag="bchk", cpu=0, mtu=mtu) as p:
    where, dev = (p.rtr, "r0") if via == "xdp" else (p.snd, "eth0")
    src = where.popen([str(flood_binary()), "--dev", dev, "--via", via, "--seconds", "7", "--len", str(frame), "--cpu", "1"], log=p.run_dir / "flood.out")
    time.sleep(1)
    a, ra, ta = p.stats(), rx(p), time.monotonic()
    time.sleep(5)
    b, rb, tb = p.stats(), rx(p), time.monotonic()
    src.wait(30)
    print((p.run_dir / "flood.out").read_text().strip())
    print("rcv0 eth0 rx/s", (rb - ra) / (tb - ta))
dt = b["seconds"] - a["seconds"]
print("departed/s", (b["ab"]["counters"]["departed"] - a["ab"]["counters"]["departed"]) / dt, "tx_errors", b["ab"]["tx_errors"] - a["ab"]["tx_errors"],
      "cpu", (b["cpu_seconds"] - a["cpu_seconds"]) / dt, "overruns/s", (b["ab"]["rx_kernel_drops"] - a["ab"]["rx_kernel_drops"]) / dt)
print(json.dumps(b["ab"]["counters"])[:600])
