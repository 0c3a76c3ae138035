"""``pods/<name>/exec`` over SPDY/3.1: what client-go's ``remotecommand.NewSPDYExecutor`` speaks
(upstream's e2e ``remoteexec.CommandOnPod``, and kubectl before 1.30 or when WebSockets fail).

As the kubelet's remotecommand server does it, with stream protocol ``v4.channel.k8s.io``:

* **the upgrade**: ``Connection: Upgrade`` and ``Upgrade: SPDY/3.1``; the protocol is the first
  of the client's ``X-Stream-Protocol-Version`` values the server has (only v4 here, which
  every client-go since 1.4 offers; none in common is the kubelet's ``403`` "unable to
  upgrade: unable to negotiate protocol ..."); the answer is ``101 Switching Protocols`` with
  the chosen version;
* **the streams**: the client opens one stream per channel, named by its ``streamType``
  header: ``error``, and ``stdin``, ``stdout``, ``stderr``, ``resize`` as the request's
  ``stdin``, ``stdout``, ``stderr`` and ``tty`` ask (a TTY has no stderr stream). Each is
  acknowledged (SYN_REPLY) as it arrives; the command starts once all are open, within
  :data:`STREAM_CREATION_TIMEOUT` (the kubelet's default) or never;
* **the run** is :func:`.execstreams.run`: output as data frames, stdin data frames into the
  process, a FIN (or reset) of the stdin stream closes its stdin; resize events are read and
  ignored (there is no terminal);
* **the end**: the v4 ``Status`` on the error stream, a FIN on every stream, then the client
  goes away (GOAWAY, or the connection closes; :data:`GOODBYE_TIMEOUT` at most). Pings are
  answered all along.

Frames are :mod:`nrop.localcluster.apiserver.wire.spdy`'s. The bytes after the upgrade come in
through aiohttp's request handler, to which the session is a payload parser (``set_parser``,
as aiohttp's own WebSocket is), and go out on the request's transport.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable

from aiohttp import web

from nrop.localcluster.apiserver.wire import spdy
from nrop.localcluster.kubelet.execstreams import ExecOptions, failure_status, run
from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor

__all__ = ["GOODBYE_TIMEOUT", "PROTOCOL", "STREAM_CREATION_TIMEOUT", "expected_streams", "is_spdy", "serve"]

log = logging.getLogger(__name__)

UPGRADE = "SPDY/3.1"
PROTOCOL = "v4.channel.k8s.io"
#: How long the client has to open its streams (the kubelet's ``streamCreationTimeout`` default).
STREAM_CREATION_TIMEOUT = 30.0
#: How long to wait for the client to go away once everything was sent.
GOODBYE_TIMEOUT = 10.0
#: Output waits while this much is still unsent on the connection.
_WRITE_BUFFER = 256 * 1024


def is_spdy(request: web.Request) -> bool:
    """Whether ``request`` asks for a SPDY/3.1 upgrade."""
    connection = request.headers.get("Connection", "").lower()
    return "upgrade" in connection and request.headers.get("Upgrade", "").lower() == UPGRADE.lower()


def expected_streams(options: ExecOptions) -> frozenset[str]:
    """The streams a client opens for ``options`` (client-go's ``streamProtocolV4.createStreams``)."""
    wanted = {"error"}
    wanted.update(name for name in ("stdin", "stdout", "stderr") if getattr(options, name))
    if options.tty:
        wanted.add("resize")
    return frozenset(wanted)


def _offered(request: web.Request) -> list[str]:
    values = request.headers.getall("X-Stream-Protocol-Version", [])
    return [word.strip() for value in values for word in value.split(",") if word.strip()]


class _Session:
    """One SPDY connection: frames in (aiohttp feeds it as a payload parser), frames out."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._reader = spdy.Reader()
        self._writer = spdy.Writer()
        #: streamType -> stream id, and back.
        self.streams: dict[str, int] = {}
        self._types: dict[int, str] = {}
        self._opened = asyncio.Event()
        self.stdin: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.gone = asyncio.get_running_loop().create_future()

    # -- aiohttp's payload-parser interface ----------------------------------------------------------

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        try:
            frames = self._reader.feed(data)
        except spdy.FrameError as exc:
            log.info("exec over SPDY: %s; closing the connection", exc)
            self._end()
            return True, b""
        for frame in frames:
            self._on(frame)
        return False, b""

    def feed_eof(self) -> None:
        self._end()

    # -- frames in ------------------------------------------------------------------------------------

    def _on(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.SynStream):
            kind = frame.header("streamType")
            self._types[frame.stream_id] = kind
            self.streams.setdefault(kind, frame.stream_id)
            self._write(self._writer.syn_reply(frame.stream_id))
            self._opened.set()
        elif isinstance(frame, spdy.Data):
            if self._types.get(frame.stream_id) == "stdin":
                if frame.data:
                    self.stdin.put_nowait(frame.data)
                if frame.fin:
                    self.stdin.put_nowait(None)
        elif isinstance(frame, spdy.RstStream):
            if self._types.get(frame.stream_id) == "stdin":
                self.stdin.put_nowait(None)
        elif isinstance(frame, spdy.Ping):
            self._write(spdy.Writer.ping(frame.ping_id))
        elif isinstance(frame, spdy.GoAway):
            self._end()

    def _end(self) -> None:
        if not self.gone.done():
            self.gone.set_result(None)
        self.stdin.put_nowait(None)

    # -- frames out -----------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(data)

    async def open_streams(self, wanted: Iterable[str], timeout: float) -> bool:
        """Wait until the client opened every stream of ``wanted``; ``False`` after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not set(wanted) <= set(self.streams):
            self._opened.clear()
            left = deadline - loop.time()
            if left <= 0 or self.gone.done():
                return False
            try:
                await asyncio.wait_for(self._opened.wait(), left)
            except TimeoutError:
                return False
        return True

    async def send(self, channel: str, data: bytes) -> None:
        stream = self.streams.get(channel)
        if stream is None:
            return
        for start in range(0, len(data), spdy.MAX_PAYLOAD):
            self._write(spdy.Writer.data(stream, data[start : start + spdy.MAX_PAYLOAD]))
        while self._transport.get_write_buffer_size() > _WRITE_BUFFER and not self._transport.is_closing():
            await asyncio.sleep(0.005)

    def finish(self) -> None:
        """A FIN on every stream: the server has nothing more to say."""
        for stream in sorted(self._types):
            self._write(spdy.Writer.data(stream, b"", fin=True))


async def serve(
    request: web.Request,
    spec: ProcessSpec | str,
    supervisor: Supervisor,
    command: list[str],
    options: ExecOptions,
) -> web.StreamResponse:
    """Upgrade ``request`` to SPDY/3.1 and run ``spec`` (a string: why it cannot run, sent as the final Status)."""
    offered = _offered(request)
    if PROTOCOL not in offered:
        return web.Response(
            status=403,
            text=f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(offered)}], "
            f"server supports [{PROTOCOL}]",
        )
    transport = request.transport
    assert transport is not None
    session = _Session(transport)
    # from the 101 on, the connection's bytes are SPDY frames for the session, not HTTP
    request.protocol.set_parser(session)  # type: ignore[arg-type]
    response = web.StreamResponse(
        status=101,
        headers={"Connection": "Upgrade", "Upgrade": UPGRADE, "X-Stream-Protocol-Version": PROTOCOL},
    )
    response.force_close()
    await response.prepare(request)
    if not await session.open_streams(expected_streams(options), STREAM_CREATION_TIMEOUT):
        log.info("exec over SPDY: the client did not open its streams %s", sorted(expected_streams(options)))
        return response
    if isinstance(spec, str):
        status = failure_status(spec)
    else:
        status = await run(spec, supervisor, command, options, session.send, session.stdin)
    await session.send("error", json.dumps(status).encode())
    session.finish()
    try:
        await asyncio.wait_for(asyncio.shield(session.gone), GOODBYE_TIMEOUT)
    except TimeoutError:
        log.info("exec over SPDY: the client did not go away within %.0fs", GOODBYE_TIMEOUT)
    return response
