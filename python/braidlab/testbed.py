"""Testbeds: namespaces wired into a path with a bottleneck.

`Line` is the smallest path that behaves like a network rather than a
host: sender -> router -> receiver, the bottleneck on the router's egress
toward the receiver. The router matters: a qdisc on the sender's own
interface would throttle its sockets through TCP small queues instead of
dropping packets, and no congestion control would ever see a loss.

The bottleneck here is the kernel's tbf plus, for random loss, an nftables
`numgen random` rule on the router's forward path.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .braid import binary
from .netns import Namespace, stop, veth
from .proc import run

_runs = itertools.count()


@dataclass(frozen=True)
class Bottleneck:
    """The narrow link of a path."""

    rate_mbit: float
    queue_bytes: int
    loss: float = 0.0  # random loss on the data direction, probability per packet
    mtu: int = 1500

    def __post_init__(self):
        if self.rate_mbit <= 0:
            raise ValueError(f"bottleneck rate {self.rate_mbit} Mb/s must be positive")
        if self.queue_bytes < self.mtu:
            raise ValueError(f"queue of {self.queue_bytes} bytes holds no {self.mtu}-byte packet")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"loss probability {self.loss} must be in [0, 1)")


def run_id(tag: str) -> str:
    """A name part unique on this machine: our pid, a counter, a tag."""
    return f"{os.getpid()}-{next(_runs)}{tag}"


class _Testbed:
    """Namespaces made by `_build` on enter and always removed on exit, error or Ctrl-C."""

    def __init__(self, tag: str):
        self.id = run_id(tag)
        self.namespaces: list[Namespace] = []

    def _ns(self, role: str) -> Namespace:
        ns = Namespace(f"braid-{self.id}-{role}")
        self.namespaces.append(ns)
        # No IPv6 autoconfiguration chatter on the emulated links.
        ns.run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        return ns

    def _build(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for ns in reversed(self.namespaces):
            ns.delete()
        self.namespaces.clear()


class Line(_Testbed):
    """sender (10.9.1.1) -> router -> receiver (10.9.2.1), made on enter, removed on exit."""

    SND_ADDR = "10.9.1.1"
    RCV_ADDR = "10.9.2.1"

    def __init__(self, bottleneck: Bottleneck, tag: str = "line"):
        super().__init__(tag)
        self.bottleneck = bottleneck

    def _build(self) -> None:
        b = self.bottleneck
        self.snd = self._ns("snd")
        self.rtr = self._ns("rtr")
        self.rcv = self._ns("rcv")
        veth(self.snd, "eth0", self.rtr, "r0")
        veth(self.rtr, "r1", self.rcv, "eth0")
        self.snd.run("ip", "addr", "add", f"{self.SND_ADDR}/24", "dev", "eth0")
        self.rtr.run("ip", "addr", "add", "10.9.1.254/24", "dev", "r0")
        self.rtr.run("ip", "addr", "add", "10.9.2.254/24", "dev", "r1")
        self.rcv.run("ip", "addr", "add", f"{self.RCV_ADDR}/24", "dev", "eth0")
        self.snd.run("ip", "route", "add", "default", "via", "10.9.1.254")
        self.rcv.run("ip", "route", "add", "default", "via", "10.9.2.254")
        self.rtr.run("sysctl", "-qw", "net.ipv4.ip_forward=1")
        if b.mtu != 1500:
            for ns, dev in ((self.snd, "eth0"), (self.rtr, "r0"), (self.rtr, "r1"), (self.rcv, "eth0")):
                ns.run("ip", "link", "set", dev, "mtu", str(b.mtu))
        # burst of a few packets: tbf runs on high-resolution timers, it needs no HZ-sized bucket
        self.rtr.run(
            "tc", "qdisc", "add", "dev", "r1", "root", "tbf",
            "rate", f"{b.rate_mbit}mbit", "burst", str(4 * b.mtu), "limit", str(b.queue_bytes),
        )
        if b.loss > 0:
            threshold = round(b.loss * 1_000_000)
            rules = (
                "table inet braidloss {\n"
                " chain fwd {\n"
                "  type filter hook forward priority 0; policy accept;\n"
                f"  iifname \"r0\" numgen random mod 1000000 < {threshold} counter drop\n"
                " }\n"
                "}\n"
            )
            run(self.rtr.argv("nft", "-f", "-"), input=rules)

    def drops(self) -> dict[str, int]:
        """Packets the bottleneck queue dropped (tbf's counter)."""
        out = self.rtr.run("tc", "-s", "qdisc", "show", "dev", "r1")
        dropped = 0
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("Sent") and "dropped" in line:
                dropped = int(line.split("dropped")[1].split(",")[0].strip())
        return {"queue": dropped}


def link_binary() -> str:
    """The braid-link executable: $BRAID_LINK_BIN, else beside braid's."""
    return os.environ.get("BRAID_LINK_BIN") or str(Path(binary()).with_name("braid-link"))


class LinkPath(_Testbed):
    """sender (10.9.0.1) <-> [router: braid-link] <-> receiver (10.9.0.2).

    The router bridges the two veths through braid-link at layer 2, so the
    hosts share one subnet and every frame, ARP included, crosses the
    emulated link. `forward` and `reverse` are braid-link specs in netem's
    words ("rate 100mbit delay 17ms limit 300 loss 0.01%").
    """

    SND_ADDR = "10.9.0.1"
    RCV_ADDR = "10.9.0.2"

    def __init__(self, forward: str, reverse: str = "", *, tag: str = "path", run_dir=None, mtu: int = 1500,
                 events: bool = False, cpu: int | None = None):
        super().__init__(tag)
        self.forward, self.reverse, self.mtu = forward, reverse, mtu
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix=f"braid-{self.id}-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stats_path = self.run_dir / "link-stats.json"
        self.events_path = self.run_dir / "link-events.csv" if events else None
        self.cpu = cpu
        self.link = None

    def _build(self) -> None:
        self.snd = self._ns("snd")
        self.rtr = self._ns("rtr")
        self.rcv = self._ns("rcv")
        veth(self.snd, "eth0", self.rtr, "r0")
        veth(self.rtr, "r1", self.rcv, "eth0")
        for ns, dev in ((self.snd, "eth0"), (self.rtr, "r0"), (self.rtr, "r1"), (self.rcv, "eth0")):
            if self.mtu != 1500:
                ns.run("ip", "link", "set", dev, "mtu", str(self.mtu))
        self.snd.run("ip", "addr", "add", f"{self.SND_ADDR}/24", "dev", "eth0")
        self.rcv.run("ip", "addr", "add", f"{self.RCV_ADDR}/24", "dev", "eth0")
        argv = [link_binary(), "--a", "r0", "--b", "r1", "--ab", self.forward, "--ba", self.reverse,
                "--stats", str(self.stats_path)]
        if self.events_path:
            argv += ["--events", str(self.events_path)]
        if self.cpu is not None:
            argv += ["--cpu", str(self.cpu)]
        self.link = self.rtr.popen(argv, log=self.run_dir / "link.log")
        # The link is up when a ping crosses it (ARP included).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.link.poll() is not None:
                raise RuntimeError(f"braid-link exited {self.link.returncode}: "
                                   f"{(self.run_dir / 'link.log.err').read_text().strip()}")
            if self.snd.run("ping", "-c", "1", "-W", "1", self.RCV_ADDR, check=False, timeout=5).find(" 0% packet loss") >= 0:
                return
        raise RuntimeError("the emulated link did not pass a ping within 10 s")

    def stats(self) -> dict:
        """braid-link's counters now (it rewrites its stats file on SIGUSR1)."""
        before = self.stats_path.stat().st_mtime_ns if self.stats_path.exists() else 0
        self.link.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.stats_path.exists() and self.stats_path.stat().st_mtime_ns != before:
                return json.loads(self.stats_path.read_text())
            time.sleep(0.02)
        raise RuntimeError("braid-link did not write its stats within 5 s")

    def close(self) -> None:
        # braid-link writes its stats and event log when it ends, before its namespace goes.
        if self.link is not None:
            stop(self.link)
            self.link = None
        super().close()
