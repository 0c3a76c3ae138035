"""The operator's metrics endpoint: HTTPS with a throw-away certificate whose key does not stay on disk."""

from __future__ import annotations

import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path

import pytest

from nrop.operator.serving import serve_metrics


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_metrics_are_served_over_tls_and_the_key_leaves_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = _free_port()
    stop = threading.Event()
    serve_metrics(f"127.0.0.1:{port}", stop)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + 10
    while True:
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=1) as raw,
                context.wrap_socket(raw) as tls,
            ):
                tls.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                assert tls.recv(12).startswith(b"HTTP/1.")
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    stop.set()
    # the serving thread removes the directory right after the server took the certificate
    deadline = time.monotonic() + 5
    while list(tmp_path.glob("nrop-metrics-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob("nrop-metrics-*")) == []


def test_plain_http_to_the_metrics_port_gets_gos_answer() -> None:
    """Upstream's operator serves metrics with Go's net/http: plain HTTP gets its 400 (what the
    network-policy specs' ``curl http://<operator>:8080`` prints, exit code 0)."""
    port = _free_port()
    stop = threading.Event()
    serve_metrics(f"127.0.0.1:{port}", stop)
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    stop.set()
    assert (
        b"".join(chunks)
        == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    )
