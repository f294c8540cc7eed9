#!/bin/bash
# usage: run-cells.sh MATRIX OUTDIR: braid-sim's development cells one at a time (BRAID_SIM_CELL), so
# that the instrumented build's XL lines (instrument.patch; XL=1) belong to one cell each.
M=$1; out=$2; mkdir -p $out
{
for S in 7 11 13 17; do for c in 0 1 2 3 4 5 6 7; do echo "$S 8 idle $c"; done; done
for S in 13 17 19; do for k in reno-1 reno-4 reno-16 cubic-1 cubic-4 cubic-16 mix bbr-4 cubic-arrive reno-arrive; do for c in 0 1 2; do echo "$S 3 $k $c"; done; done; done
for S in 7 11; do for k in reno-4 cubic-1 cubic-4 mix cubic-arrive web udp auto-pair bbr-1; do for c in 0 1 2; do echo "$S 3 $k $c"; done; done; done
} | M=$M OUT=$out xargs -P 2 -L 1 sh -c 'XL=1 BRAID_SIM_CELL=$3 $M $0 $1 $2 > $OUT/$0-$2-$3.txt 2>&1'
