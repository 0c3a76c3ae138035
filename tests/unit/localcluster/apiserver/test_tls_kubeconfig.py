"""TLS material verified by real handshakes, and kubeconfigs the official client loads and uses."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import shutil
import socket
import ssl
import stat
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import kubernetes
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from nrop.localcluster.apiserver import kubeconfig as kc
from nrop.localcluster.apiserver import tls


@pytest.fixture(scope="module")
def ca() -> tls.KeyPair:
    return tls.generate_ca("test-ca")


@pytest.fixture(scope="module")
def server_pair(ca: tls.KeyPair) -> tls.KeyPair:
    return tls.issue_server_cert(ca)


def _serve_once(ctx: ssl.SSLContext) -> tuple[int, threading.Thread, list[BaseException]]:
    """A one-connection TLS echo server on 127.0.0.1; returns its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    errors: list[BaseException] = []

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls_conn:
                    tls_conn.sendall(b"pong:" + tls_conn.recv(64))
            except (ssl.SSLError, OSError) as exc:  # a rejected client ends the handshake
                errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return port, thread, errors


def _handshake(port: int, client: ssl.SSLContext, server_hostname: str) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        client.wrap_socket(raw, server_hostname=server_hostname) as conn,
    ):
        conn.sendall(b"ping")
        return conn.recv(64)


@pytest.mark.parametrize("server_hostname", ["127.0.0.1", "localhost"])
def test_handshake_with_a_client_trusting_only_the_ca(
    ca: tls.KeyPair, server_pair: tls.KeyPair, server_hostname: str
) -> None:
    port, thread, errors = _serve_once(tls.ssl_context(server_pair))
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    assert client.verify_mode == ssl.CERT_REQUIRED and client.check_hostname
    assert _handshake(port, client, server_hostname) == b"pong:ping"
    thread.join(5)
    assert not errors


def test_client_context_helper_verifies_the_chain(ca: tls.KeyPair, server_pair: tls.KeyPair) -> None:
    port, thread, _ = _serve_once(tls.ssl_context(server_pair))
    assert _handshake(port, tls.client_context(ca.cert_pem), "127.0.0.1") == b"pong:ping"
    thread.join(5)


def test_handshake_fails_against_another_ca(server_pair: tls.KeyPair) -> None:
    port, thread, _ = _serve_once(tls.ssl_context(server_pair))
    stranger = ssl.create_default_context(cadata=tls.generate_ca("stranger").cert_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(port, stranger, "127.0.0.1")
    thread.join(5)


def test_handshake_fails_for_a_host_not_in_the_sans(ca: tls.KeyPair, server_pair: tls.KeyPair) -> None:
    port, thread, _ = _serve_once(tls.ssl_context(server_pair))
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError, match=r"match"):
        _handshake(port, client, "example.com")
    thread.join(5)


def test_server_certificate_contents(ca: tls.KeyPair) -> None:
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    pair = tls.issue_server_cert(ca, hosts=("127.0.0.1", "localhost", "::1", "api.local"), now=now)
    san = pair.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "api.local"]
    assert pair.cert.issuer == ca.cert.subject
    assert not pair.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lifetime = pair.cert.not_valid_after_utc - pair.cert.not_valid_before_utc
    assert dt.timedelta(days=364) < lifetime <= dt.timedelta(days=366)
    assert pair.cert.not_valid_before_utc <= now < pair.cert.not_valid_after_utc
    ca_constraints = ca.cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert ca_constraints.critical and ca_constraints.value.ca


def test_issue_server_cert_needs_a_host(ca: tls.KeyPair) -> None:
    with pytest.raises(ValueError, match="at least one host"):
        tls.issue_server_cert(ca, hosts=())


def test_write_pair_modes_and_contents(tmp_path: Path, server_pair: tls.KeyPair) -> None:
    (tmp_path / "server.key").write_bytes(b"old")
    os.chmod(tmp_path / "server.key", 0o644)
    cert_path, key_path = server_pair.write_pair(tmp_path, "server")
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cert_path.stat().st_mode) == 0o644
    assert x509.load_pem_x509_certificate(cert_path.read_bytes()) == server_pair.cert
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    assert key.public_key() == server_pair.key.public_key()


# --------------------------------------------------------------------------- kubeconfig


def test_render_kubeconfig_shape(ca: tls.KeyPair) -> None:
    config = kc.render_kubeconfig("https://127.0.0.1:6443", ca.cert_pem, "t0k", namespace="work")
    assert config["apiVersion"] == "v1" and config["kind"] == "Config"
    assert config["current-context"] == "nrop-local"
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.cert_pem
    assert config["users"] == [{"name": "admin", "user": {"token": "t0k"}}]
    assert config["contexts"][0]["context"] == {"cluster": "nrop-local", "user": "admin", "namespace": "work"}


def test_kubeconfig_loads_into_a_client_configuration(tmp_path: Path, ca: tls.KeyPair) -> None:
    path = tmp_path / "kubeconfig"
    kc.write_kubeconfig(
        path,
        kc.render_kubeconfig("https://127.0.0.1:6443", ca.cert_pem, "s3cret", user="me", cluster="c1"),
    )
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(path), client_configuration=cfg)
    assert cfg.host == "https://127.0.0.1:6443"
    # The key name changed across client releases ("authorization" → "BearerToken").
    assert list(cfg.api_key.values()) == ["Bearer s3cret"]
    assert cfg.verify_ssl
    assert Path(cfg.ssl_ca_cert).read_bytes() == ca.cert_pem
    _, active = kubernetes.config.list_kube_config_contexts(config_file=str(path))
    assert active["name"] == "c1"
    assert active["context"]["namespace"] == "default"


class _VersionHandler(BaseHTTPRequestHandler):
    seen_authorization: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen_authorization.append(self.headers.get("Authorization"))
        body = json.dumps(
            {
                "major": "1",
                "minor": "33",
                "gitVersion": "v1.33.0",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z",
                "goVersion": "go1.24.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def https_server(server_pair: tls.KeyPair) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _VersionHandler)
    httpd.socket = tls.ssl_context(server_pair).wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_official_client_talks_tls_with_the_generated_kubeconfig(
    tmp_path: Path, ca: tls.KeyPair, https_server: str
) -> None:
    path = tmp_path / "kubeconfig"
    kc.write_kubeconfig(path, kc.render_kubeconfig(https_server, ca.cert_pem, "tok"))
    _VersionHandler.seen_authorization.clear()
    api = kubernetes.config.new_client_from_config(config_file=str(path))
    try:
        version = kubernetes.client.VersionApi(api).get_code()
    finally:
        api.close()
    assert version.git_version == "v1.33.0"
    assert _VersionHandler.seen_authorization == ["Bearer tok"]


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
def test_kubectl_verifies_the_chain_with_the_generated_kubeconfig(
    tmp_path: Path, ca: tls.KeyPair, https_server: str
) -> None:
    # Go's TLS stack is stricter than OpenSSL's about SANs and key usages.
    path = tmp_path / "kubeconfig"
    kc.write_kubeconfig(path, kc.render_kubeconfig(https_server, ca.cert_pem, "tok"))
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(path), "version", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["serverVersion"]["gitVersion"] == "v1.33.0"


def test_write_kubeconfig_is_atomic_and_private(tmp_path: Path, ca: tls.KeyPair) -> None:
    path = tmp_path / "sub" / "kubeconfig"
    path.parent.mkdir()
    path.write_text("old: true\n")
    os.chmod(path, 0o644)
    config = kc.render_kubeconfig("https://127.0.0.1:1", ca.cert_pem, "t")
    assert kc.write_kubeconfig(path, config) == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == config
    assert sorted(p.name for p in path.parent.iterdir()) == ["kubeconfig"]


def test_failed_write_keeps_the_old_file_and_no_temp(
    tmp_path: Path, ca: tls.KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("old: true\n")

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(kc.os, "replace", refuse)
    with pytest.raises(OSError, match="disk on fire"):
        kc.write_kubeconfig(path, kc.render_kubeconfig("https://127.0.0.1:1", ca.cert_pem, "t"))
    assert path.read_text() == "old: true\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig"]
