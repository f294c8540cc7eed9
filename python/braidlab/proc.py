"""Running commands, with errors that say which command failed and what it printed."""

from __future__ import annotations

import concurrent.futures
import subprocess
from collections.abc import Sequence


class CommandError(RuntimeError):
    """A command exited non-zero; the message carries its stderr."""

    def __init__(self, argv: Sequence[str], code: int, stderr: str):
        self.argv = list(argv)
        self.code = code
        self.stderr = stderr
        super().__init__(f"`{' '.join(argv)}` exited {code}: {stderr.strip() or '(no output)'}")


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 60.0, input: str | None = None) -> str:
    """Runs argv to completion and returns its stdout."""
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError as e:
        raise CommandError(argv, 127, f"{argv[0]} not found; run scripts/setup.sh") from e
    if check and p.returncode != 0:
        raise CommandError(argv, p.returncode, p.stderr)
    return p.stdout


def communicate_all(procs: Sequence[subprocess.Popen], timeout: float) -> list[tuple[str, str]]:
    """Each process's (stdout, stderr), read from all of them at once.

    Processes that run side by side must be read side by side: while one is read to its end,
    another's pipe fills (64 KiB) and its next write blocks. A trace blocked that way stops
    sampling and writes the samples it missed in a burst at the end, so its record says
    nothing of the time between.
    """
    if not procs:
        return []
    with concurrent.futures.ThreadPoolExecutor(len(procs)) as ex:
        return list(ex.map(lambda p: p.communicate(timeout=timeout), procs))
