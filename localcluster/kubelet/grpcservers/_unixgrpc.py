"""gRPC over unix sockets, the way the kubelet serves and dials its local APIs.

Owns what the two servers of this package share: the socket file's life (parent
directory, stale file, permissions, removal), a thread-pool ``grpc.server`` with start
and stop, and rendering a ``grpc.RpcError`` as the Go client prints it
(``rpc error: code = Unknown desc = …``), so that messages built on top of it read like
the kubelet's.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path

import grpc

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
    """The text of a grpc-go client error: ``rpc error: code = X desc = Y``."""
    code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = err.details() if isinstance(err, grpc.Call) else str(err)
    return f"rpc error: code = {go_code_name(code)} desc = {details}"


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
    """A ``grpc.server`` in its own thread pool, listening on one unix socket.

    Subclasses add their servicers in :meth:`_add_servicers`.  ``start`` binds (after
    :func:`prepare_socket`) and restricts the socket to its owner; ``stop`` cancels
    in-flight RPCs after ``grace`` seconds, joins the pool and removes the socket file.
    """

    #: Streams (ListAndWatch) hold a worker each for their whole life.
    max_workers = 8
    socket_mode = 0o600

    def __init__(
        self,
        socket_path: Path,
        *,
        interceptors: Sequence[grpc.ServerInterceptor] = (),
        thread_name: str = "grpc",
    ) -> None:
        self.socket_path = Path(socket_path)
        self.address = unix_address(self.socket_path)
        self._interceptors = tuple(interceptors)
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        self._executor: futures.ThreadPoolExecutor | None = None

    def _add_servicers(self, server: grpc.Server) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            prepare_socket(self.socket_path)
            executor = futures.ThreadPoolExecutor(
                max_workers=self.max_workers, thread_name_prefix=self._thread_name
            )
            server = grpc.server(executor, interceptors=self._interceptors)
            self._add_servicers(server)
            try:
                server.add_insecure_port(self.address)
                server.start()
            except BaseException:
                server.stop(None)
                executor.shutdown(wait=True)
                raise
            os.chmod(self.socket_path, self.socket_mode)
            self._server, self._executor = server, executor
        log.debug("serving %s on %s", type(self).__name__, self.socket_path)

    def _before_stop(self) -> None:
        """Hook: wake long-lived streams so that ``stop`` does not wait out the grace."""

    def stop(self, grace: float | None = 1.0) -> None:
        with self._lock:
            server, executor = self._server, self._executor
            self._server = self._executor = None
        if server is None or executor is None:
            return
        self._before_stop()
        server.stop(grace).wait()
        executor.shutdown(wait=True)
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
    """A unary handler that fails every call (used by interceptors to reject)."""

    def reject(_request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(code, details)
        raise AssertionError("unreachable")  # abort raises

    return grpc.unary_unary_rpc_method_handler(reject)
