from pathlib import Path

import pytest

from braidlab import peers
from braidlab.engine import Method
from braidlab.peers import Peer, Server


def test_a_peer_described_wrongly_is_refused_with_the_reason():
    for args, kw, words in ((("ftp",), {}, "no peer of kind"), (("rsync", 4), {}, "one connection"),
                            (("gridftp", 0), {}, "at least one"), (("braid", 4), {}, "names its method"),
                            (("gridftp", 4), {"method": Method("parallel", 4)}, "names its method")):
        with pytest.raises(ValueError, match=words):
            Peer(*args, **kw)


def _server(peer: Peer, port: int) -> Server:
    return Server(peer, host=None, proc=None, addr="10.9.2.1", port=port, root=Path("/srv/r"),
                  token=Path("/t/token"))


def test_each_tool_is_asked_for_its_streams_and_writes_into_the_servers_root():
    src = Path("/data/f.bin")
    grid = peers.copy_argv(_server(Peer("gridftp", 8), 2811), src)
    assert grid == ["globus-url-copy", "-p", "8", "-fast", "file:///data/f.bin", "ftp://10.9.2.1:2811/srv/r/f.bin"]
    xrd = peers.copy_argv(_server(Peer("xrootd", 4), 1094), src)
    assert xrd[-1] == "root://10.9.2.1:1094//srv/r/f.bin" and xrd[xrd.index("--streams") + 1] == "4"
    assert peers.copy_argv(_server(Peer("rsync"), 873), src)[-1] == "rsync://10.9.2.1:873/m/f.bin"
    b = peers.copy_argv(_server(Peer("braid", 9, Method("auto", 9)), 5420), src)
    assert b[1:3] == ["send", "/data/f.bin"] and "10.9.2.1:5420:." in b
    assert b[b.index("--mode") + 1:b.index("--mode") + 4] == ["auto", "-n", "9"]
    assert "--ssh" in b and b[b.index("--ssh") + 1] == "never"


def test_names_say_the_command_and_missing_tools_name_their_package(monkeypatch):
    assert Peer("braid", 8, Method("parallel", 8)).name == "braid --mode parallel -n 8"
    assert Peer("braid", 1, Method("single", 1)).name == "braid --mode single"
    assert Peer("gridftp", 4).name == "globus-url-copy -p 4"
    monkeypatch.setattr(peers.shutil, "which", lambda t: None if t == "xrdcp" else "/usr/bin/" + t)
    assert peers.missing([Peer("xrootd", 2), Peer("rsync")]) == ["xrdcp (xrootd-client)"]


def test_same_bytes_compares_size_and_content(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"x" * 1000)
    b.write_bytes(b"x" * 999 + b"y")
    assert not peers.same_bytes(a, b)
    b.write_bytes(b"x" * 1000)
    assert peers.same_bytes(a, b) and peers.same_bytes(a, b, peers.digest(a))
    assert not peers.same_bytes(a, tmp_path / "missing")
