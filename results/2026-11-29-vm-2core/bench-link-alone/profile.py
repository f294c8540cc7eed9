"""perf profile of braid-link's core at its own ceiling (flood on CPU 1)."""
import subprocess, sys, time
sys.path.insert(0, "benches")
from link import flood_binary
from braidlab.dumbbell import LinkPath

mtu = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
frame = mtu + 14
via = "xdp" if frame <= 3000 else "packet"
with LinkPath("", "", tag="bprf", cpu=0, mtu=mtu) as p:
    where, dev = (p.rtr, "r0") if via == "xdp" else (p.snd, "eth0")
    src = where.popen([str(flood_binary()), "--dev", dev, "--via", via, "--seconds", "9", "--len", str(frame), "--cpu", "1"],
                      log=p.run_dir / "flood.out")
    time.sleep(1)
    a = p.stats()
    subprocess.run(["perf", "record", "-g", "-e", "cpu-clock", "-C", sys.argv[2] if len(sys.argv) > 2 else "0", "-o", f"/tmp/perf-alone-{mtu}.data", "--", "sleep", "5"],
                   check=True, capture_output=True)
    b = p.stats()
    src.wait(30)
    print((p.run_dir / "flood.out").read_text())
dt = b["seconds"] - a["seconds"]
print("forwarded/s", (b["ab"]["counters"]["departed"] - a["ab"]["counters"]["departed"]) / dt,
      "cpu s/s", (b["cpu_seconds"] - a["cpu_seconds"]) / dt,
      "overruns/s", (b["ab"]["rx_kernel_drops"] - a["ab"]["rx_kernel_drops"]) / dt)
