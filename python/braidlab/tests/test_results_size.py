"""scripts/check_results.py: the limits it holds new results folders to."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "check_results.py"
spec = importlib.util.spec_from_file_location("check_results", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def _run(folder: Path, nbytes: int, raw: bool = False) -> None:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    (folder / "series.csv").write_bytes(b"x" * nbytes)
    if raw:
        (folder / "raw").mkdir()


def test_a_new_run_over_the_limit_or_with_raw_captures_is_named(tmp_path):
    _run(tmp_path / "2026-12-01-vm" / "big", check.RUN_LIMIT + 1)
    _run(tmp_path / "2026-12-01-vm" / "small", 1000)
    _run(tmp_path / "2026-12-01-vm" / "captures", 1000, raw=True)
    found = check.problems(tmp_path)
    assert len(found) == 2, found
    assert any("big" in f and "MiB" in f for f in found)
    assert any("captures" in f and "raw/" in f for f in found)


def test_folders_from_before_the_limit_are_left_alone(tmp_path):
    _run(tmp_path / "2026-11-20-vm" / "big", check.RUN_LIMIT + 1)
    assert check.problems(tmp_path) == []


def test_the_repositorys_results_hold_to_it():
    assert check.problems(SCRIPT.parent.parent / "results") == []
