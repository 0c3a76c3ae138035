"""PodLifecycle wakes a pod at its next change's absolute time (an exit seen at the node's PLEG
relist): a busy loop delays what it is handling, not the grid of the relists after it."""

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


@pytest.mark.parametrize(("write_took", "left"), [(0.0, 2.0), (0.4, 1.6), (2.5, 0.0)])
def test_the_next_change_is_scheduled_at_its_own_time_whatever_the_write_took(
    tmp_path: Path, write_took: float, left: float
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
    run = SimpleNamespace(next_change=lambda: TAKEN + timedelta(seconds=2))  # its exit's relist
    record = _PodRecord("uid", "ns", "p", worker=SimpleNamespace(run=run))  # type: ignore[arg-type]

    async def scheduled() -> float:
        life._wake_at(record)
        assert record.timer is not None
        left = record.timer.when() - asyncio.get_running_loop().time()
        record.timer.cancel()
        return left

    assert asyncio.run(scheduled()) == pytest.approx(left + 0.001, abs=0.02)
