import subprocess
import sys

import pytest

from braidlab.proc import CommandError, communicate_all, run

# The first process ends only once the second has written more than a pipe holds; read one
# after the other, the second blocks on its full pipe and the first gives up.
WAITER = """
import os, sys, time
end = time.monotonic() + 10
while not os.path.exists(sys.argv[1]):
    if time.monotonic() > end:
        sys.exit("the writer never got its output out")
    time.sleep(0.01)
print("saw it")
"""
WRITER = """
import sys
sys.stdout.write("x" * (1 << 20))
sys.stdout.flush()
open(sys.argv[1], "w").close()
"""


def test_processes_side_by_side_are_read_side_by_side(tmp_path):
    flag = str(tmp_path / "written")
    procs = [subprocess.Popen([sys.executable, "-c", src, flag], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for src in (WAITER, WRITER)]
    (out_w, err_w), (out_x, _) = communicate_all(procs, timeout=30)
    assert procs[0].returncode == 0, err_w
    assert out_w.strip() == "saw it"
    assert len(out_x) == 1 << 20


def test_no_processes_read_nothing():
    assert communicate_all([], timeout=1) == []


def test_a_failing_command_names_itself_and_its_stderr():
    with pytest.raises(CommandError, match=r"exited 3: boom"):
        run([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])
