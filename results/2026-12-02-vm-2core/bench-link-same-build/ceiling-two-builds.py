"""braid-link's own ceiling at MTU 1500 for this tree's build and another, alternately, twice.

    .venv/bin/python results/2026-12-02-vm-2core/bench-link-same-build/ceiling-two-builds.py OTHER-BRAID-LINK
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benches"))
import link  # noqa: E402

other = sys.argv[1]
for _ in range(2):
    for label, binary in (("main", None), (other, other)):
        if binary:
            os.environ["BRAID_LINK_BIN"] = binary
        r = link.ceiling_alone(1500)
        os.environ.pop("BRAID_LINK_BIN", None)
        print(label, json.dumps(r), flush=True)
