"""The run directory's life: a plan, cells written one by one, an interrupted
run continued where it stopped. The measuring itself (run_cell) is replaced
here; tests/system/test_experiments.py runs the real thing."""

import json
import os
import subprocess
import sys

import pytest

from braidlab import experiment, runner
from braidlab.tests.test_experiment import MINIMAL
from braidlab.tests.test_results import cell


@pytest.fixture
def fake(monkeypatch, tmp_path):
    ran = []
    seeds = {}

    def run_cell(exp, variant, c, raw, token, index, seed):
        seeds[c.id] = seed
        if len(ran) == fake.stop_after:
            raise KeyboardInterrupt
        if c.id in fake.broken:
            raise RuntimeError(f"bench on snd0 exited 4 in {c.id}")
        raw.mkdir(parents=True, exist_ok=True)
        ran.append(c.id)
        return cell(c.method, scenario=c.scenario, rep=c.rep,
                    cross=[{"flow": "tcp0", "bytes": 1, "mbps": 10.0 + len(ran), "retransmits": 0}])

    monkeypatch.setattr(runner, "run_cell", run_cell)
    monkeypatch.setattr(runner, "preflight", lambda exp, variant: None)
    monkeypatch.setattr(runner.braid, "cc_status", lambda: {"installed": True})
    monkeypatch.setattr(runner.engine, "token_file", lambda d: tmp_path / "token")
    build = tmp_path / "braid-build"
    build.write_bytes(b"a braid build")
    monkeypatch.setattr(runner.braid, "binary", lambda: str(build))
    fake.stop_after = None
    fake.broken = set()
    fake.ran = ran
    fake.seeds = seeds
    return fake


def test_an_interrupted_run_continues_where_it_stopped(fake, tmp_path):
    exp = experiment.parse(__import__("tomllib").loads(MINIMAL))
    out = tmp_path / "run"
    fake.stop_after = 2
    with pytest.raises(KeyboardInterrupt):
        runner.run(exp, "full", out, repeat=2, seed=5, progress=lambda s: None)
    meta = json.loads((out / "run.json").read_text())
    assert len(meta["plan"]) == 2 * 5 * 2 and meta["seed"] == 5 and meta["repeat"] == 2
    done = sorted(p.stem for p in (out / "cells").glob("*.json"))
    assert done == sorted(fake.ran) and len(done) == 2
    # Same command again: only what is missing runs, in the planned order.
    fake.stop_after = None
    first = list(fake.ran)
    runner.run(exp, "full", out, progress=lambda s: None)
    planned = [f"{s}.{m}.r{r}" for s, m, r in meta["plan"]]
    assert fake.ran[:2] == first and fake.ran[2:] == [c for c in planned if c not in first]
    # The continuation draws what the first invocation would have: the seeds come from run.json.
    cells = {c.id: c for c in exp.cells(exp.variant("full", 2))}
    assert fake.seeds == {i: exp.cell_seed(5, cells[i]) for i in fake.seeds} and len(fake.seeds) == 20
    rows = (out / "flows.csv").read_text().splitlines()
    assert rows[0].startswith("experiment,scenario,method,rep,role,flow")
    assert len(rows) == 1 + 20 * 2  # one method stream and one competitor per cell
    assert (out / "cells.csv").read_text().count("\n") == 1 + 20
    # Each cell names the build that measured it, whichever invocation that was.
    import hashlib
    digest = hashlib.sha256(b"a braid build").hexdigest()[:16]
    assert all(json.loads(p.read_text())["build"]["binary"] == digest for p in (out / "cells").glob("*.json"))


def test_a_run_directory_is_not_reused_for_something_else(fake, tmp_path):
    exp = experiment.parse(__import__("tomllib").loads(MINIMAL))
    out = tmp_path / "run"
    runner.run(exp, "quick", out, progress=lambda s: None)
    with pytest.raises(runner.RunError, match="holds a run of t --quick, not t --full"):
        runner.run(exp, "full", out, progress=lambda s: None)
    with pytest.raises(runner.RunError, match="planned with --repeat 1"):
        runner.run(exp, "quick", out, repeat=3, progress=lambda s: None)


def test_a_failing_cell_is_tried_twice_then_left_for_the_next_run(fake, tmp_path):
    exp = experiment.parse(__import__("tomllib").loads(MINIMAL))
    out = tmp_path / "run"
    fake.broken = {"a.reno-2.r0"}
    said = []
    with pytest.raises(runner.RunError, match=r"1 cell\(s\) did not finish \(a.reno-2.r0\)"):
        runner.run(exp, "quick", out, progress=said.append)
    assert sum("attempt" in s and "exited 4" in s for s in said) == 2
    assert sorted(fake.ran) == ["a.reno-4.r0", "a.single.r0"]
    fake.broken = set()
    runner.run(exp, "quick", out, progress=said.append)
    assert fake.ran[2:] == ["a.reno-2.r0"]


def test_a_first_pass_runs_only_the_chosen_methods_and_keeps_that_plan(fake, tmp_path):
    exp = experiment.parse(__import__("tomllib").loads(MINIMAL))
    out = tmp_path / "run"
    runner.run(exp, "full", out, repeat=1, methods=["single", "*-4"], scenarios=["b"], progress=lambda s: None)
    assert sorted(fake.ran) == ["b.cubic-4.r0", "b.reno-4.r0", "b.single.r0"]
    assert json.loads((out / "run.json").read_text())["variant_settings"]["methods"] == ["single", "reno-4", "cubic-4"]
    with pytest.raises(runner.RunError, match="keeps the plan it was started with"):
        runner.run(exp, "full", out, methods=["reno-2"], progress=lambda s: None)
    with pytest.raises(experiment.ExperimentError, match="no method matches 'reno-3'"):
        runner.run(exp, "full", tmp_path / "other", methods=["reno-3"], progress=lambda s: None)


def test_a_signal_during_a_cell_stops_the_run_even_when_the_cell_then_fails(fake, tmp_path, monkeypatch):
    # The signal's unwinding tears the testbed down, and a tool it ended reports itself failed:
    # the run stops there (for a continuation), it does not try the cell again.
    tried = []

    def run_cell(exp, variant, c, raw, token, index, seed):
        tried.append(c.id)
        try:
            runner._interrupt(15, None)
        except KeyboardInterrupt:
            raise RuntimeError("iperf3-client-5201 on snd1 exited 1")

    monkeypatch.setattr(runner, "run_cell", run_cell)
    exp = experiment.parse(__import__("tomllib").loads(MINIMAL))
    said = []
    with pytest.raises(KeyboardInterrupt):
        runner.run(exp, "quick", tmp_path / "run", progress=said.append)
    assert len(tried) == 1 and not any("attempt" in s for s in said)
    # The next run starts afresh: a failure then is a failure, each cell tried twice.
    def failing(exp, variant, c, raw, token, index, seed):
        raise RuntimeError(f"bench on snd0 exited 4 in {c.id}")

    monkeypatch.setattr(runner, "run_cell", failing)
    said.clear()
    with pytest.raises(runner.RunError, match="did not finish"):
        runner.run(exp, "quick", tmp_path / "run", progress=said.append)
    assert sum("attempt" in s for s in said) == 2 * 3


def _iv(t, *streams):
    from braidlab import records
    return records.Interval(t=t, bytes=sum(b for b, _ in streams), mbps=0.0, bottleneck_mbps=None, streams=[
        records.StreamSample(stream=i, bytes=b, mbps=round(b * 8 / 1e6, 3), cwnd=10, ssthresh=0, srtt_us=68_000,
                             rttvar_us=0, retransmits=0, lost=0, delivery_rate=0, bytes_acked=a,
                             busy_us=0, rwnd_limited_us=0, sndbuf_limited_us=0)
        for i, (b, a) in enumerate(streams)])


def test_the_series_counts_the_bytes_tcp_saw_acknowledged_not_whole_blocks():
    # One stream moves 1.5 blocks a second: counted in blocks it reads 1, 2, 1 (1.05, 2.1 Mb/s);
    # acknowledged it reads 1.57 every second.
    blk = 131_072
    ivs = [_iv(1.0, (blk, 196_608)), _iv(2.0, (3 * blk, 393_216)), _iv(3.0, (4 * blk, 589_824))]
    rows = runner.series_rows(ivs)
    assert [r[2] for r in rows] == [1.573, 1.573, 1.573]
    # A stream whose connection started again counts from its new zero.
    ivs.append(_iv(4.0, (5 * blk, 100_000)))
    assert runner.series_rows(ivs)[-1][2] == 0.8


def test_a_receivers_series_keeps_the_blocks_count():
    rows = runner.series_rows([_iv(1.0, (131_072, 0)), _iv(2.0, (393_216, 0))])
    assert [r[2] for r in rows] == [1.049, 3.146]


def test_only_the_cell_directories_of_processes_that_are_gone_are_stale(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    mine = tmp_path / f"{runner.CELL_DIR_PREFIX}{os.getpid()}-abc"
    dead = tmp_path / f"{runner.CELL_DIR_PREFIX}{gone.pid}-def"
    unnamed = tmp_path / f"{runner.CELL_DIR_PREFIX}x65_8j7h"
    for d in (mine, dead, unnamed):
        d.mkdir()
    (tmp_path / f"{runner.CELL_DIR_PREFIX}{gone.pid}-file").write_text("not a directory")
    assert runner.stale_cell_dirs(tmp_path) == [dead]


def test_every_field_a_cell_is_written_with_is_one_the_cell_reads():
    """The cell's schema refuses fields it does not know, and only the system tests measure a
    cell: a field run_cell writes that MeasuredCell does not name would fail only there."""
    import ast
    import dataclasses
    import inspect

    from braidlab.measured import MeasuredCell

    tree = ast.parse(inspect.getsource(runner.run_cell))
    written = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "out" for t in node.targets):
            if isinstance(node.value, ast.Dict):
                written |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == "out"
                        and isinstance(t.slice, ast.Constant)):
                    written.add(t.slice.value)
    assert {"id", "bench", "steer_cpu_seconds", "long_flows"} <= written, written
    fields = {f.name for f in dataclasses.fields(MeasuredCell)}
    assert written <= fields, f"run_cell writes {sorted(written - fields)}, which MeasuredCell does not read"


def test_the_links_counters_over_the_window_are_increases_and_maxima_only_where_it_raised_them():
    before = {"arrived": 100, "dropped_queue": 2, "max_backlog_packets": 40, "max_backlog_bytes": 60000,
              "name": "ab"}
    after = {"arrived": 350, "dropped_queue": 2, "max_backlog_packets": 40, "max_backlog_bytes": 90000,
             "name": "ab"}
    assert runner.window_counters(before, after) == {
        "arrived": 250, "dropped_queue": 0,
        # Not raised in the window: how deep it got there, the counter cannot say.
        "max_backlog_packets": None,
        # Raised: the window's deepest is the new maximum, not its increase.
        "max_backlog_bytes": 90000,
    }
