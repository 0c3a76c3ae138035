"""The process's background event loop for ``grpc.aio``, so that blocking code can own aio servers and streams.

Owns one daemon thread (:data:`THREAD_NAME`) running an asyncio loop, started at first use and
shared by every gRPC server, channel and stream of the process that lives on it. Why: grpcio's
synchronous API polls while idle (a server's completion-queue thread wakes every 200 ms, a
blocked stream iterator every 100 ms), which a cluster of idle kubelets and device plugins pays
all the time; ``grpc.aio`` sleeps until there is work.

* :func:`run` runs a coroutine on the loop and waits for its result (from any other thread:
  called on the loop itself it would wait for itself, so it raises);
* :func:`call_soon` hands a plain callable to the loop from any thread;
* :func:`start_server` binds and starts a ``grpc.aio`` server, leaving nothing listening if that fails;
* the loop's default executor (``loop.run_in_executor(None, …)``) has threads named
  :data:`WORKER_THREAD_NAME`-N: coroutines on the loop hand it the calls that may block
  (a lock another thread holds while it waits for this loop), so the loop never waits on them.

The loop holds one idle channel for the life of the process (never connected). grpcio counts its
aio channels and servers and shuts its aio engine down when the last one is destroyed: it removes
the completion queue's reader from the loop and closes its file descriptor from whatever thread
dropped that object, while the loop's thread may be reading it, and asyncio then logs
``OSError: [Errno 9] Bad file descriptor`` from ``PollerCompletionQueue._handle_events`` (a
cluster stopping its last gRPC server did, now and then). With the idle channel that count never
drops to zero while the process runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

__all__ = ["THREAD_NAME", "WORKER_THREAD_NAME", "call_soon", "loop", "on_loop", "run", "start_server"]

THREAD_NAME = "grpc-aio"
WORKER_THREAD_NAME = "grpc-aio-worker"

_T = TypeVar("_T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
#: Keeps grpcio's aio engine up while the process runs (see the module docstring).
_engine_holder: grpc.aio.Channel | None = None
#: Where the idle channel points; it never connects (channels connect on their first call).
_IDLE_TARGET = "unix:///dev/null"


async def _idle_channel() -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(_IDLE_TARGET)


def loop() -> asyncio.AbstractEventLoop:
    """The running background loop (started now if this is the first use)."""
    global _loop, _thread, _engine_holder
    with _lock:
        if _loop is None:
            new_loop = asyncio.new_event_loop()
            new_loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix=WORKER_THREAD_NAME))
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(new_loop)
                new_loop.call_soon(ready.set)
                new_loop.run_forever()

            thread = threading.Thread(target=serve, name=THREAD_NAME, daemon=True)
            thread.start()
            ready.wait()
            _engine_holder = asyncio.run_coroutine_threadsafe(_idle_channel(), new_loop).result()
            _loop, _thread = new_loop, thread
        return _loop


def on_loop() -> bool:
    """Whether the caller runs on the background loop's thread."""
    return _thread is not None and threading.current_thread() is _thread


def run(coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
    """Run ``coro`` on the background loop and return its result (its exception is raised here).

    ``timeout`` bounds the wait: past it the coroutine is cancelled and ``TimeoutError`` raised.
    """
    if on_loop():
        coro.close()
        raise RuntimeError("aioloop.run called on the gRPC loop's own thread: it would wait for itself")
    future = asyncio.run_coroutine_threadsafe(coro, loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise


def call_soon(fn: Callable[..., object], *args: object) -> None:
    """Schedule ``fn(*args)`` on the background loop, from any thread."""
    loop().call_soon_threadsafe(fn, *args)


async def start_server(server: grpc.aio.Server, address: str) -> grpc.aio.Server:
    """On the loop: bind ``server`` (its servicers added) to ``address`` and start it.

    A failure (the address taken, a bad path) stops the server before it is raised.
    """
    try:
        server.add_insecure_port(address)
        await server.start()
    except BaseException:
        await server.stop(None)
        raise
    return server
