import json

import pytest

from braidlab import manifest

# Captured from `ethtool -k` on a veth of this testbed, trimmed.
ETHTOOL_K = """Features for eth0:
rx-checksumming: off
tx-checksumming: off
	tx-checksum-ipv4: off [fixed]
scatter-gather: on
tcp-segmentation-offload: off
	tx-tcp-segmentation: off
generic-segmentation-offload: off
generic-receive-offload: off
large-receive-offload: off [fixed]
"""


def test_offloads_parsed_from_real_ethtool_output():
    assert manifest.parse_ethtool_k(ETHTOOL_K) == {
        "rx-checksumming": "off",
        "tx-checksumming": "off",
        "tcp-segmentation-offload": "off",
        "generic-segmentation-offload": "off",
        "generic-receive-offload": "off",
    }


def test_seeds_found_in_link_specs():
    assert manifest.link_seeds("rate 10mbit loss random 1% seed 7 red limit 1 seed 9") == [7, 9]
    assert manifest.link_seeds("rate 10mbit") == []


def test_write_then_read_and_refuse_newer(tmp_path):
    p = tmp_path / "manifest.json"
    manifest.write(p, {"manifest_version": manifest.VERSION, "kernel": "x"})
    assert manifest.read(p)["kernel"] == "x"
    assert not (tmp_path / "manifest.json.tmp").exists()
    p.write_text(json.dumps({"manifest_version": manifest.VERSION + 1}))
    with pytest.raises(ValueError, match="newer"):
        manifest.read(p)
