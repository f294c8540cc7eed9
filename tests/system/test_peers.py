"""The tools braid is compared with (braidlab.peers, benches/wan.py), as real
peers across an emulated path: GridFTP, XRootD and rsync each move a file
intact beside braid, on as many connections as they were asked for."""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

from braidlab import engine, peers
from braidlab.dumbbell import LinkPath
from braidlab.engine import Method
from braidlab.peers import Peer

SIZE = 24 << 20


def test_every_peer_moves_a_file_intact_on_the_connections_it_was_asked_for(controls, record):
    # GridFTP's and XRootD's servers run as nobody: their roots below a directory others may search.
    tmp_path = Path(tempfile.mkdtemp(prefix="braid-peers-", dir="/var/tmp"))
    tmp_path.chmod(0o755)
    try:
        _every_peer(record, tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _every_peer(record, tmp_path):
    chosen = [Peer("braid", 4, Method("parallel", 4, cc="reno")), Peer("braid", 9, Method("auto", 9)),
              Peer("gridftp", 4), Peer("xrootd", 4), Peer("rsync")]
    assert not peers.missing(chosen), "make setup installs every peer"
    src = tmp_path / "src.bin"
    src.write_bytes(random.Random(5).randbytes(SIZE))
    want = peers.digest(src)
    seen = {}
    with LinkPath("rate 200mbit delay 5ms limit 1000", "delay 5ms", tag="peers", run_dir=tmp_path / "tb") as path:
        snd, rcv = path.senders[0], path.receivers[0]
        token = engine.token_file(tmp_path)
        for i, p in enumerate(chosen):
            server = peers.serve(p, rcv, tmp_path / "roots" / str(i), tmp_path / "servers" / str(i), token=token)
            try:
                copied = peers.timed_copy(server, snd, src, timeout=120)
            finally:
                server.stop()
            dest = server.copy_of(src)
            assert peers.same_bytes(src, dest, want), f"{p.name} left a copy unlike the source"
            seen[p.name] = (round(SIZE * 8 / copied.seconds / 1e6, 1), copied.connections)
    record(mbps_and_connections=seen)
    # The data streams each tool was asked for, counted at the server while it copied (braid and
    # GridFTP add a control connection; XRootD's substreams ride beside its main one).
    # braid's auto chooses its streams: -n is the most it may open, and it starts with two.
    for p in chosen:
        mbps, conns = seen[p.name]
        assert mbps > 0
        if p.kind == "braid" and p.method.mode == "auto":
            assert 1 + 2 <= conns <= 1 + p.streams, f"{p.name}: {conns} connections, -n {p.streams}"
        else:
            assert conns >= p.streams, f"{p.name}: {conns} connections at most, asked for {p.streams} streams"

