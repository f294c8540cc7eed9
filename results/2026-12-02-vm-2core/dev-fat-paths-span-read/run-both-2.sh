#!/bin/bash
# A second run of each build on the same development paths, auto only, alternately.
cd /work/main
G=results/2026-11-29-vm-2core/generality-dev-fat-paths
for f in dev-fat dev-fat1g dev-fat1g2; do
  .venv/bin/braidlab run $G/$f.toml --full --methods auto --out /work/runs/fat/new2-$f > /work/runs/fat/new2-$f.log 2>&1
  echo "$(date +%T) new $f rc=$?"
  BRAID_BIN=/work/tgt-dump/release/braid .venv/bin/braidlab run $G/$f.toml --full --methods auto --out /work/runs/fat/old2-$f > /work/runs/fat/old2-$f.log 2>&1
  echo "$(date +%T) old $f rc=$?"
done
echo done
