"""The Debian package (`make deb`): it builds from the release build, installs with dpkg, and
the installed braid copies a file over loopback; its man pages, completions and hardened service
unit are in place. The package is purged at the end."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)


@pytest.fixture
def installed():
    out = _run("bash", "scripts/deb.sh", cwd=ROOT).stdout.strip().splitlines()[-1]
    deb = ROOT / out
    assert deb.is_file(), out
    if subprocess.run(["dpkg", "-s", "braid"], capture_output=True).returncode == 0:
        pytest.fail("a braid package is installed already: this test would replace it")
    _run("dpkg", "-i", str(deb))
    try:
        yield deb
    finally:
        subprocess.run(["dpkg", "--purge", "braid"], capture_output=True)


def test_the_package_installs_and_its_braid_copies_a_file(installed, tmp_path, record):
    info = _run("dpkg-deb", "--info", str(installed)).stdout
    assert "Depends: libc6" in info and "libelf1" in info, info
    files = _run("dpkg", "-L", "braid").stdout.split()
    for f in ("/usr/bin/braid", "/usr/bin/braid-link", "/usr/share/man/man1/braid-send.1.gz",
              "/usr/share/bash-completion/completions/braid", "/lib/systemd/system/braid-serve.service",
              "/etc/default/braid-serve"):
        assert f in files, f
    analyze = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                              "/lib/systemd/system/braid-serve.service"], capture_output=True, text=True)
    exposure = next((line for line in analyze.stdout.splitlines() if "Overall exposure level" in line), "")
    record(deb=installed.name, size_kb=installed.stat().st_size // 1024, exposure=exposure.strip())
    # systemd's own scale, from SAFE and OK through MEDIUM and EXPOSED to UNSAFE.
    assert " OK " in exposure or " SAFE " in exposure, analyze.stdout[-2000:]

    root, here = tmp_path / "root", tmp_path / "here"
    root.mkdir()
    here.mkdir()
    src = here / "f.bin"
    src.write_bytes(os.urandom(3 << 20))
    (tmp_path / "token").write_text("package-test-token\n")
    token = str(tmp_path / "token")
    srv = subprocess.Popen(["/usr/bin/braid", "serve", "--listen", "127.0.0.1:0", "--root", str(root),
                            "--token-file", token, "--once", "--wait", "30"],
                           stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stderr.readline()
        deadline = time.monotonic() + 10
        while "listening on" not in line and time.monotonic() < deadline:
            line = srv.stderr.readline()
        addr = line.rsplit(" ", 1)[-1].strip()
        _run("/usr/bin/braid", "send", str(src), f"{addr}:copy.bin", "--token-file", token, "--ssh", "never")
        assert srv.wait(30) == 0
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    assert (root / "copy.bin").read_bytes() == src.read_bytes()
