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
import os
from dataclasses import dataclass

from .netns import Namespace, veth
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


class Pair(_Testbed):
    """Two hosts on one veth pair, no bottleneck: sender 10.9.1.1, receiver 10.9.1.2."""

    SND_ADDR = "10.9.1.1"
    RCV_ADDR = "10.9.1.2"

    def __init__(self, tag: str = "pair", offloads: bool = True):
        super().__init__(tag)
        self.offloads = offloads

    def _build(self) -> None:
        self.snd = self._ns("snd")
        self.rcv = self._ns("rcv")
        veth(self.snd, "eth0", self.rcv, "eth0", offloads=self.offloads)
        self.snd.run("ip", "addr", "add", f"{self.SND_ADDR}/24", "dev", "eth0")
        self.rcv.run("ip", "addr", "add", f"{self.RCV_ADDR}/24", "dev", "eth0")


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
