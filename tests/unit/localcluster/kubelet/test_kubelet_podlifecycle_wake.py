"""PodLifecycle times a simulated container's next change from when the change it handled was
taken, not from after its status was written: a busy loop must not shorten how long the API
shows a state (a ``sleep 1s`` container Running for its whole second)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from nrop.localcluster.kubelet.podlifecycle import PodLifecycle, _PodRecord

TAKEN = datetime(2026, 11, 30, tzinfo=UTC)


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.at = now

    def now(self) -> datetime:
        return self.at


@pytest.mark.parametrize("write_took", [0.0, 0.4, 2.5])
def test_next_change_is_due_its_full_duration_after_the_status_write(
    tmp_path: Path, write_took: float
) -> None:
    clock = _Clock(TAKEN + timedelta(seconds=write_took))  # what the clock says once the status is written
    life = PodLifecycle(
        None,  # type: ignore[arg-type]
        "worker-0",
        tmp_path,
        None,  # type: ignore[arg-type]
        clock,
        managers=None,  # type: ignore[arg-type]
        lock=threading.RLock(),
        admitter=None,  # type: ignore[arg-type]
        reporter=None,  # type: ignore[arg-type]
        publish=lambda: None,
        put=lambda item: None,
    )
    run = SimpleNamespace(next_change=lambda: TAKEN + timedelta(seconds=1))  # a `sleep 1s` started at TAKEN
    record = _PodRecord("uid", "ns", "p", worker=SimpleNamespace(run=run))  # type: ignore[arg-type]

    async def scheduled() -> float:
        life._wake_at(record, TAKEN)
        assert record.timer is not None
        left = record.timer.when() - asyncio.get_running_loop().time()
        record.timer.cancel()
        return left

    assert asyncio.run(scheduled()) == pytest.approx(
        1.001, abs=0.02
    )  # the full second, whatever the write took
