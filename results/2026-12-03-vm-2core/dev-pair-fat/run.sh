#!/bin/bash
cd /work/main
T=results/2026-12-03-vm-2core/dev-pair-fat/dev-pair.toml
.venv/bin/braidlab run $T --full --methods auto,parallel-16 --scenarios "a-1g-30ms-1e4-idle,b-500m-60ms-5e5-idle" --out DIR/idle > DIR/idle.log 2>&1
echo "idle rc=$?"
.venv/bin/braidlab run $T --full --methods auto --scenarios "a-1g-30ms-1e4-pair,b-500m-60ms-5e5-pair" --out DIR/pair > DIR/pair.log 2>&1
echo "pair rc=$?"
