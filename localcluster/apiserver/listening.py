"""The API server's HTTPS port: TLS for TLS clients, and Go's answer for plain HTTP ones.

kube-apiserver is Go's ``net/http``: a client speaking plain HTTP to its TLS port gets ``400 Bad
Request`` and "Client sent an HTTP request to an HTTPS server." (:mod:`nrop.api.plainhttp`),
which upstream's network-policy specs rely on (``curl http://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``
succeeds when the API server is reachable). aiohttp's ``TCPSite`` would hand every connection to
TLS, which drops such a client, so :class:`HTTPSSite` accepts connections itself: it peeks at the
first bytes of each (without consuming them), answers Go's way when they start an HTTP request,
and otherwise starts TLS on the same socket (``loop.connect_accepted_socket``) for aiohttp's
server, as ``TCPSite`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from typing import Any

from aiohttp import web

from nrop.api.plainhttp import ANSWER, RECORD_HEADER, First, classify

__all__ = ["HTTPSSite"]

log = logging.getLogger(__name__)

#: How long a TLS handshake may take (asyncio's default).
HANDSHAKE_TIMEOUT = 60.0
#: How soon to look again when the first bytes arrive in pieces too small to tell.
_PEEK_AGAIN = 0.01


class _Listener(asyncio.AbstractServer):
    """The listening socket and its accept loop, as the ``asyncio.Server`` aiohttp's runner expects."""

    def __init__(self, sock: socket.socket, serve: Any) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._connections: set[asyncio.Task[None]] = set()
        self._serve = serve
        self._accepting = self._loop.create_task(self._accept(), name="apiserver-accept")

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return () if self._sock.fileno() < 0 else (self._sock,)

    async def _accept(self) -> None:
        while True:
            try:
                conn, _ = await self._loop.sock_accept(self._sock)
            except OSError as exc:
                if self._sock.fileno() < 0:
                    return
                log.warning("accepting a connection failed: %s", exc)
                continue
            task = self._loop.create_task(self._serve(conn))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    def close(self) -> None:
        self._accepting.cancel()
        for task in list(self._connections):
            task.cancel()
        self._sock.close()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return not self._accepting.done()

    async def start_serving(self) -> None:
        pass

    async def serve_forever(self) -> None:
        await asyncio.shield(self._accepting)

    async def wait_closed(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._accepting


async def _first_bytes(conn: socket.socket) -> bytes:
    """The first bytes the client sent (left unread), enough to :func:`classify`; empty at EOF."""
    loop = asyncio.get_running_loop()
    while True:
        readable: asyncio.Future[None] = loop.create_future()

        def ready(future: asyncio.Future[None] = readable) -> None:
            if not future.done():
                future.set_result(None)

        loop.add_reader(conn.fileno(), ready)
        try:
            await readable
        finally:
            loop.remove_reader(conn.fileno())
        first = conn.recv(RECORD_HEADER, socket.MSG_PEEK)
        if not first or classify(first) is not First.MORE:
            return first
        await asyncio.sleep(_PEEK_AGAIN)


async def _answer_plain_http(conn: socket.socket) -> None:
    """Go's 400, then the end of the connection. What the client sent is read first, so that
    the close is a FIN after the answer and not a reset that could overtake it."""
    await asyncio.get_running_loop().sock_sendall(conn, ANSWER)
    with contextlib.suppress(OSError):  # BlockingIOError once nothing more is waiting
        while conn.recv(64 * 1024, socket.MSG_DONTWAIT):
            pass
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)


class HTTPSSite(web.BaseSite):
    """``TCPSite`` with TLS, answering plain HTTP as Go's ``net/http`` does."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, ssl_context: ssl.SSLContext) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self._context = ssl_context

    @property
    def name(self) -> str:
        return f"https://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        sock = socket.create_server((self._host, self._port), backlog=self._backlog)
        sock.setblocking(False)
        self._port = sock.getsockname()[1]
        self._server = _Listener(sock, self._serve)

    async def _serve(self, conn: socket.socket) -> None:
        conn.setblocking(False)
        try:
            first = await _first_bytes(conn)
            if not first or classify(first) is First.PLAIN_HTTP:
                if first:
                    await _answer_plain_http(conn)
                conn.close()
                return
            server = self._runner.server
            assert server is not None
            await asyncio.get_running_loop().connect_accepted_socket(
                server, conn, ssl=self._context, ssl_handshake_timeout=HANDSHAKE_TIMEOUT
            )
        except (OSError, TimeoutError) as exc:
            log.debug("connection dropped before TLS: %s", exc)
            conn.close()
        except asyncio.CancelledError:
            conn.close()
            raise
