import math

import pytest

from braidlab import claims, results
from braidlab.measured import MeasuredCell


def typed(c: dict) -> MeasuredCell:
    """A cell as results reads it from its file."""
    return MeasuredCell.from_json(c)


def cell(method="single", scenario="tcp-5", rep=0, streams=None, cross=None, udp=None, ping=None, cap=None,
         mtu=1500):
    streams = streams or [(0, "reno", 10_000_000, 100, 10_000)]
    return {
        "version": 1, "id": f"{scenario}.{method}.r{rep}", "scenario": scenario, "method": method, "rep": rep,
        "started": "2026-11-22T00:00:00+00:00", "seconds": 10, "offset": 2.0, "mtu": mtu, "timestamps": True,
        "rate_bps": 100e6, "rtt_s": 0.068, "omit": 0, "sender_tcp": {},
        "setting": {"mode": "parallel", "streams": len(streams), "cc": "reno", "virtual_rtt": None,
                    "strength": None},
        "bench": {"seconds": 10.0, "bytes": sum(s[2] for s in streams) + 999, "peer_bytes": sum(s[2] for s in streams),
                  "mbps": 0, "retransmits": sum(s[3] for s in streams), "data_segs_out": sum(s[4] for s in streams),
                  "loss_ratio": sum(s[3] for s in streams) / sum(s[4] for s in streams), "cpu_seconds": 0.1},
        "streams": [{"stream": i, "cc": cc, "bytes": b, "mbps": b * 8 / 10 / 1e6, "retransmits": r,
                     "data_segs_out": n, "connections": 1, "cwnd": 10, "srtt_us": 70000, "min_rtt_us": 68000}
                    for i, cc, b, r, n in streams],
        "series": [[t, i, 8.0, 50, 70.0 if t < 3 else 80.0] for t in (1, 2, 3, 4, 5) for i, *_ in streams],
        "link": {"arrived": 10_000, "departed": 9_900, "departed_bytes": 62_500_000, "dropped_loss": 10,
                 "dropped_queue": 90, "dropped_red": 0},
        "link_seconds": 10.0,
        **({"cross_tcp": cross} if cross is not None else {}),
        **({"udp": udp} if udp is not None else {}),
        **({"ping": ping} if ping is not None else {}),
        **({"capacity_bytes": cap} if cap is not None else {}),
    }


def test_the_controls_repairs_are_a_column_and_unknown_before_they_were_counted():
    before = cell()
    assert results.cell_metrics(typed(before))["windows_repaired"] is None
    after = {**cell(), "windows_repaired": 2}
    assert results.cell_metrics(typed(after))["windows_repaired"] == 2
    assert typed(after).to_json()["windows_repaired"] == 2 and "windows_repaired" not in typed(before).to_json()


def test_a_steers_cpu_time_is_kept_where_a_steer_ran():
    after = {**cell("auto"), "steer_cpu_seconds": 0.05}
    assert typed(after).steer_cpu_seconds == 0.05
    assert typed(after).to_json()["steer_cpu_seconds"] == 0.05
    assert typed(cell()).steer_cpu_seconds is None and "steer_cpu_seconds" not in typed(cell()).to_json()


def test_cell_metrics_by_hand():
    c = cell(streams=[(0, "reno", 30_000_000, 30, 20_000), (1, "braid_frac", 10_000_000, 10, 10_000)],
             cross=[{"flow": "tcp0", "bytes": 1, "mbps": 20.0, "retransmits": 0},
                    {"flow": "tcp1", "bytes": 1, "mbps": 30.0, "retransmits": 0}],
             udp={"packets": 990, "lost": 10, "bytes": 1, "mbps": 5.0, "loss_ratio": 0.01},
             ping={"sent": 100, "received": 100, "lost": 0, "median_ms": 70.5, "p99_ms": 80.0, "mean_ms": 71.0},
             cap=80_000_000)
    m = results.cell_metrics(typed(c))
    assert m["method_bytes"] == 40_000_000  # the receiver's count, not the sender's
    assert m["method_mbps"] == pytest.approx(32.0)
    assert m["effectiveness"] == pytest.approx(0.5)
    assert m["capacity_mb"] == pytest.approx(80.0)
    assert m["cross_mbps"] == pytest.approx(50.0)
    assert m["ratio_to_cross"] == pytest.approx(32 / 50)
    assert m["sqrt_p"] == pytest.approx(1.0)  # sqrt of 1 (%)
    assert m["rtt_median_ms"] == 70.5
    assert m["utilisation"] == pytest.approx(0.5)  # 62.5 MB in 10 s of a 100 Mb/s link
    assert m["link_drop_ratio"] == pytest.approx(0.01)
    assert m["jain"] == pytest.approx(40 ** 2 / (2 * (30 ** 2 + 10 ** 2)))
    assert m["method_srtt_ms"] == pytest.approx(80.0)  # median of 70, 70, 80, 80, 80
    # Eq. 5: each stream's MSS C / (RTT sqrt(p)), MSS 1448 at MTU 1500 with timestamps.
    want = sum(1448 * 8 * math.sqrt(1.5) / (0.080 * math.sqrt(p)) for p in (30 / 20_000, 10 / 10_000)) / 1e6
    assert m["mathis_mbps"] == pytest.approx(want)
    # Two such segments a round trip of the path (68 ms): the least a window-based flow moves.
    assert m["least_window_mbps"] == pytest.approx(2 * 1448 * 8 / 0.068 / 1e6)


def test_appropriation_against_the_baseline_median():
    rows = [results.cell_metrics(typed(cell("single", rep=r, cross=[{"flow": "tcp0", "bytes": 1, "mbps": x,
                                                               "retransmits": 0}])))
            for r, x in enumerate((70.0, 80.0, 75.0))]
    rows.append(results.cell_metrics(typed(cell("parallel-9", cross=[{"flow": "tcp0", "bytes": 1, "mbps": 30.0,
                                                                 "retransmits": 0}]))))
    rows.append(results.cell_metrics(typed(cell("single", scenario="udp", udp={"packets": 1, "lost": 0, "bytes": 1,
                                                                         "mbps": 1, "loss_ratio": 0.0}))))
    results.appropriations(rows, "single")
    assert rows[3]["appropriation"] == pytest.approx(1 - 30 / 75)
    assert rows[0]["appropriation"] == pytest.approx(1 - 70 / 75)
    assert rows[4]["appropriation"] is None  # no competing TCP there


def test_flow_rows_are_tidy():
    c = cell(streams=[(0, "reno", 1000, 1, 100), (1, "reno", 3000, 0, 300)],
             cross=[{"flow": "tcp0", "bytes": 5, "mbps": 1.0, "retransmits": 2, "cc": "reno"}],
             udp={"packets": 9, "lost": 1, "bytes": 7, "mbps": 2.0, "loss_ratio": 0.1})
    m = results.cell_metrics(typed(c))
    rows = results.flow_rows("x", typed(c), m)
    assert [(r["role"], r["flow"]) for r in rows] == [("method", "s0"), ("method", "s1"), ("cross", "tcp0"),
                                                      ("udp", "udp")]
    assert rows[0]["flow_loss_ratio"] == pytest.approx(0.01)
    assert all(r["method_mbps"] == m["method_mbps"] and r["experiment"] == "x" for r in rows)
    assert set(results.FLOW_COLUMNS) >= {"role", "flow", "appropriation", "effectiveness"}


ROWS = [
    {"scenario": "s", "method": "a-1", "streams": 1, "x": 1.0, "y": 2.0},
    {"scenario": "s", "method": "a-1", "streams": 1, "x": 3.0, "y": 2.0},
    {"scenario": "s", "method": "a-2", "streams": 2, "x": 5.0, "y": 4.0},
    {"scenario": "t", "method": "a-1", "streams": 1, "x": 9.0, "y": 1.0},
    {"scenario": "t", "method": "a-2", "streams": 2, "x": 9.0, "y": 10.0},
]


@pytest.mark.parametrize("claim, status", [
    ({"check": "less", "metric": "x", "scenario": "s", "a": "a-1", "b": "a-2"}, "holds"),  # 2 < 5
    ({"check": "less", "metric": "x", "scenario": "s", "a": "a-1", "b": "a-2", "margin": 3}, "does not hold"),
    ({"check": "less", "metric": "x", "scenario": "s", "a": "a-2", "b": "a-1"}, "does not hold"),
    ({"check": "less", "metric": "x", "scenario": "s", "a": "a-1", "b": "zz"}, "not measured"),
    ({"check": "ratio_within", "metric": "x", "scenario": "s", "a": "a-1", "b": "a-2", "low": 0.3, "high": 0.5},
     "holds"),
    ({"check": "within", "metric": "x", "a": "a-*", "low": 2, "high": 9}, "holds"),  # medians 5 and 7
    ({"check": "within", "metric": "x", "scenario": "s", "a": "a-*", "low": 2.5}, "does not hold"),
    ({"check": "bound", "metric": "x", "other": "y", "a": "*", "fraction": 0.4}, "holds"),  # 2 of 5
    ({"check": "bound", "metric": "x", "other": "y", "a": "*", "fraction": 0.6}, "does not hold"),
    ({"check": "knee_order", "metric": "x", "scenarios": ["s", "t"]}, "holds"),  # knees 2 and 1
    ({"check": "knee_order", "metric": "x", "scenarios": ["t", "s"]}, "does not hold"),
    # a scenario left out of a first pass: the others are still ordered
    ({"check": "knee_order", "metric": "x", "scenarios": ["s", "u", "t"]}, "holds"),
    ({"check": "knee_order", "metric": "x", "scenarios": ["s", "u"]}, "not measured"),
])
def test_claims(claim, status):
    v = claims.check({"id": "c", "text": "t", **claim}, ROWS)
    assert v.status == status, v.detail


def test_claims_pattern_means_and_unknown_kind():
    # a pattern stands for the mean of its methods' medians: (2 + 5) / 2 = 3.5 < 4
    v = claims.check({"id": "c", "text": "t", "check": "less", "metric": "x", "scenario": "s", "a": "a-*",
                      "b": "a-2"}, ROWS)
    assert v.holds and "3.5" in v.detail
    with pytest.raises(ValueError, match="unknown check"):
        claims.check({"id": "c", "text": "t", "check": "maybe"}, ROWS)


def test_omitted_start_is_left_out():
    c = cell(streams=[(0, "reno", 10_000_000, 50, 7000), (1, "reno", 6_000_000, 30, 4000)])
    c["at_omit"] = {"t": 2.0, "streams": {"0": {"bytes": 2_000_000, "retransmits": 40},
                                          "1": {"bytes": 2_000_000, "retransmits": 30}}}
    streams, seconds, moved, loss = results.measured(typed(c))
    assert seconds == 8.0 and moved == 12_000_000
    assert [s.bytes for s in streams] == [8_000_000, 4_000_000]
    # 10 retransmits in 8 MB / 1448 + 4 MB / 1448 segments.
    assert loss == pytest.approx(10 / (8_000_000 // 1448 + 4_000_000 // 1448))
    m = results.cell_metrics(typed(c))
    assert m["method_mbps"] == pytest.approx(12.0) and m["seconds"] == 8.0
    assert m["method_srtt_ms"] == pytest.approx(80.0)  # samples from t = 2 on: 70, 80, 80, 80
    assert m["jain"] == pytest.approx(12 ** 2 / (2 * (8 ** 2 + 4 ** 2)))
    rows = results.flow_rows("x", typed(c), m)
    assert [r["flow_mbps"] for r in rows] == pytest.approx([8.0, 4.0])


def test_mathis_uses_loss_episodes_when_the_kernel_counted_them():
    c = cell(streams=[(0, "reno", 30_000_000, 30, 20_000), (1, "reno", 10_000_000, 10, 10_000)])
    c["sender_tcp"] = {"TCPRenoRecovery": 0, "TCPSackRecovery": 4, "TCPTimeouts": 1, "OutSegs": 50_000,
                       "RetransSegs": 40}
    m = results.cell_metrics(typed(c))
    assert m["loss_events"] == 5 and m["p_events"] == pytest.approx(1e-4)
    want = 2 * 1448 * 8 * math.sqrt(1.5) / (0.080 * math.sqrt(1e-4)) / 1e6
    assert m["mathis_mbps"] == pytest.approx(want)


def test_two_patterns_are_compared_where_both_were_measured():
    rows = [{"scenario": "s", "method": m, "x": x} for m, x in
            (("reno-1", 0.1), ("reno-10", 1.0), ("reno-30", 5.0), ("stcp-10", 2.0), ("stcp-20", 9.0))]
    claim = {"id": "c", "text": "t", "check": "less", "metric": "x", "a": "reno-*", "b": "stcp-*"}
    # Only n = 10 is in both: 1.0 against 2.0, not reno over 1, 10, 30 (2.03) against stcp over 10, 20 (5.5).
    v = claims.check(claim, rows)
    assert v.holds and "both over 10" in v.detail and "reno-* 1" in v.detail, v.detail
    v = claims.check({**claim, "b": "bbr-*"}, rows + [{"scenario": "s", "method": "bbr-5", "x": 3.0}])
    assert v.status == "not measured" and "no '*' measured for both" in v.detail
    # A pattern against one method, or of another shape, keeps the mean of everything it matches.
    assert "2.03" in claims.check({**claim, "b": "stcp-10", "margin": 0}, rows).detail
    assert "both over" not in claims.check({**claim, "a": "reno-[0-9]*"}, rows).detail


def test_phases_of_competitors_that_arrive_and_leave():
    c = cell(streams=[(0, "reno", 10_000_000, 50, 7000), (1, "reno", 6_000_000, 30, 4000)])
    # Two streams, 30 one-second intervals: 80 Mb/s together alone, 16 while the competitors are
    # there (10 s to 20 s, the first 2 s of it still falling), 80 again from 22 s.
    total = {t: 80.0 if t <= 10 else (48.0 if t <= 12 else 16.0) if t <= 20 else (48.0 if t <= 21 else 80.0)
             for t in range(1, 31)}
    c["series"] = [[float(t), i, total[t] / 2, 50, 70.0] for t in range(1, 31) for i in (0, 1)]
    # The bench's last record, past its 30 s, is the tail after the sender stopped: not counted.
    c["series"] += [[31.0, i, 12.0, 50, 70.0] for i in (0, 1)]
    c["seconds"] = 30
    c["changes"] = [10.0, 20.0]
    m = results.cell_metrics(typed(c))
    assert m["mbps_alone"] == pytest.approx(80.0)
    assert m["mbps_beside"] == pytest.approx((2 * 48 + 8 * 16) / 10)
    assert m["mbps_after"] == pytest.approx((48 + 9 * 80) / 10)
    # The 3 s mean is within 10 % of 16 from 15 s (13, 14, 15) and of 80 from 24 s (22, 23, 24).
    assert m["settle_arrive_s"] == pytest.approx(5.0) and m["settle_leave_s"] == pytest.approx(4.0)
    # It stays once there, so it reaches the band when it settles in it.
    assert m["reach_arrive_s"] == pytest.approx(5.0) and m["reach_leave_s"] == pytest.approx(4.0)
    # Streams that take turns are fair over the run and not over 1 s bins.
    assert m["jain_1s"] == pytest.approx(1.0)
    c["series"] = [[float(t), t % 2, 10.0, 50, 70.0] for t in range(1, 31)]
    assert results.cell_metrics(typed(c))["jain_1s"] == pytest.approx(0.5)
    # No competitors recorded: nothing to weigh the rate beside them against.
    assert m["ratio_beside"] is None
    # Two competitors there for the 10 s: 25 MB and 15 MB are 20 and 12 Mb/s, 16 each.
    c["cross_tcp"] = [{"flow": "tcp0", "bytes": 25_000_000, "mbps": 6.67, "retransmits": 0},
                      {"flow": "tcp1", "bytes": 15_000_000, "mbps": 4.0, "retransmits": 0}]
    m = results.cell_metrics(typed(c))
    # The streams taking turns move 10 Mb/s together in every interval.
    assert m["each_beside_mbps"] == pytest.approx(16.0) and m["mbps_beside"] == pytest.approx(10.0)
    assert m["ratio_beside"] == pytest.approx(10 / 16)
    # Without changes the phases are not measured.
    del c["changes"]
    m = results.cell_metrics(typed(c))
    assert m["settle_arrive_s"] is None and m["ratio_beside"] is None


def test_a_share_of_cells_claim_is_judged_cell_by_cell_with_its_interval():
    from braidlab import claims, metrics

    def row(sc, method, mbps, e=10.0):
        return {"scenario": sc, "method": method, "method_mbps": mbps, "equal_share_mbps": e}

    rows = [row("c-00", "auto", 9.0), row("c-00", "single", 20.0), row("c-00", "par-4", 30.0),
            row("c-01", "auto", 13.0), row("c-01", "single", 8.0),  # above 1.25 E
            row("c-02", "auto", 6.0), row("c-02", "single", 8.0),   # 0.7 x min(E, single) = 5.6: holds
            row("c-03", "auto", 5.0),                               # no single: not measured
            row("d-00", "auto", 1.0), row("d-00", "single", 1.0)]   # another pattern
    claim = {"id": "x", "text": "t", "check": "share_of_cells", "scenarios": ["c-*"], "a": "auto",
             "metric": "method_mbps", "low": {"times": 0.7, "of": ["equal_share_mbps", "single"], "combine": "min"},
             "high": {"times": 1.25, "of": ["equal_share_mbps"]}, "share": 0.6}
    assert claims.cell_results(claim, rows) == {"c-00": True, "c-01": False, "c-02": True, "c-03": None}
    v = claims.check(claim, rows)
    assert v.holds and "2 of 3 cells" in v.detail and "not in: c-01" in v.detail, v.detail
    assert not claims.check({**claim, "share": 0.7}, rows).holds
    # The best of a pattern's methods, and a number.
    fast = {**claim, "low": {"times": 0.3, "of": ["par-*"]}, "high": {"of": [100]}}
    assert claims.cell_results(fast, rows)["c-00"] is True
    # A term scaled on its own: the larger of a quarter of the equal share and a floor of 3.
    yielding = {k: v for k, v in claim.items() if k != "low"}
    yielding["high"] = {"of": [{"times": 0.25, "of": "equal_share_mbps"}, 3.0], "combine": "max"}
    rows += [row("c-04", "auto", 2.6), row("c-05", "auto", 3.2), row("c-06", "auto", 2.0, e=4.0)]
    got = claims.cell_results(yielding, rows)
    assert got["c-04"] is True and got["c-05"] is False and got["c-06"] is True
    assert got["c-00"] is False  # 9 over the bound of 3
    lo, hi = metrics.wilson(2, 3)
    assert 0.2 < lo < 0.667 < hi < 0.95
    assert metrics.wilson(0, 0) == (0.0, 1.0) and metrics.wilson(10, 10)[1] == 1.0


def test_a_cell_keeps_every_setting_a_method_has():
    # The runner writes the method's fields as they are (dataclasses.asdict): each must read back,
    # braid's defaults (no options) and a host without its controls included.
    import dataclasses

    from braidlab.engine import Method
    from braidlab.measured import MeasuredCell

    method = Method("auto", None, default=True, no_controls=True)
    record = MeasuredCell.from_json({**cell("auto"), "setting": dataclasses.asdict(method)})
    assert record.setting.default and record.setting.no_controls and record.setting.streams is None
    assert {f.name for f in dataclasses.fields(Method)} == {f.name for f in dataclasses.fields(record.setting)}
