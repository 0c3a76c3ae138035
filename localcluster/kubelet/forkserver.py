"""The fork server: one process per cluster that imports the containers' common modules once and
forks every process container from there, and the cluster's client of it (:class:`ForkServer`).

Every process container of the stack (the operator, the exporters, the scheduler, the numacell
plugins) is a console script of this Python environment. Started fresh, each spent most of its
start starting an interpreter and importing the same modules (asyncio, grpc, protobuf, aiohttp,
prometheus_client, yaml). The fork server imports :data:`PRELOAD` once and forks a child per
container. The child does what :mod:`.launching` does for a process started fresh (a session of
its own, the parent-death signal, the container's mount namespace), and then:

* a console script of this environment (its ``#!`` line names this environment's interpreter:
  :func:`python_script`) runs in the child as the interpreter would run it
  (:func:`_run_script`): the container's environment in ``os.environ``, its ``PYTHONPATH`` ahead
  of the standard path, its ``sitecustomize`` imported anew (the pod's in-cluster paths, a
  seeded defect's hook: both see the product not yet imported, since nothing under ``nrop.`` is
  imported here), the script's directory first on ``sys.path``, fresh standard streams, then the
  interpreter's end: non-daemon threads joined, ``atexit`` handlers run, the status of
  ``SystemExit`` (or 1 after the traceback). It looks as an ``exec`` of the script would: its
  name (``comm``) and, where the kernel lets a process move them (``PR_SET_MM_MAP``), the
  command line and environment ``/proc/<pid>/cmdline`` and ``environ`` show;
* anything else is ``exec``\\ ed, as the launcher does.

What a fresh process would read from its environment at start-up is read from the server's
instead: interpreter options (the server runs with the ``PYTHONUNBUFFERED=1`` and ``LANG`` every
container gets, :data:`SERVER_ENV`) and whatever a preloaded module reads when it is imported.

The server runs by path, ``python forkserver.py <cluster pid> <socket fd>``, importing the
standard library, :data:`PRELOAD` and :mod:`.launching` (by path too). It talks with the cluster
over a ``SOCK_SEQPACKET`` socket: ``{"ready": true}`` once it has imported them; then a request
is one JSON message (``argv``, ``env``, ``cwd``, the launcher's ``namespace`` plan) carrying the
child's stdin, stdout and stderr as file descriptors, answered by ``{"pid": ...}`` or
``{"errno": ..., "error": ...}``; the exit of each child follows later as
``{"exited": pid, "returncode": ...}`` (negative: the signal, as :mod:`subprocess` reports it).
The server is the child's parent: it dies with the cluster (``PR_SET_PDEATHSIG``) and its
children with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["PRELOAD", "SERVER_ENV", "ForkServer", "ForkedProcess", "python_script"]

#: What the server imports before it forks: the modules the containers' programs import from
#: outside the product, where more than one program of a stack imports them or they are large
#: (``python -X importtime`` of each entry point; bench/README.md). Nothing here may import
#: ``nrop``: a seeded defect is applied in the child before the product is imported.
PRELOAD = (
    "argparse",
    "asyncio",
    "base64",
    "concurrent.futures.thread",
    "dataclasses",
    "fractions",
    "http.client",
    "importlib.metadata",
    "json",
    "logging",
    "random",
    "ssl",
    "tempfile",
    "typing",
    "wsgiref.simple_server",
    "aiohttp",
    "aiohttp.web",
    "google.protobuf.descriptor",
    "google.protobuf.descriptor_pool",
    "google.protobuf.internal.builder",
    "google.protobuf.runtime_version",
    "google.protobuf.symbol_database",
    "grpc",
    "grpc.aio",
    "orjson",
    "prometheus_client",
    "xxhash",
    "yaml",
)
#: The server's environment: the interpreter options every container's environment sets.
SERVER_ENV = {"PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8", "PATH": os.defpath}
#: Largest request (the environment of a container with many services' variables).
MAX_MESSAGE = 1 << 20
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_MM = 35
_PR_SET_MM_MAP = 14


def python_script(path: str, interpreter: str) -> str | None:
    """The interpreter of ``path`` when ``interpreter``'s environment runs it: its ``#!`` line
    names an interpreter in the same directory as ``interpreter`` (a ``python`` there), with no
    option; else ``None``."""
    try:
        with open(path, "rb") as script:
            first = script.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].split()
    if len(words) != 1:
        return None
    named = os.fsdecode(words[0])
    same = os.path.dirname(named) == os.path.dirname(interpreter)
    return named if same and os.path.basename(named).startswith("python") else None


# -- the cluster's side ----------------------------------------------------------------------------


@dataclass(eq=False)
class ForkedProcess:
    """A process the server forked: its output pipes and, once it has exited, its return code."""

    pid: int
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    exited: asyncio.Future[int]
    transports: list[asyncio.BaseTransport] = field(default_factory=list)

    @property
    def returncode(self) -> int | None:
        return self.exited.result() if self.exited.done() else None

    async def wait(self) -> int:
        """The return code, once the process has exited; its pipes are closed then."""
        returncode = await asyncio.shield(self.exited)
        for transport in self.transports:
            transport.close()
        return returncode


class ForkServer:
    """The cluster's end of one fork server, on the cluster's event loop.

    :meth:`start` launches it (its imports run while the cluster goes on); :meth:`spawn` waits
    for it to be ready. A server that cannot start or dies makes :meth:`spawn` raise
    :class:`OSError`, and the processes it forked are reported killed (they die with it).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._ready: asyncio.Future[None] | None = None
        self._pending: list[asyncio.Future[dict[str, object]]] = []
        self._children: dict[int, ForkedProcess] = {}
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        """The server's process, while it runs."""
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), str(os.getpid()), str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                env=dict(SERVER_ENV),
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a terminal's ^C is the cluster's to handle, not the server's
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._socket = ours
        self._ready = loop.create_future()
        loop.add_reader(ours.fileno(), self._receive)

    async def spawn(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, namespace: str
    ) -> ForkedProcess:
        """Fork ``argv`` (stdin ``/dev/null``, stdout and stderr piped here)."""
        if self._ready is None or self._socket is None:
            raise OSError(errno.ESRCH, "the fork server is not running")
        await asyncio.shield(self._ready)
        loop = asyncio.get_running_loop()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        message = json.dumps({"argv": list(argv), "env": dict(env), "cwd": cwd, "namespace": namespace})
        reply: asyncio.Future[dict[str, object]] = loop.create_future()
        try:
            async with self._lock:  # requests and their replies in the same order
                if self._socket is None:
                    raise ProcessLookupError(errno.ESRCH, "the fork server ended")
                try:
                    socket.send_fds(self._socket, [message.encode()], [null, out_w, err_w])
                except (BrokenPipeError, ConnectionResetError) as exc:
                    raise ProcessLookupError(errno.ESRCH, f"the fork server ended: {exc}") from None
                self._pending.append(reply)
        except OSError:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            for fd in (null, out_w, err_w):
                os.close(fd)
        try:
            answer = await reply
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        if "pid" not in answer:
            os.close(out_r)
            os.close(err_r)
            raise OSError(int(answer.get("errno") or errno.EIO), str(answer.get("error")))
        pid = int(answer["pid"])  # type: ignore[call-overload]
        process = ForkedProcess(
            pid,
            asyncio.StreamReader(limit=self._limit, loop=loop),
            asyncio.StreamReader(limit=self._limit, loop=loop),
            loop.create_future(),
        )
        self._children[pid] = process
        for fd, reader in ((out_r, process.stdout), (err_r, process.stderr)):
            transport, _ = await loop.connect_read_pipe(
                lambda reader=reader: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
            )
            process.transports.append(transport)
        return process

    def _receive(self) -> None:
        assert self._socket is not None
        while True:
            try:
                data = self._socket.recv(MAX_MESSAGE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._gone()
                return
            self._dispatch(json.loads(data))

    def _dispatch(self, message: dict[str, object]) -> None:
        if "ready" in message:
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(None)
            return
        if "exited" in message:
            child = self._children.pop(int(message["exited"]), None)  # type: ignore[call-overload]
            if child is not None and not child.exited.done():
                child.exited.set_result(int(message["returncode"]))  # type: ignore[call-overload]
            return
        if self._pending:
            reply = self._pending.pop(0)
            if not reply.done():
                reply.set_result(message)

    def _gone(self) -> None:
        """The server ended: nothing more can be forked, and its children died with it."""
        if self._socket is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._socket.fileno())
            self._socket.close()
            self._socket = None
        gone = OSError(errno.ESRCH, "the fork server ended")
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(gone)
            self._ready.exception()  # retrieved: spawn() raises it to each caller
        for reply in self._pending:
            if not reply.done():
                reply.set_exception(gone)
        self._pending.clear()
        for child in self._children.values():
            if not child.exited.done():
                child.exited.set_result(-signal.SIGKILL)
        self._children.clear()

    async def close(self) -> None:
        """End the server (its remaining children with it) and reap it."""
        process = self._process
        if process is None:
            return
        self._process = None
        if self._socket is not None:
            self._gone()
        await asyncio.to_thread(_reap, process)


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- the server ------------------------------------------------------------------------------------


def _send(sock: socket.socket, message: Mapping[str, object]) -> None:
    sock.send(json.dumps(message).encode())


def _serve(cluster_pid: int, sock: socket.socket, launching: object) -> None:
    try:
        _loop(cluster_pid, sock, launching)
    except (BrokenPipeError, ConnectionResetError):  # the cluster closed its end while we wrote
        pass
    os._exit(0)


def _loop(cluster_pid: int, sock: socket.socket, launching: object) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != cluster_pid:
        os._exit(0)
    base_path = list(sys.path)
    for name in PRELOAD:
        __import__(name)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _send(sock, {"ready": True})
    import select

    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 512)
            _report_exits(sock)
        if sock in readable:
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
            except InterruptedError:
                continue
            if not data:  # the cluster closed its end: its kubelets have stopped
                return
            request = json.loads(data)
            cwd = str(request["cwd"])
            if not os.path.isdir(cwd):
                for fd in fds:
                    os.close(fd)
                _send(sock, {"errno": errno.ENOENT, "error": f"no such directory: {cwd}"})
                continue
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                _child(request, fds, server, (sock.fileno(), wake_r, wake_w), base_path, libc, launching)
            for fd in fds:
                os.close(fd)
            _send(sock, {"pid": pid})
            _report_exits(sock)


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})


def _child(
    request: Mapping[str, object],
    fds: Sequence[int],
    server: int,
    server_fds: Sequence[int],
    base_path: list[str],
    libc: ctypes.CDLL,
    launching: object,
) -> None:
    """The container's process: never returns into the server's loop."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server:
            os._exit(137)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in (*fds, *server_fds):
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)
        env = {str(k): str(v) for k, v in dict(request["env"]).items()}  # type: ignore[call-overload]
        os.environ.clear()
        os.environ.update(env)
        os.chdir(str(request["cwd"]))
        namespace = str(request["namespace"])
        if namespace:
            try:
                launching._enter(json.loads(namespace))  # type: ignore[attr-defined]
            except OSError as exc:
                where = f": {exc.filename}" if exc.filename else ""
                os.write(2, f"failed to create the container's mounts: {exc.strerror}{where}\n".encode())
                os._exit(launching.SETUP_FAILED)  # type: ignore[attr-defined]
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        named = python_script(argv[0], sys.executable)
        if named is not None:
            _look_executed(libc, [named, *argv], env)
            sys.executable = named
            _run_script(argv, env, base_path)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as subprocess restores them before exec
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execv(argv[0], argv)
        except OSError as exc:
            os.write(2, f"exec {argv[0]}: {exc}\n".encode())
            os._exit(127)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(2, f"fork server: starting the container failed: {exc!r}\n".encode())
        os._exit(127)


class _MmMap(ctypes.Structure):
    """``struct prctl_mm_map`` (``linux/prctl.h``)."""

    _fields_ = [
        *(
            (name, ctypes.c_uint64)
            for name in (
                "start_code", "end_code", "start_data", "end_data", "start_brk", "brk", "start_stack",
                "arg_start", "arg_end", "env_start", "env_end", "auxv",
            )
        ),
        ("auxv_size", ctypes.c_uint32),
        ("exe_fd", ctypes.c_uint32),
    ]  # fmt: skip


#: What ``/proc/<pid>/cmdline`` and ``environ`` of a forked script show (kept for its lifetime).
_SHOWN: list[ctypes.Array[ctypes.c_char]] = []


def _look_executed(libc: ctypes.CDLL, argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Make the process look as an ``exec`` of the script would: its name (``comm``: ``ps -e``,
    ``top``) and, where the kernel lets a process move them (``PR_SET_MM_MAP``), its command
    line and environment in ``/proc/<pid>/cmdline`` and ``environ``, which tools and people
    read to find a container's process."""
    libc.prctl(_PR_SET_NAME, os.fsencode(os.path.basename(argv[1]))[:15])
    args = b"".join(os.fsencode(a) + b"\0" for a in argv)
    environ = b"".join(os.fsencode(f"{k}={v}") + b"\0" for k, v in env.items()) or b"\0"
    try:
        stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
        auxv = open("/proc/self/auxv", "rb").read()  # noqa: SIM115
    except OSError:
        return
    shown = ctypes.create_string_buffer(args + environ, len(args) + len(environ))
    saved = ctypes.create_string_buffer(auxv, len(auxv))
    base = ctypes.addressof(shown)
    libc.sbrk.restype = ctypes.c_void_p
    field = [0, 0, 0, 0, *map(int, stat[1:])]  # field[n] is proc(5)'s field n (pid, comm, state: unused)
    mm = _MmMap(
        field[26], field[27], field[45], field[46], field[47], libc.sbrk(0) or field[47], field[28],
        base, base + len(args), base + len(args), base + len(args) + len(environ),
        ctypes.addressof(saved), len(auxv), 0xFFFFFFFF,
    )  # fmt: skip
    if libc.prctl(_PR_SET_MM, _PR_SET_MM_MAP, ctypes.byref(mm), ctypes.sizeof(mm), 0) == 0:
        _SHOWN.extend((shown, saved))


def _run_script(argv: list[str], env: Mapping[str, str], base_path: list[str]) -> None:
    """Run the script ``argv[0]`` as ``python argv[0] argv[1:]`` would, then exit the process."""
    import atexit
    import runpy
    import traceback

    sys.argv = list(argv)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    _fresh_streams(unbuffered=bool(env.get("PYTHONUNBUFFERED")))
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [*extra, *base_path]
    sys.modules.pop("sitecustomize", None)
    import importlib

    importlib.invalidate_caches()
    try:
        import sitecustomize  # noqa: F401  (the container's: a defect's hook, the pod's paths)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
    except Exception as exc:  # as site.execsitecustomize reports it
        sys.stderr.write(
            f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}\n"
        )
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    code = 0
    interrupted = False
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        interrupted = True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_status(code: object) -> int:
    """The process status of ``SystemExit(code)``, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _fresh_streams(*, unbuffered: bool) -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` on descriptors 0-2, as a new interpreter
    makes them for pipes (``-u``/``PYTHONUNBUFFERED``: written through; else stderr line-buffered)."""
    import io

    def writer(fd: int, errors: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "wb", closefd=False)
        binary: io.RawIOBase | io.BufferedWriter = raw if unbuffered else io.BufferedWriter(raw)
        return io.TextIOWrapper(
            binary,  # type: ignore[arg-type]
            encoding="utf-8",
            errors=errors,
            line_buffering=not unbuffered and fd == 2,
            write_through=unbuffered,
        )

    reader = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8")
    sys.stdin = sys.__stdin__ = reader  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = writer(1, "strict")  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = writer(2, "backslashreplace")  # type: ignore[misc]


if __name__ == "__main__":
    _here = sys.path.pop(0)  # this directory: its modules must not shadow the preloaded ones
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_nrop_launching", os.path.join(_here, "launching.py"))
    assert _spec is not None and _spec.loader is not None
    _launching = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_launching)
    _serve(int(sys.argv[1]), socket.socket(fileno=int(sys.argv[2])), _launching)
