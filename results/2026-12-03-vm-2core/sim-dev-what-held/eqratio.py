"""auto's rate in units of one CUBIC flow's response at the loss-event rate its own streams saw."""
import re, sys
for path in sys.argv[1:]:
    for line in open(path):
        m = re.search(r'auto ([\d.]+), equal ([\d.]+), single ([\d.]+).*one CUBIC flow ([\d.]+) shared-band:(\w+)', line)
        if not m:
            continue
        a, e, s, c, v = float(m[1]), float(m[2]), float(m[3]), float(m[4]), m[5]
        print(f"{line.split()[0]:9} {line.split()[1]:>4} ms {line.split()[3]:>5} Mb/s  auto/one-flow {a/c:5.1f}  single/one-flow {s/c:5.2f}  equal/one-flow {e/c:5.2f}  {v}")
