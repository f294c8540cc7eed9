import json
from pathlib import Path

import pytest

from braidlab import records, traffic

HERE = Path(__file__).parent


def test_iperf3_parsed_from_captured_output():
    # iperf3 -c 127.0.0.1 -t 1 -P 2 -C reno -J, intervals trimmed.
    r = traffic.parse_iperf3((HERE / "iperf3_tcp_p2.json").read_text())
    assert r.received_bytes == 6379274240
    assert r.cc == "reno"
    assert r.retransmits == 1
    assert [s["bytes"] for s in r.streams] == [3188981760, 3190292480]
    assert sum(s["retransmits"] for s in r.streams) == r.retransmits
    assert r.mbps == pytest.approx(6379274240 * 8 / r.seconds / 1e6)


def test_iperf3_error_is_raised():
    with pytest.raises(RuntimeError, match="unable to connect"):
        traffic.parse_iperf3(json.dumps({"start": {}, "intervals": [], "end": {},
                                         "error": "unable to connect to server: Connection refused"}))


def test_sink_report_groups_by_flow():
    text = "\n".join(json.dumps(r) for r in [
        {"type": "sink_interval", "version": records.VERSION, "flow": "a/0", "t": 0.1, "packets": 2, "bytes": 20, "lost": 0,
         "mbps": 1.0},
        {"type": "sink_interval", "version": records.VERSION, "flow": "a/0", "t": 0.0, "packets": 1, "bytes": 10, "lost": 1,
         "mbps": 0.5},
        {"type": "sink_summary", "version": records.VERSION, "flow": "a/0", "packets": 3, "bytes": 30, "lost": 1, "reordered": 0,
         "sent": 4, "loss_ratio": 0.25},
    ])
    r = traffic.SinkReport.parse("braid traffic sink: listening\n" + text)
    bins, summary = r.only()
    assert [b.t for b in bins] == [0.0, 0.1]
    assert summary.loss_ratio == 0.25


def test_ping_report_needs_a_summary():
    rtt = json.dumps({"type": "rtt", "version": records.VERSION, "seq": 0, "t": 0, "rtt_ms": 1.0})
    with pytest.raises(ValueError):
        traffic.ping_report(rtt)
    ping = json.dumps({"type": "ping", "version": records.VERSION, "target": "10.0.0.2", "interval_ms": 10.0, "size": 1440,
                       "sent": 1, "received": 1, "lost": 0, "reordered": 0, "late_sends": 0, "min_ms": 1.0,
                       "median_ms": 1.0, "p99_ms": 1.0, "max_ms": 1.0, "mean_ms": 1.0})
    s, samples = traffic.ping_report(rtt + "\n" + ping)
    assert s.received == 1 and samples[0].rtt_ms == 1.0


def test_proc_net_counters_parsed():
    text = ("TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPTimeouts\n"
            "TcpExt: 0 2 5 1\n"
            "IpExt: InNoRoutes\nIpExt: 3\n")
    got = traffic.parse_proc_net(text)
    assert got["TcpExt"]["TCPSackRecovery"] == 5 and got["IpExt"] == {"InNoRoutes": 3}
    with pytest.raises(ValueError, match="unpaired"):
        traffic.parse_proc_net("TcpExt: A B\nIpExt: 1 2\n")
