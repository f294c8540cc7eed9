"""`braidlab run --cluster`: a real Dask scheduler and workers on this machine measure an
experiment's cells; the results land in the one run directory as the embedded runner writes
them, and a worker killed in the middle of a cell has its cell measured again."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from braidlab import netns, report, runner

TINY = """name = "tiny"
baseline = "single"
[path]
rate = "50mbit"
rtt = "20ms"
limit = 200
[[scenario]]
name = "alone"
[[method]]
name = "single"
mode = "single"
cc = "reno"
[[method]]
name = "parallel-{streams}"
mode = "parallel"
cc = "reno"
streams = [2, 3]
[quick]
seconds = SECONDS
warmup = 0
pause = 0
[full]
seconds = 4
"""


def _experiment(tmp_path: Path, seconds: int) -> Path:
    p = tmp_path / f"tiny-{seconds}.toml"
    p.write_text(TINY.replace("SECONDS", str(seconds)))
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _braidlab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "braidlab", *args], capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"braidlab {' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _cells(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))}


def test_a_local_cluster_measures_the_same_cells_as_the_embedded_runner(tmp_path, record):
    from distributed import LocalCluster

    exp = _experiment(tmp_path, 3)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={"testbed": 1},
                      dashboard_address=None, host="127.0.0.1") as cluster:
        c = _braidlab("run", str(exp), "--quick", "--seed", "7", "--out", str(tmp_path / "c"),
                      "--cluster", cluster.scheduler_address)
    e = _braidlab("run", str(exp), "--quick", "--seed", "7", "--out", str(tmp_path / "e"))
    assert "1 worker(s) with a testbed" in c.stdout
    on_cluster, here = _cells(tmp_path / "c"), _cells(tmp_path / "e")
    assert set(on_cluster) == set(here) == {"alone.single.r0", "alone.parallel-2.r0", "alone.parallel-3.r0"}
    for cid, cell in on_cluster.items():
        assert cell["machine"]["host"] == os.uname().nodename and cell["machine"]["cores"] == os.cpu_count()
        assert cell["build"] == here[cid]["build"] == cell["machine"]["build"]
        # Both paths say how busy the cores were before the cell (a share, measured).
        assert 0.0 <= cell["machine"]["busy_before"] <= 1.0 and 0.0 <= here[cid]["machine"]["busy_before"] <= 1.0
        assert len(cell["streams"]) == len(here[cid]["streams"]) and cell["bench"]["bytes"] > 0
        # The worker's raw outputs came back beside the cell.
        assert (tmp_path / "c" / "raw" / cid / "manifest.json").exists()
        assert (tmp_path / "c" / "raw" / cid / "snd0-bench.out").read_text().count('"summary"') == 1
    for name in ("cells.csv", "flows.csv", "series.csv"):
        a, b = ((tmp_path / d / name).read_text().splitlines() for d in ("c", "e"))
        assert a[0] == b[0] and len(a) > 1, f"{name}: the same columns, rows in both"
    for d in ("c", "e"):
        _braidlab("report", str(tmp_path / d))
        assert (tmp_path / d / "report" / "report.md").exists()
    record(mbps={cid: round(c["bench"]["mbps"], 1) for cid, c in on_cluster.items()})


def test_the_report_flags_cells_from_machines_that_differ(tmp_path):
    exp = _experiment(tmp_path, 2)
    out = tmp_path / "m"
    _braidlab("run", str(exp), "--quick", "--methods", "single,parallel-2", "--out", str(out))
    p = sorted((out / "cells").glob("*.json"))[0]
    cell = json.loads(p.read_text())
    cell["machine"] = {**cell["machine"], "host": "elsewhere", "kernel": "5.15.0"}
    p.write_text(json.dumps(cell))
    text = "\n".join(str(b.body) for b in report.experiment_blocks([out], tmp_path / "fig") if b.kind == "p")
    assert "machines that differ" in text and "elsewhere" in text and "5.15.0" in text


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def _scheduler(port: int, tls: Path) -> subprocess.Popen:
    """`braidlab scheduler` behind TLS with its certificates in `tls`, once it listens."""
    p = subprocess.Popen([sys.executable, "-m", "braidlab", "scheduler", "--port", str(port), "--tls-dir", str(tls)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return p
        time.sleep(0.2)
    p.kill()
    raise AssertionError("braidlab scheduler did not listen")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _tls_without_certificate(port: int, ca: Path) -> str | bool:
    """A TLS client that trusts the cluster's CA but has no certificate of its own: how the
    scheduler refused it (False if it did not)."""
    import ssl

    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, ctx.wrap_socket(raw) as t:
            t.sendall(b"\0" * 64)
            return "closed" if t.recv(1) == b"" else False
    except (ssl.SSLError, OSError) as e:
        return type(e).__name__


def test_the_cluster_refuses_whoever_lacks_its_certificate(tmp_path, record):
    from distributed import Client

    from braidlab import cluster

    port = _free_port()
    tls = tmp_path / "tls"
    procs = [_scheduler(port, tls)]
    try:
        addr = f"tls://127.0.0.1:{port}"
        assert sorted(p.name for p in tls.iterdir()) == sorted(
            ["ca.pem", "ca.key"] + [f"{r}.{x}" for r in cluster.ROLES for x in ("pem", "key")])
        assert all((tls / f).stat().st_mode & 0o077 == 0 for f in ("ca.key", "worker.key", "client.key"))
        procs.append(subprocess.Popen([sys.executable, "-m", "braidlab", "worker", addr, "--name", "w1",
                                       "--tls-dir", str(tls)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        # With the certificate: in, and the worker with it.
        with Client(addr, timeout="30s", security=cluster.security(addr, tls)) as client:
            client.wait_for_workers(1, timeout=60)
            assert client.submit(os.getpid).result(timeout=30) != os.getpid()
        # Without one, with another CA's, or in the clear: refused.
        other = tmp_path / "other"
        cluster.make_certificates(other)
        refused = {"no certificate": _tls_without_certificate(port, tls / "ca.pem")}
        for name, address, security in [("another CA's", addr, cluster.security(addr, other)),
                                         ("plain tcp", f"tcp://127.0.0.1:{port}", None)]:
            try:
                with Client(address, timeout="5s", security=security) as c:
                    c.submit(os.getpid).result(timeout=5)
                refused[name] = False
            except (OSError, TimeoutError) as e:
                refused[name] = type(e).__name__
        assert all(refused.values()), refused
        # A plain address beyond loopback is refused before anything connects.
        p = subprocess.run([sys.executable, "-m", "braidlab", "worker", "tcp://192.0.2.1:8786"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "loopback only" in p.stderr, p.stderr
        p = subprocess.run([sys.executable, "-m", "braidlab", "run", str(_experiment(tmp_path, 2)), "--quick",
                            "--out", str(tmp_path / "r"), "--cluster", "tcp://192.0.2.1:8786"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and "loopback only" in p.stdout + p.stderr, p.stdout + p.stderr
        record(refused=refused)
    finally:
        _stop(procs)


def test_a_worker_killed_mid_cell_has_its_cell_measured_again(tmp_path, record):
    port = _free_port()
    tls = tmp_path / "tls"
    addr = f"tls://127.0.0.1:{port}"
    procs = [_scheduler(port, tls)]
    try:
        for name in ("w1", "w2"):
            procs.append(subprocess.Popen([sys.executable, "-m", "braidlab", "worker", addr, "--name", name,
                                           "--tls-dir", str(tls)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        from braidlab import cluster

        with Client(addr, timeout="30s", security=cluster.security(addr, tls)) as client:
            client.wait_for_workers(2, timeout=60)
        exp = _experiment(tmp_path, 12)
        out = tmp_path / "k"
        run = subprocess.Popen([sys.executable, "-m", "braidlab", "run", str(exp), "--quick", "--methods",
                                "parallel-2", "--out", str(out), "--cluster", addr, "--tls-dir", str(tls)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # The worker process measuring the cell names its namespaces after its pid.
        killed = None
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline:
            for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines():
                name = line.split()[0] if line.strip() else ""
                if name.startswith(netns.PREFIX) and name.split("-")[1].isdigit():
                    killed = int(name.split("-")[1])
                    break
            time.sleep(0.2)
        assert killed is not None, "no cell started on the cluster"
        time.sleep(3)
        tools = _children(killed)
        os.kill(killed, signal.SIGKILL)
        text, _ = run.communicate(timeout=240)
        assert run.returncode == 0, text
        (cell,) = _cells(out).values()
        assert cell["bench"]["bytes"] > 0 and cell["machine"]["host"] == os.uname().nodename
        # The killed worker's tools died with it, and its namespaces were cleaned before the retry.
        time.sleep(1)
        alive = [p for p in tools if Path(f"/proc/{p}").exists()]
        assert not alive, f"tools of the killed worker still run: {alive}"
        assert not netns.stale_namespaces()
        # ... and its cell's directory (the cell's token in it) removed by the worker that took over.
        assert not runner.stale_cell_dirs(), runner.stale_cell_dirs()
        record(killed_worker_pid=killed, tools_ended=len(tools))
    finally:
        _stop(procs)
        netns.clean()
