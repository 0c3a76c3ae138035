"""The exporter's Prometheus metrics: upstream's ``rte_*`` names and labels, off by default.

This module owns the metric families (in their own registry, so that tests and several
exporters in one process do not collide) and serving them on ``/metrics`` when
``--metrics-mode`` is ``http`` or ``httptls``:

| name | type | labels |
|---|---|---|
| ``rte_podresource_api_call_failures_total`` | counter | node, function_name |
| ``rte_noderesourcetopology_writes_total`` | counter | node, operation, trigger |
| ``rte_operation_delay_milliseconds`` | gauge | node, operation_name, trigger |
| ``rte_wakeup_delay_milliseconds`` | gauge | node, trigger |
| ``rte_noderesourcetopology_patch_failures_total`` | counter | node, trigger |
| ``rte_noderesourcetopology_patch_size_ratio`` | histogram | node |

The ``node`` label is the node name. As upstream, ``node_resource_object_update`` delays
are always labelled ``reactive`` and patches do not count as writes.

In ``httptls`` mode the server's ``ssl.SSLContext`` follows ``--metrics-tls-min-version`` and
``--metrics-tls-cipher-suites`` (:func:`apply_tls_policy`, the policy from
:mod:`nrop.api.tlsprofiles`) as upstream's Go server does: the minimum version; for TLS 1.3
both ends pinned and the cipher list ignored; otherwise the listed TLS ≤ 1.2 suites by their
OpenSSL names, every TLS 1.3 suite staying enabled (neither Go nor Python's ``ssl`` can
configure those). A list with TLS 1.3 suites only leaves Go no TLS ≤ 1.2 suite: here the
minimum becomes TLS 1.3. Below TLS 1.2 OpenSSL's security level is lowered to 0, which OpenSSL 3
needs to negotiate TLS 1.0/1.1 at all, as Go does when asked to. Each connection's handshake
runs in its own thread, after a look at its first bytes: plain HTTP gets the answer of Go's
``net/http`` (``400 Bad Request``, :mod:`nrop.api.plainhttp`), as upstream's exporter gives it.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from pathlib import Path
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, generate_latest

from nrop.api import plainhttp, tlsprofiles
from nrop.api.tlsprofiles import MetricsTLSPolicy

__all__ = ["Metrics", "apply_tls_policy", "server_context"]

log = logging.getLogger(__name__)

_PATCH_RATIO_BUCKETS: Final = tuple(round(0.1 * i, 1) for i in range(1, 11))
_SSL_VERSIONS: Final = {
    tlsprofiles.TLS10: ssl.TLSVersion.TLSv1,
    tlsprofiles.TLS11: ssl.TLSVersion.TLSv1_1,
    tlsprofiles.TLS12: ssl.TLSVersion.TLSv1_2,
    tlsprofiles.TLS13: ssl.TLSVersion.TLSv1_3,
}


def apply_tls_policy(context: ssl.SSLContext, policy: MetricsTLSPolicy) -> None:
    """Set the versions and TLS ≤ 1.2 ciphers of ``policy`` on a server ``context``."""
    context.minimum_version = _SSL_VERSIONS[policy.min_version]
    if policy.max_version is not None:
        context.maximum_version = _SSL_VERSIONS[policy.max_version]
    if policy.ignored_ciphers:
        log.info(
            "TLS 1.3 uses fixed cipher suites; ignoring configured TLS cipher list (%d suites)",
            policy.ignored_ciphers,
        )
    seclevel = ":@SECLEVEL=0" if policy.min_version < tlsprofiles.TLS12 else ""
    if policy.cipher_suites:
        names = tlsprofiles.openssl_cipher_list(policy.cipher_suites)
        if names:
            context.set_ciphers(names + seclevel)
        else:
            context.minimum_version = ssl.TLSVersion.TLSv1_3
    elif seclevel:
        context.set_ciphers("DEFAULT" + seclevel)


def server_context(
    certfile: str, keyfile: str, want_client_auth: bool, policy: MetricsTLSPolicy | None
) -> ssl.SSLContext:
    """The metrics server's TLS context (as ``prometheus_client``'s, plus ``policy``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_default_certs(purpose=ssl.Purpose.CLIENT_AUTH)
    if want_client_auth:
        context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(certfile=certfile, keyfile=keyfile)
    if policy is not None:
        apply_tls_policy(context, policy)
    return context


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _start_server(
    address: str, port: int, registry: CollectorRegistry, context: ssl.SSLContext | None
) -> ThreadingWSGIServer:
    family, _, _, _, sockaddr = socket.getaddrinfo(
        address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]

    class Server(plainhttp.TLSPerConnection, ThreadingWSGIServer):
        # TLS per connection, in its own thread, so that plain HTTP gets Go's answer
        address_family = family
        tls_context = context

    httpd = make_server(str(sockaddr[0]), port, make_wsgi_app(registry), Server, handler_class=_QuietHandler)
    threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True).start()
    return httpd


class Metrics:
    def __init__(self, node: str) -> None:
        self.node = node
        self.registry = CollectorRegistry(auto_describe=True)
        self._podres_failures = Counter(
            "rte_podresource_api_call_failures",
            "Number of failed podresources API calls.",
            ["node", "function_name"],
            registry=self.registry,
        )
        self._writes = Counter(
            "rte_noderesourcetopology_writes",
            "Number of NodeResourceTopology object creations and updates.",
            ["node", "operation", "trigger"],
            registry=self.registry,
        )
        self._operation_delay = Gauge(
            "rte_operation_delay_milliseconds",
            "Duration of the last operation, in milliseconds.",
            ["node", "operation_name", "trigger"],
            registry=self.registry,
        )
        self._wakeup_delay = Gauge(
            "rte_wakeup_delay_milliseconds",
            "Time between consecutive events, in milliseconds.",
            ["node", "trigger"],
            registry=self.registry,
        )
        self._patch_failures = Counter(
            "rte_noderesourcetopology_patch_failures",
            "Number of failed NodeResourceTopology patches, by reason.",
            ["node", "trigger"],
            registry=self.registry,
        )
        self._patch_ratio = Histogram(
            "rte_noderesourcetopology_patch_size_ratio",
            "Size of a patch relative to the full object.",
            ["node"],
            buckets=_PATCH_RATIO_BUCKETS,
            registry=self.registry,
        )
        self._server: Any = None

    # -- recording
    def podresources_failure(self, function_name: str) -> None:
        self._podres_failures.labels(self.node, function_name).inc()

    def write(self, operation: str, trigger: str) -> None:
        self._writes.labels(self.node, operation, trigger).inc()

    def operation_delay(self, operation_name: str, trigger: str, milliseconds: float) -> None:
        self._operation_delay.labels(self.node, operation_name, trigger).set(milliseconds)

    def wakeup_delay(self, trigger: str, milliseconds: float) -> None:
        self._wakeup_delay.labels(self.node, trigger).set(milliseconds)

    def patch_failure(self, reason: str) -> None:
        self._patch_failures.labels(self.node, reason).inc()

    def patch_size_ratio(self, ratio: float) -> None:
        self._patch_ratio.labels(self.node).observe(ratio)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- serving
    def serve(
        self,
        address: str,
        port: int,
        *,
        tls: bool = False,
        certs_dir: str = "",
        cert_file: str = "",
        key_file: str = "",
        want_client_auth: bool = False,
        tls_policy: MetricsTLSPolicy | None = None,
    ) -> int:
        """Serve ``/metrics`` in a background thread; the port bound (raises ``OSError`` if it cannot bind).

        ``tls_policy``: ``--metrics-tls-min-version`` / ``--metrics-tls-cipher-suites`` (httptls).
        """
        context = None
        if tls:
            context = server_context(
                str(Path(certs_dir) / cert_file),
                str(Path(certs_dir) / key_file),
                want_client_auth,
                tls_policy,
            )
        self._server = _start_server(address, port, self.registry, context)
        bound = int(self._server.server_port)
        log.info("serving metrics on %s://%s:%d/metrics", "https" if tls else "http", address, bound)
        return bound

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
