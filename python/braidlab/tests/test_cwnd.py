from braidlab import cwnd
from braidlab.cwnd import growth_per_ack
from braidlab.records import TcpInfo


def sample(cwnd, ssthresh, acked_pkts, ca_state=0, mss=1000):
    return TcpInfo(ca_state=ca_state, cwnd=cwnd, ssthresh=ssthresh, srtt_us=0, rttvar_us=0, min_rtt_us=0, mss=mss,
                   total_retrans=0, lost=0, data_segs_out=0, bytes_acked=acked_pkts * mss, bytes_sent=0,
                   bytes_retrans=0, delivery_rate=0, delivered=0, busy_us=0, rwnd_limited_us=0,
                   sndbuf_limited_us=0)


def reno_trace(f=1.0, start=20, acks=5000, every=100):
    """A window growing by f/cwnd per ACK, sampled every `every` ACKs."""
    w = float(start)
    out = [sample(int(w), 10, 0)]
    for i in range(1, acks + 1):
        w += f / w
        if i % every == 0:
            out.append(sample(int(w), 10, i))
    return out


def test_reno_grows_one_per_ack_in_cwnd_squared_over_two():
    g = growth_per_ack(reno_trace(1.0))
    assert 0.9 < g < 1.1


def test_a_tenth_of_reno_reads_as_a_tenth():
    g = growth_per_ack(reno_trace(0.1, acks=50000, every=1000))
    assert 0.08 < g < 0.12


def test_pairs_across_a_loss_or_in_slow_start_are_skipped():
    s = [sample(10, 100, 0), sample(20, 100, 10),            # slow start
         sample(40, 20, 100), sample(20, 20, 110, ca_state=3),  # loss and recovery
         sample(20, 20, 120), sample(21, 20, 140)]
    assert growth_per_ack(s) == (21**2 - 20**2) / 2 / 20


def test_no_usable_pair_gives_none():
    assert growth_per_ack([sample(10, 100, 0), sample(12, 100, 2)]) is None


def _rfc3649(w):
    """RFC 3649's continuous a(w), b(w) (section 5), Reno below 38 packets."""
    import math

    if w <= 38:
        return 1.0, 0.5
    b = (0.1 - 0.5) * (math.log(w) - math.log(38)) / (math.log(83000) - math.log(38)) + 0.5
    return w * w * (0.078 / w ** 1.2) * 2 * b / (2 - b), b


def test_aimd_mean_window_gives_renos_random_loss_window():
    # Reno under Bernoulli loss sits a little above the periodic-loss sqrt(3/(2p)) (1.22/sqrt(p)).
    p = 1e-3
    w = cwnd.aimd_mean_window(p, lambda w: 1.0, lambda w: 0.5)
    assert 1.22 / p ** 0.5 < w < 1.45 / p ** 0.5, w


def test_hstcp_continuous_law_meets_its_response_function_and_the_table_runs_above_it():
    from braidlab.braid import ROOT

    for p in (3e-4, 1e-4):
        rfc = 0.12 / p ** 0.835
        cont = cwnd.aimd_mean_window(p, lambda w: _rfc3649(w)[0], lambda w: _rfc3649(w)[1])
        assert abs(cont - rfc) < 0.04 * rfc, (p, cont, rfc)
    rows = cwnd.hstcp_table((ROOT / "bpf" / "math" / "hstcp_table.h").read_text())
    assert len(rows) == 73 and rows[0] == (38, 0.5)
    # The table's a(w) is rounded up to whole packets (2 from 39 packets on): a larger mean window.
    table = cwnd.hstcp_mean_window(3e-4, rows)
    assert 1.15 * 104.9 < table < 1.35 * 104.9, table


def test_aimd_refuses_a_loss_rate_outside_0_1():
    import pytest

    with pytest.raises(ValueError, match="loss rate 0"):
        cwnd.aimd_mean_window(0, lambda w: 1, lambda w: 0.5)
    with pytest.raises(ValueError, match="no HighSpeed TCP table"):
        cwnd.hstcp_table("int x;")


def test_renos_random_loss_c_sits_above_the_periodic_one_and_is_shared_within_two_digits():
    c = cwnd.reno_random_loss_c(1e-4)
    assert 1.27 < c < 1.34, c
    assert cwnd.reno_random_loss_c(1.04e-4) == c
    assert cwnd.reno_random_loss_c(3e-4) != c
