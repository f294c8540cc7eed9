import json

import pytest

from braidlab import records
from braidlab.engine import Method, Report


def test_methods_say_which_control_each_stream_gets():
    assert Method("combined", 3, virtual_rtt=10).controls() == ["reno", "braid_frac", "braid_frac"]
    assert Method("tcpp", 2, strength=1).controls() == ["braid_tcpp", "braid_tcpp"]
    assert Method("parallel", 2, cc="cubic").controls() == ["cubic", "cubic"]
    assert Method("single", 5).controls() == [None]
    assert Method("combined", 9, virtual_rtt=100).argv() == ["--mode", "combined", "-n", "9", "--virtual-rtt", "100"]
    # Auto steers streams of the host's default control: any count up to its most.
    auto = Method("auto", 3)
    assert auto.controls() == [None] * 3
    assert auto.matches(["cubic"]) and auto.matches(["cubic"] * 3) and not auto.matches(["cubic"] * 4)
    assert Method("auto", 9, strength=2).argv() == ["--mode", "auto", "-n", "9", "--fair-share", "2"]
    # Falcon searches 1..N streams of its control: any count up to N is its.
    falcon = Method("falcon", 16, cc="cubic")
    assert falcon.matches(["cubic"] * 5) and not falcon.matches(["cubic"] * 17) and not falcon.matches(["reno"])


def _vector(ty: str) -> dict:
    return next(r for r in map(json.loads, records.VECTORS.read_text().splitlines()) if r["type"] == ty)


def test_report_reads_intervals_and_summary_and_refuses_other_versions():
    summary = _vector("summary")
    lines = [json.dumps(_vector("interval")), "braid: stream 1 lost; reconnecting", json.dumps(summary)]
    r = Report.parse("\n".join(lines))
    assert len(r.intervals) == 1 and r.summary.bytes == summary["bytes"]
    assert r.controls == [s["cc"] for s in summary["streams"]]
    other = records.VERSION + 1
    with pytest.raises(ValueError, match=f"version {other}"):
        Report.parse(json.dumps({**summary, "version": other}))


def test_report_keeps_stream_events_apart():
    event = _vector("event")
    text = "\n".join([json.dumps(_vector("interval")), json.dumps({**event, "event": "stream_lost"}),
                      json.dumps(_vector("steer")),
                      json.dumps({**event, "event": "stream_redialled"}), json.dumps(_vector("summary"))])
    r = Report.parse(text)
    assert [e.event for e in r.events] == ["stream_lost", "stream_redialled"]
    assert [s.strength for s in r.steering] == [3.25]
    assert len(r.intervals) == 1 and r.summary is not None


def test_report_keeps_autos_phases_where_they_or_the_streams_change():
    steer = _vector("steer")
    at = lambda t, phase, streams: json.dumps({**steer, "t": t, "phase": phase, "streams": streams})
    text = "\n".join([at(0.1, "start", 2), at(0.2, "start", 2), at(1.0, "grow", 2), at(1.4, "grow", 4),
                      json.dumps({**steer, "t": 2.0, "phase": None}), at(4.4, "full", 4), at(4.5, "full", 4)])
    assert Report.parse(text).phases == [[0.1, "start", 2], [1.0, "grow", 2], [1.4, "grow", 4],
                                         [4.4, "full", 4]]
