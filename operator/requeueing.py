"""When a CR is reconciled again without an event: upstream's ``RequeueAfter`` and error back-off.

Owns what controller-runtime's work queue does for upstream's controllers between events:

* :func:`requeue_after` (pure): after a reconciliation, when to run it again: a step still
  in progress after upstream's ``StepOngoing`` period (5 s for a DaemonSet or Deployment
  rolling out, a minute while a MachineConfigPool updates); a failed step after the queue's
  default per-item back-off (5 ms doubling with each failure in a row, at most 1000 s); an
  available one, or a CR that is gone, not at all;
* :class:`Requeue`: the delayed runs of one process on one thread; a key added again keeps
  its earliest time, as the work queue's ``AddAfter`` does, and forgetting a key drops its
  pending run and its failures.

Everything else comes from events (the CR, the objects it owns, what upstream watches) and
from the periodic resync, controller-runtime's default ten hours.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Final

from nrop.operator.decisions.conditions import Reason, Step, Type

__all__ = ["FAILURE_BASE_SECONDS", "FAILURE_MAX_SECONDS", "ONGOING_SECONDS", "Requeue", "requeue_after"]

log = logging.getLogger(__name__)

#: ``StepOngoing(5 * time.Second)``: a DaemonSet or the scheduler's Deployment is updating.
ONGOING_SECONDS: Final = 5.0
#: ``numaResourcesRetryPeriod``: a MachineConfigPool is updating.
MCP_ONGOING_SECONDS: Final = 60.0
#: ``workqueue.DefaultTypedControllerRateLimiter``'s per-item exponential back-off.
FAILURE_BASE_SECONDS: Final = 0.005
FAILURE_MAX_SECONDS: Final = 1000.0


def requeue_after(step: Step | None, failures: int) -> float | None:
    """Seconds until the CR is reconciled again after ``step`` (None: only events bring it back);
    ``failures``: the failed reconciliations of that CR in a row before this one."""
    if step is None or step.type == Type.AVAILABLE:
        return None
    if step.type == Type.PROGRESSING:
        return MCP_ONGOING_SECONDS if step.reason == Reason.MCP_UPDATING else ONGOING_SECONDS
    return min(FAILURE_BASE_SECONDS * 2.0**failures, FAILURE_MAX_SECONDS)


class Requeue:
    """Delayed reconciliations, run in time order on :meth:`run`'s thread until ``stop`` is set."""

    def __init__(self, stop: threading.Event, clock: Callable[[], float] = time.monotonic) -> None:
        self._stop = stop
        self._clock = clock
        self._cond = threading.Condition()
        #: key -> (when, work): the one pending run of each key
        self._pending: dict[Hashable, tuple[float, Callable[[], object]]] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._failures: dict[Hashable, int] = {}
        self._order = 0

    def after_step(self, key: Hashable, step: Step | None, work: Callable[[], object]) -> None:
        """Schedule ``work`` again for ``key`` as :func:`requeue_after` says for ``step``."""
        with self._cond:
            failed = step is not None and step.type == Type.DEGRADED
            failures = self._failures.get(key, 0)
            delay = requeue_after(step, failures)
            if failed:
                self._failures[key] = failures + 1
            else:
                self._failures.pop(key, None)
            if delay is None:
                self._pending.pop(key, None)
                return
            due = self._clock() + delay
            if key in self._pending and self._pending[key][0] <= due:
                return
            self._pending[key] = (due, work)
            self._order += 1
            heapq.heappush(self._heap, (due, self._order, key))
            self._cond.notify()

    def take_due(self) -> list[Callable[[], object]]:
        """The work whose time has come (removed from the queue), earliest first."""
        now = self._clock()
        ready: list[Callable[[], object]] = []
        with self._cond:
            while self._heap and self._heap[0][0] <= now:
                due, _, key = heapq.heappop(self._heap)
                pending = self._pending.get(key)
                if pending is None or pending[0] != due:
                    continue  # superseded by an earlier time, or forgotten
                del self._pending[key]
                ready.append(pending[1])
        return ready

    def _wait(self) -> None:
        with self._cond:
            timeout = max(0.0, self._heap[0][0] - self._clock()) if self._heap else 1.0
            self._cond.wait(min(timeout, 1.0))

    def run(self) -> None:
        while not self._stop.is_set():
            for work in self.take_due():
                try:
                    work()
                except Exception:
                    log.exception("requeued reconciliation failed")
            self._wait()
