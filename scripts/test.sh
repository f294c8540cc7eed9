#!/usr/bin/env bash
# Every test: Rust unit and integration tests, the laboratory's unit tests,
# then the system tests that build namespaces and load the controls (root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --release --workspace --locked
.venv/bin/python -m pytest -q --durations=15 python/braidlab tests/system "$@"
