"""The blocking Kubernetes client of the exporter and the operator: plain dicts over ``http.client``.

Owns requests made from threads: one keep-alive connection per thread, bearer tokens and
TLS from a :class:`~nrop.api.clientconfig.ClientConfig` read once (token files re-read as
client-go does), JSON bodies, per-request timeouts, and watches as iterators of
``(type, object)`` on a connection of their own that another thread may close. Failures
become :mod:`nrop.api.restapi`'s errors, which carry the Kubernetes ``Status``.

A connection the server closed while it was idle is replaced before it is used, and a
request that finds it closed anyway (the server's close raced the request) is sent once
more on a new connection, as Go's transport does for a connection it reused
(``errServerClosedIdle``); any other failure is the caller's to retry.

The official client costs its importers most of their start-up (about 0.75 CPU-s,
bench/README.md) for the dozen paths these processes use; the scheduler, which needs
asyncio and throughput, has :mod:`nrop.sched.kubeclient` on the same vocabulary.
"""

from __future__ import annotations

import http.client
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import orjson

from nrop.api.clientconfig import ClientConfig, TokenSource
from nrop.api.restapi import (
    JSON,
    ApiConnectionError,
    error_from_response,
    error_from_status,
    request_headers,
)

__all__ = ["DEFAULT_TIMEOUT", "RestClient", "Watch"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 30.0
#: A watch's socket waits this much longer than the server's ``timeoutSeconds`` before giving up.
WATCH_READ_MARGIN: Final = 30.0
#: The failures that mean a reused connection was closed by the server before it answered.
_CLOSED_IDLE: Final = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _closed_by_peer(sock: socket.socket | None) -> bool:
    """An idle keep-alive connection with something to read has been closed (or broken) by the server."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class RestClient:
    """Requests to one API server from any thread; see the module docstring."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        user_agent: str,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.user_agent = user_agent
        self.timeout = timeout
        self._tokens = TokenSource(config, clock=clock)
        # Built here, not at the first request, so that a bad certificate fails the construction.
        self._ssl = config.ssl_context()
        url = urlsplit(config.server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"{config.source}: server {config.server!r}: not an http(s) URL")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pool: list[http.client.HTTPConnection] = []

    def close(self) -> None:
        """Close every thread's kept-alive connection (open watches are closed by their owners)."""
        with self._lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    # -- plumbing

    def _connection(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._ssl is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers(self, content_type: str | None) -> dict[str, str]:
        return request_headers(self.user_agent, self._tokens.token(), content_type)

    def _target(self, path: str, params: Mapping[str, str] | None) -> str:
        return self._prefix + path + (f"?{urlencode(params)}" if params else "")

    def _pooled(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it carried a request before."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and _closed_by_peer(conn.sock):
            conn.close()
        if conn is None:
            conn = self._connection(timeout)
            self._local.conn = conn
            with self._lock:
                self._pool.append(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
            return conn, True
        return conn, False

    def _drop(self) -> None:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            with self._lock:
                self._pool = [c for c in self._pool if c is not conn]
        self._local.conn = None

    # -- requests

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
    ) -> Any:
        """One request; returns the decoded JSON body (``None`` if empty), raises ``ApiError``."""
        seconds = self.timeout if timeout is None else timeout
        data = orjson.dumps(body) if body is not None else None
        target = self._target(path, params)
        what = f"{method} {path}"
        for attempt in (1, 2):
            conn, reused = self._pooled(seconds)
            try:
                conn.request(method, target, body=data, headers=self._headers(content_type if data else None))
                response = conn.getresponse()
                raw = response.read()
            except _CLOSED_IDLE as exc:
                self._drop()
                if reused and attempt == 1:
                    log.debug("%s: the server closed the idle connection (%s); sending again", what, exc)
                    continue
                raise ApiConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
            except TimeoutError as exc:
                self._drop()
                raise ApiConnectionError(f"{what}: timed out after {seconds:g}s") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise ApiConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
            if response.status >= 400:
                raise error_from_response(response.status, raw, what)
            try:
                return orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError as exc:
                raise ApiConnectionError(f"{what}: the response is not JSON: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def watch(
        self,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        timeout_seconds: int | None = None,
    ) -> Watch:
        """Open a watch of ``path`` (``watch=true`` and ``timeoutSeconds`` are added to ``params``)."""
        query = {**(params or {}), "watch": "true"}
        if timeout_seconds is not None:
            query["timeoutSeconds"] = str(timeout_seconds)
        read_timeout = None if timeout_seconds is None else timeout_seconds + WATCH_READ_MARGIN
        conn = self._connection(self.timeout)
        what = f"watch {path}"
        try:
            conn.request("GET", self._target(path, query), headers=self._headers(None))
            if conn.sock is not None:
                conn.sock.settimeout(read_timeout)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ApiConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
        if response.status >= 400:
            raw = response.read()
            conn.close()
            raise error_from_response(response.status, raw, what)
        return Watch(conn, response, what)


class Watch:
    """The events of one watch until the server ends it; :meth:`close` from any thread ends it early.

    Iterating yields ``(type, object)``, ``BOOKMARK`` events included; an ``ERROR`` event is
    raised as the matching ``ApiError`` (a 410 as ``GoneError``), a broken stream as
    ``ApiConnectionError``. After :meth:`close`, iteration stops without an error.
    """

    def __init__(
        self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse, what: str
    ) -> None:
        self._conn = conn
        self._sock = conn.sock
        self._response = response
        self._what = what
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        try:
            while not self._closed.is_set():
                try:
                    line = self._response.readline()
                except (OSError, http.client.HTTPException, ValueError) as exc:
                    if self._closed.is_set():
                        return
                    raise ApiConnectionError(
                        f"{self._what}: stream broken: {exc or type(exc).__name__}"
                    ) from exc
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ApiConnectionError(f"{self._what}: undecodable event: {exc}") from exc
                kind, obj = event.get("type", ""), event.get("object") or {}
                if kind == "ERROR":
                    raise error_from_status(obj)
                yield kind, obj
        finally:
            self._conn.close()

    def close(self) -> None:
        """End the stream; a thread blocked reading it wakes up and stops."""
        self._closed.set()
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
