from braidlab.cwnd import growth_per_ack


def sample(cwnd, ssthresh, acked_pkts, ca_state=0, mss=1000):
    return {"cwnd": cwnd, "ssthresh": ssthresh, "bytes_acked": acked_pkts * mss, "ca_state": ca_state, "mss": mss}


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
