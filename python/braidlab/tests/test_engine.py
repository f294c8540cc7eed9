import json

import pytest

from braidlab.engine import Method, Report


def test_methods_say_which_control_each_stream_gets():
    assert Method("combined", 3, virtual_rtt=10).controls() == ["reno", "braid_frac", "braid_frac"]
    assert Method("tcpp", 2, strength=1).controls() == ["braid_tcpp", "braid_tcpp"]
    assert Method("parallel", 2, cc="cubic").controls() == ["cubic", "cubic"]
    assert Method("single", 5).controls() == [None]
    assert Method("combined", 9, virtual_rtt=100).argv() == ["--mode", "combined", "-n", "9", "--virtual-rtt", "100"]


def test_report_reads_intervals_and_summary_and_refuses_other_versions():
    lines = [
        json.dumps({"type": "interval", "version": 1, "t": 1.0, "bytes": 10, "mbps": 1.0, "streams": []}),
        "braid: stream 1 lost; reconnecting",
        json.dumps({"type": "summary", "version": 1, "bytes": 10, "streams": [{"cc": "reno"}]}),
    ]
    r = Report.parse("\n".join(lines))
    assert len(r.intervals) == 1 and r.summary["bytes"] == 10 and r.controls == ["reno"]
    with pytest.raises(ValueError, match="version 2"):
        Report.parse(json.dumps({"type": "summary", "version": 2}))


def test_report_keeps_stream_events_apart():
    from braidlab.engine import Report

    text = "\n".join([
        '{"type":"interval","version":1,"t":1.0,"bytes":10,"mbps":1.0,"streams":[]}',
        '{"type":"event","version":1,"event":"stream_lost","stream":2,"reason":"reset"}',
        '{"type":"event","version":1,"event":"stream_redialled","stream":2,"reason":"reset"}',
        '{"type":"summary","version":1,"streams":[]}',
    ])
    r = Report.parse(text)
    assert [e["event"] for e in r.events] == ["stream_lost", "stream_redialled"]
    assert len(r.intervals) == 1 and r.summary is not None
