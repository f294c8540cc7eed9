"""The cluster's rules for addresses and its certificates, without a cluster."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from braidlab import cluster


def test_plain_tcp_is_allowed_on_loopback_only():
    assert cluster.check_address("tls://scheduler.example:8786") == "tls"
    for ok in ("tcp://127.0.0.1:8786", "tcp://[::1]:8786", "tcp://localhost:1", "127.0.0.1:8786"):
        assert cluster.check_address(ok) == "tcp", ok
    for bad in ("tcp://192.0.2.1:8786", "tcp://0.0.0.0:8786", "192.0.2.7:8786", "tcp://[2001:db8::1]:9"):
        with pytest.raises(ValueError, match="loopback only"):
            cluster.check_address(bad)


def test_the_certificates_chain_to_one_ca_and_their_keys_are_private(tmp_path):
    d = tmp_path / "c"
    assert cluster.make_certificates(d)
    assert not cluster.make_certificates(d), "made again over existing ones"
    ca = x509.load_pem_x509_certificate((d / "ca.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in cluster.ROLES:
        cert = x509.load_pem_x509_certificate((d / f"{role}.pem").read_bytes())
        assert cert.issuer == ca.subject
        ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        assert (d / f"{role}.key").stat().st_mode & 0o777 == 0o600
    assert (d / "ca.key").stat().st_mode & 0o777 == 0o600


def test_a_missing_certificate_says_where_they_come_from(tmp_path):
    with pytest.raises(FileNotFoundError, match="braidlab scheduler"):
        cluster.tls_files(tmp_path, "client")
    with pytest.raises(FileNotFoundError):
        cluster.security("tls://h:1", tmp_path)
