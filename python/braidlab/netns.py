"""Network namespaces and veth pairs: the hosts and wires of a testbed.

Every namespace braidlab makes is named `braid-<pid>-<run>-<role>`, so a
testbed left behind by a killed run can be recognised and removed
(`braidlab clean`) without touching anything else on the machine.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from .proc import CommandError, run

PREFIX = "braid-"
# `ip netns exec NAME` mounts the files of /etc/netns/NAME over /etc's: a namespace's own hosts.
ETC = Path("/etc/netns")
_NAME = re.compile(r"^braid-(\d+)-[A-Za-z0-9]+-[A-Za-z0-9]+$")


class Namespace:
    """One network namespace, created on construction, deleted by `delete()`."""

    def __init__(self, name: str):
        self.name = name
        run(["ip", "netns", "add", name])
        self._procs: list[subprocess.Popen] = []
        self.run("ip", "link", "set", "lo", "up")

    def argv(self, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.name, *cmd]

    def run(self, *cmd: str, check: bool = True, timeout: float = 60.0) -> str:
        """Runs a command inside the namespace and returns its stdout."""
        return run(self.argv(*cmd), check=check, timeout=timeout)

    def popen(self, cmd: Sequence[str], *, log: Path | None = None, **kw) -> subprocess.Popen:
        """Starts a process inside the namespace; it is ended when the namespace is deleted.

        Its stdout goes to `log` when given (stderr beside it, `.err`), else to a pipe.
        """
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            kw.setdefault("stdout", open(log, "w"))
            kw.setdefault("stderr", open(log.with_suffix(log.suffix + ".err"), "w"))
        else:
            kw.setdefault("stdout", subprocess.PIPE)
            kw.setdefault("stderr", subprocess.PIPE)
            kw.setdefault("text", True)
        # A tool dies with the process that started it, so a run killed outright (a cluster
        # worker that is lost) leaves nothing running in its namespaces. Linux's "parent" is
        # the starting thread: a tool started on a thread must not outlive that thread.
        kw.setdefault("preexec_fn", _die_with_parent)
        p = subprocess.Popen(self.argv(*cmd), **kw)
        self._procs.append(p)
        return p

    def tcp_buffers(self, mib: int) -> None:
        """Sets the largest size of TCP's receive and send buffers (tcp_rmem and tcp_wmem, both
        per namespace) to `mib` MiB, keeping the smallest and initial sizes as they are."""
        if mib <= 0:
            raise ValueError(f"a TCP buffer of {mib} MiB")
        words = []
        for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
            low, initial, _ = self.run("sysctl", "-n", key).split()
            words.append(f"{key}={low} {initial} {mib << 20}")
        self.run("sysctl", "-qw", *words)

    def name_address(self, addr: str, *names: str) -> None:
        """Gives `addr` these names inside this namespace (its own /etc/hosts, mounted by
        `ip netns exec` for every command from now on). Some servers look up the address they
        listen on, or the machine's name, and will not start when nothing answers, as no DNS
        does from a testbed."""
        d = ETC / self.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts").write_text(f"127.0.0.1 localhost\n{addr} {' '.join(names)}\n")

    def delete(self) -> None:
        """Ends the processes this object started (by pid), then removes the namespace."""
        for p in self._procs:
            stop(p)
        self._procs.clear()
        run(["ip", "netns", "del", self.name], check=False)
        _forget_etc(self.name)


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_PR_SET_PDEATHSIG = 1


def stop(p: subprocess.Popen, grace: float = 3.0) -> None:
    """Ends a process we started: SIGTERM, then SIGKILL after `grace` seconds."""
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(grace)


def veth(a: Namespace, a_dev: str, b: Namespace, b_dev: str, *, offloads: bool = False) -> None:
    """A veth pair with one end in each namespace, up, offloads off unless asked.

    Offloads off so that a packet is a packet: with TSO/GSO/GRO a 64 KB
    super-packet would cross a bottleneck as one. A link with no bottleneck
    (a throughput benchmark) may keep them, as a real host would.
    """
    run(["ip", "link", "add", a_dev, "netns", a.name, "type", "veth", "peer", "name", b_dev, "netns", b.name])
    for ns, dev in ((a, a_dev), (b, b_dev)):
        ns.run("ip", "link", "set", dev, "up")
        if not offloads:
            offloads_off(ns, dev)


def offloads_off(ns: Namespace, dev: str) -> None:
    ns.run("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off")


def stale_namespaces() -> list[str]:
    """braidlab namespaces whose creating process is gone."""
    out = []
    for line in run(["ip", "netns", "list"]).splitlines():
        name = line.split()[0] if line.strip() else ""
        m = _NAME.match(name)
        if m and not alive(int(m.group(1))):
            out.append(name)
    return out


def alive(pid: int) -> bool:
    """Whether a process of this pid is running (whoever owns it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean() -> list[str]:
    """Removes stale braidlab namespaces, and the /etc files of any braidlab namespace that is
    gone; returns the namespaces' names."""
    removed = []
    for name in stale_namespaces():
        try:
            run(["ip", "netns", "del", name])
            removed.append(name)
        except CommandError:
            pass
    live = set(run(["ip", "netns", "list"]).split())
    if ETC.is_dir():
        for d in ETC.iterdir():
            if _NAME.match(d.name) and d.name not in live:
                _forget_etc(d.name)
    return removed


def _forget_etc(name: str) -> None:
    d = ETC / name
    if d.is_dir():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    # /etc/netns itself only if braidlab's were all it held.
    if ETC.is_dir() and not any(ETC.iterdir()):
        ETC.rmdir()


def wait_until(pred, timeout: float, interval: float = 0.1):
    """Polls pred() until it returns a truthy value or `timeout` seconds pass; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)
