"""The claim kinds that read a sweep as a curve (like_flows, grows, order, pooled within), and retired claims."""

import pytest

from braidlab import claims


def rows_of(scenario: str, values: dict[str, float], metric: str = "x") -> list[dict]:
    return [{"scenario": scenario, "method": m, metric: x} for m, x in values.items()]


def judge(claim: dict, rows: list[dict]) -> claims.Verdict:
    return claims.check({"id": "c", "text": "t", **claim}, rows)


def test_a_curve_is_its_points_joined_and_extended_by_its_end_segments():
    pts = {0.0: 0.0, 1.0: 1.0, 4.0: 4.0, 10.0: 7.0}
    assert claims.curve_at(pts, 0.5) == pytest.approx(0.5)
    assert claims.curve_at(pts, 2.5) == pytest.approx(2.5)
    assert claims.curve_at(pts, 7.0) == pytest.approx(5.5)
    assert claims.curve_at(pts, 12.0) == pytest.approx(8.0)  # past the end: the last slope, 0.5
    assert claims.curve_at(pts, -1.0) == pytest.approx(-1.0)
    assert claims.curve_at({1.0: 3.0}, 1.0) is None


PLAIN = {"plain-1": 1.0, "plain-2": 1.8, "plain-3": 2.6, "plain-4": 3.4}


@pytest.mark.parametrize("group, flows, status", [
    # Nearer one flow (curve 0.5 at 1/2 flow, 1.4 at 3/2) than none or two.
    ({"tcpp-2": 0.9, "tcpp-10": 1.3}, 1, "holds"),
    ({"tcpp-2": 0.9, "tcpp-10": 1.5}, 1, "does not hold"),  # past 1.4: as two flows more than one
    ({"tcpp-2": 0.4}, 1, "does not hold"),  # under 0.5: nearer no flow at all
])
def test_a_group_has_the_effect_of_a_fixed_number_of_flows(group, flows, status):
    v = judge({"check": "like_flows", "metric": "x", "a": "tcpp-*", "b": "plain-*", "flows": flows},
              rows_of("s", {**PLAIN, **group}))
    assert v.status == status, v.detail


def test_a_group_of_strength_k_has_the_effect_of_k_flows():
    claim = {"check": "like_flows", "metric": "x", "a": "k-*", "b": "plain-*"}
    # k = 3: between 2.2 and 3.0; k = 4 at the sweep's end: between 3.0 and 3.8 (the last slope).
    assert judge(claim, rows_of("s", {**PLAIN, "k-3": 2.9, "k-4": 3.7})).holds
    v = judge(claim, rows_of("s", {**PLAIN, "k-3": 2.9, "k-4": 2.8}))
    assert v.status == "does not hold" and "k-4" in v.detail and "k-3" not in v.detail.split("not:")[1]
    # Each scenario is judged on its own sweep.
    two = rows_of("s", {**PLAIN, "k-3": 2.9}) + rows_of("t", {"plain-1": 1.0, "plain-4": 2.0, "k-3": 2.9})
    assert judge(claim, two).status == "does not hold"
    assert judge(claim, rows_of("s", {"k-3": 2.9})).status == "not measured"


@pytest.mark.parametrize("claim, status", [
    ({"between": "all"}, "does not hold"),  # 1, 2, 3, 3.2, 3.1: falls at the end
    ({"between": "to-knee"}, "holds"),  # knee (90 % of 3.2) at 3 streams
    ({"between": "from-knee", "steps": "ends"}, "holds"),  # 3 -> 3.1
    ({"between": "from-knee", "steps": "each"}, "does not hold"),
    ({"between": "to-knee", "falls": True}, "does not hold"),
])
def test_grows_reads_the_curve_to_or_from_its_knee(claim, status):
    rows = rows_of("s", {"p-1": 1.0, "p-2": 2.0, "p-3": 3.0, "p-4": 3.2, "p-5": 3.1})
    v = judge({"check": "grows", "metric": "x", "a": "p-*", **claim}, rows)
    assert v.status == status, v.detail


def test_grows_holds_only_if_every_scenario_grows():
    rows = rows_of("s", {"p-1": 1.0, "p-2": 2.0}) + rows_of("t", {"p-1": 1.0, "p-2": 0.5})
    v = judge({"check": "grows", "metric": "x", "a": "p-*"}, rows)
    assert v.status == "does not hold" and "t: " in v.detail
    assert judge({"check": "grows", "metric": "x", "a": "p-*", "scenario": "s"}, rows).holds
    assert judge({"check": "grows", "metric": "x", "a": "p-*"}, rows_of("s", {"p-1": 1.0})).status == "not measured"


def test_order_compares_the_numbers_measured_for_every_pattern():
    rows = rows_of("s", {"c-10": 0.99, "c-20": 0.98, "s-10": 0.97, "s-20": 0.96, "r-10": 0.95, "r-30": 0.5})
    claim = {"check": "order", "metric": "x", "a": ["c-*", "s-*", "r-*"]}
    v = judge(claim, rows)
    assert v.holds and "over 10:" in v.detail, v.detail  # r-30 has no partner
    assert judge({**claim, "a": ["s-*", "c-*"]}, rows).status == "does not hold"
    assert judge({**claim, "a": ["c-*", "b-*"]}, rows).status == "not measured"


def test_a_pooled_within_checks_the_mean_of_the_pattern():
    rows = rows_of("s", {"r-1": 0.01, "r-10": 0.2})
    claim = {"check": "within", "metric": "x", "a": "r-*", "low": 0.1, "high": 0.11}
    assert judge(claim, rows).status == "does not hold"
    assert judge({**claim, "pooled": True}, rows).holds  # the mean, 0.105


def test_an_order_may_leave_a_rank_unordered():
    rows = rows_of("s", {"s-10": 0.16, "h-10": 0.14, "hs-10": 0.15, "c-10": 0.13, "r-10": 0.12})
    claim = {"check": "order", "metric": "x", "a": ["s-*", ["h-*", "hs-*"], ["c-*", "r-*"]]}
    assert judge(claim, rows).holds
    rows = rows_of("s", {"s-10": 0.16, "h-10": 0.12, "hs-10": 0.15, "c-10": 0.13, "r-10": 0.12})
    assert judge(claim, rows).status == "does not hold"  # h-* is not above c-*


def test_a_retired_claim_is_still_measured_but_counts_neither_way():
    rows = rows_of("s", {"a": 0.12})
    claim = {"check": "within", "metric": "x", "a": "a", "high": 0.03, "note": "why it fails"}
    assert judge(claim, rows).status == "does not hold"
    v = judge({**claim, "retired": "replaced by  the band\nclaim"}, rows)
    assert (v.status, v.measured, v.holds) == ("retired", "does not hold", False)
    assert v.note == "replaced by the band claim" and "12.0 %" not in v.detail and "0.12" in v.detail
    assert judge({**claim, "retired": "replaced"}, rows_of("s", {"b": 1.0})).measured == "not measured"
