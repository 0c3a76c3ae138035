"""``pods/<name>/exec`` for containers that run as processes: the command's run, and the WebSocket
channel protocol.

The run (:func:`run`) is the same whatever carries it (WebSocket here, SPDY in
:mod:`.execspdy`): the command runs as a process of the container (resolved like an ``exec``
probe: an entry point of its image, the container's environment, rewritten paths); its stdout
and stderr go to the channels the request asked for (:class:`ExecOptions`: with ``tty`` a
terminal would join stderr to stdout, and so does this runtime, which gives the process pipes,
not a terminal); the client's stdin goes to it until the client closes that channel; it ends
with the ``Status`` upstream's kubelet sends: ``Success``, or ``NonZeroExitCode`` with the exit
code (:func:`exit_status`).

kubectl (1.30 and later) opens ``exec`` as a WebSocket with the subprotocol
``v5.channel.k8s.io`` (or ``v4``): every binary message starts with a channel byte —
0 stdin, 1 stdout, 2 stderr, 3 error (the final ``Status``), 4 resize, and in v5 255 "close
channel N" — followed by the data. :func:`serve` upgrades the request and carries the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor, exit_code

__all__ = ["PROTOCOLS", "ExecOptions", "Send", "exit_status", "failure_status", "run", "serve"]

log = logging.getLogger(__name__)

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_CHANNELS = {"stdin": 0, "stdout": 1, "stderr": 2, "error": 3}
_CLOSE = 255
#: Output is read and sent in pieces of at most this size.
CHUNK = 32 * 1024

#: Sends one piece of output on a channel (``stdout``, ``stderr``).
Send = Callable[[str, bytes], Awaitable[None]]


@dataclass(frozen=True)
class ExecOptions:
    """What a ``pods/exec`` request asks for (``PodExecOptions``: absent means false)."""

    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ExecOptions:
        def flag(name: str) -> bool:
            return query.get(name, "").lower() in ("true", "1")

        options = cls(flag("stdin"), flag("stdout"), flag("stderr"), flag("tty"))
        # the kubelet: "Access to exec with tty and stderr is not supported, bypassing stderr"
        return cls(options.stdin, options.stdout, options.stderr and not options.tty, options.tty)

    @property
    def streams_nothing(self) -> bool:
        """The API server's check: ``you must specify at least 1 of stdin, stdout, stderr``."""
        return not (self.stdin or self.stdout or self.stderr)

    def channel_of(self, output: str) -> str | None:
        """Where the process's ``stdout`` or ``stderr`` goes: a channel, or nowhere."""
        if output == "stderr" and self.tty:
            output = "stdout"
        return output if getattr(self, output) else None


def exit_status(command: list[str], code: int) -> dict[str, Any]:
    """The ``Status`` on the error channel once the command has ended."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command "
        f"[{' '.join(command)}], exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def failure_status(message: str) -> dict[str, Any]:
    """The ``Status`` of a command that could not run at all."""
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError", "code": 500}


async def _pump(stream: asyncio.StreamReader, channel: str | None, send: Send) -> None:
    while chunk := await stream.read(CHUNK):
        if channel is not None:
            await send(channel, chunk)


async def _feed(process: asyncio.subprocess.Process, stdin: asyncio.Queue[bytes | None]) -> None:
    """The client's stdin to the process, until the client closes it (``None``)."""
    writer = process.stdin
    if writer is None:
        return
    while (data := await stdin.get()) is not None:
        writer.write(data)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    writer.close()


async def run(
    spec: ProcessSpec,
    supervisor: Supervisor,
    command: list[str],
    options: ExecOptions,
    send: Send,
    stdin: asyncio.Queue[bytes | None],
) -> dict[str, Any]:
    """Run the command, its output through ``send``, ``stdin``'s pieces into it; its final ``Status``."""
    try:
        process = await supervisor.spawn_interactive(spec, stdin=options.stdin)
    except OSError as exc:
        return failure_status(f"failed to exec in container: {exc}")
    assert process.stdout is not None and process.stderr is not None
    pumps = [
        asyncio.create_task(_pump(process.stdout, options.channel_of("stdout"), send)),
        asyncio.create_task(_pump(process.stderr, options.channel_of("stderr"), send)),
    ]
    feeder = asyncio.create_task(_feed(process, stdin))
    try:
        returncode = await process.wait()
        await asyncio.gather(*pumps, return_exceptions=True)
    finally:
        feeder.cancel()
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        supervisor.forget_interactive(process)
    return exit_status(command, exit_code(returncode))


# -- WebSocket ----------------------------------------------------------------------------------------


async def _read_ws(ws: web.WebSocketResponse, stdin: asyncio.Queue[bytes | None]) -> None:
    """Client messages: stdin data, and (v5) the close of the stdin channel."""
    async for message in ws:
        if message.type != WSMsgType.BINARY or not message.data:
            continue
        data: bytes = message.data
        if data[0] == _CHANNELS["stdin"] and len(data) > 1:
            stdin.put_nowait(data[1:])
        elif data[0] == _CLOSE and data[1:2] == bytes([_CHANNELS["stdin"]]):
            stdin.put_nowait(None)


async def serve(
    request: web.Request,
    spec: ProcessSpec | str,
    supervisor: Supervisor,
    command: list[str],
    options: ExecOptions,
) -> web.WebSocketResponse:
    """Upgrade ``request`` to a WebSocket and run ``spec`` (a string: why it cannot run, sent as the final Status)."""
    ws = web.WebSocketResponse(protocols=PROTOCOLS)
    await ws.prepare(request)

    async def send(channel: str, data: bytes) -> None:
        await ws.send_bytes(bytes([_CHANNELS[channel]]) + data)

    try:
        if isinstance(spec, str):
            await send("error", json.dumps(failure_status(spec)).encode())
            return ws
        stdin: asyncio.Queue[bytes | None] = asyncio.Queue()
        reader = asyncio.create_task(_read_ws(ws, stdin))
        try:
            status = await run(spec, supervisor, command, options, send, stdin)
        finally:
            reader.cancel()
        await send("error", json.dumps(status).encode())
    finally:
        await ws.close()
    return ws
