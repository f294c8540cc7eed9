"""`braid send` and `braid get` start the far end over ssh when no server runs
there (as bbcp does), against a real sshd in the receiving namespace: keys
made for the test, no token given, the file identical, nothing left running."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import blake3
import pytest

from braidlab.braid import binary
from braidlab.netns import wait_until
from braidlab.testbed import Pair

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@pytest.fixture(scope="module")
def far(tmp_path_factory):
    if not Path(SSHD).exists():
        pytest.fail("sshd is not installed (scripts/setup.sh installs openssh-server)")
    d = tmp_path_factory.mktemp("ssh")
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    cfg = d / "sshd_config"
    cfg.write_text("\n".join([
        "Port 22", f"HostKey {d / 'host'}", f"AuthorizedKeysFile {d / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "PidFile none", "LogLevel ERROR", "",
    ]))
    # sshd's privilege separation directory, which the package's service would create.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    with Pair(tag="ssh") as p:
        p.sshd = p.rcv.popen([SSHD, "-D", "-e", "-f", str(cfg)], log=d / "sshd.log")
        assert wait_until(lambda: ":22 " in p.rcv.run("ss", "-tlnH"), timeout=10), (d / "sshd.log.err").read_text()
        p.dir = d
        p.rsh = (f"ssh -i {d / 'client'} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                 f"-o BatchMode=yes -o LogLevel=ERROR")
        yield p


def _braid(p, *argv, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "BRAID_TOKEN"}
    return subprocess.run(p.snd.argv(binary(), *argv, "-e", p.rsh, "--remote-braid", binary()),
                          capture_output=True, text=True, timeout=timeout, env=env)


def _b3(path: Path) -> str:
    return blake3.blake3(path.read_bytes()).hexdigest()


def _far_servers(p) -> list[str]:
    return [line for line in p.rcv.run("ps", "-eo", "pid,args").splitlines() if "serve --once" in line
            and "--token-file -" in line]


def test_send_and_get_start_the_far_end_over_ssh(far, tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(3 << 20) + b"tail")
    dest = tmp_path / "arrived"  # absolute: below / on the far end (the same machine here)
    # An empty pin directory stands for a machine without braid's controls: the default mode
    # needs none of them (streams of the host's control, steered), so nothing is said of them.
    none = tmp_path / "no-controls"
    none.mkdir()
    r = _braid(far, "send", str(src), f"root@{far.RCV_ADDR}:{dest}/", "-n", "3", "--pin-dir", str(none))
    assert r.returncode == 0, r.stderr
    assert "nothing listens" in r.stderr and "over ssh" in r.stderr
    assert "cannot run here" not in r.stderr and "control" not in r.stderr, r.stderr
    assert "send auto-3" in r.stdout, r.stdout
    assert _b3(dest / "data.bin") == _b3(src)
    assert wait_until(lambda: not _far_servers(far), timeout=10), _far_servers(far)

    # A bench tries the address first, and then the far end it starts: one notice still.
    r = _braid(far, "bench", f"root@{far.RCV_ADDR}", "-t", "0.5", "-n", "2", "--pin-dir", str(none))
    assert r.returncode == 0, r.stderr
    assert "nothing listens" in r.stderr and r.stderr.count("over ssh") == 1, r.stderr
    assert r.stdout.startswith("bench auto-2 (sender)"), r.stdout
    assert wait_until(lambda: not _far_servers(far), timeout=10), _far_servers(far)

    back = tmp_path / "back"
    back.mkdir()
    r = _braid(far, "get", f"root@{far.RCV_ADDR}:{dest / 'data.bin'}", str(back), "--ssh", "always")
    assert r.returncode == 0, r.stderr
    assert "nothing listens" not in r.stderr  # --ssh always goes straight to ssh
    assert _b3(back / "data.bin") == _b3(src)
    assert wait_until(lambda: not _far_servers(far), timeout=10), _far_servers(far)


def test_a_refused_login_is_a_connect_error_naming_ssh(far, tmp_path):
    src = tmp_path / "f"
    src.write_bytes(b"x")
    bad = far.rsh.replace(str(far.dir / "client"), str(far.dir / "host"))  # a key sshd does not know
    env = {k: v for k, v in os.environ.items() if k != "BRAID_TOKEN"}
    r = subprocess.run(far.snd.argv(binary(), "send", str(src), f"root@{far.RCV_ADDR}:{tmp_path / 'no'}",
                                    "-e", bad, "--remote-braid", binary()),
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 4, r.stderr
    assert "over ssh" in r.stderr and "ssh ended" in r.stderr
    assert not (tmp_path / "no").exists()


def test_without_ssh_a_missing_server_is_an_error(far, tmp_path):
    src = tmp_path / "f"
    src.write_bytes(b"x")
    tok = tmp_path / "token"
    tok.write_text("0123456789abcdef")
    r = _braid(far, "send", str(src), f"{far.RCV_ADDR}:x", "--ssh", "never", "--token-file", str(tok), timeout=30)
    assert r.returncode == 4 and "Connection refused" in r.stderr, r.stderr


def test_a_server_started_for_one_client_gives_up_when_none_comes(tmp_path):
    r = subprocess.run([binary(), "serve", "--once", "--wait", "1", "--listen", "127.0.0.1:0", "--root",
                        str(tmp_path), "--token-file", "-"], input="0123456789abcdef\n",
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 4 and "nobody connected within 1 s" in r.stderr, r.stderr


def test_a_server_started_over_ssh_listens_where_it_was_reached_on_a_port_of_the_range(far, tmp_path):
    env = {**os.environ, "BRAID_TOKEN": "port-range-holder"}
    # Two ports of the range taken by servers of our own: the far end takes the third.
    holders = [far.rcv.popen([binary(), "serve", "--listen", f"{far.RCV_ADDR}:{port}", "--root", str(tmp_path)],
                             log=tmp_path / f"holder{port}.log", env=env) for port in (50110, 50111)]
    try:
        assert wait_until(lambda: all(f":{p} " in far.rcv.run("ss", "-tlnH") for p in (50110, 50111)),
                          timeout=10), far.rcv.run("ss", "-tlnH")
        quiet = {k: v for k, v in os.environ.items() if k != "BRAID_TOKEN"}
        bench = subprocess.Popen(far.snd.argv(binary(), "bench", f"root@{far.RCV_ADDR}", "-t", "4", "-n", "1",
                                              "--ssh", "always", "--port-range", "50110-50112", "-e", far.rsh,
                                              "--remote-braid", binary()),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=quiet)
        # Only the address the client reached (not every address), on the free port of the range.
        listening = lambda: far.rcv.run("ss", "-tlnH", "sport = :50112")  # noqa: E731
        assert wait_until(lambda: f"{far.RCV_ADDR}:50112" in listening(), timeout=30), listening()
        assert "0.0.0.0:50112" not in listening() and "*:50112" not in listening()
        out, err = bench.communicate(timeout=60)
        assert bench.returncode == 0, err
        # Every port of the range taken: the far end says so, and the client passes it on.
        r = _braid(far, "bench", f"root@{far.RCV_ADDR}", "-t", "0.5", "--ssh", "always",
                   "--port-range", "50110-50111")
        assert r.returncode != 0 and "every port of --port-range 50110-50111 is in use" in r.stderr, r.stderr
        assert wait_until(lambda: not _far_servers(far), timeout=10), _far_servers(far)
    finally:
        for h in holders:
            h.kill()
            h.wait()
