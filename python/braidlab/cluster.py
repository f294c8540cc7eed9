"""`braidlab run --cluster`: an experiment's cells on a Dask distributed cluster.

A cell needs a whole machine (root, its own namespaces, quiet cores), so each
machine runs one worker with one thread and one unit of the resource
`testbed`, and every cell asks for that unit: a machine measures one cell at
a time. `braidlab scheduler` runs Dask's scheduler; `braidlab worker
tls://HOST:8786` joins a machine.

Workers run cells as root, so whoever can talk to the cluster can run code
there. The cluster therefore speaks Dask's TLS with mutual authentication:
`braidlab scheduler` makes a certificate authority and certificates for the
scheduler, the workers and the submitting client in one directory (copied to
each machine, without the CA's key), and every connection, either way,
presents one signed by that CA; a peer without one is refused. A plain
`tcp://` cluster is allowed on loopback only (one machine, as the tests use).
No secret travels in a task: a worker makes the token of its own testbed.

The submitting machine keeps the one run directory: a worker measures a cell
in a directory of its own and sends back the cell's record, its raw outputs
and the machine that measured it; the submitter writes them as they arrive,
so `braidlab report` and continuation work as with the embedded runner. A
cell whose worker dies is given to another by the scheduler (up to its
`allowed-failures`); Ctrl-C cancels what is queued and keeps what finished.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import sys
from pathlib import Path

from . import braid, manifest

RESOURCE = "testbed"
#: Where `braidlab scheduler` keeps the cluster's certificates unless told otherwise.
DEFAULT_TLS_DIR = Path.home() / ".braidlab" / "cluster"
#: The certificates each role presents (a worker is a server and a client both).
ROLES = ("scheduler", "worker", "client")


def machine() -> dict:
    """What measured a cell: the host, its kernel and cores, and braid's build."""
    u = os.uname()
    return {"host": u.nodename, "kernel": u.release, "cores": os.cpu_count() or 0,
            "build": {"git": manifest.git_revision(braid.ROOT),
                      "binary": manifest.file_digest(Path(braid.binary()))}}


def _host_of(address: str) -> tuple[str, str]:
    """The scheme and host of `tls://HOST:PORT`, `tcp://[::1]:PORT` or `HOST:PORT`."""
    scheme, rest = address.split("://", 1) if "://" in address else ("tcp", address)
    if rest.startswith("["):
        host = rest[1:rest.index("]")]
    else:
        host = rest.rsplit(":", 1)[0] if ":" in rest else rest
    return scheme, host


def is_loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def check_address(address: str, tls_dir: Path | None = None) -> str:
    """The protocol to reach `address` with: `tls` anywhere, `tcp` on loopback only. Anything
    else is refused with what to do instead."""
    scheme, host = _host_of(address)
    if scheme == "tls":
        return "tls"
    if scheme == "tcp" and is_loopback(host):
        return "tcp"
    where = tls_dir or DEFAULT_TLS_DIR
    raise ValueError(
        f"{address}: a plain {scheme}:// cluster is allowed on loopback only: its workers run cells as "
        f"root, so anyone who reaches the port could run code there. Start the scheduler with "
        f"`braidlab scheduler` (TLS, certificates in {where}), copy that directory (without ca.key) to "
        f"each machine, and use tls://HOST:PORT with --tls-dir")


def make_certificates(d: Path, *, years: int = 5) -> bool:
    """A certificate authority and, signed by it, a certificate and key for each role, in `d`
    (made unless they are there). Keys are readable by their owner only. Returns whether it
    made them."""
    if all((d / f"{r}.pem").exists() and (d / f"{r}.key").exists() for r in ROLES) \
            and (d / "ca.pem").exists():
        return False
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=365 * years)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def write_key(path: Path, key) -> None:
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"braidlab cluster CA {os.urandom(6).hex()}")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    write_key(d / "ca.key", ca_key)
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(f"braidlab {role}")).issuer_name(ca_name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(until)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        write_key(d / f"{role}.key", key)
        (d / f"{role}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return True


def tls_files(d: Path, role: str) -> tuple[Path, Path, Path]:
    """The CA, certificate and key `role` presents; a missing one is an error that says what to do."""
    files = (d / "ca.pem", d / f"{role}.pem", d / f"{role}.key")
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise FileNotFoundError(
            f"the cluster's certificates are not in {d} ({', '.join(missing)} missing): "
            f"`braidlab scheduler` makes them there; copy them to this machine and pass --tls-dir")
    return files


def security(address: str, tls_dir: Path | None, role: str = "client"):
    """Dask's `Security` for reaching `address` as `role`: mutual TLS, or none on loopback."""
    from distributed.security import Security

    if check_address(address, tls_dir) == "tcp":
        return Security()
    ca, cert, key = tls_files(tls_dir or DEFAULT_TLS_DIR, role)
    return Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key),
                    require_encryption=True)


def write_raw(raw: Path, files: dict[str, bytes]) -> None:
    """A cell's raw outputs, as its worker sent them, into the run directory."""
    for rel, content in files.items():
        p = (raw / rel).resolve()
        if raw.resolve() not in p.parents:
            raise ValueError(f"a worker sent a raw file outside its cell: {rel!r}")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)


def run_cells(address: str, cells: list, measure, args_of, keep, progress=print,
              tls_dir: Path | None = None) -> None:
    """Measures `cells` on the cluster at `address`, `measure(*args_of(cell))` on a worker for each;
    `keep(cell, result)` is called for each as it arrives, and a cell that failed is said and left
    for the next run. Ctrl-C cancels the rest."""
    try:
        from distributed import Client, as_completed
    except ImportError as e:  # pragma: no cover - the setup installs it
        raise RuntimeError("--cluster needs the distributed package (scripts/setup.sh installs it)") from e
    with Client(address, timeout="30s", security=security(address, tls_dir)) as client:
        workers = client.scheduler_info()["workers"]
        able = [w for w in workers.values() if w.get("resources", {}).get(RESOURCE, 0) >= 1]
        progress(f"cluster {address}: {len(able)} worker(s) with a {RESOURCE}")
        if not able:
            raise RuntimeError(f"no worker of {address} offers the resource {RESOURCE!r}: start each with "
                               f"`braidlab worker {address}` (or dask worker ... --resources {RESOURCE}=1)")
        futures = {client.submit(measure, *args_of(c), resources={RESOURCE: 1}, pure=False,
                                 key=f"braidlab-{c.id}-{os.urandom(4).hex()}"): c
                   for c in cells}
        try:
            for fut in as_completed(futures):
                cell = futures[fut]
                try:
                    result = fut.result()
                except Exception as e:  # noqa: BLE001 - the worker's error, whatever it was
                    progress(f"    {cell.id} failed on the cluster: {type(e).__name__}: {e}")
                    continue
                keep(cell, result)
        except KeyboardInterrupt:
            client.cancel([f for f in futures if not f.done()])
            raise


def worker_main(scheduler: str, name: str | None = None, tls_dir: Path | None = None) -> int:
    """`braidlab worker SCHEDULER`: this machine joins the cluster for one cell at a time."""
    if os.geteuid() != 0:
        print("braidlab worker: cells build network namespaces: run it as root", file=sys.stderr)
        return 2
    try:
        protocol = check_address(scheduler, tls_dir)
        argv = [sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1",
                "--nworkers", "1", "--resources", f"{RESOURCE}=1", "--name", name or os.uname().nodename,
                "--no-dashboard"]
        if protocol == "tls":
            ca, cert, key = tls_files(tls_dir or DEFAULT_TLS_DIR, "worker")
            argv += ["--protocol", "tls", "--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]
        else:
            argv += ["--host", "127.0.0.1"]
    except (ValueError, FileNotFoundError) as e:
        print(f"braidlab worker: {e}", file=sys.stderr)
        return 2
    os.execv(sys.executable, argv)
    return 0  # not reached


def scheduler_main(port: int, host: str | None = None, tls_dir: Path | None = None) -> int:
    """`braidlab scheduler`: Dask's scheduler on this machine, behind mutual TLS with certificates
    it makes (or takes) in `tls_dir`; on a loopback `host` alone, plain."""
    argv = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port), "--no-dashboard"]
    if host and is_loopback(host):
        argv += ["--host", host, "--protocol", "tcp"]
    else:
        d = tls_dir or DEFAULT_TLS_DIR
        if make_certificates(d):
            print(f"braidlab scheduler: made a certificate authority and certificates in {d}; copy "
                  f"ca.pem, worker.pem and worker.key to each worker machine (braidlab worker "
                  f"tls://HOST:{port} --tls-dir DIR), and ca.pem, client.pem and client.key to where "
                  f"runs are submitted (braidlab run ... --cluster tls://HOST:{port} --tls-dir DIR); "
                  f"ca.key stays here", file=sys.stderr)
        ca, cert, key = tls_files(d, "scheduler")
        argv += ["--protocol", "tls", "--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]
        if host:
            argv += ["--host", host]
    os.execv(sys.executable, argv)
    return 0  # not reached
