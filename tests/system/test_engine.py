"""braid's transfer engine between two namespaces: modes reach the kernel at
the sending end, files arrive bit-identical, a lost stream is replaced, a
killed transfer resumes, and failures leave nothing half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import blake3
import pytest

from braidlab import engine
from braidlab.engine import Method, Report
from braidlab.netns import wait_until
from braidlab.proc import run
from braidlab.testbed import Pair

GIB = 1 << 30


def journal_of(dest: Path) -> Path:
    """Where the receiver journals `dest`: its staging directory, named by a hash of the name."""
    stem = blake3.blake3(dest.name.encode()).digest()[:16].hex()
    return dest.parent / ".braid-partial" / f"{stem}.journal"


def b3(p: Path) -> str:
    h = blake3.blake3(max_threads=blake3.blake3.AUTO)
    with open(p, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    base = tmp_path_factory.mktemp("engine")
    with Pair(tag="eng") as p:
        p.dir = base
        p.token = engine.token_file(base)
        p.root = base / "root"
        p.root.mkdir()
        p.log = base / "serve.jsonl"
        p.server = engine.serve(p.rcv, p.root, p.token, log=p.log)
        assert wait_until(lambda: "5420" in p.rcv.run("ss", "-tlnH"), timeout=10), "braid serve did not listen"
        p.target = f"{p.RCV_ADDR}:{engine.PORT}"
        yield p


def _client(pair, *argv, timeout=120) -> tuple[int, Report, str]:
    p = subprocess.run(pair.snd.argv(*argv), capture_output=True, text=True, timeout=timeout)
    return p.returncode, Report.parse(p.stdout), p.stderr


@pytest.mark.parametrize("method", [
    Method("combined", 3, virtual_rtt=10),
    Method("tcpp", 3, strength=2),
    Method("parallel", 2, cc="cubic"),
    Method("single", 1, cc="reno"),
], ids=lambda m: f"{m.mode}-{m.streams}")
def test_bench_sets_each_streams_control_at_the_sending_end(controls, pair, method, record):
    rc, rep, err = _client(pair, *engine.bench_argv(pair.target, 1.5, pair.token, method, interval=0.5))
    assert rc == 0, err
    assert rep.controls == method.controls()
    assert rep.summary.peer_bytes == rep.summary.bytes > 0
    assert len(rep.intervals) >= 2 and all(len(i.streams) == len(method.controls()) for i in rep.intervals)
    record(mode=rep.summary.mode, mbps=rep.summary.mbps, controls=rep.controls)


def test_pull_makes_the_server_the_sender_with_the_clients_mode(controls, pair, tmp_path):
    src = pair.root / "pull"
    src.mkdir()
    (src / "f").write_bytes(os.urandom(3_000_001))
    method = Method("combined", 3, virtual_rtt=10)
    rc, rep, err = _client(pair, *engine.client_argv("get", f"{pair.target}:pull", str(tmp_path),
                                                     token=pair.token, method=method))
    assert rc == 0, err
    assert b3(tmp_path / "pull" / "f") == b3(src / "f")
    assert wait_until(lambda: any(s.kind == "get" for s in Report.summaries(pair.log)), timeout=5)
    s = [s for s in Report.summaries(pair.log) if s.kind == "get"][-1]
    assert s.role == "sender" and [x.cc for x in s.streams] == method.controls()
    rc, rep, err = _client(pair, *engine.bench_argv(pair.target, 1, pair.token, Method("tcpp", 2, strength=1),
                                                    reverse=True))
    assert rc == 0, err
    assert wait_until(lambda: any(s.kind == "bench" and s.role == "sender" for s in Report.summaries(pair.log)),
                      timeout=5)
    s = [s for s in Report.summaries(pair.log) if s.kind == "bench" and s.role == "sender"][-1]
    assert [x.cc for x in s.streams] == ["braid_tcpp", "braid_tcpp"]


def _tree(top: Path) -> None:
    (top / "d" / "e").mkdir(parents=True)
    (top / "empty").write_bytes(b"")
    (top / "one").write_bytes(b"1")
    (top / "d" / "odd").write_bytes(os.urandom(777_777))
    for i in range(300):
        (top / "d" / "e" / f"s{i}").write_bytes(os.urandom(i * 11))


def _same_tree(a: Path, b: Path) -> int:
    n = 0
    for p in a.rglob("*"):
        if p.is_file():
            q = b / p.relative_to(a)
            assert b3(p) == b3(q), f"{q} differs"
            n += 1
    return n


def test_gigabyte_files_and_trees_arrive_identical_in_every_mode(controls, pair, record):
    src = pair.dir / "src"
    src.mkdir()
    random_gib = src / "random.bin"
    with open(random_gib, "wb") as f:
        block = os.urandom(1 << 24)
        for i in range(GIB // len(block)):
            f.write(block[i:] + block[:i])  # no two 16 MiB stretches alike
    sparse = src / "sparse.bin"
    with open(sparse, "wb") as f:
        f.truncate(GIB + 12345)
        f.seek(GIB // 2)
        f.write(b"an island in the hole")
    _tree(src / "tree")
    cases = [
        (Method("parallel", 4), [random_gib]),
        (Method("combined", 4, virtual_rtt=10), [sparse]),
        (Method("tcpp", 3, strength=1), [src / "tree"]),
        (Method("single", 1), [src / "tree"]),
    ]
    for i, (method, paths) in enumerate(cases):
        dest = f"in{i}"
        rc, rep, err = _client(pair, *engine.client_argv("send", *map(str, paths), f"{pair.target}:{dest}/",
                                                         token=pair.token, method=method), timeout=300)
        assert rc == 0, f"{method}: {err}"
        assert method.matches(rep.controls), rep.controls
        for p in paths:
            if p.is_dir():
                assert _same_tree(p, pair.root / dest / p.name) == 303
            else:
                assert b3(p) == b3(pair.root / dest / p.name), f"{p.name} in {method.mode}"
        record(mode=rep.summary.mode, bytes=rep.summary.bytes, mbps=rep.summary.mbps,
               cpu_s=rep.summary.cpu_seconds)
    leftovers = [p for p in pair.root.rglob("*") if "braid-" in p.name]
    assert not leftovers, leftovers
    random_gib.unlink()
    sparse.unlink()


def _client_ports(ns, server_port=engine.PORT) -> dict[int, int]:
    """The client's connections to the server: local port -> bytes acknowledged."""
    out = ns.run("ss", "-tinH", "state", "established", f"( dport = :{server_port} )")
    ports, port = {}, None
    for line in out.splitlines():
        if not line[:1].isspace():
            port = int(line.split()[2].rsplit(":", 1)[1])
            ports[port] = 0
        elif port is not None:
            acked = [w for w in line.split() if w.startswith("bytes_acked:")]
            ports[port] = int(acked[0].split(":")[1]) if acked else 0
    return ports


def test_a_killed_stream_is_replaced_and_the_file_is_identical(pair, record):
    f = pair.dir / "kill.bin"
    f.write_bytes(os.urandom(300 << 20))
    argv = engine.client_argv("send", str(f), f"{pair.target}:kill/", token=pair.token,
                              method=Method("parallel", 3)) + ["--limit", "600mbit"]
    p = pair.snd.popen(argv)
    try:
        assert wait_until(lambda: len(_client_ports(pair.snd)) == 4, timeout=10)
        time.sleep(1.0)
        # A data stream, not the control connection: the one that has carried the most.
        ports = _client_ports(pair.snd)
        victim = max(ports, key=ports.get)
        pair.snd.run("ss", "-K", "state", "established", f"( dport = :{engine.PORT} and sport = :{victim} )",
                     check=False)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    rep = Report.parse(out)
    assert sorted(s.connections for s in rep.summary.streams) == [1, 1, 2]
    # --json tells of it as it happens: the stream lost, then dialled again.
    (redialled,) = [i for i, s in enumerate(rep.summary.streams) if s.connections == 2]
    assert [(e.event, e.stream) for e in rep.events] == [("stream_lost", redialled),
                                                              ("stream_redialled", redialled)], rep.events
    assert b3(f) == b3(pair.root / "kill" / "kill.bin")
    record(requeued_blocks=rep.summary.requeued_blocks, bytes=rep.summary.bytes, size=f.stat().st_size)
    f.unlink()


def test_a_killed_sender_resumes_moving_only_what_is_missing(pair, record):
    f = pair.dir / "resume.bin"
    f.write_bytes(os.urandom(400 << 20))
    streams, block = 3, 1 << 20
    argv = engine.client_argv("send", str(f), f"{pair.target}:res/", token=pair.token,
                              method=Method("parallel", streams)) + ["--limit", "800mbit"]
    p = pair.snd.popen(argv)
    time.sleep(2.0)
    p.send_signal(signal.SIGKILL)
    p.wait()
    journal = journal_of(pair.root / "res" / "resume.bin")
    assert wait_until(journal.exists, timeout=10), "the receiver kept no journal"
    # The receiver writes its last journal when it sees the sender gone.
    time.sleep(1.5)
    held = sum(b - a for a, b in json.loads(journal.read_text())["ranges"])
    size = f.stat().st_size
    assert 0 < held < size
    assert not (pair.root / "res" / "resume.bin").exists(), "a partial file under the real name"
    rc, rep, err = _client(pair, *argv, "--resume")
    assert rc == 0, err
    resent = rep.summary.bytes - (size - held)
    record(held=held, moved_on_resume=rep.summary.bytes, resent=resent, limit=2 * streams * block)
    assert 0 <= resent <= 2 * streams * block
    assert b3(f) == b3(pair.root / "res" / "resume.bin")
    assert not journal.exists()
    f.unlink()


def test_ctrl_c_during_get_journals_everything_received(pair, tmp_path, record):
    """The receiving client journals once a second; a Ctrl-C makes it journal at once, so a
    --resume moves exactly what the journal lacks and nothing received twice."""
    f = pair.root / "pull.bin"
    f.write_bytes(os.urandom(300 << 20))
    local = tmp_path / "pulled"
    local.mkdir()
    # A server that sends at 400 Mb/s: 300 MiB take 6 s, the signal comes after 2.5.
    srv = engine.serve(pair.rcv, pair.root, pair.token, port=5422, extra=["--limit", "400mbit"])
    assert wait_until(lambda: "5422" in pair.rcv.run("ss", "-tlnH"), timeout=10)
    argv = engine.client_argv("get", f"{pair.RCV_ADDR}:5422:pull.bin", str(local), token=pair.token,
                              method=Method("parallel", 3), interval=0.2)
    p = pair.snd.popen(argv)
    time.sleep(2.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "interrupted" in err, (p.returncode, err)
    seen = Report.parse(out).intervals[-1].bytes  # received when last reported, before the signal
    journal = journal_of(local / "pull.bin")
    held = sum(b - a for a, b in json.loads(journal.read_text())["ranges"])
    size = f.stat().st_size
    record(seen_before_sigint=seen, journaled=held, size=size)
    assert seen <= held < size
    rc, rep, err = _client(pair, *argv, "--resume")
    assert rc == 0, err
    srv.kill()
    srv.wait()
    assert rep.summary.bytes == size - held
    assert b3(f) == b3(local / "pull.bin") and not journal.exists()
    f.unlink()


@pytest.mark.parametrize("stalled", [False, True], ids=["live-peer", "stopped-peer"])
@pytest.mark.parametrize("reverse", [False, True], ids=["sending", "receiving"])
def test_ctrl_c_ends_a_bench_at_once(pair, tmp_path, reverse, stalled, record):
    port = 5423
    srv = engine.serve(pair.rcv, pair.root, pair.token, port=port, log=tmp_path / "serve.jsonl")
    assert wait_until(lambda: str(port) in pair.rcv.run("ss", "-tlnH"), timeout=10)
    p = pair.snd.popen(engine.bench_argv(f"{pair.RCV_ADDR}:{port}", 60, pair.token, Method("parallel", 2),
                                         reverse=reverse, interval=0.5))
    try:
        time.sleep(2)
        if stalled:
            srv.send_signal(signal.SIGSTOP)  # its sockets fill up and block ours
            time.sleep(1.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        srv.send_signal(signal.SIGCONT)
        srv.kill()
        srv.wait()
    record(reverse=reverse, stalled=stalled, seconds_to_exit=round(took, 2), rc=p.returncode)
    assert took < 8, f"one Ctrl-C took {took:.1f} s to end the bench"
    if stalled:
        # The peer never answers with its count: no summary to give, just the interruption.
        assert p.returncode == 130 and "interrupted" in err, (p.returncode, err)
    else:
        assert p.returncode == 0, err
        rep = Report.parse(out)
        assert 0 < rep.summary.seconds < 10 and rep.summary.peer_bytes > 0


def test_wrong_token_and_full_disk_are_clear_errors_leaving_nothing(pair, tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(1 << 20))
    bad = tmp_path / "bad.token"
    bad.write_text("not-the-right-token")
    rc, _, err = _client(pair, *engine.client_argv("send", str(f), f"{pair.target}:x", token=bad))
    assert rc == 5 and "authentication failed" in err, (rc, err)
    assert not (pair.root / "x").exists()

    small = tmp_path / "small"
    small.mkdir()
    run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)])
    try:
        srv = engine.serve(pair.rcv, small, pair.token, port=5421)
        try:
            assert wait_until(lambda: "5421" in pair.rcv.run("ss", "-tlnH"), timeout=10)
            big = tmp_path / "big.bin"
            big.write_bytes(os.urandom(20 << 20))
            rc, _, err = _client(pair, *engine.client_argv("send", str(f), str(big), f"{pair.RCV_ADDR}:5421:d",
                                                             token=pair.token))
            assert rc == 7 and "no space" in err and "free" in err, (rc, err)
            assert list(small.iterdir()) == [], "a refused send left something behind"
            # Another writer fills the disk while a send runs: the receiver's next write
            # fails, the sender hears why (7, naming the space), nothing partial is kept.
            mid = tmp_path / "mid.bin"
            mid.write_bytes(os.urandom(5 << 20))
            p = pair.snd.popen(engine.client_argv("send", str(mid), f"{pair.RCV_ADDR}:5421:m/", token=pair.token)
                               + ["--limit", "10mbit"])
            time.sleep(1.0)
            # Unbuffered: a buffered writer keeps what a short write left over, and its close
            # raised ENOSPC once more on flushing it.
            with open(small / "filler", "wb", buffering=0) as filler:
                try:
                    while True:
                        filler.write(b"\xff" * (1 << 20))
                except OSError:
                    pass
            _, err = p.communicate(timeout=60)
            assert p.returncode == 7 and "No space left" in err, (p.returncode, err)
            left = [q for q in small.rglob("*") if q.is_file() and q.name != "filler"]
            assert left == [], f"the full disk kept {left}"
        finally:
            srv.kill()
            srv.wait()
    finally:
        run(["umount", str(small)])


def test_the_token_can_come_on_stdin(pair):
    argv = engine.client_argv("bench", pair.target, "-t", "0.5", token=pair.token)
    argv[argv.index("--token-file") + 1] = "-"
    p = subprocess.run(pair.snd.argv(*argv), input=pair.token.read_text() + "\n", capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert Report.parse(p.stdout).summary.bytes > 0
