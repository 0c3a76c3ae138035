"""The process's gRPC loop: blocking callers run coroutines on it, and it refuses to wait for itself."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import grpc
import pytest

from nrop.api.grpc import aioloop


async def _thread_name() -> str:
    return threading.current_thread().name


async def _fail() -> None:
    raise ValueError("from the loop")


def test_run_returns_what_the_coroutine_returns_from_the_loops_thread() -> None:
    assert aioloop.run(_thread_name()) == aioloop.THREAD_NAME
    assert aioloop.loop() is aioloop.loop()
    assert not aioloop.on_loop()


def test_run_raises_the_coroutines_exception_in_the_caller() -> None:
    with pytest.raises(ValueError, match="from the loop"):
        aioloop.run(_fail())


def test_run_on_the_loop_itself_is_refused_rather_than_a_deadlock() -> None:
    async def nested() -> str:
        inner = _thread_name()
        try:
            aioloop.run(inner)
        except RuntimeError as err:
            return str(err)
        return "no error"

    assert "would wait for itself" in aioloop.run(nested())


def test_a_timeout_cancels_the_coroutine() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        aioloop.run(forever(), timeout=0.05)
    assert cancelled.wait(5)


def test_call_soon_and_the_executor_run_off_the_callers_thread() -> None:
    seen: list[str] = []
    done = threading.Event()

    def record() -> None:
        seen.append(threading.current_thread().name)
        done.set()

    aioloop.call_soon(record)
    assert done.wait(5)

    async def in_executor() -> str:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: threading.current_thread().name)

    seen.append(aioloop.run(in_executor()))
    assert seen[0] == aioloop.THREAD_NAME
    assert seen[1].startswith(aioloop.WORKER_THREAD_NAME)


def test_start_server_raises_a_bind_failure_and_leaves_nothing_serving(tmp_path: Path) -> None:
    async def bind_where_no_directory_is() -> None:
        server = grpc.aio.server()
        await aioloop.start_server(server, f"unix://{tmp_path}/missing/dir/x.sock")

    with pytest.raises(RuntimeError):
        aioloop.run(bind_where_no_directory_is())

    async def serve_and_stop() -> None:
        server = await aioloop.start_server(grpc.aio.server(), f"unix://{tmp_path}/ok.sock")
        await server.stop(None)

    aioloop.run(serve_and_stop())


ENGINE_PROBE = """
import gc, os, sys
from nrop.api.grpc import aioloop
import grpc

def eventfds():
    return sum(1 for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}") and "eventfd" in os.readlink(f"/proc/self/fd/{fd}"))

async def serve():
    return await aioloop.start_server(grpc.aio.server(), "unix:" + sys.argv[1])

server = aioloop.run(serve())
serving = eventfds()
aioloop.run(server.stop(None))
del server
gc.collect()
print(serving, eventfds())
"""


def test_grpc_aio_engine_stays_up_when_the_last_server_goes(tmp_path: Path) -> None:
    # grpcio shuts its aio engine down with its last channel or server, closing the completion
    # queue's descriptor from the thread that dropped it while the loop may be reading it; the
    # loop's idle channel keeps the engine (its eventfds) up. A fresh process: nothing else holds it.
    import subprocess
    import sys

    probe = subprocess.run(
        [sys.executable, "-c", ENGINE_PROBE, str(tmp_path / "s.sock")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    serving, after = map(int, probe.stdout.split())
    assert serving > 0
    assert after == serving
