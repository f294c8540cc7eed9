"""`braid plan` probing a path through a `braid serve`: what it measures of an
emulated lossy path, and what it recommends."""

from __future__ import annotations

import json
import subprocess

from braidlab import engine, records
from braidlab.braid import binary
from braidlab.dumbbell import LinkPath
from braidlab.netns import wait_until


def test_plan_probes_rtt_and_loss_and_recommends_the_knee(tmp_path, record):
    # 200 Mb/s, 40 ms, random loss 1e-3: one Reno stream is held near 1448 * 8 * 1.3 / (0.04 * 0.0316)
    # = 12 Mb/s, so the path needs many streams.
    with LinkPath("rate 200mbit delay 20ms limit 2000 loss random 0.1% seed 4", "delay 20ms", tag="plan") as p:
        token = engine.token_file(tmp_path)
        server = engine.serve(p.rcv, tmp_path, token)
        try:
            assert wait_until(lambda: str(engine.PORT) in p.rcv.run("ss", "-tlnH"), timeout=10)
            argv = [binary(), "plan", p.RCV_ADDR, "-t", "4", "--json", "--token-file", str(token)]
            out = subprocess.run(p.snd.argv(*argv), capture_output=True, text=True, timeout=120)
        finally:
            server.kill()
            server.wait()
    assert out.returncode == 0, out.stderr
    (plan,) = [records.parse(line) for line in out.stdout.splitlines() if line.startswith("{")]
    record(rtt_ms=round(plan.rtt_s * 1e3, 2), loss=plan.loss, rate_mbps=round(plan.rate_bps / 1e6, 1),
           knee=plan.knee, recommended=f"{plan.recommend_mode} -n {plan.recommend_streams}")
    assert plan.measured
    assert 39.5 <= plan.rtt_s * 1e3 <= 45, plan.rtt_s
    # Retransmitted per sent segment: the link's 1e-3, give or take the probe's few seconds.
    assert 3e-4 <= plan.loss <= 3e-3, plan.loss
    assert plan.recommend_mode == "auto" and plan.recommend_streams >= 2
    assert json.loads(out.stdout)["type"] == "plan"
