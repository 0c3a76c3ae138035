"""The exporter's httptls metrics server follows --metrics-tls-min-version / --metrics-tls-cipher-suites.

Through the real server (``Metrics.serve`` on a loopback port) and real TLS clients.
"""

from __future__ import annotations

import datetime
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nrop.api import tlsprofiles
from nrop.rte.metrics import Metrics

#: The certificate has an EC key: ECDSA suites.
ECDSA_GCM = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"


@pytest.fixture(scope="module")
def certs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("certs")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (path / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (path / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return path


def _serve(certs_dir: Path, min_version: str, ciphers: str) -> Iterator[int]:
    metrics = Metrics("node-a")
    metrics.write("create", "periodic")
    port = metrics.serve(
        "127.0.0.1",
        0,
        tls=True,
        certs_dir=str(certs_dir),
        cert_file="tls.crt",
        key_file="tls.key",
        tls_policy=tlsprofiles.metrics_tls_policy(min_version, ciphers),
    )
    try:
        yield port
    finally:
        metrics.stop()


@pytest.fixture
def tls13_server(certs_dir: Path) -> Iterator[int]:
    yield from _serve(certs_dir, "VersionTLS13", ECDSA_GCM)


@pytest.fixture
def tls12_server(certs_dir: Path) -> Iterator[int]:
    yield from _serve(certs_dir, "VersionTLS12", ECDSA_GCM)


def _client(maximum: ssl.TLSVersion | None = None, ciphers: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def _get_metrics(port: int, context: ssl.SSLContext) -> tuple[str, str, str]:
    """Negotiated version, cipher and the /metrics response."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw) as conn,
    ):
        version, cipher = conn.version(), conn.cipher()
        conn.sendall(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        return str(version), cipher[0] if cipher else "", b"".join(chunks).decode()


def test_tls13_minimum_refuses_a_tls12_client(tls13_server: int) -> None:
    with pytest.raises(ssl.SSLError):
        _get_metrics(tls13_server, _client(maximum=ssl.TLSVersion.TLSv1_2))


def test_tls13_minimum_serves_a_tls13_client(tls13_server: int) -> None:
    version, _, response = _get_metrics(tls13_server, _client())
    assert version == "TLSv1.3"
    assert (
        response.startswith("HTTP/1.0 200")
        and 'rte_noderesourcetopology_writes_total{node="node-a"' in response
    )


def test_tls12_cipher_list_admits_only_its_suites(tls12_server: int) -> None:
    version, cipher, response = _get_metrics(
        tls12_server, _client(maximum=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256")
    )
    assert (version, cipher) == ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256")
    assert "200" in response.splitlines()[0]
    with pytest.raises(ssl.SSLError):
        _get_metrics(
            tls12_server, _client(maximum=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384")
        )


def test_tls12_cipher_list_leaves_tls13_to_its_fixed_suites(tls12_server: int) -> None:
    """Go enables every TLS 1.3 suite whatever the list says; so does OpenSSL."""
    version, cipher, _ = _get_metrics(tls12_server, _client())
    assert version == "TLSv1.3" and cipher.startswith("TLS_")


def test_without_a_policy_a_tls12_client_is_served(certs_dir: Path) -> None:
    """The contrast of the first test: the refusal is the policy's doing."""
    for port in _serve(certs_dir, "", ""):
        version, _, response = _get_metrics(port, _client(maximum=ssl.TLSVersion.TLSv1_2))
        assert version == "TLSv1.2" and "200" in response.splitlines()[0]


def test_plain_http_gets_gos_answer(tls12_server: int) -> None:
    """Upstream's exporter is Go's net/http: plain HTTP on the TLS port gets its 400, and the
    server keeps serving TLS clients."""
    with socket.create_connection(("127.0.0.1", tls12_server), timeout=10) as conn:
        conn.sendall(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:2112\r\nUser-Agent: curl/7.76.1\r\nAccept: */*\r\n\r\n"
        )
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    assert (
        b"".join(chunks)
        == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    )
    assert "200" in _get_metrics(tls12_server, _client())[2].splitlines()[0]


def test_a_silent_client_does_not_hold_the_server(tls12_server: int) -> None:
    with socket.create_connection(("127.0.0.1", tls12_server), timeout=10):
        assert "200" in _get_metrics(tls12_server, _client())[2].splitlines()[0]
