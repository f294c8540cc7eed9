"""The records braid prints, as the Rust side writes them (crates/braid/vectors/records.jsonl)."""

import dataclasses
import json

import pytest

from braidlab import records
from braidlab.braid import Trace
from braidlab.engine import Report
from braidlab.traffic import SinkReport, ping_report


def _lines() -> list[str]:
    return records.VECTORS.read_text().splitlines()


def test_every_record_braid_prints_is_read_by_a_dataclass():
    got = [records.parse(line) for line in _lines()]
    assert sorted(type(r).__name__ for r in got) == sorted(c.__name__ for c in records.TYPES.values())
    interval = next(r for r in got if isinstance(r, records.Interval))
    assert isinstance(interval.streams[0], records.StreamSample) and interval.streams[0].cwnd == 20
    trace = next(r for r in got if isinstance(r, records.TraceStream))
    assert trace.info.mss == 1448 and trace.settings.group_id == 7


def test_the_readers_take_each_tool_s_output_from_the_vectors():
    text = "\n".join(_lines())
    rep = Report.parse(text)
    assert rep.summary.mode == "combined-2" and rep.events[0].event == "stream_lost"
    assert rep.summary.streams[0].cc and rep.intervals[0].streams[0].cwnd == 20
    bins, summary = SinkReport.parse(text).only()
    assert bins[0].packets == 40 and summary.sent == 4000
    ping, rtts = ping_report(text)
    assert ping.median_ms == 68.3 and rtts[0].seq == 7
    t = Trace.parse(text)
    assert t.total.streams == 1 and t.summaries[0].settings.frac_cwnd is None and len(t.samples) == 1


def test_a_record_written_back_is_the_line_it_was_read_from():
    for line in _lines():
        assert records.to_json(records.parse(line)) == json.loads(line)


@pytest.mark.parametrize("change", ["missing", "extra", "version", "type"])
def test_a_record_that_does_not_match_its_dataclass_is_refused(change):
    rec = json.loads(next(l for l in _lines() if '"type":"ping"' in l))
    if change == "missing":
        del rec["p99_ms"]
    elif change == "extra":
        rec["jitter_ms"] = 1.0
    elif change == "version":
        rec["version"] = records.VERSION + 1
    else:
        rec["type"] = "pong"
    with pytest.raises(ValueError):
        records.parse(json.dumps(rec))


def test_a_trace_counts_each_streams_payload_from_the_time_asked():
    base = records.parse(next(l for l in _lines() if '"type":"trace_sample"' in l))

    def sample(t, stream, acked):
        return dataclasses.replace(base, t=t, stream=stream, info=dataclasses.replace(base.info, bytes_acked=acked))

    t = Trace(samples=[sample(0.5, 0, 0), sample(1.0, 0, 10**6), sample(2.0, 0, 3 * 10**6),
                       sample(0.5, 1, 0), sample(1.0, 1, 0), sample(2.0, 1, 10**6)])
    # From 1 s: stream 0 moved 2 MB and stream 1 1 MB in one second, 24 Mb/s in all.
    assert t.mbps_from(1.0) == pytest.approx(24.0)
    assert t.mbps_from(0.0) == pytest.approx(32.0 / 1.5)
    with pytest.raises(ValueError, match="fewer than two samples"):
        t.mbps_from(1.5)
