"""What else could set the 1 Gb/s p99 lateness: the receiving host's stack moved to the other core (RPS), each
mode once; and braid-link at nice -20 (a second script, same shape, os.setpriority on its pid). Output below."""
import sys
sys.path.insert(0, "benches")
import link
from braidlab.dumbbell import LinkPath
for rps in (False, True):
  for busy in (False, True):
    with LinkPath("rate 1000mbit delay 10ms limit 1000", "delay 10ms", tag="bstl", cpu=0, busy_wait=busy) as p:
        if rps:
            p.rcv.run("sh", "-c", "echo 2 > /sys/class/net/eth0/queues/rx-0/rps_cpus")
            got = p.rcv.run("cat", "/sys/class/net/eth0/queues/rx-0/rps_cpus").strip()
        udp = link._udp(p, "1200M", 8)
        st = p.stats()
    print("rps", rps and got, "busy" if busy else "sleep", "late p50/p99 us", st["ab"]["late_ns"]["p50"]/1e3, st["ab"]["late_ns"]["p99"]/1e3, "max ms", st["ab"]["late_ns"]["max"]/1e6, "got Mb/s", round(udp["received_gbps"]*1e3,1), "cpu", round(st["cpu_seconds"]/st["seconds"],2), flush=True)
