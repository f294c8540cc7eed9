from braidlab import path


def test_specs_put_rate_loss_and_queue_forward_and_delay_both_ways():
    fwd, rev = path.specs("100mbit", "34ms", "0.01%", "580", None, None)
    assert fwd == "rate 100mbit delay 34ms limit 580 loss random 0.01%"
    assert rev == "delay 34ms"
    fwd, rev = path.specs(None, None, None, None, "red limit 400000 min 30000 max 90000 avpkt 1000", "10mbit")
    assert fwd == "red limit 400000 min 30000 max 90000 avpkt 1000"
    assert rev == "rate 10mbit"
