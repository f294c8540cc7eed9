"""System tests: real namespaces, the real kernel's TCP with braid's controls.

They need root. Every testbed is a context manager and the controls are
uninstalled at the end of the session if the session installed them, so a
failing test leaves no namespace and no registration behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from braidlab import braid, netns

MEASUREMENTS = Path(__file__).resolve().parents[2] / "target" / "system-measurements.jsonl"


def pytest_sessionstart(session):
    if os.geteuid() != 0:
        raise pytest.UsageError("the system tests build network namespaces and load BPF: run them as root")
    netns.clean()
    MEASUREMENTS.parent.mkdir(parents=True, exist_ok=True)
    MEASUREMENTS.write_text("")


@pytest.fixture(scope="session")
def _controls_for_session():
    was_installed = braid.cc_status()["installed"]
    yield
    if not was_installed:
        braid.cc("uninstall")


@pytest.fixture
def controls(_controls_for_session):
    """braid's controls, installed before each test that asks (a test that
    uninstalls and fails half-way must not take the rest down with it), and
    removed after the session if the session installed them."""
    braid.cc("install")


@pytest.fixture
def record(request):
    """Appends a measured figure, shown in the summary and kept in target/system-measurements.jsonl."""

    def _record(**figures):
        rec = {"test": request.node.name, **figures}
        with MEASUREMENTS.open("a") as f:
            f.write(json.dumps(rec) + "\n")

    return _record


def pytest_terminal_summary(terminalreporter):
    if not MEASUREMENTS.exists():
        return
    lines = [line for line in MEASUREMENTS.read_text().splitlines() if line.strip()]
    if lines:
        terminalreporter.section("measured")
        for line in lines:
            terminalreporter.write_line(line)
