#!/bin/bash
# usage: run.sh OUTDIR (BRAID_SIM_FAIR=0 for the group that yields entirely): the development seeds
# of braid-sim's matrix one after another; M is `cargo build --release -p braid-sim --example matrix`'s binary
out=$1; mkdir -p $out
M=${M:-/tmp/sim/matrix}
for S in 7 11 13 17; do $M $S 8 idle > $out/idle-$S.txt 2>&1; done
for S in 13 17 19; do $M $S 3 reno-1,reno-4,reno-16,cubic-1,cubic-4,cubic-16,mix,bbr-4,cubic-arrive,reno-arrive > $out/busyA-$S.txt 2>&1; done
for S in 7 11; do $M $S 3 reno-4,cubic-1,cubic-4,mix,cubic-arrive,web,udp,auto-pair,bbr-1 > $out/busyB-$S.txt 2>&1; done
echo done > $out/done
