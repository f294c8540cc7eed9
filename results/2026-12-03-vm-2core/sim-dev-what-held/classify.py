"""Sort braid-sim matrix cells by what held auto (its phases) and why a band claim failed."""
import re, sys, collections

def phases(line):
    m = re.search(r';\s*((?:[a-z-]+ \d+ %(?:, )?)+)', line)
    out = {}
    if m:
        for name, pct in re.findall(r'([a-z-]+) (\d+) %', m.group(1)):
            out[name] = int(pct)
    return out

def cls(ph):
    fair = ph.get('fair', 0)
    uncapped = ph.get('full', 0) + ph.get('grow', 0) + ph.get('start', 0)
    asked = ph.get('full-capped', 0) + ph.get('ask', 0)
    return max([('fair', fair), ('never asked', uncapped), ('asked, capped', asked)], key=lambda x: x[1])[0]

counts = collections.Counter()
rows = []
for path in sys.argv[1:]:
    for line in open(path):
        if 'shared-band:' in line or 'arrivals-band:' in line:
            kind = line.split()[0]
            ok = 'band:holds' in line
            q = re.search(r'short of mu: queue ([\d.]+) ms, clear (\d+) %', line)
            if 'shared-band' in line:
                a, e, s = (float(x) for x in re.search(r'auto ([\d.]+), equal ([\d.]+), single ([\d.]+)', line).groups())
            else:
                a, e, s = (float(x) for x in re.search(r'beside ([\d.]+) \(equal ([\d.]+), single ([\d.]+)\)', line).groups())
            side = 'in' if ok else ('above' if a > 1.25 * e else 'below')
            single_out = s > 1.25 * e or s < 0.7 * min(e, s)
            c = cls(phases(line))
            key = ('shared' if 'shared-band' in line else 'arrivals', side, c, 'one CUBIC above too' if s > 1.25 * e else '')
            counts[key] += 1
            rows.append((path.split('/')[-1], kind, side, c, a, e, s, q.groups() if q else None))
for k, v in sorted(counts.items()):
    print(f'{k[0]:9} {k[1]:6} {k[2]:14} {k[3]:20} {v}')
print()
for r in rows:
    if r[2] != 'in':
        print(*r)
