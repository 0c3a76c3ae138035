"""The lifecycle loop stops even when a wake-up races the cancellation (Python 3.11 ``wait_for``)."""

from __future__ import annotations

import asyncio

from nrop.localcluster.apiserver.lifecycle import Lifecycle
from nrop.localcluster.apiserver.server import APIServer


def test_stop_survives_a_wake_up_racing_the_cancel() -> None:
    async def scenario() -> float:
        lifecycle = Lifecycle(APIServer(), period=60.0)
        lifecycle.start()
        await asyncio.sleep(0.01)  # the loop now waits for its wake-up event
        loop = asyncio.get_running_loop()
        started = loop.time()
        lifecycle._wake.set()  # completes the inner wait in the same step as the cancel below
        # A caller's timeout would cancel the task a second time and hide the bug: none here.
        stopping = loop.create_task(lifecycle.stop())
        done, _ = await asyncio.wait({stopping}, timeout=2.0)
        assert done, "Lifecycle.stop() did not return: the cancellation was swallowed"
        assert lifecycle._task is not None and lifecycle._task.done()
        return loop.time() - started

    assert asyncio.run(scenario()) < 1.0
