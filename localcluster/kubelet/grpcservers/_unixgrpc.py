"""gRPC over unix sockets, the way the kubelet serves and dials its local APIs.

Owns what the two servers of this package share: the socket file's life (parent
directory, stale file, permissions, removal), a ``grpc.aio`` server on the process's gRPC
loop (:mod:`nrop.api.grpc.aioloop`) with blocking start and stop, and rendering a gRPC error
as the Go client prints it (``rpc error: code = Unknown desc = …``), so that messages built
on top of it read like the kubelet's.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import grpc

from nrop.api.grpc import aioloop

__all__ = [
    "MAX_UNIX_SOCKET_PATH",
    "Clock",
    "UnixGrpcServer",
    "abort_handler",
    "go_code_name",
    "go_rpc_error",
    "prepare_socket",
    "unix_address",
]

log = logging.getLogger(__name__)

#: ``time.monotonic``-like clock, injected by tests of the rate limiter.
Clock = Callable[[], float]

#: ``sizeof(sockaddr_un.sun_path)`` is 108 on Linux, including the terminating NUL.
MAX_UNIX_SOCKET_PATH = 107

# Go's codes.Code.String() differs from Python's enum names only by CamelCase and one spelling.
_GO_CODE_NAMES = {grpc.StatusCode.OK: "OK", grpc.StatusCode.CANCELLED: "Canceled"}


def go_code_name(code: grpc.StatusCode) -> str:
    """``codes.Code.String()``: ``DEADLINE_EXCEEDED`` -> ``DeadlineExceeded``."""
    if code in _GO_CODE_NAMES:
        return _GO_CODE_NAMES[code]
    return "".join(part.capitalize() for part in code.name.split("_"))


def go_rpc_error(err: grpc.RpcError) -> str:
    """The text of a grpc-go client error: ``rpc error: code = X desc = Y``.

    Both APIs' errors carry ``code()`` and ``details()`` (a synchronous call's error is a
    ``grpc.Call``, ``grpc.aio.AioRpcError`` is not); any other ``RpcError`` reads as ``Unknown``.
    """
    if isinstance(err, grpc.Call | grpc.aio.AioRpcError):
        return f"rpc error: code = {go_code_name(err.code())} desc = {err.details()}"
    return f"rpc error: code = {go_code_name(grpc.StatusCode.UNKNOWN)} desc = {err}"


def unix_address(path: Path) -> str:
    """The gRPC target/bind address of an absolute socket path, checked for length."""
    path = Path(path)
    if not path.is_absolute():
        raise ValueError(f"bad socketPath, must be an absolute path: {path}")
    if len(os.fsencode(str(path))) > MAX_UNIX_SOCKET_PATH:
        raise ValueError(
            f"unix socket path {path} is longer than {MAX_UNIX_SOCKET_PATH} bytes; use a shorter root directory"
        )
    return f"unix://{path}"


def prepare_socket(path: Path, *, dir_mode: int = 0o750) -> None:
    """Create the socket's directory and remove a stale socket left by an earlier run.

    Anything at the path that is not a socket is left alone and reported: removing a
    regular file or directory there would hide a configuration mistake.
    """
    path.parent.mkdir(mode=dir_mode, parents=True, exist_ok=True)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a unix socket")
    log.info("removing stale socket %s", path)
    path.unlink()


class UnixGrpcServer:
    """A ``grpc.aio`` server on the process's gRPC loop, listening on one unix socket.

    Subclasses add their (``async``) servicers in :meth:`_add_servicers`. ``start`` binds
    (after :func:`prepare_socket`) and restricts the socket to its owner; ``stop`` cancels
    in-flight RPCs after ``grace`` seconds and removes the socket file. Both block, and must not
    be called on the gRPC loop itself.
    """

    socket_mode = 0o600

    def __init__(self, socket_path: Path, *, interceptors: Sequence[grpc.aio.ServerInterceptor] = ()) -> None:
        self.socket_path = Path(socket_path)
        self.address = unix_address(self.socket_path)
        self._interceptors = tuple(interceptors)
        self._lock = threading.Lock()
        self._server: grpc.aio.Server | None = None

    def _add_servicers(self, server: grpc.aio.Server) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._server is not None

    async def _serve(self) -> grpc.aio.Server:
        server = grpc.aio.server(interceptors=self._interceptors)
        self._add_servicers(server)
        return await aioloop.start_server(server, self.address)

    def start(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            prepare_socket(self.socket_path)
            server = aioloop.run(self._serve())
            os.chmod(self.socket_path, self.socket_mode)
            self._server = server
        log.debug("serving %s on %s", type(self).__name__, self.socket_path)

    def stop(self, grace: float | None = 1.0) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is None:
            return
        aioloop.run(server.stop(grace))
        try:
            if stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                self.socket_path.unlink()
        except FileNotFoundError:
            pass
        log.debug("stopped %s on %s", type(self).__name__, self.socket_path)

    def __enter__(self) -> UnixGrpcServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def abort_handler(code: grpc.StatusCode, details: str) -> grpc.RpcMethodHandler:
    """A unary ``grpc.aio`` handler that fails every call (used by interceptors to reject)."""

    async def reject(_request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(code, details)
        raise AssertionError("unreachable")  # abort raises

    return grpc.unary_unary_rpc_method_handler(reject)
