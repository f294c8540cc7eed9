"""What a run ran on: enough to tell two runs' conditions apart and to
redraw a result offline (kernel, TCP sysctls, offloads, qdiscs, the link's
configuration, seeds, the project's revision).

The manifest is versioned; readers refuse a newer version than they know.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path

from .proc import CommandError, run

VERSION = 1

SYSCTLS = (
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_limit_output_bytes",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_allowed_congestion_control",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_no_metrics_save",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.default_qdisc",
)

OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "tx-checksumming", "rx-checksumming")

_SEED = re.compile(r"\bseed\s+(\d+)")


def parse_ethtool_k(text: str) -> dict[str, str]:
    """The offloads we care about from `ethtool -k` output: name -> on/off."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(":")
        if name in OFFLOADS:
            out[name] = value.split()[0] if value.split() else ""
    return out


def link_seeds(spec: str) -> list[int]:
    """Seeds named in a braid-link spec."""
    return [int(s) for s in _SEED.findall(spec)]


def file_digest(path: Path) -> str:
    """The first 16 hex digits of a file's SHA-256: names a build when the tree is dirty."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def git_revision(root: Path) -> dict:
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if rev.returncode != 0:
            return {"revision": None}
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip() != ""
        return {"revision": rev.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.TimeoutExpired):
        return {"revision": None}


def _sysctls(ns) -> dict[str, str]:
    out = {}
    for key in SYSCTLS:
        try:
            out[key] = ns.run("sysctl", "-n", key).strip()
        except CommandError:
            out[key] = None
    return out


def capture(bed) -> dict:
    """The manifest of a built Dumbbell."""
    hosts = bed.senders + bed.receivers
    offloads = {}
    for ns, dev in bed.veths:
        try:
            offloads[f"{ns.name}/{dev}"] = parse_ethtool_k(ns.run("ethtool", "-k", dev))
        except CommandError as e:
            offloads[f"{ns.name}/{dev}"] = {"error": str(e)}
    qdiscs = {}
    for ns in bed.namespaces:
        qdiscs[ns.name] = [line for line in ns.run("tc", "qdisc", "show").splitlines() if line.strip()]
    seeds = dict(bed.seeds)
    seeds["link_forward"] = link_seeds(bed.forward)
    seeds["link_reverse"] = link_seeds(bed.reverse)
    return {
        "manifest_version": VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": platform.release(),
        "machine": {"hostname": platform.node(), "cpus": os.cpu_count(), "arch": platform.machine()},
        "sysctls": {"sender": _sysctls(hosts[0].ns), "receiver": _sysctls(bed.receivers[0].ns)},
        "offloads": offloads,
        "qdiscs": qdiscs,
        "link": {"forward": bed.forward, "reverse": bed.reverse, "argv": bed.link_argv(), "mtu": bed.mtu,
                 "access": bed.access, "pairs": bed.pairs},
        "hosts": {h.name: h.addr for h in hosts},
        "seeds": seeds,
        "project": git_revision(Path(__file__).resolve().parents[2]),
    }


def write(path: Path, data: dict) -> None:
    """Writes atomically: a reader never sees half a manifest."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read(path: Path) -> dict:
    data = json.loads(Path(path).read_text())
    v = data.get("manifest_version")
    if not isinstance(v, int) or v > VERSION:
        raise ValueError(f"{path}: manifest version {v!r} is newer than this braidlab reads ({VERSION})")
    return data
