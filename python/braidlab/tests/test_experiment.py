import dataclasses
import fnmatch
import tomllib
from pathlib import Path

import pytest

from braidlab import experiment
from braidlab.experiment import ExperimentError

ROOT = Path(__file__).resolve().parents[3]

MINIMAL = """
name = "t"
baseline = "single"
[path]
rate = "10mbit"
rtt = "50ms"
[[scenario]]
name = "a"
tcp = { flows = 2, cc = "reno" }
[[scenario]]
name = "b"
path = { mtu = 3000, loss = 0.001 }
[[method]]
name = "single"
mode = "single"
[[method]]
name = "{cc}-{streams}"
mode = "parallel"
cc = ["reno", "cubic"]
streams = [2, 4]
[quick]
seconds = 5
pause = 0
methods = ["single", "reno-*"]
scenarios = ["a"]
[full]
seconds = 60
repeat = 3
pause = 0
"""


def parse(text):
    return experiment.parse(tomllib.loads(text))


@pytest.mark.parametrize("name", ["hacker2004", "cho-bettati", "hacker2002", "variants"])
def test_every_shipped_experiment_loads(name):
    x = experiment.load(name, ROOT / "experiments")
    for v in experiment.VARIANTS:
        cells = x.cells(x.variant(v))
        assert cells and len({c.id for c in cells}) == len(cells)
    assert x.claims, "every experiment states the paper's claims"
    for c in x.claims:
        # Every claim names methods and scenarios the experiment defines.
        names = [c[k] for k in ("a", "b") if k in c]
        # An `order` claim's `a` is a list whose entries may be lists (ties).
        while any(isinstance(n, list) for n in names):
            names = [m for n in names for m in (n if isinstance(n, list) else [n])]
        for n in names:
            assert any(fnmatch.fnmatchcase(m, n) for m in x.methods), (c["id"], n)
        if "scenario" in c:
            assert c["scenario"] in x.scenarios


def test_methods_expand_over_lists_and_variants_select_by_pattern():
    x = parse(MINIMAL)
    assert list(x.methods) == ["single", "reno-2", "reno-4", "cubic-2", "cubic-4"]
    assert x.methods["cubic-4"].method.argv() == ["--mode", "parallel", "-n", "4", "--cc", "cubic"]
    q = x.variant("quick")
    assert q.methods == ("single", "reno-2", "reno-4") and q.scenarios == ("a",)
    assert [c.id for c in x.cells(q)] == ["a.single.r0", "a.reno-2.r0", "a.reno-4.r0"]
    assert len(x.cells(x.variant("full"))) == 2 * 5 * 3
    assert x.variant("full", repeat=1).repeat == 1
    # Scenarios start from [path] and change what they name.
    assert x.scenarios["b"].path.mtu == 3000 and x.scenarios["b"].path.rate == "10mbit"
    assert x.scenarios["a"].path.mtu == 1500


def test_plan_is_a_seeded_shuffle():
    x = parse(MINIMAL)
    v = x.variant("full")
    a, b, c = x.plan(v, 7), x.plan(v, 7), x.plan(v, 8)
    assert a == b and a != c and sorted(map(str, a)) == sorted(map(str, x.cells(v)))


def test_cell_seeds_are_shared_by_methods_and_new_for_each_repetition_and_run():
    x = parse(MINIMAL)
    cells = x.cells(x.variant("full"))
    seed = {c.id: x.cell_seed(7, c) for c in cells}
    # Every method of a scenario and repetition meets the same draws ...
    assert seed["a.single.r0"] == seed["a.reno-4.r0"] == seed["a.cubic-2.r0"]
    # ... and each repetition, scenario and run new ones.
    assert len({seed[f"a.single.r{r}"] for r in range(3)}) == 3
    assert seed["a.single.r0"] != seed["b.single.r0"]
    assert x.cell_seed(8, cells[0]) != seed[cells[0].id]
    assert all(1 <= s < 2**31 for s in seed.values())
    # The same run continued later draws the same.
    assert parse(MINIMAL).cell_seed(7, cells[0]) == seed[cells[0].id]


def test_path_specs_in_braid_link_words():
    x = experiment.load("variants", ROOT / "experiments")
    p = x.scenarios["red-10mbit"].path
    assert p.forward_spec() == ("rate 10mbit delay 50ms red limit 300000 min 50000 max 150000 avpkt 1000 "
                                "probability 0.1 bandwidth 10mbit seed 1")
    assert p.reverse_spec() == "delay 50ms"
    y = parse(MINIMAL).scenarios["b"].path
    assert y.forward_spec() == "rate 10mbit delay 25ms limit 300 loss random 0.1% seed 1"


@pytest.mark.parametrize("change, message", [
    (('mode = "single"', 'mode = "fast"'), "mode 'fast'"),
    (('rate = "10mbit"', 'rate = "10 megabits"'), "rate '10 megabits'"),
    (('seconds = 5', 'seconds = 0'), "seconds > 0"),
    (('methods = ["single", "reno-*"]', 'methods = ["bbr-*"]'), "no method matches 'bbr-*'"),
    (('name = "{cc}-{streams}"', 'name = "{cc}"'), "defined twice"),
    (('name = "{cc}-{streams}"', 'name = "{cc}-{n}"'), "names 'n'"),
    (('streams = [2, 4]', 'streams = [2, 400]'), "streams 400"),
    (('flows = 2', 'flows = 0'), "flows must be"),
    (('flows = 2', 'flows = 2, during = [0.7, 0.3]'), "during must be [arrive, leave]"),
    (('flows = 2', 'flows = 2, during = [0.3]'), "during must be [arrive, leave]"),
    (('baseline = "single"', 'baseline = "none"'), "baseline 'none'"),
    (('[[scenario]]\nname = "a"', '[[scenario]]\nname = "a"\nspeed = 1'), "unknown key(s) speed"),
    (('path = { mtu = 3000, loss = 0.001 }', 'path = { mtu = 100 }'), "path.mtu 100"),
    (('path = { mtu = 3000, loss = 0.001 }', 'path = { tcp_buffer = 0 }'), "path.tcp_buffer 0: want 1..4096 MiB"),
    (('path = { mtu = 3000, loss = 0.001 }', 'path = { tcp_buffer = "big" }'), "path.tcp_buffer 'big'"),
])
def test_bad_files_are_refused_by_name(change, message):
    old, new = change
    assert old in MINIMAL
    with pytest.raises(ExperimentError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("*", r"\*")):
        parse(MINIMAL.replace(old, new, 1))


def test_unknown_experiment_names_the_known_ones(tmp_path):
    (tmp_path / "one.toml").write_text(MINIMAL)
    with pytest.raises(ExperimentError, match="known: one"):
        experiment.load("two", tmp_path)
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(ExperimentError, match="bad.toml"):
        experiment.load(tmp_path / "bad.toml")


MATRIX = """
name = "m"
[matrix]
seed = 7
rtt = ["10ms", "200ms"]
rate = ["20mbit", "1gbit"]
buffer = [0.25, 4.0]
loss = [0.0, 0.0001]
queue = ["droptail", "red"]
[[matrix.competition]]
name = "idle"
cells = 5
[[matrix.competition]]
name = "mix"
tcp = [{ flows = 2, cc = "reno" }, { flows = 1, cc = "bbr" }]
braid = { mode = "auto" }
cells = 2
[[matrix.competition]]
name = "udp"
udp = { min_share = 0.1, max_share = 0.4, period = "7s" }
poisson = { load_share = 0.2, mean_size = "200k" }
cells = 2
[[method]]
name = "auto"
mode = "auto"
default = true
[[method]]
name = "par"
mode = "parallel"
[quick]
seconds = 5
[full]
seconds = 5
"""


def test_a_matrix_draws_the_same_paths_from_its_seed_and_names_its_cells():
    e = experiment.parse(tomllib.loads(MATRIX))
    again = experiment.parse(tomllib.loads(MATRIX))
    assert list(e.scenarios) == ["idle-00", "idle-01", "idle-02", "idle-03", "idle-04", "mix-00", "mix-01",
                                 "udp-00", "udp-01"]
    assert [s.path for s in e.scenarios.values()] == [s.path for s in again.scenarios.values()]
    other = experiment.parse(tomllib.loads(MATRIX.replace("seed = 7", "seed = 8")))
    assert [s.path for s in e.scenarios.values()] != [s.path for s in other.scenarios.values()]
    for s in e.scenarios.values():
        bdp = s.path.rate_bps * experiment.seconds_of(s.path.rtt) / 8 / 1500
        assert s.path.limit in (max(8, round(0.25 * bdp)), min(100_000, round(4 * bdp))), s
        if s.path.queue == "red":
            r = s.path.red
            assert 0 < r["min"] < r["max"] <= s.path.limit and r["max"] <= 3 * r["min"]
    mix = e.scenarios["mix-00"]
    assert mix.long_flows == 4, "two Reno, one BBR and a second braid"
    assert [g["cc"] for g in mix.tcp_groups] == ["reno", "bbr"] and mix.cross_kinds == ["tcp", "braid"]
    udp = e.scenarios["udp-00"]
    rate = udp.path.rate_bps
    assert experiment.rate_bps(udp.udp["min"]) == pytest.approx(0.1 * rate)
    assert experiment.rate_bps(udp.poisson["load"]) == pytest.approx(0.2 * rate)
    assert udp.long_flows == 0, "short flows and a stiff source are no long flows"


def test_a_method_run_with_braids_defaults_passes_no_mode_and_no_streams():
    e = experiment.parse(tomllib.loads(MATRIX))
    auto, par = e.methods["auto"].method, e.methods["par"].method
    assert auto.argv() == [] and auto.default
    assert par.argv() == ["--mode", "parallel"], "no streams given: braid's own default"
    assert auto.matches(["cubic"] * 7) and not auto.matches([])
    bad = MATRIX.replace('name = "auto"\nmode = "auto"\ndefault = true',
                         'name = "auto"\nmode = "auto"\ndefault = true\nstreams = 4')
    with pytest.raises(ExperimentError, match="defaults takes no settings"):
        experiment.parse(tomllib.loads(bad))


def test_a_mix_arrives_together_or_is_refused():
    bad = MATRIX.replace('tcp = [{ flows = 2, cc = "reno" }, { flows = 1, cc = "bbr" }]',
                         'tcp = [{ flows = 2, cc = "reno", during = [0.3, 0.6] }, { flows = 1, cc = "bbr" }]')
    with pytest.raises(ExperimentError, match="arrive and leave together"):
        experiment.parse(tomllib.loads(bad))


def test_generality_is_a_matrix_of_at_least_60_cells_with_its_claims():
    e = experiment.load("generality", root=ROOT / "experiments")
    full = e.variant("full")
    assert len(full.scenarios) >= 60 and full.repeat >= 3
    comps = {n.rsplit("-", 1)[0] for n in full.scenarios}
    assert {"idle", "reno-1", "cubic-16", "bbr-4", "mix", "cubic-arrive", "web", "auto-pair", "udp"} <= comps
    ids = {c["id"] for c in e.claims}
    assert {"idle-fast", "shared-band", "bbr-floor", "settles-on-arrival", "two-autos-fair"} <= ids
    assert all(c["check"] == "share_of_cells" for c in e.claims)


def test_the_scavenger_is_judged_on_a_matrix_of_its_own_beside_the_default_and_one_cubic_stream():
    e = experiment.load("scavenger", root=ROOT / "experiments")
    full = e.variant("full")
    assert len(full.scenarios) >= 20 and e.matrix["seed"] != experiment.load("generality").matrix["seed"]
    assert {"single", "auto", "auto-yield"} <= set(full.methods)
    assert e.methods["auto-yield"].method.strength == 0 and e.methods["auto"].method.default
    ids = {c["id"] for c in e.claims}
    assert {"yield-idle", "yields-to-long-flows", "yields-to-arrivals", "others-keep"} <= ids


def test_a_matrix_lists_its_cells_for_braid_sim_and_a_plain_experiment_is_refused():
    e = experiment.parse(tomllib.loads(MATRIX + '[[scenario]]\nname = "by-hand"\n'))
    lines = experiment.sim_cells(e)
    assert [ln.split()[:2] for ln in lines][:2] == [["idle-00", "idle"], ["idle-01", "idle"]]
    assert len(lines) == 9, "the hand-written scenario is not one of the matrix's cells"
    name, kind, rtt_ms, rate_mbps, *link = lines[5].split()
    sc = e.scenarios[name]
    assert kind == "mix" and float(rtt_ms) == experiment.seconds_of(sc.path.rtt) * 1e3
    assert float(rate_mbps) * 1e6 == sc.path.rate_bps and " ".join(link) == sc.path.forward_spec()
    with pytest.raises(ExperimentError, match="not a matrix"):
        experiment.sim_cells(dataclasses.replace(e, matrix=None))
