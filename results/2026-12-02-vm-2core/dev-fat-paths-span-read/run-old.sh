#!/bin/bash
# The same development paths, auto only, with be2129a's braid (µ read read by read), the same day.
cd /work/main
G=results/2026-11-29-vm-2core/generality-dev-fat-paths
for f in dev-fat dev-fat1g dev-fat1g2; do
  BRAID_BIN=/work/tgt-dump/release/braid .venv/bin/braidlab run $G/$f.toml --full --methods auto --out /work/runs/fat/old-$f > /work/runs/fat/old-$f.log 2>&1
  echo "$(date +%T) $f rc=$?"
done
echo done
