"""Counts braid-sim matrix verdicts (`claim:holds` / `claim:FAILS` on each cell's line) in each folder given.

    python3 tally.py sim-tried sim-knee ../yield-entirely/sim/default
"""
import collections
import glob
import re
import sys

for d in sys.argv[1:]:
    held, all_ = collections.Counter(), collections.Counter()
    for f in glob.glob(d + "/*.txt"):
        for claim, verdict in re.findall(r"([a-z-]+):(holds|FAILS)", open(f).read()):
            all_[claim] += 1
            held[claim] += verdict == "holds"
    print(d)
    for k in sorted(all_):
        print(f"  {k:24s} {held[k]}/{all_[k]}")
