"""The tools people move files with instead of braid, run as real peers on a
testbed: GridFTP (globus-gridftp-server, globus-url-copy), XRootD (xrootd,
xrdcp) and rsync (its daemon), and braid itself in any of its modes, so
that one comparison drives every tool the same way: a server on the
receiving host serving a directory, a client on the sending host copying
one file into it, timed from the client's start to its exit.

What a finished copy means differs. braid answers only once the file's
BLAKE3 matched and its data and name are durable; the others neither
verify nor sync. A fair caller syncs after every copy (`timed_copy` does)
and checks the bytes itself (`same_bytes`).

Each tool's server runs as its packages ship it, with the options a site
would set for a trusted network: GridFTP anonymous (`-aa -anonymous-user
nobody`, writing as nobody, hence a root writable by anyone) and with
`-data-interface` (else its passive replies name 127.0.0.1); XRootD with no
security plug-in, dropping root for nobody as it insists; rsync's daemon
without chroot.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import engine
from .engine import Method
from .netns import stop, wait_until

GRIDFTP_PORT = 2811
XROOTD_PORT = 1094
RSYNC_PORT = 873

# The Debian packages each tool comes from, for a clear error where one is missing.
PACKAGES = {
    "globus-gridftp-server": "globus-gridftp-server-progs",
    "globus-url-copy": "globus-gass-copy-progs",
    "xrootd": "xrootd-server",
    "xrdcp": "xrootd-client",
    "rsync": "rsync",
}


class PeerError(RuntimeError):
    """A tool failed to start or to copy; the message names the tool and what it printed."""


@dataclass(frozen=True)
class Peer:
    """One tool and how it is asked to move data: `kind` is braid, gridftp,
    xrootd or rsync; `streams` the TCP connections it may open for one file
    (GridFTP's -p, xrdcp's --streams; rsync has one); `method` braid's mode."""

    kind: str
    streams: int = 1
    method: Method | None = None

    def __post_init__(self):
        if self.kind not in ("braid", "gridftp", "xrootd", "rsync"):
            raise ValueError(f"no peer of kind {self.kind!r} (braid, gridftp, xrootd, rsync)")
        if self.streams < 1:
            raise ValueError(f"{self.kind}: {self.streams} streams; at least one")
        if self.kind == "rsync" and self.streams != 1:
            raise ValueError("rsync moves a file on one connection")
        if (self.kind == "braid") != (self.method is not None):
            raise ValueError("a braid peer, and only one, names its method")

    @property
    def name(self) -> str:
        if self.kind == "braid":
            m = self.method
            if m.default:
                return "braid send (no options)"
            n = "" if m.mode == "single" else f" -n {m.streams}"
            return f"braid --mode {m.mode}{n}"
        return {"gridftp": f"globus-url-copy -p {self.streams}", "xrootd": f"xrdcp --streams {self.streams}",
                "rsync": "rsync (daemon)"}[self.kind]

    def tools(self) -> list[str]:
        """The programs this peer runs, server's and client's."""
        return {"braid": [], "gridftp": ["globus-gridftp-server", "globus-url-copy"],
                "xrootd": ["xrootd", "xrdcp"], "rsync": ["rsync"]}[self.kind]


def missing(peers: list[Peer]) -> list[str]:
    """What the peers need and this machine lacks, as 'program (Debian package)'."""
    need = sorted({t for p in peers for t in p.tools()})
    return [f"{t} ({PACKAGES[t]})" for t in need if shutil.which(t) is None]


@dataclass
class Server:
    """A peer's server on a host, serving `root` at `addr`."""

    peer: Peer
    host: object  # the dumbbell Host it runs on
    proc: subprocess.Popen
    addr: str
    port: int
    root: Path
    token: Path | None = None

    def stop(self) -> None:
        stop(self.proc)

    def copy_of(self, src: Path) -> Path:
        """Where a copy of `src` lands: the root, under the file's own name."""
        return self.root / src.name


def serve(peer: Peer, host, root: Path, work: Path, *, token: Path | None = None) -> Server:
    """Starts `peer`'s server on `host` (a dumbbell Host) serving `root`, and waits until it listens.
    `work` holds its configuration and logs; braid's servers need `token`."""
    root.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if peer.kind in ("gridftp", "xrootd"):
        for d in (root, work):
            closed = _closed_to_others(d)
            if closed:
                raise PeerError(f"{peer.name}: its server runs as nobody and cannot reach {d}: {closed} "
                                f"does not let others search it (chmod o+x, or work below /var/tmp)")
    addr = host.addr
    log = work / f"{peer.kind}-server.log"
    if peer.kind == "braid":
        if token is None:
            raise ValueError("braid's server needs a token file")
        port = engine.PORT
        proc = engine.serve(host.ns, root, token, port=port, log=log)
    elif peer.kind == "gridftp":
        port = GRIDFTP_PORT
        # The anonymous user writes as nobody.
        root.chmod(0o777)
        # It looks its address's name up and exits where nothing answers ("Temporary failure in
        # name resolution"), as no DNS does from a testbed's namespace; for passive replies it
        # looks up the name GLOBUS_HOSTNAME gives (else the machine's).
        host.ns.name_address(addr, host.name, socket.gethostname())
        proc = host.ns.popen(["env", f"GLOBUS_HOSTNAME={addr}",
                              "globus-gridftp-server", "-p", str(port), "-aa", "-anonymous-user", "nobody",
                              "-control-interface", addr, "-data-interface", addr, "-rp", str(root),
                              "-d", "error,warn", "-l", str(work / "gridftp.log")], log=log)
    elif peer.kind == "xrootd":
        port = XROOTD_PORT
        # It drops root for nobody before it makes its log, admin and pid paths.
        for d in (root, work, work / "admin", work / "run"):
            d.mkdir(exist_ok=True)
            d.chmod(0o777)
        # It will not start unless the machine's name resolves.
        host.ns.name_address(addr, host.name, socket.gethostname())
        cfg = work / "xrootd.cfg"
        cfg.write_text(f"all.export {root}\nxrd.port {port}\nall.adminpath {work / 'admin'}\n"
                       f"all.pidpath {work / 'run'}\n")
        proc = host.ns.popen(["xrootd", "-c", str(cfg), "-l", str(work / "xrootd.log"), "-R", "nobody"], log=log)
    else:
        port = RSYNC_PORT
        cfg = work / "rsyncd.conf"
        cfg.write_text(f"use chroot = no\n[m]\npath = {root}\nread only = no\nuid = root\ngid = root\n")
        proc = host.ns.popen(["rsync", "--daemon", "--no-detach", f"--port={port}", f"--config={cfg}",
                              f"--address={addr}", f"--log-file={work / 'rsyncd.log'}"], log=log)
    server = Server(peer, host, proc, addr, port, root, token)
    listening = wait_until(lambda: proc.poll() is not None or listens(host, port), timeout=15)
    if proc.poll() is not None or not listening:
        err = Path(str(log) + ".err")
        text = err.read_text().strip() if err.exists() else ""
        stop(proc)
        raise PeerError(f"{peer.name}: its server did not listen on {addr}:{port} within 15 s"
                        f"{' (exited ' + str(proc.returncode) + ')' if proc.returncode is not None else ''}: "
                        f"{text[-800:] or '(no output)'}")
    return server


def _closed_to_others(d: Path) -> Path | None:
    """The first directory above `d` (itself included) that other users may not search."""
    for p in [d.resolve(), *d.resolve().parents]:
        if not p.stat().st_mode & stat.S_IXOTH:
            return p
    return None


def listens(host, port: int) -> bool:
    """Whether something on `host` listens on TCP `port`."""
    return bool(host.ns.run("ss", "-Hltn", f"sport = :{port}", check=False).strip())


def copy_argv(server: Server, src: Path, records: bool = False) -> list[str]:
    """The client's command line that copies `src` into the server's root, under its own name
    (`records`: braid prints its --json records)."""
    p, a = server.peer, server.addr
    dest = server.copy_of(src)
    if p.kind == "braid":
        # A destination is a directory to braid, as to rsync with a trailing slash.
        return engine.client_argv("send", str(src), f"{a}:{server.port}:.", token=server.token,
                                  method=p.method, json_lines=records)
    if p.kind == "gridftp":
        # -fast keeps data channels open between files (one file here: no cost); mode E with -p.
        return ["globus-url-copy", "-p", str(p.streams), "-fast", f"file://{src}", f"ftp://{a}:{server.port}{dest}"]
    if p.kind == "xrootd":
        return ["xrdcp", "--force", "--nopbar", "--streams", str(p.streams), str(src),
                f"root://{a}:{server.port}/{dest}"]
    return ["rsync", "--whole-file", str(src), f"rsync://{a}:{server.port}/m/{src.name}"]


@dataclass(frozen=True)
class Copied:
    """One timed copy: seconds from the client's start to its exit and a sync after it,
    and the most TCP connections from the client's address the server's host held at once."""

    seconds: float
    connections: int


def timed_copy(server: Server, host, src: Path, timeout: float, log: Path | None = None) -> Copied:
    """Copies `src` into the server's root from `host` (a dumbbell Host), every tool
    paying for durable data with a sync after it, while the server's side counts the
    connections the copy opened (each tool's parallel streams, checked, not assumed).
    With `log`, what the client printed goes there (braid's --json records), whatever the end."""
    argv = copy_argv(server, src, records=log is not None)
    subprocess.run(["sync"], check=True)
    peak, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], connections(server, host.addr))
            done.wait(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    t = time.monotonic()
    watcher.start()
    # Started as the testbed starts its tools: it dies with this process, however that ends.
    client = host.ns.popen(argv)
    out = err = ""
    try:
        out, err = client.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(client)
        raise PeerError(f"{server.peer.name} did not finish within {timeout:.0f} s") from None
    finally:
        done.set()
        watcher.join()
        if log is not None:
            log.write_text(f"$ {' '.join(argv)}\n{out or ''}{err or ''}")
    if client.returncode != 0:
        raise PeerError(f"{server.peer.name} exited {client.returncode}: {(err or out).strip()[-800:]}")
    subprocess.run(["sync"], check=True)
    return Copied(time.monotonic() - t, peak[0])


def connections(server: Server, client_addr: str) -> int:
    """TCP connections established between the server's host and `client_addr`."""
    out = server.host.run("ss", "-Htn", "state", "established", "dst", client_addr, check=False)
    return sum(1 for line in out.splitlines() if line.strip())


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def same_bytes(a: Path, b: Path, a_digest: str | None = None) -> bool:
    """Whether `b` holds exactly `a`'s bytes (`a_digest`: a's, if known)."""
    return b.exists() and a.stat().st_size == b.stat().st_size and (a_digest or digest(a)) == digest(b)
