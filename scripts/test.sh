#!/usr/bin/env bash
# Every test: the fast tier (formatting, lints, Rust tests, the laboratory's
# unit tests), then the system tests that build namespaces and load the
# controls (root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/fast.sh
.venv/bin/python -m pytest -q --durations=15 tests/system "$@"
