"""braid-sim matrix lines: time in `ask` beside the UDP source, and the queue auto read while short of µ."""
import re, sys, statistics as st
udp = {True: [], False: []}
idle_q = []
for path in sys.argv[1:]:
    for line in open(path):
        kind = line.split()[0] if line.strip() else ''
        ask = re.search(r'\bask (\d+) %', line)
        q = re.search(r'short of mu: queue ([\d.]+) ms, clear (\d+) %', line)
        if kind == 'udp' and 'udp-fast:' in line:
            udp['udp-fast:holds' in line].append(int(ask.group(1)) if ask else 0)
        if kind == 'idle' and q:
            idle_q.append((float(q.group(1)), int(q.group(2)), re.search(r'(\d+) ms +(\d+) Mb/s', line).groups(), ' red ' in line))
for ok in (False, True):
    v = udp[ok]
    print(f"udp-fast {'holds' if ok else 'fails'}: {len(v)} cells, time asking: median {st.median(v) if v else 0} %, range {min(v) if v else 0}-{max(v) if v else 0} %")
print(f"idle cells with ticks short of mu: {len(idle_q)}; queue median {min(x[0] for x in idle_q)}-{max(x[0] for x in idle_q)} ms; clear {min(x[1] for x in idle_q)}-{max(x[1] for x in idle_q)} %")
for x in sorted(idle_q):
    print('  ', x)
