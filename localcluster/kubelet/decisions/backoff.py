"""The kubelet's crash-loop back-off: when an exited container may be started again.

Owns the arithmetic of upstream's ``flowcontrol.Backoff`` as the kubelet uses it for
container restarts (``kubeGenericRuntimeManager.doBackOff``), per container:

* the first exit restarts at once; that restart records a back-off of 10 s;
* a later exit waits the recorded back-off, counted from when the container finished,
  and the restart doubles it, up to 300 s (``MaxContainerBackOff``);
* when a container finishes more than twice the maximum (10 minutes) after the last
  restart, its history is forgotten: the next restart is immediate again and records 10 s.

Upstream adds no jitter for container restarts. Pure: times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["BACKOFF_INITIAL", "BACKOFF_MAX", "CrashLoopBackOff"]

#: ``backOffPeriod`` and ``MaxContainerBackOff`` of the kubelet (seconds).
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0


@dataclass
class CrashLoopBackOff:
    """The back-off entry of one container (``None`` until its first restart)."""

    initial: float = BACKOFF_INITIAL
    maximum: float = BACKOFF_MAX
    delay: float | None = None
    last_update: datetime | None = None

    def _expired(self, event: datetime) -> bool:
        """``hasExpired``: stable for twice the maximum since the last restart."""
        assert self.last_update is not None
        return (event - self.last_update).total_seconds() > 2 * self.maximum

    def wait(self, finished_at: datetime) -> float:
        """Seconds after ``finished_at`` before the container may start again (``IsInBackOffSince``)."""
        if self.delay is None or self._expired(finished_at):
            return 0.0
        return self.delay

    def restart_at(self, finished_at: datetime) -> datetime:
        return finished_at + timedelta(seconds=self.wait(finished_at))

    def restarted(self, finished_at: datetime, now: datetime) -> None:
        """A restart after an exit at ``finished_at`` happens at ``now`` (``Backoff.Next``)."""
        if self.delay is None or self._expired(finished_at):
            self.delay = self.initial
        else:
            self.delay = min(self.delay * 2, self.maximum)
        self.last_update = now
