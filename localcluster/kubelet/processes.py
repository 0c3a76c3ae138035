"""Real processes of emulated containers: start, capture output, signal, reap, and never leak one.

Owns the operating-system side of the container runtime, on the cluster's event loop:

* every process starts in its own session (process group = its PID), with the environment
  and working directory given and nothing inherited from the cluster process;
* it is started through :mod:`.launching`, which sets ``PR_SET_PDEATHSIG`` to SIGKILL (so
  that even a cluster killed with SIGKILL takes its processes with it), gives it the mount
  namespace of its :class:`ProcessSpec` (its ``mounts``, when it has a ``rootfs``) and then
  ``exec``\\ s the program; a module ``atexit`` hook kills whatever a clean shutdown left
  behind. A container's main process is forked by the cluster's fork server instead, when the
  supervisor has one (:mod:`.forkserver`: the same steps, and a console script of this
  environment runs without a new interpreter); exec probes and ``pods/exec`` sessions are
  started through the launcher;
* stdout and stderr are read line by line and handed to a callback (the pod log);
* :meth:`Supervisor.terminate` sends SIGTERM to the process group and SIGKILL after the
  grace period; when the main process exits, the rest of its group is killed, as a
  container's PID namespace ends with its PID 1;
* the exit code is reported as containerd does: the status, or 128 + the signal number;
* :meth:`Supervisor.run` runs a command to completion with a timeout (exec probes).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nrop.localcluster.kubelet.forkserver import ForkServer
from nrop.localcluster.kubelet.launching import launch_argv
from nrop.localcluster.kubelet.volumes import Mount

__all__ = ["Handle", "ProcessSpec", "Supervisor", "exit_code"]

log = logging.getLogger(__name__)

#: Lines longer than this are cut into several (the CRI log format does the same at 16 KiB).
MAX_LINE = 16 * 1024
#: After the main process exits, how long its output may still take to drain.
DRAIN_TIMEOUT = 2.0

#: Process groups alive in this interpreter, killed at exit if a shutdown missed them.
_LIVE_GROUPS: set[int] = set()


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@atexit.register
def _kill_leftovers() -> None:
    for pgid in list(_LIVE_GROUPS):
        _kill_group(pgid, signal.SIGKILL)
    _LIVE_GROUPS.clear()


def exit_code(returncode: int) -> int:
    """A container's exit code: the process status, or 128 + the signal that killed it."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class ProcessSpec:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    #: The process gets a mount namespace of its own, with ``mounts`` made in order, when this
    #: is set: the directory where its root is rebuilt if a mount needs a new top-level
    #: directory. ``None``: the process shares the machine's mounts.
    rootfs: Path | None = None
    mounts: tuple[Mount, ...] = ()

    def namespace(self) -> str:
        """The launcher's mount-namespace argument (``""``: none)."""
        if self.rootfs is None:
            return ""
        return json.dumps({"rootfs": str(self.rootfs), "mounts": [list(m) for m in self.mounts]})


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Knows when the main process exits, even while other processes still hold its pipes.

    (``Process.wait()`` only returns once the pipes are closed too.)
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _spawn(
    argv: list[str], spec: ProcessSpec, stderr: int
) -> tuple[asyncio.subprocess.Process, _Protocol]:
    loop = asyncio.get_running_loop()
    protocols: list[_Protocol] = []

    def factory() -> _Protocol:
        protocols.append(_Protocol(MAX_LINE, loop))
        return protocols[-1]

    transport, _ = await loop.subprocess_exec(
        factory,
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(spec.env),
        cwd=str(spec.cwd),
        start_new_session=True,
    )
    return asyncio.subprocess.Process(transport, protocols[0], loop), protocols[0]


@dataclass(eq=False)
class Handle:
    """One running process: its output, when its main process exits, then its return code
    (once its output is closed too)."""

    pid: int
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    exited: asyncio.Future[None] | asyncio.Future[int]
    wait: Callable[[], Awaitable[int]]
    task: asyncio.Task[None] | None = None
    terminating: bool = False
    kill_timer: asyncio.TimerHandle | None = None
    exit_code: int | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


class Supervisor:
    """The processes started by one kubelet (the main ones through ``forks`` when given)."""

    def __init__(self, forks: ForkServer | None = None) -> None:
        self._handles: set[Handle] = set()
        self._forks = forks

    @staticmethod
    def _launch_argv(spec: ProcessSpec) -> list[str]:
        return launch_argv(os.getpid(), spec.namespace(), spec.argv)

    @staticmethod
    def _check_executable(program: str) -> None:
        if not os.path.isfile(program) or not os.access(program, os.X_OK):
            raise FileNotFoundError(f'exec: "{program}": no such executable file')

    async def start(
        self,
        spec: ProcessSpec,
        on_line: Callable[[str], None],
        on_exit: Callable[[int], None],
    ) -> Handle:
        """Start ``spec``; ``on_line`` gets each output line, ``on_exit`` the exit code once."""
        self._check_executable(spec.argv[0])
        handle = await self._forked(spec)
        if handle is None:
            process, protocol = await _spawn(self._launch_argv(spec), spec, asyncio.subprocess.PIPE)
            assert process.stdout is not None and process.stderr is not None
            handle = Handle(process.pid, process.stdout, process.stderr, protocol.exited, process.wait)
        _LIVE_GROUPS.add(handle.pid)
        self._handles.add(handle)
        handle.task = asyncio.create_task(self._watch(handle, on_line, on_exit), name=f"process-{handle.pid}")
        return handle

    async def _forked(self, spec: ProcessSpec) -> Handle | None:
        """``spec`` forked by the fork server; ``None`` when there is none (or it has ended)."""
        if self._forks is None:
            return None
        try:
            forked = await self._forks.spawn(spec.argv, spec.env, str(spec.cwd), spec.namespace())
        except ProcessLookupError as exc:
            log.warning("starting %s without the fork server: %s", spec.argv[0], exc)
            self._forks = None
            return None
        return Handle(forked.pid, forked.stdout, forked.stderr, forked.exited, forked.wait)

    async def _watch(
        self, handle: Handle, on_line: Callable[[str], None], on_exit: Callable[[int], None]
    ) -> None:
        pumps = [
            asyncio.create_task(_pump(handle.stdout, on_line)),
            asyncio.create_task(_pump(handle.stderr, on_line)),
        ]
        try:
            await handle.exited
        finally:
            # The container's other processes end with its main one.
            _kill_group(handle.pid, signal.SIGKILL)
            _LIVE_GROUPS.discard(handle.pid)
            if handle.kill_timer is not None:
                handle.kill_timer.cancel()
        _, pending = await asyncio.wait(pumps, timeout=DRAIN_TIMEOUT)
        for pump in pending:
            pump.cancel()
        returncode = await handle.wait()
        handle.exit_code = exit_code(returncode)
        self._handles.discard(handle)
        handle.done.set()
        try:
            on_exit(handle.exit_code)
        except Exception:
            log.exception("handling the exit of process %d failed", handle.pid)

    def terminate(self, handle: Handle, grace: float) -> None:
        """SIGTERM to the process group now, SIGKILL after ``grace`` seconds (once)."""
        if handle.done.is_set() or handle.terminating:
            return
        handle.terminating = True
        if grace <= 0:
            _kill_group(handle.pid, signal.SIGKILL)
            return
        _kill_group(handle.pid, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        handle.kill_timer = loop.call_later(grace, _kill_group, handle.pid, signal.SIGKILL)

    async def stop_all(self, grace: float) -> None:
        """Terminate every process and wait until all have been reaped."""
        handles = list(self._handles)
        for handle in handles:
            self.terminate(handle, grace)
        tasks = [h.task for h in handles if h.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace + DRAIN_TIMEOUT + 1)
        for handle in handles:  # belt and braces: nothing outlives the kubelet
            _kill_group(handle.pid, signal.SIGKILL)

    async def spawn_interactive(self, spec: ProcessSpec, *, stdin: bool) -> asyncio.subprocess.Process:
        """Start ``spec`` with its own pipes (``pods/exec``); end it with :meth:`forget_interactive`."""
        self._check_executable(spec.argv[0])
        process = await asyncio.create_subprocess_exec(
            *self._launch_argv(spec),
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(spec.env),
            cwd=str(spec.cwd),
            start_new_session=True,
        )
        _LIVE_GROUPS.add(process.pid)
        return process

    @staticmethod
    def forget_interactive(process: asyncio.subprocess.Process) -> None:
        """The exec session ended: nothing of its process group stays."""
        _kill_group(process.pid, signal.SIGKILL)
        _LIVE_GROUPS.discard(process.pid)

    async def run(self, spec: ProcessSpec, timeout: float, limit: int = 10 * 1024) -> tuple[int | None, str]:
        """Run ``spec`` to completion: ``(exit code, output)``; ``(None, ...)`` after a timeout."""
        self._check_executable(spec.argv[0])
        process, _ = await _spawn(self._launch_argv(spec), spec, asyncio.subprocess.STDOUT)
        _LIVE_GROUPS.add(process.pid)
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            _kill_group(process.pid, signal.SIGKILL)
            await process.wait()
            return None, ""
        finally:
            _kill_group(process.pid, signal.SIGKILL)
            _LIVE_GROUPS.discard(process.pid)
        assert process.returncode is not None
        return exit_code(process.returncode), output[:limit].decode(errors="replace")


async def _pump(stream: asyncio.StreamReader, on_line: Callable[[str], None]) -> None:
    """Hand every line of ``stream`` to ``on_line`` (a last line without newline gets one)."""
    while True:
        try:
            line = await stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            if end.partial:
                on_line(end.partial.decode(errors="replace") + "\n")
            return
        except asyncio.LimitOverrunError as over:
            line = await stream.readexactly(over.consumed) + b"\n"
        on_line(line.decode(errors="replace"))
