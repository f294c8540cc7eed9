#!/bin/bash
# usage: run.sh MATRIX_BINARY OUTDIR
M=$1; out=$2; mkdir -p $out
for S in 7 11 13 17; do $M $S 8 idle > $out/idle-$S.txt 2>&1; done
for S in 13 17 19; do $M $S 3 reno-1,reno-4,reno-16,cubic-1,cubic-4,cubic-16,mix,bbr-4,cubic-arrive,reno-arrive > $out/busyA-$S.txt 2>&1; done
for S in 7 11; do $M $S 3 reno-4,cubic-1,cubic-4,mix,cubic-arrive,web,udp,auto-pair,bbr-1 > $out/busyB-$S.txt 2>&1; done
echo done > $out/done
