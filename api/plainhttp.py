"""Go's answer to plain HTTP on a TLS port, which every HTTPS server of the stack gives.

Upstream's servers are Go's ``net/http`` (kube-apiserver, the operator's and the exporters'
metrics endpoints). When a client speaks plain HTTP to one of them, the TLS handshake fails
on the first record header, and ``net/http`` looks at those 5 bytes: if they start an HTTP
request (``tlsRecordHeaderLooksLikeHTTP``: ``GET /``, ``HEAD ``, ``POST ``, ``PUT /``,
``OPTIO``) it writes :data:`ANSWER` on the raw connection and closes it. So ``curl
http://<an https endpoint>`` succeeds (exit 0, the body printed), which upstream's
network-policy specs count on to tell a reachable endpoint. Python's TLS servers drop such a
connection instead (curl: "Empty reply from server"); the embedded API server, the operator
and the exporter peek at the first bytes of each connection and answer as Go does.

:func:`classify` decides from the bytes seen so far (pure); :func:`accept_tls` applies it to a
blocking connection a thread-per-connection server accepted, and :class:`TLSPerConnection` is
the ``socketserver`` mixin that does so for each connection (the operator's and the exporter's
metrics servers): they do I/O only on the sockets they are given.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import socket
import socketserver
import ssl
from typing import Any, Final

__all__ = [
    "ANSWER",
    "HANDSHAKE_TIMEOUT",
    "HTTP_STARTS",
    "RECORD_HEADER",
    "First",
    "TLSPerConnection",
    "accept_tls",
    "classify",
]

log = logging.getLogger(__name__)

#: The length of a TLS record header, what Go reads before deciding.
RECORD_HEADER: Final = 5
#: What Go takes for the start of an HTTP request (``net/http``'s ``tlsRecordHeaderLooksLikeHTTP``).
HTTP_STARTS: Final = frozenset({b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO"})
#: Seconds a client has to send its first bytes and finish the TLS handshake.
HANDSHAKE_TIMEOUT: Final = 10.0
#: What Go writes back before closing the connection.
ANSWER: Final = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"


class First(enum.Enum):
    """What the first bytes of a connection to a TLS port say."""

    #: Go-style plain HTTP: answer :data:`ANSWER` and close.
    PLAIN_HTTP = "plain-http"
    #: Anything else goes to the TLS handshake (which fails as Go's does if it is not TLS).
    TLS = "tls"
    #: Too few bytes yet to tell.
    MORE = "more"


def classify(first: bytes) -> First:
    """What the first bytes of a connection (up to :data:`RECORD_HEADER`) call for."""
    head = first[:RECORD_HEADER]
    if len(head) == RECORD_HEADER:
        return First.PLAIN_HTTP if head in HTTP_STARTS else First.TLS
    if head and any(start.startswith(head) for start in HTTP_STARTS):
        return First.MORE
    return First.TLS if head else First.MORE


def accept_tls(conn: socket.socket, context: ssl.SSLContext) -> ssl.SSLSocket | None:
    """The TLS side of an accepted blocking connection, or ``None`` once plain HTTP got Go's
    answer or the handshake failed; the caller closes ``conn``."""
    conn.settimeout(HANDSHAKE_TIMEOUT)
    try:
        first = conn.recv(RECORD_HEADER, socket.MSG_PEEK | socket.MSG_WAITALL)
        if classify(first) is First.PLAIN_HTTP:
            conn.sendall(ANSWER)
            conn.setblocking(False)
            with contextlib.suppress(OSError):  # read what was sent (until EAGAIN): the close is then a FIN
                while conn.recv(64 * 1024):
                    pass
            return None
        tls = context.wrap_socket(conn, server_side=True)
    except OSError as exc:
        log.debug("connection dropped before TLS: %s", exc)
        return None
    tls.settimeout(None)
    return tls


class TLSPerConnection(socketserver.BaseServer):
    """A threading ``socketserver`` mixin (list it before the server class) that serves each
    connection over TLS with ``tls_context``, the handshake in the connection's own thread after
    :func:`accept_tls`; without a context the connection is served as it is."""

    tls_context: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls_context is None:
            super().finish_request(request, client_address)
            return
        tls = accept_tls(request, self.tls_context)
        if tls is not None:
            try:
                super().finish_request(tls, client_address)
            finally:
                self.shutdown_request(tls)
