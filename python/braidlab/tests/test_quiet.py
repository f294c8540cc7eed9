import pytest

from braidlab import quiet

STAT_A = "cpu  100 5 50 1000 20 3 7 0 0 0\ncpu0 50 2 25 500 10 1 3 0 0 0\n"
STAT_B = "cpu  160 5 70 1090 30 3 17 0 40 0\ncpu0 80 2 35 545 15 1 8 0 20 0\n"


def test_idle_and_iowait_are_not_busy_and_guest_time_is_not_counted_twice():
    assert quiet.cpu_times(STAT_A) == (165, 1185)
    # user +60, system +20, softirq +10 busy; idle +90, iowait +10; guest +40 is inside user.
    assert quiet.busy_share(quiet.cpu_times(STAT_A), quiet.cpu_times(STAT_B)) == pytest.approx(90 / 190)


def test_no_time_passed_reads_as_quiet():
    a = quiet.cpu_times(STAT_A)
    assert quiet.busy_share(a, a) == 0.0


def test_text_that_is_not_proc_stat_is_refused():
    with pytest.raises(ValueError, match="not /proc/stat"):
        quiet.cpu_times("intr 1 2 3\n")


def test_a_reading_of_this_machine_is_a_share():
    share = quiet.measure(0.05)
    assert 0.0 <= share <= 1.0
