from braidlab.spark import BARS, sparkline


def test_ramp_uses_the_whole_range():
    s = sparkline(list(range(8)), width=8)
    assert s[0] == BARS[0] and s[-1] == BARS[-1] and len(s) == 8


def test_long_series_is_averaged_into_width_columns():
    s = sparkline([1.0] * 1000 + [0.0] * 1000, width=10)
    assert len(s) == 10 and s[:5] == BARS[-1] * 5 and s[5:] == BARS[0] * 5


def test_empty_and_zero():
    assert sparkline([]) == ""
    assert sparkline([0, 0, 0]) == BARS[0] * 3
