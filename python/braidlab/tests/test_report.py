import json

import pytest

from braidlab import claims, records, report, results, runner
from braidlab.experiment import ExperimentError
from braidlab.tests.test_results import cell

EXPERIMENT = """
name = "mini"
title = "A small experiment"
baseline = "single"
calibration = "by hand"
[path]
rate = "100mbit"
rtt = "68ms"
[[scenario]]
name = "tcp-5"
tcp = { flows = 5, cc = "reno" }
[[method]]
name = "single"
mode = "single"
[[method]]
name = "parallel-{streams}"
mode = "parallel"
streams = [2, 3, 4]
[quick]
seconds = 10
[full]
seconds = 10
[[claim]]
id = "fair"
text = "parallel-4 appropriates more than single"
check = "less"
metric = "appropriation"
scenario = "tcp-5"
a = "single"
b = "parallel-4"
[[claim]]
id = "never"
text = "single moves more than parallel-4"
check = "less"
metric = "method_mbps"
scenario = "tcp-5"
a = "parallel-4"
b = "single"
note = "more streams, more bytes"
[[reference]]
source = "Table III"
scenario = "tcp-5"
metric = "method_mbps"
values = { single = 15.65 }
"""


LATER = """
[[claim]]
id = "later"
text = "parallel-2 moves less than parallel-3"
check = "less"
metric = "method_mbps"
scenario = "tcp-5"
a = "parallel-2"
b = "parallel-3"
"""


def make_run(tmp_path):
    run = tmp_path / "run"
    (run / "cells").mkdir(parents=True)
    plan = []
    for name, n, cross in (("single", 1, 75.0), ("parallel-2", 2, 60.0), ("parallel-3", 3, 50.0),
                           ("parallel-4", 4, 40.0)):
        for rep in range(2):
            c = cell(name, streams=[(i, "reno", 10_000_000, 10, 10_000) for i in range(n)],
                     cross=[{"flow": "tcp0", "bytes": 1, "mbps": cross + rep, "retransmits": 0}], rep=rep)
            c["setting"]["streams"] = n
            (run / "cells" / f"{c['id']}.json").write_text(json.dumps(c))
            plan.append(["tcp-5", name, rep])
    plan.append(["tcp-5", "parallel-4", 2])  # planned, not run: the report says so
    (run / "run.json").write_text(json.dumps({
        "version": 1, "experiment": "mini", "variant": "quick", "repeat": 3, "seed": 1, "plan": plan,
        "variant_settings": {"seconds": 10, "warmup": 2}, "experiment_file": EXPERIMENT,
        "created": "2026-11-22T00:00:00+00:00", "host": "vm", "kernel": "6.18", "git": {"revision": "abc"}}))
    return run


def test_report_from_results_alone(tmp_path):
    run = make_run(tmp_path)
    md, page = report.make([run], tmp_path / "out")
    text = md.read_text()
    assert "8 of 9 cells measured" in text
    assert "| mini | 8 | 1 | 1 | 0 |" in text  # the verdicts, counted at the top
    # Our median beside the paper's, appropriation against the single-stream baseline (75.5).
    assert "| single | 2 | 8.00 [15.7] | 0.0 % | 75.5 |" in text
    assert "**holds**: parallel-4 appropriates more than single" in text
    assert "**does not hold**: single moves more than parallel-4" in text and "Why: more streams" in text
    figures = sorted(p.name for p in (tmp_path / "out" / "figures").iterdir())
    assert "mini-tcp-5-sweep.png" in figures and "mini-tcp-5-series.png" in figures
    for f in figures:
        assert f in text
    html = page.read_text()
    assert html.count("data:image/png;base64,") == len(figures)
    assert "src='figures" not in html and "<table>" in html


def test_a_retired_claim_is_shown_measured_and_counted_apart(tmp_path):
    run = make_run(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    meta["experiment_file"] = EXPERIMENT.replace('note = "more streams, more bytes"',
                                                 'retired = "the yardstick changed: see claim fair"')
    (run / "run.json").write_text(json.dumps(meta))
    text = report.make([run], tmp_path / "out")[0].read_text()
    assert "| experiment | cells | holds | does not hold | not measured | retired |" in text
    assert "| mini | 8 | 1 | 0 | 0 | 1 |" in text
    assert ("**retired** (does not hold as measured): single moves more than parallel-4. Measured: "
            in text) and "Retired: the yardstick changed: see claim fair" in text


def test_report_names_the_builds_of_a_continued_run(tmp_path):
    run = make_run(tmp_path)
    assert report._builds(results.load(run)[1]) == ""  # no cell records its build: nothing to tell apart
    for i, p in enumerate(sorted((run / "cells").iterdir())):
        c = json.loads(p.read_text())
        c["build"] = {"git": {"revision": "1111aaaa2222bbbb" if i < 5 else "3333cccc4444dddd", "dirty": i == 7},
                      "binary": "00"}
        p.write_text(json.dumps(c))
    said = report._builds(results.load(run)[1])
    assert "5 cell(s) by 1111aaaa2222" in said and "2 cell(s) by 3333cccc4444," in said
    assert "1 cell(s) by 3333cccc4444 (with local changes)" in said
    md, _ = report.make([run], tmp_path / "out")
    assert "measured by more than one build" in md.read_text()


def test_a_note_written_after_the_run_explains_its_verdict(tmp_path):
    run = make_run(tmp_path)
    root = tmp_path / "experiments"
    root.mkdir()
    (root / "mini.toml").write_text(EXPERIMENT.replace('note = "more streams, more bytes"',
                                                       'note = "written later"'))
    meta = json.loads((run / "run.json").read_text())
    assert {c["id"]: c.get("note") for c in report._recorded(meta, root).claims} == \
        {"fair": None, "never": "written later"}
    # A claim checked differently today keeps the note it was run with.
    (root / "mini.toml").write_text(EXPERIMENT.replace('note = "more streams, more bytes"', 'note = "x"')
                                    .replace('a = "parallel-4"\nb = "single"', 'a = "parallel-3"\nb = "single"'))
    assert report._recorded(meta, root).claims[1]["note"] == "more streams, more bytes"
    # Without the file today, the recorded experiment as it was.
    assert report._recorded(meta, tmp_path / "nowhere").claims[1]["note"] == "more streams, more bytes"


def test_a_claim_added_after_the_run_is_checked_on_its_cells_and_says_so(tmp_path):
    run = make_run(tmp_path)
    root = tmp_path / "experiments"
    root.mkdir()
    (root / "mini.toml").write_text(EXPERIMENT + LATER)
    meta = json.loads((run / "run.json").read_text())
    claims = report._recorded(meta, root).claims
    assert [c["id"] for c in claims] == ["fair", "never", "later"]
    assert claims[2]["text"].endswith("(a claim added after the run)")


def test_a_pooled_report_lists_methods_the_last_runs_file_does_not_name(tmp_path):
    first = make_run(tmp_path / "a")
    second = make_run(tmp_path / "b")
    meta = json.loads((second / "run.json").read_text())
    # The second run's file names only single and parallel-4; the first measured parallel-2 and -3 too.
    meta["experiment_file"] = EXPERIMENT.replace("streams = [2, 3, 4]", "streams = [4]")
    (second / "run.json").write_text(json.dumps(meta))
    md, _ = report.make([first, second], tmp_path / "out")
    text = md.read_text()
    for m in ("single", "parallel-4", "parallel-2", "parallel-3"):
        assert f"| {m} | " in text, m


def test_report_refuses_a_directory_without_a_run(tmp_path):
    import argparse

    args = argparse.Namespace(results=[str(tmp_path)], out=None, leave_out=None)
    assert report.main(args) == 2


def test_iperf3_bytes_in_the_method_window():
    ivs = [{"start": 0, "end": 1, "bytes": 100}, {"start": 1, "end": 2, "bytes": 200},
           {"start": 2, "end": 3, "bytes": 300}]
    assert runner._window_bytes(ivs, 0.5, 2.5) == 50 + 200 + 150
    assert runner._window_bytes(ivs, 5, 6) == 0
    text = json.dumps({"intervals": [{"streams": [{"socket": 5, **iv}, {"socket": 7, **iv}]} for iv in ivs],
                       "end": {"streams": [{"sender": {"socket": 5, "retransmits": 3}},
                                           {"sender": {"socket": 7, "retransmits": 0}}],
                               "sender_tcp_congestion": "reno"}})
    flows = runner._iperf_flows(text, None, 1, 3)
    assert [(f["flow"], f["bytes"], f["retransmits"]) for f in flows] == [("tcp0", 500, 3), ("tcp1", 500, 0)]
    assert flows[0]["mbps"] == 500 * 8 / 2 / 1e6
    # With the server's report, the bytes are what it received.
    server = json.dumps({"intervals": [{"streams": [{"socket": 9, **iv, "bytes": iv["bytes"] // 2},
                                                    {"socket": 10, **iv, "bytes": iv["bytes"] // 4}]} for iv in ivs],
                         "end": {}})
    flows = runner._iperf_flows(text, server, 1, 3)
    assert [(f["bytes"], f["retransmits"]) for f in flows] == [(250, 3), (125, 0)]


def test_udp_loss_in_the_method_window():
    recs = [{"type": "sink_interval", "version": records.VERSION, "flow": "f", "t": t / 10, "packets": 10, "bytes": 14400,
             "lost": t % 2, "mbps": 1} for t in range(20)]
    recs.append({"type": "sink_summary", "version": records.VERSION, "flow": "f", "packets": 200, "bytes": 1, "lost": 10,
                 "reordered": 0, "sent": 210, "loss_ratio": 0.05})
    u = runner._udp_window("\n".join(json.dumps(r) for r in recs), 1.0, 1.5)
    assert (u["packets"], u["lost"]) == (50, 2)  # t = 1.0 .. 1.4: lost at 1.1 and 1.3
    assert u["loss_ratio"] == 2 / 52


def test_runs_of_one_experiment_pool_their_repetitions(tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b")
    md, _ = report.make([a, b], tmp_path / "out")
    text = md.read_text()
    assert text.count("## A small experiment") == 1
    assert "| single | 4 |" in text  # two repetitions from each run
    assert "Run `run`" in text and text.count("8 of 9 cells measured") == 2


def test_a_method_left_out_of_a_run_pools_only_the_cells_of_the_runs_that_keep_it(tmp_path):
    old = make_run(tmp_path / "a")
    new = make_run(tmp_path / "b")
    # The newer run's parallel-4 moved twice as much: pooled with the old one's, the median would blur it.
    for p in (new / "cells").glob("tcp-5.parallel-4.*.json"):
        c = json.loads(p.read_text())
        for st in c["streams"]:
            st["bytes"] *= 2
        c["bench"]["bytes"] *= 2
        c["bench"]["peer_bytes"] *= 2
        p.write_text(json.dumps(c))
    leave = report.parse_leave_out([f"{old}=parallel-4"], [old, new])
    assert leave == {old: {"parallel-4"}}
    md, _ = report.make([old, new], tmp_path / "out", leave)
    text = md.read_text()
    assert "| single | 4 |" in text and "| parallel-4 | 2 | 64.0 |" in text
    assert "Its 2 cell(s) of parallel-4 are left out of this report" in text
    assert "| mini | 14 |" in text  # 16 measured, 2 left out
    both, _ = report.make([old, new], tmp_path / "both")
    assert "| parallel-4 | 4 | 48.0 |" in both.read_text()
    assert "put back a window" not in text
    p = new / "cells" / "tcp-5.single.r1.json"
    p.write_text(json.dumps({**json.loads(p.read_text()), "windows_repaired": 3}))
    assert "put back a window or threshold out of bounds in `tcp-5.single.r1` (3)" in \
        report.make([old, new], tmp_path / "again", leave)[0].read_text()


def test_leave_out_names_what_it_cannot_find(tmp_path):
    import pytest

    run = make_run(tmp_path)
    for spec, said in ((f"{run}=parallel-9", "has no cells of parallel-9"),
                       (f"{tmp_path / 'other'}=single", "is not one of the run directories"),
                       ("single", "expected DIR=METHOD")):
        with pytest.raises(ValueError, match=said):
            report.parse_leave_out([spec], [run])


def test_families_vary_in_streams_or_in_strength():
    def row(n, k, mode="tcpp", cc=""):
        return {"mode": mode, "cc": cc, "virtual_rtt": None, "streams": n, "strength": k}

    rows = [row(n, 1) for n in (1, 2, 3, 10)] + [row(10, k) for k in (2, 3)] + \
        [row(n, None, "parallel", "reno") for n in (1, 2)]
    fams = report._families(rows)
    assert set(fams) == {"tcpp k=1", "tcpp n=10"}
    assert fams["tcpp k=1"][0] == "streams" and len(fams["tcpp k=1"][1]) == 4
    assert fams["tcpp n=10"][0] == "strength" and sorted(r["strength"] for r in fams["tcpp n=10"][1]) == [1, 2, 3]


def test_model_table_sets_the_measurement_beside_both_mathis_constants():
    rows = [{"streams": 2, "method_mbps": m, "mathis_mbps": e, "p_events": 1e-4}
            for m, e in ((50.0, 45.0), (52.0, 47.0))]
    rows.append({"streams": 1, "method_mbps": 30.0, "mathis_mbps": 28.0, "p_events": None})
    head, one, two = report.model_table(rows)
    assert head[2] == "Mathis Mb/s" and head[5] == "Mathis, random-loss C"
    # Without a loss-event rate there is no random-loss estimate, only Eq. 5's.
    assert one == ["1", "30.0", "28.0", "+2.0", "(one run)", "-", "-", "-"]
    assert two[:4] == ["2", "51.0", "46.0", "+5.0"]
    # The random-loss C (about 1.30 against 1.22) raises the estimate by about 6 %.
    assert 46.0 * 1.04 < float(two[5]) < 46.0 * 1.09
    assert 0 < float(two[6]) < 5.0
    lo, hi = (float(x) for x in two[7].split(" .. "))
    assert lo < float(two[6]) < hi


def test_labels_of_points_close_together_go_to_different_rows():
    # The full variant's frontier: auto-9, auto-4 and combined-9 m = 100 sit within 12 points of
    # appropriation at 93-94 % effectiveness.
    names = ["tcpp-9", "auto-9", "single", "auto-4", "combined-9-m100", "combined-9", "parallel-9", "bbr"]
    pts = [(-3.7, 71.0), (-2.5, 93.2), (0.0, 69.3), (3.3, 93.6), (9.3, 93.7), (22.4, 95.5), (56.3, 95.6),
           (83.8, 93.0)]
    places = dict(zip(names, report.label_places(pts, names)))
    # auto-4's label would print over the end of auto-9's: a row below; the rest are apart.
    assert places.pop("auto-4") == (4, -11)
    assert set(places.values()) == {(4, 4)}
    # Three points on one spot: three rows.
    assert report.label_places([(0, 0), (0, 0), (0, 0), (10, 10)], ["a", "b", "c", "d"]) == \
        [(4, 4), (4, -11), (4, 15), (4, 4)]
    assert report.label_places([], []) == []


def test_a_matrix_report_is_one_table_and_a_map_of_where_its_claims_hold(tmp_path):
    from braidlab.tests.test_experiment import MATRIX

    exp = MATRIX + """
[[claim]]
id = "fast"
text = "auto at least 0.9 x par"
check = "share_of_cells"
scenarios = ["idle-*"]
a = "auto"
metric = "method_mbps"
low = { times = 0.9, of = ["par"] }
share = 0.5
"""
    run = tmp_path / "run"
    (run / "cells").mkdir(parents=True)
    plan = []
    for sc, auto_bytes in (("idle-00", 9_500_000), ("idle-01", 5_000_000)):
        for name, b in (("auto", auto_bytes), ("par", 10_000_000)):
            c = cell(name, scenario=sc, streams=[(0, "cubic", b, 10, 10_000)])
            c["long_flows"] = 0
            (run / "cells" / f"{c['id']}.json").write_text(json.dumps(c))
            plan.append([sc, name, 0])
    (run / "run.json").write_text(json.dumps({
        "version": 1, "experiment": "m", "variant": "full", "repeat": 1, "seed": 1, "plan": plan,
        "variant_settings": {"seconds": 10, "warmup": 2}, "experiment_file": exp,
        "created": "2026-11-27T00:00:00+00:00", "host": "vm", "kernel": "6.18", "git": {"revision": "abc"}}))
    md, _ = report.make([run], tmp_path / "out")
    text = md.read_text()
    assert "m: the cells" in text and "| idle-00 |" in text and "| idle-01 |" in text
    assert "**holds**: auto at least 0.9 x par" in text and "1 of 2 cells (50 %" in text
    figures = sorted(p.name for p in (tmp_path / "out" / "figures").iterdir())
    assert figures == ["m-matrix.png"], "one map, no section per cell"


def test_todays_claims_judge_a_run_again_and_the_changes_are_listed(tmp_path):
    run = make_run(tmp_path)
    root = tmp_path / "experiments"
    root.mkdir()
    # Today "never" is revised and "fair" is gone; "later" is new.
    today = EXPERIMENT[:EXPERIMENT.index("[[claim]]")] + """
[[claim]]
id = "never"
text = "parallel-4 moves more than single"
check = "less"
metric = "method_mbps"
scenario = "tcp-5"
a = "single"
b = "parallel-4"
""" + LATER
    (root / "mini.toml").write_text(today)
    meta = json.loads((run / "run.json").read_text())
    now = report._recorded(meta, root, claims="today").claims
    assert [c["id"] for c in now] == ["never", "later"] and "added after" not in now[1]["text"]
    rows = results.table(results.load(run)[1], "single")
    was = claims.check_all(report._recorded(meta, tmp_path / "nowhere").claims, rows)
    changed = report.changed_verdicts(was, claims.check_all(now, rows))
    assert changed == [["fair", "holds", "(not a claim now)"], ["never", "does not hold", "holds"],
                       ["later", "(not a claim then)", "holds"]]
    # Without the experiment's file today there is nothing to judge by.
    with pytest.raises(ExperimentError):
        report._recorded(meta, tmp_path / "nowhere", claims="today")


def test_a_cell_whose_link_was_overrun_is_named_with_its_lost_frames(tmp_path):
    run = make_run(tmp_path)
    assert "overrun" not in report.make([run], tmp_path / "clean")[0].read_text()
    p = run / "cells" / "tcp-5.parallel-2.r1.json"
    c = json.loads(p.read_text())
    c["link"]["overruns"] = 17
    p.write_text(json.dumps(c))
    text = report.make([run], tmp_path / "out")[0].read_text()
    assert "braid-link was overrun (frames lost before the emulated link) in `tcp-5.parallel-2.r1` (17 frames)" in text
