import math

import pytest

from braidlab import metrics

MB = 1e6


def paper_capacity(udp_min_mbps, udp_max_mbps):
    # Hacker 2004 section VI: M = 100 Mb/s, 240 s, fping 1440 B every 10 ms, period 10 s.
    return metrics.capacity(100e6, 240, udp=(udp_min_mbps * 1e6, udp_max_mbps * 1e6), period=10,
                            probe=metrics.probe_rate(1440, 0.01))


def test_capacity_reproduces_table_1_and_2():
    assert paper_capacity(1, 10) / MB == pytest.approx(2801.5, rel=0.005)
    assert paper_capacity(50, 80) / MB == pytest.approx(1014.6, rel=0.005)


def test_capacity_by_hand():
    # (M - I) t - Avg (c sin(t/c) + t Min/Avg + t), c = 0.05 pi period, here:
    # M = 10, I = 0, Min = 2, Max = 4 (Avg = 1), period = 20 / pi (c = 1), t = pi / 2:
    # 10 pi/2 - (1 + pi + pi/2) bits.
    t = math.pi / 2
    got = metrics.capacity(10, t, udp=(2, 4), period=20 / math.pi)
    assert got == pytest.approx((10 * t - (1 + 2 * t + t)) / 8)
    # Without UDP and probes it is the link's bytes.
    assert metrics.capacity(8e6, 3) == pytest.approx(3e6)
    # A flat source (Min = Max) takes Min * t.
    assert metrics.capacity(8, 2, udp=(4, 4)) == pytest.approx((16 - 8) / 8)


def test_probe_rate():
    assert metrics.probe_rate(1440, 0.01) == pytest.approx(1.152e6)
    with pytest.raises(ValueError):
        metrics.probe_rate(1440, 0)


def test_capacity_refuses_nonsense():
    with pytest.raises(ValueError, match="not a range"):
        metrics.capacity(100e6, 240, udp=(10e6, 1e6))
    with pytest.raises(ValueError):
        metrics.capacity(0, 240)


def test_effectiveness_and_appropriation_match_the_papers_arithmetic():
    # Table I, single: 1843.2 MB of 2801.5 MB = 65.8 %.
    assert metrics.effectiveness(1843.2, 2801.5) == pytest.approx(0.658, abs=5e-4)
    # Section VII.C: baseline 75.3 Mb/s; 38.7 % appropriation leaves 46.16 Mb/s.
    assert metrics.appropriation(46.16, 75.3) == pytest.approx(0.387, abs=5e-4)
    assert metrics.appropriation(80, 75.3) < 0
    with pytest.raises(ValueError):
        metrics.appropriation(1, 0)


def test_jain():
    assert metrics.jain([5, 5, 5, 5]) == pytest.approx(1)
    assert metrics.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert metrics.jain([1, 3]) == pytest.approx(16 / 20)
    assert metrics.jain([0, 0]) == 1.0
    with pytest.raises(ValueError):
        metrics.jain([])
    with pytest.raises(ValueError):
        metrics.jain([1, -1])


def test_loss_utilisation_median_sqrt_p():
    assert metrics.loss_ratio(13, 100) == pytest.approx(0.13)
    assert metrics.loss_ratio(0, 0) == 0
    assert metrics.utilisation(1.25e6, 10e6, 1) == pytest.approx(1.0)
    assert metrics.utilisation(0.625e6, 10e6, 2) == pytest.approx(0.25)
    assert metrics.median([3, 1, 2, 10]) == 2.5
    assert metrics.median([]) is None
    assert metrics.sqrt_p(0.000681) == pytest.approx(0.261, abs=5e-4)  # Table IV, single: 0.0681 %


def test_mathis():
    # 1448 B, 50 ms, p = 1e-3: 1448*8*1.2247/(0.05*0.031623) = 8.97 Mb/s.
    assert metrics.mathis(1448, 0.05, 1e-3) == pytest.approx(8.972e6, rel=1e-3)
    assert metrics.mathis(1448, 0.05, 0) == math.inf
    # n equal streams: n times one; loss-free streams are left out.
    one = metrics.mathis(1448, 0.065, 1e-4)
    assert metrics.mathis_aggregate([(1448, 0.065, 1e-4)] * 3) == pytest.approx(3 * one)
    assert metrics.mathis_aggregate([(1448, 0.065, 1e-4), (1448, 0.065, 0)]) == pytest.approx(one)
    assert metrics.mathis_aggregate([(1448, 0.065, 0)]) == math.inf


def test_t_quantile_and_confidence_interval():
    # Textbook values: t(0.95, 4) = 2.1318, t(0.95, 9) = 1.8331, t(0.975, 1) = 12.706.
    assert metrics.t_quantile(0.95, 4) == pytest.approx(2.1318, abs=1e-3)
    assert metrics.t_quantile(0.95, 9) == pytest.approx(1.8331, abs=1e-3)
    assert metrics.t_quantile(0.975, 1) == pytest.approx(12.706, abs=2e-2)
    m, lo, hi = metrics.mean_ci([1, 2, 3, 4, 5], 0.90)
    # mean 3, sd 1.5811, half width 2.1318 * 1.5811 / sqrt(5) = 1.5074
    assert (m, lo, hi) == pytest.approx((3, 1.4926, 4.5074), abs=1e-3)
    assert metrics.mean_ci([7.0]) == (7.0, 7.0, 7.0)


def test_knee():
    # Rises 10 per stream up to 5 streams, then flat: 90 % of 50 is first reached at n = 5.
    ns = [1, 2, 3, 4, 5, 6, 8, 10]
    ys = [10, 20, 30, 40, 50, 50, 49, 50]
    assert metrics.knee(ns, ys) == 5
    assert metrics.knee(ns, ys, frac=0.5) == 3
    assert metrics.knee([3, 1, 2], [30, 10, None]) == 3
    assert metrics.knee([], []) is None


def test_the_models_agree_with_the_engines_vectors():
    """crates/braid/vectors/models.json is written by braid::model's test; the laboratory's
    formulas must give the same numbers."""
    import json
    from pathlib import Path

    cases = json.loads((Path(__file__).resolve().parents[3] / "crates/braid/vectors/models.json").read_text())
    seen = set()
    for c in cases["cases"]:
        seen.add(c["model"])
        if c["model"] == "mathis":
            assert c["c"] == pytest.approx(metrics.MATHIS_C)
            assert metrics.mathis(c["mss"], c["rtt"], c["p"]) == pytest.approx(c["bps"], rel=1e-12)
        elif c["model"] == "padhye":
            got = metrics.padhye(c["mss"], c["rtt"], c["p"], c["rto"], c["b"])
            assert got == pytest.approx(c["bps"], rel=1e-12)
        else:
            assert metrics.knee_streams(c["one_stream_bps"], c["rate_bps"]) == c["streams"]
    assert seen == {"mathis", "padhye", "knee"}


def test_settle_time_is_where_the_rolling_mean_stays_within_ten_percent():
    ts = [float(t) for t in range(1, 31)]
    # 100 until 10 s, then a 5 s ramp down to 20, flat after.
    rates = [100.0 if t <= 10 else max(20.0, 100.0 - 16 * (t - 10)) for t in ts]
    took, settled = metrics.settle_time(ts, rates, 10.0, 30.0, window=3.0)
    assert settled == 20.0
    # Points 16, 17, 18 are flat: the 3 s mean is 20 from t = 17 (15 s has 20 too: max(20, 20)).
    assert took == 7.0
    # Flat from the start: settled at the first point.
    assert metrics.settle_time(ts, [50.0] * 30, 10.0, 30.0) == (1.0, 50.0)
    # A rate that keeps swinging by half never settles; too short a phase cannot tell.
    swing = [100.0 if int(t) % 2 else 50.0 for t in ts]
    assert metrics.settle_time(ts, swing, 0.0, 30.0, window=1.0)[0] == math.inf
    assert metrics.settle_time(ts, rates, 28.0, 30.0) == (None, None)


def test_reach_time_is_the_first_entry_into_the_band_settle_time_asks_to_stay_in():
    ts = [float(t) for t in range(1, 31)]
    rates = [100.0 if t <= 10 else max(20.0, 100.0 - 16 * (t - 10)) for t in ts]
    # A ramp that stays once it arrives: both times are the same.
    assert metrics.reach_time(ts, rates, 10.0, 30.0) == 7.0 == metrics.settle_time(ts, rates, 10.0, 30.0)[0]
    # At the new rate at once, away for a while, back to stay: reached at once, settled at 11 s.
    away = [20.0 if t <= 3 or t > 10 else 60.0 for t in ts]
    assert metrics.reach_time(ts, away, 0.0, 30.0, window=1.0) == 1.0
    assert metrics.settle_time(ts, away, 0.0, 30.0, window=1.0)[0] == 11.0
    # A swing whose 3 s mean (67 or 83) is never near its median (50) never reaches; a short
    # phase cannot tell.
    swing = [100.0 if int(t) % 2 else 50.0 for t in ts]
    assert metrics.reach_time(ts, swing, 0.0, 30.0, window=3.0) == math.inf
    assert metrics.reach_time(ts, rates, 28.0, 30.0) is None


def test_binned_jain_sees_unfairness_the_totals_hide():
    ts = [1.0, 2.0, 3.0, 4.0]
    # Two streams that take turns: equal totals, one stream per bin.
    a, b = [10.0, 0.0, 10.0, 0.0], [0.0, 10.0, 0.0, 10.0]
    assert metrics.jain([sum(a), sum(b)]) == 1.0
    assert metrics.binned_jain(ts, [a, b]) == pytest.approx(0.5)
    assert metrics.binned_jain(ts, [[5.0] * 4, [5.0] * 4]) == 1.0
    assert metrics.binned_jain(ts, [a]) is None
