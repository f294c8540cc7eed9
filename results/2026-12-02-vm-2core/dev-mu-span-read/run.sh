#!/bin/bash
# Stamp dumps of development cells, one folder per scenario x method.
cd /work/main
T=results/2026-12-01-vm-2core/dev-mu-busy/dev-busy.toml
R=results/2026-12-01-vm-2core/dev-kernel-mu-scatter/dev-red.toml
M=/work/runs/mu2/dev-more.toml
go() { # toml scenario method
  d=/work/runs/mu2/dump/$2-$3; mkdir -p $d/stamps; chmod 777 $d/stamps
  BRAID_BIN=/work/tgt-dump/release/braid BRAID_STAMP_DUMP=$d/stamps .venv/bin/braidlab run $1 --full --methods $3 --scenarios $2 --out $d/run > $d/log 2>&1
  echo "$(date +%T) $2 $3 rc=$? $(ls $d/stamps | wc -l) files"
}
for s in c-1g-60ms-4cubic a-1g-60ms-idle b-1g-60ms-pair d-500m-150ms-red-pair; do
  for m in parallel-16 auto; do go $T $s $m; done
done
go $R b-50m-150ms-red-1bdp auto
for s in e-250m-100ms-1cubic g-200m-30ms-16reno h-800m-120ms-bbr i-1g-150ms-qbdp-pair; do go $M $s auto; done
