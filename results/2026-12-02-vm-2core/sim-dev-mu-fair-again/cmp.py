"""python3 cmp.py new base 7 (NEW-SEED.txt against BASE-SEED.txt): each claim's cells that hold, the base against NEW, and the cells that changed."""
import re, sys
def load(p):
    cells, claims = {}, {}
    for line in open(p):
        m = re.search(r"seed (\d+)\s", line)
        if m and ":" in line:
            cells[m.group(1)] = (line.split()[0], re.findall(r"([\w-]+):(holds|FAILS)", line), line)
        m2 = re.match(r"^([\w-]+)\s+(\d+)/(\d+)\s", line)
        if m2:
            claims[m2.group(1)] = (int(m2.group(2)), int(m2.group(3)))
    return cells, claims
new, base, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
tot = {}
for s in seeds:
    try:
        a, sa = load(f"{base}-{s}.txt"); b, sb = load(f"{new}-{s}.txt")
    except FileNotFoundError:
        continue
    if not sb: continue
    for k in sorted(set(a) & set(b)):
        if a[k][1] != b[k][1]:
            print(s, a[k][0], "before", [x for x in a[k][1] if x not in b[k][1]], "after", [x for x in b[k][1] if x not in a[k][1]])
            print("   ", re.sub(r"\s+", " ", a[k][2].split("seed")[0])[:60], "|", a[k][2].split(re.search(r"seed \d+", a[k][2]).group(0))[1].strip()[:110])
            print("   ", " " * 60, "|", b[k][2].split(re.search(r"seed \d+", b[k][2]).group(0))[1].strip()[:110])
    for c in sa:
        x = tot.setdefault(c, [0, 0, 0])
        x[0] += sa[c][0]; x[1] += sb.get(c, (0, 0))[0]; x[2] += sa[c][1]
for c, (x, y, n) in sorted(tot.items()):
    print(f"{c:24} {x}/{n} -> {y}/{n}")
