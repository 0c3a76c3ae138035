"""``pods/<name>/exec`` for containers that run as processes: the WebSocket channel protocol.

kubectl (1.30 and later) opens ``exec`` as a WebSocket with the subprotocol
``v5.channel.k8s.io`` (or ``v4``): every binary message starts with a channel byte —
0 stdin, 1 stdout, 2 stderr, 3 error (the final ``Status``), 4 resize, and in v5 255 "close
channel N" — followed by the data. :func:`serve` upgrades the request, runs the command as
a process of the container (resolved like an ``exec`` probe: an entry point of the project's
image, the container's environment, rewritten paths), pumps its streams, and ends with the
``Status`` upstream's kubelet sends: ``Success``, or ``NonZeroExitCode`` with the exit code.
No TTY: ``-t`` is accepted and ignored. SPDY is not served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from typing import Any

from aiohttp import WSMsgType, web

from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor, exit_code

__all__ = ["PROTOCOLS", "exit_status", "serve"]

log = logging.getLogger(__name__)

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_STDIN, _STDOUT, _STDERR, _ERROR, _CLOSE = 0, 1, 2, 3, 255


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


def _failure(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError", "code": 500}


async def serve(
    request: web.Request, spec: ProcessSpec | str, supervisor: Supervisor, command: list[str], *, stdin: bool
) -> web.WebSocketResponse:
    """Upgrade ``request`` and run ``spec`` (a string: why it cannot run, sent as the final Status)."""
    ws = web.WebSocketResponse(protocols=PROTOCOLS)
    await ws.prepare(request)
    try:
        if isinstance(spec, str):
            await ws.send_bytes(bytes([_ERROR]) + json.dumps(_failure(spec)).encode())
            return ws
        status = await _run(ws, spec, supervisor, command, stdin=stdin)
        await ws.send_bytes(bytes([_ERROR]) + json.dumps(status).encode())
    finally:
        await ws.close()
    return ws


async def _run(
    ws: web.WebSocketResponse, spec: ProcessSpec, supervisor: Supervisor, command: list[str], *, stdin: bool
) -> dict[str, Any]:
    try:
        process = await supervisor.spawn_interactive(spec, stdin=stdin)
    except OSError as exc:
        return _failure(f"failed to exec in container: {exc}")
    assert process.stdout is not None and process.stderr is not None
    pumps = [
        asyncio.create_task(_pump(process.stdout, ws, _STDOUT)),
        asyncio.create_task(_pump(process.stderr, ws, _STDERR)),
    ]
    reader = asyncio.create_task(_read_stdin(ws, process))
    try:
        returncode = await process.wait()
        await asyncio.gather(*pumps, return_exceptions=True)
    finally:
        reader.cancel()
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        supervisor.forget_interactive(process)
    return exit_status(command, exit_code(returncode))


async def _pump(stream: asyncio.StreamReader, ws: web.WebSocketResponse, channel: int) -> None:
    while chunk := await stream.read(32 * 1024):
        await ws.send_bytes(bytes([channel]) + chunk)


async def _read_stdin(ws: web.WebSocketResponse, process: asyncio.subprocess.Process) -> None:
    """Client messages: stdin data, and (v5) the close of the stdin channel."""
    writer = process.stdin
    async for message in ws:
        if message.type != WSMsgType.BINARY or not message.data:
            continue
        data: bytes = message.data
        if data[0] == _STDIN and writer is not None and len(data) > 1:
            writer.write(data[1:])
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        elif data[0] == _CLOSE and data[1:2] == bytes([_STDIN]) and writer is not None:
            writer.close()
