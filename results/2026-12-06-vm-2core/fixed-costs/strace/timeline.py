"""A copy's timeline from the strace files of braid-wrapper.sh (both ends): seconds from the
client's execve to each connect, accept, shutdown, syncfs and exit, the server's syncfs a second
(its journals) on one line.

    python3 timeline.py strace.*
"""

import sys

rows = []
for path in sys.argv[1:]:
    for line in open(path):
        tid, t, call = line.split(None, 2)
        if call.startswith(("execve", "connect", "accept4", "shutdown", "syncfs", "exit_group")):
            rows.append((float(t), tid, call.split("(")[0], "send" if '"send"' in call else ""))
start = min(t for t, _, c, what in rows if c == "execve" and what == "send")
rows = sorted(r for r in rows if r[0] >= start)
syncs = [f"{t - start:.2f}" for t, _, c, _ in rows if c == "syncfs"]
for t, tid, call, _ in rows:
    if call != "syncfs":
        print(f"{t - start:8.3f}  {tid}  {call}")
print("syncfs at:", " ".join(syncs))
