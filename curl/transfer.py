"""The network part of the image's curl: resolve, connect, TLS, one ``GET``, the body to a sink.

As curl 7.76.1 does it for the subset :mod:`.arguments` accepts:

* the host is resolved and each address tried in turn within ``--connect-timeout`` (TCP and the
  TLS handshake together: curl's connection phase); a loopback host in an embedded cluster's
  pod connects to the pod (:mod:`.destinations`);
* ``https``: TLS with the machine's CA store and curl's name check, none of it with ``-k``; SNI
  for names, not for addresses;
* the request is curl's: ``GET <path> HTTP/1.1`` with ``Host``, ``User-Agent: curl/7.76.1`` and
  ``Accept: */*``; the answer is read as HTTP/1.x (``Content-Length``, chunked, or until the
  server closes, as an HTTP/1.0 answer without a length is);
* the body goes to the sink as it arrives, unless ``-f`` meets a status of 400 or more;
* ``--max-time`` bounds everything, from the first connection attempt.

Every failure is raised as curl's :class:`.failures.Failure`.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from nrop.curl import failures
from nrop.curl.arguments import Invocation, Target
from nrop.curl.destinations import connect_host

__all__ = ["USER_AGENT", "Sink", "fetch"]

USER_AGENT = "curl/7.76.1"
_CHUNK = 64 * 1024


class Sink(Protocol):
    """Where the body goes (stdout, or the ``-o`` file)."""

    def write(self, data: bytes, /) -> int: ...


class _Clock:
    """The deadlines of one transfer."""

    def __init__(self, invocation: Invocation, now: Callable[[], float]) -> None:
        self.now = now
        self.start = now()
        self.connect_by = self.start + invocation.connect_timeout
        self.done_by = None if invocation.max_time is None else self.start + invocation.max_time

    def elapsed(self) -> float:
        return self.now() - self.start

    def connect_left(self) -> float:
        limit = self.connect_by if self.done_by is None else min(self.connect_by, self.done_by)
        return limit - self.now()

    def transfer_left(self) -> float | None:
        """Seconds left for the transfer (``None``: no limit), as a socket timeout."""
        return None if self.done_by is None else max(self.done_by - self.now(), 0.001)


def _connect(target: Target, host: str, clock: _Clock) -> socket.socket:
    try:
        addresses = socket.getaddrinfo(host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise failures.not_resolved(target.host) from None
    last: OSError | None = None
    for family, kind, proto, _, address in addresses:
        left = clock.connect_left()
        if left <= 0:
            break
        sock = socket.socket(family, kind, proto)
        sock.settimeout(left)
        try:
            sock.connect(address)
        except TimeoutError:
            sock.close()
            raise failures.connect_timed_out(clock.elapsed()) from None
        except OSError as exc:
            sock.close()
            last = exc
            continue
        return sock
    if last is None:
        raise failures.connect_timed_out(clock.elapsed())
    raise failures.connect_failed(target.host, target.port, last)


def _tls_context(insecure: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.load_default_certs()
    return context


def _handshake(sock: socket.socket, invocation: Invocation, target: Target, clock: _Clock) -> socket.socket:
    tls = _tls_context(invocation.insecure).wrap_socket(
        sock, server_hostname=target.host, do_handshake_on_connect=False
    )
    try:
        tls.settimeout(max(clock.connect_left(), 0.001))
        tls.do_handshake()
    except TimeoutError:
        tls.close()
        raise failures.connect_timed_out(clock.elapsed(), handshake=True) from None
    except OSError as exc:
        tls.close()
        raise failures.tls_failed(exc, target.host, target.port) from None
    return tls


def _request(target: Target) -> bytes:
    return (
        f"GET {target.path} HTTP/1.1\r\n"
        f"Host: {target.host_header}\r\n"
        f"User-Agent: {USER_AGENT}\r\n"
        "Accept: */*\r\n"
        "\r\n"
    ).encode("latin-1")


def _read_body(sock: socket.socket, response: http.client.HTTPResponse, sink: Sink, clock: _Clock) -> None:
    received = 0
    while True:
        sock.settimeout(clock.transfer_left())
        try:
            chunk = response.read1(_CHUNK)
        except http.client.IncompleteRead as exc:
            raise failures.partial(exc.expected) from None
        except TimeoutError:
            raise failures.transfer_timed_out(clock.elapsed(), received) from None
        except OSError as exc:
            raise failures.receive_failed(exc) from None
        if not chunk:
            if response.length:  # the server closed before the Content-Length it announced
                raise failures.partial(response.length)
            return
        received += len(chunk)
        try:
            written = sink.write(chunk)
        except OSError:
            written = 0
        if written != len(chunk):
            raise failures.write_failed(written or 0, len(chunk))


def fetch(
    invocation: Invocation,
    target: Target,
    sink: Sink,
    environ: Mapping[str, str],
    now: Callable[[], float] = time.monotonic,
) -> None:
    """``GET`` ``target`` as curl does, the body into ``sink``; raises :class:`.failures.Failure`."""
    clock = _Clock(invocation, now)
    sock = _connect(target, connect_host(target.host, target.port, environ), clock)
    try:
        if target.scheme == "https":
            sock = _handshake(sock, invocation, target, clock)
        sock.settimeout(clock.transfer_left())
        try:
            sock.sendall(_request(target))
        except TimeoutError:
            raise failures.transfer_timed_out(clock.elapsed(), 0) from None
        except OSError as exc:
            raise failures.send_failed(exc) from None
        response = http.client.HTTPResponse(sock, method="GET")
        try:
            response.begin()
        except http.client.RemoteDisconnected:
            raise failures.empty_reply() from None
        except http.client.HTTPException:
            raise failures.not_http() from None
        except TimeoutError:
            raise failures.transfer_timed_out(clock.elapsed(), 0) from None
        except OSError as exc:
            raise failures.receive_failed(exc) from None
        if invocation.fail and response.status >= 400:
            raise failures.http_error(response.status, response.reason)
        _read_body(sock, response, sink, clock)
    finally:
        sock.close()
