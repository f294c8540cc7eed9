import sys, re, collections
def load(prefix, seeds):
    tot = collections.OrderedDict()
    for s in seeds:
        txt = open(f"{prefix}-{s}.txt").read()
        for line in txt[txt.index("claim"):].splitlines()[1:]:
            m = re.match(r"(\S+)\s+(\d+)/(\d+)", line)
            if m:
                h, n = tot.get(m[1], (0, 0))
                tot[m[1]] = (h + int(m[2]), n + int(m[3]))
    return tot
seeds = sys.argv[2:]
names = sys.argv[1].split(",")
tabs = [load(n, seeds) for n in names]
print("claim".ljust(22) + "".join(n.rjust(10) for n in names))
for k in tabs[0]:
    print(k.ljust(22) + "".join(f"{t[k][0]}/{t[k][1]}".rjust(10) for t in tabs))
