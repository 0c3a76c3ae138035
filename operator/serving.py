"""The operator's HTTP endpoints: Prometheus ``/metrics`` (HTTPS, as upstream) and the ``/healthz`` / ``/readyz`` probes.

Each server binds in a background thread and keeps retrying while its address is taken,
so a busy port never stops (or crash-loops) the operator: it reconciles without the
endpoint meanwhile and logs why.
"""

from __future__ import annotations

import http.server
import logging
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import make_wsgi_app, start_http_server
from prometheus_client.exposition import ThreadingWSGIServer

from nrop.api import plainhttp
from nrop.operator.certificates import self_signed

__all__ = ["serve_health", "serve_metrics", "split_address"]

log = logging.getLogger(__name__)
RETRY_SECONDS = 5.0


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (host optional) -> (host, port)."""
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


def _retrying(what: str, address: str, bind: Callable[[str, int], None], stop: threading.Event) -> None:
    host, port = split_address(address)

    def loop() -> None:
        warned = False
        while not stop.is_set():
            try:
                bind(host, port)
            except OSError as exc:
                if not warned:
                    log.warning(
                        "cannot serve %s on %s (%s): retrying every %.0fs", what, address, exc, RETRY_SECONDS
                    )
                    warned = True
                stop.wait(RETRY_SECONDS)
                continue
            log.info("serving %s on %s", what, address)
            return

    threading.Thread(target=loop, name=f"bind-{what}", daemon=True).start()


def _https_metrics(host: str, port: int, context: ssl.SSLContext) -> None:
    """``/metrics`` of the default registry over TLS, one thread per connection (handshake included)."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class Server(plainhttp.TLSPerConnection, ThreadingWSGIServer):
        address_family = family
        tls_context = context

    httpd = make_server(host, port, make_wsgi_app(), Server, handler_class=_QuietWSGI)
    threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True).start()


def serve_metrics(address: str, stop: threading.Event, secure: bool = True) -> None:
    """Serve ``/metrics`` on ``address``; HTTPS with a self-signed certificate unless ``secure`` is False.

    Over HTTPS a client speaking plain HTTP gets the answer of Go's ``net/http``, as from
    upstream's operator (controller-runtime's metrics server).
    """
    if not secure:
        _retrying("metrics", address, lambda host, port: start_http_server(port, host), stop)
        return
    host, _ = split_address(address)
    cert, key = self_signed("numaresources-controller-manager", [host])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    directory = Path(tempfile.mkdtemp(prefix="nrop-metrics-"))
    try:
        (directory / "tls.crt").write_bytes(cert)
        (directory / "tls.key").write_bytes(key)
        (directory / "tls.key").chmod(0o600)
        context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
    finally:
        # the context holds the certificate now: the key leaves the disk
        shutil.rmtree(directory, ignore_errors=True)
    _retrying("metrics (https)", address, lambda host, port: _https_metrics(host, port, context), stop)


class _QuietWSGI(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ok = self.path in ("/healthz", "/readyz")
        body = b"ok\n" if ok else b"not found\n"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


def serve_health(address: str, stop: threading.Event) -> None:
    def bind(host: str, port: int) -> None:
        server = http.server.ThreadingHTTPServer((host, port), _Health)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="health", daemon=True).start()

    _retrying("health probes", address, bind, stop)
