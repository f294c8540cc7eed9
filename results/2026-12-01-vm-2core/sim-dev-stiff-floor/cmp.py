"""Compares a variant's matrix runs with the build's (../sim-dev-at-mu/after-SEED.txt), cell by
cell, and adds up each claim: python3 cmp.py DIR SEED... (DIR holding new-SEED.txt). With
--pairs DIR...: the share of the pair test's runs (pair-test-*.txt) as even as the test asks."""
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent


def load(p):
    cells, claims = {}, {}
    for line in open(p):
        m = re.search(r"seed (\d+)\s", line)
        if m and ":" in line:
            cells[m.group(1)] = (line.split()[0], re.findall(r"([\w-]+):(holds|FAILS)", line))
        m2 = re.match(r"^([\w-]+)\s+(\d+)/(\d+)\s", line)
        if m2:
            claims[m2.group(1)] = (int(m2.group(2)), int(m2.group(3)))
    return cells, claims


def matrix(d, seeds):
    tot = {}
    for s in seeds:
        a, sa = load(HERE / f"../sim-dev-at-mu/after-{s}.txt")
        b, sb = load(HERE / d / f"new-{s}.txt")
        for k in sorted(set(a) & set(b)):
            if a[k][1] != b[k][1]:
                print(s, a[k][0], "before", [x for x in a[k][1] if x not in b[k][1]],
                      "after", [x for x in b[k][1] if x not in a[k][1]])
        for c in sa:
            x = tot.setdefault(c, [0, 0, 0])
            x[0] += sa[c][0]
            x[1] += sb.get(c, (0, 0))[0]
            x[2] += sa[c][1]
    for c, (x, y, n) in tot.items():
        print(f"{c:24} {x}/{n} -> {y}/{n}")


def pairs(dirs):
    for d in dirs:
        ok = n = 0
        js = []
        for f in sorted((HERE / d).glob("pair-test*.txt")):
            for line in open(f):
                m = re.search(r"Jain ([\d.]+); two CUBIC flows ([\d.]+)", line)
                if m:
                    j, c = float(m.group(1)), float(m.group(2))
                    n += 1
                    ok += j >= min(c, 0.95)
                    js.append(j)
        print(f"{d:18} {ok}/{n} as even as the test asks; Jain mean {sum(js) / len(js):.3f}, lowest {min(js):.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "--pairs":
        pairs(sys.argv[2:])
    else:
        matrix(sys.argv[1], sys.argv[2:])
