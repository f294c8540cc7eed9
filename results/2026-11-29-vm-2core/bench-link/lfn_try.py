import json, sys, time
from braidlab import traffic
from braidlab.dumbbell import LinkPath
rate, mtu, limit, par, buf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
secs = 30
with LinkPath(f"rate {rate} delay 50ms limit {limit} loss random 0.001%", "delay 50ms", tag="blfn", cpu=0, mtu=mtu) as p:
    if buf != "host":
        for h in (p.senders[0], p.receivers[0]):
            h.ns.run("sysctl", "-qw", f"net.ipv4.tcp_rmem=4096 131072 {buf}", f"net.ipv4.tcp_wmem=4096 16384 {buf}")
    server = traffic.iperf3_server(p.receivers[0])
    r = traffic.parse_iperf3(traffic.iperf3_client(p.senders[0], p.RCV_ADDR, secs, cc="cubic", parallel=par).wait(secs + 60))
    server.wait(30)
    st = p.stats()
    c = st["ab"]["counters"]
    print(f"{rate} mtu {mtu} P{par} buf {buf}: {r.mbps:.0f} Mb/s retrans {r.retransmits}; link cpu {st['cpu_seconds']/st['seconds']:.2f} s/s late p99 {st['ab']['late_ns']['p99']/1e6:.3f} ms tx_err {st['ab']['tx_errors']} rx_drops {st['ab']['rx_kernel_drops']}")
    print({k: v for k, v in c.items() if not isinstance(v, (list, dict))})
