"""The dumbbell: K senders and K receivers across one emulated bottleneck.

    snd0 ─┐                                          ┌─ rcv0
    snd1 ─┤ swl (bridge) ── rtr: braid-link ── swr (bridge) ├─ rcv1
     ...  ┘            r0               r1           └─ ...

Every host sits on one /16 (senders 10.9.1.x, receivers 10.9.2.x): the
router bridges its two interfaces through braid-link at layer 2, so every
frame, ARP included, crosses the emulated link in its direction. Access
links are a tbf on each host's interface, as a host's NIC limits it: the
host's own TCP feels it through its queue, never as loss. With one pair
and no access limit the hosts connect straight to the router (`LinkPath`).

Every run writes `manifest.json` into its run directory (see manifest.py)
and the processes hosts start log there too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import manifest
from .braid import binary
from .netns import Namespace, stop, veth
from .testbed import _Testbed


def link_binary() -> str:
    """The braid-link executable: $BRAID_LINK_BIN, else beside braid's."""
    return os.environ.get("BRAID_LINK_BIN") or str(Path(binary()).with_name("braid-link"))


class Host:
    """A namespace with an address; what it starts logs into the run directory."""

    def __init__(self, ns: Namespace, name: str, addr: str, run_dir: Path):
        self.ns, self.name, self.addr, self.run_dir = ns, name, addr, run_dir

    def run(self, *cmd: str, check: bool = True, timeout: float = 60.0) -> str:
        return self.ns.run(*cmd, check=check, timeout=timeout)

    def popen(self, cmd: Sequence[str], name: str | None = None, **kw) -> subprocess.Popen:
        """Starts cmd here; stdout goes to <run_dir>/<host>-<name>.out (stderr to .out.err)."""
        name = name or Path(cmd[0]).name
        return self.ns.popen(cmd, log=self.run_dir / f"{self.name}-{name}.out", **kw)

    def __repr__(self) -> str:
        return f"Host({self.name} {self.addr})"


class Dumbbell(_Testbed):
    """K sender/receiver pairs across braid-link; made on enter, always removed on exit.

    `forward` and `reverse` are braid-link specs in netem's words for the
    sender->receiver and receiver->sender directions
    ("rate 100mbit delay 34ms limit 580 loss random 0.001%").
    `access` is the hosts' link rate ("100mbit"), None for unlimited.
    `run_dir` keeps the manifest, braid-link's stats and event log and the hosts' logs; without
    it they go to a temporary directory that is removed with the testbed.
    `busy_wait` has braid-link poll rather than sleep when a frame is due sooner than the
    machine wakes (braid-link --busy-wait): on time where the VM wakes late, but a core spent.
    """

    def __init__(self, forward: str, reverse: str = "", *, pairs: int = 1, access: str | None = None,
                 mtu: int = 1500, tag: str = "db", run_dir=None, events: bool = False, cpu: int | None = None,
                 seeds: dict | None = None, busy_wait: bool = False):
        if not 1 <= pairs <= 200:
            raise ValueError(f"a dumbbell has 1 to 200 pairs, not {pairs}")
        if not 576 <= mtu <= 9000:
            raise ValueError(f"MTU {mtu} is outside 576..9000")
        super().__init__(tag)
        self.forward, self.reverse = forward, reverse
        self.pairs, self.access, self.mtu = pairs, access, mtu
        # A directory the caller did not ask for is scratch: it goes with the testbed.
        self._scratch = run_dir is None
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix=f"braid-{self.id}-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stats_path = self.run_dir / "link-stats.json"
        self.events_path = self.run_dir / "link-events.csv" if events else None
        self.cpu = cpu
        self.busy_wait = busy_wait
        self.seeds = dict(seeds or {})
        self.link: subprocess.Popen | None = None
        self.senders: list[Host] = []
        self.receivers: list[Host] = []
        self.veths: list[tuple[Namespace, str]] = []

    @staticmethod
    def sender_addr(i: int) -> str:
        return f"10.9.1.{i + 1}"

    @staticmethod
    def receiver_addr(i: int) -> str:
        return f"10.9.2.{i + 1}"

    def _veth(self, a: Namespace, a_dev: str, b: Namespace, b_dev: str) -> None:
        veth(a, a_dev, b, b_dev)
        for ns, dev in ((a, a_dev), (b, b_dev)):
            if self.mtu != 1500:
                ns.run("ip", "link", "set", dev, "mtu", str(self.mtu))
            self.veths.append((ns, dev))

    def _bridge(self, sw: Namespace) -> None:
        sw.run("ip", "link", "add", "br0", "type", "bridge")
        sw.run("ip", "link", "set", "br0", "up")

    def _build(self) -> None:
        self.rtr = self._ns("rtr")
        direct = self.pairs == 1 and self.access is None
        sides = []
        for side, role, addr in (("l", "snd", self.sender_addr), ("r", "rcv", self.receiver_addr)):
            router_dev = "r0" if side == "l" else "r1"
            hosts = []
            if direct:
                ns = self._ns(f"{role}0")
                self._veth(ns, "eth0", self.rtr, router_dev)
                hosts.append((ns, 0))
            else:
                sw = self._ns(f"sw{side}")
                self._bridge(sw)
                self._veth(sw, "uplink", self.rtr, router_dev)
                sw.run("ip", "link", "set", "uplink", "master", "br0")
                for i in range(self.pairs):
                    ns = self._ns(f"{role}{i}")
                    self._veth(ns, "eth0", sw, f"p{i}")
                    sw.run("ip", "link", "set", f"p{i}", "master", "br0")
                    hosts.append((ns, i))
            made = []
            for ns, i in hosts:
                ns.run("ip", "addr", "add", f"{addr(i)}/16", "dev", "eth0")
                if self.access:
                    # A NIC-sized burst: tbf runs on high-resolution timers.
                    ns.run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", self.access,
                           "burst", str(4 * self.mtu), "latency", "50ms")
                made.append(Host(ns, f"{role}{i}", addr(i), self.run_dir))
            sides.append(made)
        self.senders, self.receivers = sides
        self._start_link()
        self.manifest = manifest.capture(self)
        manifest.write(self.run_dir / "manifest.json", self.manifest)

    def link_argv(self) -> list[str]:
        argv = [link_binary(), "--a", "r0", "--b", "r1", "--ab", self.forward, "--ba", self.reverse,
                "--stats", str(self.stats_path)]
        if self.events_path:
            argv += ["--events", str(self.events_path)]
        if self.cpu is not None:
            argv += ["--cpu", str(self.cpu)]
        if self.busy_wait:
            argv.append("--busy-wait")
        return argv

    def _start_link(self) -> None:
        self.link = self.rtr.popen(self.link_argv(), log=self.run_dir / "link.log")
        # The link is up when a ping crosses it (ARP included), from every pair.
        s, r = self.senders[0], self.receivers[0]
        deadline = time.monotonic() + 10
        while True:
            if self.link.poll() is not None:
                raise RuntimeError(f"braid-link exited {self.link.returncode}: "
                                   f"{(self.run_dir / 'link.log.err').read_text().strip()}")
            if " 0% packet loss" in s.run("ping", "-c", "1", "-W", "1", r.addr, check=False, timeout=5):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the emulated link did not pass a ping within 10 s")
        for s, r in list(zip(self.senders, self.receivers))[1:]:
            s.run("ping", "-c", "1", "-W", "2", r.addr, check=False, timeout=5)

    def stats(self) -> dict:
        """braid-link's counters now (it rewrites its stats file on SIGUSR1)."""
        before = self.stats_path.stat().st_mtime_ns if self.stats_path.exists() else 0
        self.link.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.stats_path.exists() and self.stats_path.stat().st_mtime_ns != before:
                try:
                    return json.loads(self.stats_path.read_text())
                except json.JSONDecodeError:
                    pass  # caught between writes: it is replaced atomically, try again
            time.sleep(0.02)
        raise RuntimeError("braid-link did not write its stats within 5 s")

    def counters_at(self, start: float, at: Sequence[float]) -> list[tuple[float, dict]]:
        """braid-link's forward counters read `at` seconds after `start` (time.monotonic()), each
        with when it was read: what the link itself did over a span of a test."""
        samples = []
        for t in at:
            time.sleep(max(0.0, start + t - time.monotonic()))
            samples.append((time.monotonic(), self.stats()["ab"]["counters"]))
        return samples

    def close(self) -> None:
        # braid-link writes its stats and event log when it ends, before its namespace goes.
        if self.link is not None:
            stop(self.link)
            self.link = None
        super().close()
        if self._scratch:
            shutil.rmtree(self.run_dir, ignore_errors=True)


class LinkPath(Dumbbell):
    """One sender (10.9.1.1) and one receiver (10.9.2.1) straight across braid-link."""

    SND_ADDR = Dumbbell.sender_addr(0)
    RCV_ADDR = Dumbbell.receiver_addr(0)

    def __init__(self, forward: str, reverse: str = "", *, tag: str = "path", **kw):
        super().__init__(forward, reverse, pairs=1, tag=tag, **kw)

    @property
    def snd(self) -> Namespace:
        return self.senders[0].ns

    @property
    def rcv(self) -> Namespace:
        return self.receivers[0].ns

    def tcp_buffers(self, mib: int) -> None:
        """Both ends' largest TCP buffers, in MiB (Namespace.tcp_buffers)."""
        self.snd.tcp_buffers(mib)
        self.rcv.tcp_buffers(mib)
