#!/usr/bin/env bash
# Receiver CPU per GB over loopback, old build (no stamps) against new (stamped reads), alternating.
#   OLD=/path/to/e21a9dc/target/release/braid NEW=target/release/braid bash cpu.sh
set -u
OLD=${OLD:?a release build of e21a9dc}
NEW=${NEW:-target/release/braid}
NEW=$(realpath "$NEW")
OLD=$(realpath "$OLD")
mkdir -p /tmp/braid-cpu && cd /tmp/braid-cpu
head -c 32 /dev/urandom | xxd -p > tok
for i in 1 2 3; do
  for b in old new; do
    if [ $b = old ]; then bin=$OLD; else bin=$NEW; fi
    $bin serve --listen 127.0.0.1:5998 --root . --token-file tok --once --json > s.$b.$i.json 2>/dev/null &
    sleep 0.5
    $bin bench 127.0.0.1:5998 --token-file tok -t 8 --mode parallel -n 4 --json > c.$b.$i.json 2>/dev/null
    wait
    python3 - "$b" s.$b.$i.json c.$b.$i.json <<'PY'
import json, sys
b, s, c = sys.argv[1:]
def summ(p):
    return [json.loads(l) for l in open(p) if '"summary"' in l][-1]
r, t = summ(s), summ(c)
print(f"{b}: {r['bytes']/1e9:6.1f} GB  {r['mbps']/1e3:5.1f} Gb/s  receiver cpu {r['cpu_seconds']:.2f} s = {r['cpu_seconds']/(r['bytes']/1e9):.3f} s/GB  sender {t['cpu_seconds']/(t['bytes']/1e9):.3f} s/GB")
PY
  done
done
