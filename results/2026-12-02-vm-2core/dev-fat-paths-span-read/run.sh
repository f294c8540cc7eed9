#!/bin/bash
cd /work/main
G=results/2026-11-29-vm-2core/generality-dev-fat-paths
for f in dev-fat dev-fat1g dev-fat1g2; do
  .venv/bin/braidlab run $G/$f.toml --full --out /work/runs/fat/$f > /work/runs/fat/$f.log 2>&1
  echo "$(date +%T) $f rc=$?"
done
echo done
