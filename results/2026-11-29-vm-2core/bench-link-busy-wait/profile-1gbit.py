"""braid-link under perf at 1 Gb/s (sleeping until each frame is due), the load on the other core:
.venv/bin/python profile-1gbit.py, then perf report -i /tmp/prof.data --comm braid-link --no-children --sort sym --stdio -G."""
import sys, subprocess
sys.path.insert(0, "benches")
import link
from braidlab.dumbbell import LinkPath
with LinkPath("rate 1000mbit delay 10ms limit 1000", "delay 10ms", tag="bprf", cpu=0) as p:
    perf = subprocess.Popen(["perf","record","-q","-g","-C","0","-o","/tmp/prof.data","--","sleep","4"])
    udp = link._udp(p, "1200M", 8)
    perf.wait()
