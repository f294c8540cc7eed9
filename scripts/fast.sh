#!/usr/bin/env bash
# The fast tier, run on every change: no root, no namespaces, under two minutes
# once built. Formatting and lints (warnings are errors), every Rust test
# (unit, property, whole sessions and server attacks over loopback), the
# laboratory's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --release --workspace --all-targets --locked -- -D warnings
cargo test --release --workspace --locked
.venv/bin/python scripts/check_results.py
.venv/bin/python -m pytest -q python/braidlab "$@"
