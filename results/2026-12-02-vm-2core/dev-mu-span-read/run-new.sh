#!/bin/bash
cd /work/main
.venv/bin/braidlab run results/2026-12-01-vm-2core/dev-mu-busy/dev-busy.toml --full --methods auto --out /work/runs/mu2/new-busy > /work/runs/mu2/new-busy.log 2>&1
.venv/bin/braidlab run /work/runs/mu2/dev-more.toml --full --methods auto --out /work/runs/mu2/new-more > /work/runs/mu2/new-more.log 2>&1
echo done
