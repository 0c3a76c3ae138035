"""TLS material for the embedded API server: a throw-away CA and a server certificate it signs.

The server listens on HTTPS so that kubectl, kopf and client-python connect exactly as
they do to a real cluster, verifying the chain against ``certificate-authority-data``
from the generated kubeconfig. Keys are ECDSA P-256 (fast to generate, accepted by Go's
and OpenSSL's TLS stacks); certificates carry the extensions strict verifiers expect
(SAN with the loopback IP, key identifiers, basic constraints, key usages).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HOSTS = ("127.0.0.1", "localhost")
CA_VALIDITY = dt.timedelta(days=365)
SERVER_VALIDITY = dt.timedelta(days=365)
# Certificates start slightly in the past so a client whose clock lags still accepts them.
_BACKDATE = dt.timedelta(hours=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def write_pair(self, directory: str | os.PathLike[str], name: str) -> tuple[Path, Path]:
        """Write ``<name>.crt`` (0644) and ``<name>.key`` (0600) into ``directory``."""
        base = Path(directory)
        base.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = base / f"{name}.crt", base / f"{name}.key"
        _write_file(cert_path, self.cert_pem, 0o644)
        _write_file(key_path, self.key_pem, 0o600)
        return cert_path, key_path


def _write_file(path: Path, data: bytes, mode: int) -> None:
    # Create with the final mode so a key is never readable by others, even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # the file may have existed with a wider mode
        os.write(fd, data)
    finally:
        os.close(fd)


def _now(now: dt.datetime | None) -> dt.datetime:
    return now if now is not None else dt.datetime.now(dt.UTC)


def generate_ca(common_name: str = "nrop-local-ca", *, now: dt.datetime | None = None) -> KeyPair:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = _now(now) - _BACKDATE
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert=cert, key=key)


def _san_entries(hosts: Sequence[str]) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = []
    for host in hosts:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            entries.append(x509.DNSName(host))
    return entries


def issue_server_cert(
    ca: KeyPair,
    hosts: Sequence[str] = DEFAULT_HOSTS,
    *,
    common_name: str = "kube-apiserver",
    now: dt.datetime | None = None,
) -> KeyPair:
    """A serving certificate signed by ``ca``, valid for ``hosts`` (IP literals become IP SANs)."""
    if not hosts:
        raise ValueError("a server certificate needs at least one host")
    key = ec.generate_private_key(ec.SECP256R1())
    start = _now(now) - _BACKDATE
    ca_ski = ca.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + SERVER_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(_san_entries(hosts)), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert=cert, key=key)


def ssl_context(server_pair: KeyPair) -> ssl.SSLContext:
    """A server-side context presenting ``server_pair`` (TLS 1.2+, HTTP/1.1 via ALPN).

    ``ssl`` loads certificates only from files, so the pair goes through a private
    temporary directory that is removed before returning.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # Go clients offer h2 first; the server speaks HTTP/1.1 only (watches rely on chunking).
    ctx.set_alpn_protocols(["http/1.1"])
    with tempfile.TemporaryDirectory(prefix="nrop-tls-") as tmp:
        cert_path, key_path = server_pair.write_pair(tmp, "server")
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client-side context that trusts only ``ca_pem`` and checks the host name."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode("ascii"))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


__all__ = [
    "DEFAULT_HOSTS",
    "KeyPair",
    "client_context",
    "generate_ca",
    "issue_server_cert",
    "ssl_context",
]
