"""`braidlab run --cluster`: an experiment's cells on a Dask distributed cluster.

A cell needs a whole machine (root, its own namespaces, quiet cores), so each
machine runs one worker with one thread and one unit of the resource
`testbed`, and every cell asks for that unit: a machine measures one cell at
a time. The scheduler is Dask's own (`dask scheduler`, or `braidlab
scheduler`); `braidlab worker tcp://HOST:8786` joins a machine.

The submitting machine keeps the one run directory: a worker measures a cell
in a directory of its own and sends back the cell's record, its raw outputs
and the machine that measured it; the submitter writes them as they arrive,
so `braidlab report` and continuation work as with the embedded runner. A
cell whose worker dies is given to another by the scheduler (up to its
`allowed-failures`); Ctrl-C cancels what is queued and keeps what finished.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import braid, manifest, netns

RESOURCE = "testbed"


def machine() -> dict:
    """What measured a cell: the host, its kernel and cores, and braid's build."""
    u = os.uname()
    return {"host": u.nodename, "kernel": u.release, "cores": os.cpu_count() or 0,
            "build": {"git": manifest.git_revision(braid.ROOT),
                      "binary": manifest.file_digest(Path(braid.binary()))}}


def measure(exp, variant, cell, index: int, seed: int, token: str) -> dict:
    """On a worker: one cell, start to finish, in a directory of its own. Returns the cell's
    record, its raw files ({relative path: bytes}) and the machine."""
    from .runner import preflight, run_cell

    # A worker killed in the middle of a cell leaves its namespaces behind: their creator is
    # gone, so they are this machine's to remove before it builds again.
    netns.clean()
    preflight(exp, variant)
    wanted = {cc for cc in exp.methods[cell.method].method.controls() if cc}
    installed_here = any(cc.startswith("braid_") for cc in wanted) and not braid.cc_status()["installed"]
    if installed_here:
        braid.cc("install")
    work = Path(tempfile.mkdtemp(prefix="braidlab-cell-"))
    try:
        (work / "token").write_text(token)
        (work / "token").chmod(0o600)
        raw = work / "raw"
        data = run_cell(exp, variant, cell, raw, work / "token", index, seed)
        files = {}
        for p in sorted(raw.rglob("*")):
            if p.is_file() and not p.is_symlink():
                files[str(p.relative_to(raw))] = p.read_bytes()
        return {"data": data, "raw": files, "machine": machine()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if installed_here:
            braid.cc("uninstall")


def write_raw(raw: Path, files: dict[str, bytes]) -> None:
    """A cell's raw outputs, as its worker sent them, into the run directory."""
    for rel, content in files.items():
        p = (raw / rel).resolve()
        if raw.resolve() not in p.parents:
            raise ValueError(f"a worker sent a raw file outside its cell: {rel!r}")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)


def run_cells(address: str, exp, variant, cells: list, index_of, seed_of, token: str, keep,
              progress=print) -> None:
    """Measures `cells` on the cluster at `address`; `keep(cell, result)` is called for each as it
    arrives, and a cell that failed is said and left for the next run. Ctrl-C cancels the rest."""
    try:
        from distributed import Client, as_completed
    except ImportError as e:  # pragma: no cover - the setup installs it
        raise RuntimeError("--cluster needs the distributed package (scripts/setup.sh installs it)") from e
    with Client(address, timeout="30s") as client:
        workers = client.scheduler_info()["workers"]
        able = [w for w in workers.values() if w.get("resources", {}).get(RESOURCE, 0) >= 1]
        progress(f"cluster {address}: {len(able)} worker(s) with a {RESOURCE}")
        if not able:
            raise RuntimeError(f"no worker of {address} offers the resource {RESOURCE!r}: start each with "
                               f"`braidlab worker {address}` (or dask worker ... --resources {RESOURCE}=1)")
        futures = {client.submit(measure, exp, variant, c, index_of(c), seed_of(c), token, resources={RESOURCE: 1},
                                 pure=False, key=f"braidlab-{exp.name}-{c.id}-{os.urandom(4).hex()}"): c
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


def worker_main(scheduler: str, name: str | None = None) -> int:
    """`braidlab worker SCHEDULER`: this machine joins the cluster for one cell at a time."""
    if os.geteuid() != 0:
        print("braidlab worker: cells build network namespaces: run it as root", file=sys.stderr)
        return 2
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1", "--nworkers", "1",
            "--resources", f"{RESOURCE}=1", "--name", name or os.uname().nodename]
    os.execv(sys.executable, argv)
    return 0  # not reached


def scheduler_main(port: int) -> int:
    """`braidlab scheduler`: Dask's scheduler on this machine."""
    argv = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port)]
    os.execv(sys.executable, argv)
    return 0  # not reached
