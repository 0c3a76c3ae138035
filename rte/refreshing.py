"""When the exporter scans: the initial scan, the periodic timer, the notify file, retries, rate limit.

This module owns upstream's event sources (``pkg/notification``, ``pkg/ratelimiter``) as
a clock-driven :class:`Scheduler` that the main loop polls; time is passed in, so the
decisions are tested without sleeping:

* one ``reactive`` scan at start, then ``periodic`` ones every ``--sleep-interval``
  (``0`` disables the timer), missed ticks skipped rather than bunched;
* ``reactive`` scans when the notify file changes: :class:`NotifyWatcher` polls its
  ``stat`` (a ``touch`` changes ``mtime``, a ``chmod`` changes ``ctime``, a write both),
  which needs no inotify and works on any filesystem a host path can be;
* a failed scan or write is retried after a back-off, with the trigger it had;
* every scan is paced by a leaky bucket of ``max_events`` per ``unit`` (upstream's
  default: one per second). Events arriving while one is pending coalesce into it
  (the later trigger wins): a scan always reads the current state, so nothing is lost,
  where upstream queues five events and drops the rest.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from nrop.rte.decisions.nrtinfo import Trigger

__all__ = ["NotifyFileError", "NotifyWatcher", "Pacer", "Scheduler", "prepare_notify_file"]

log = logging.getLogger(__name__)


class NotifyFileError(Exception):
    """The notify file cannot be used (wrong kind of file, or not writable)."""


def prepare_notify_file(path: Path) -> None:
    """Create the notify file (and its directory) as upstream does.

    An existing path must be an empty regular file: anything else is probably not the
    file the hook touches, and truncating it would destroy data.
    """
    try:
        path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
        try:
            info = path.stat()
        except FileNotFoundError:
            info = None
        if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_size != 0):
            raise NotifyFileError(f"notify file {path} exists and is not an empty regular file")
        path.touch(mode=0o644, exist_ok=True)
    except OSError as exc:
        raise NotifyFileError(f"cannot create notify file {path}: {exc.strerror or exc}") from exc


_Signature = tuple[int, int, int, int]


class NotifyWatcher:
    """Reports whether the notify file changed since the last :meth:`changed` call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last = self._signature()

    def _signature(self) -> _Signature | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size)

    def changed(self) -> bool:
        current = self._signature()
        if current is None:
            # Removed (a host cleanup, a remount): recreate it so the hook keeps working.
            log.warning("notify file %s disappeared; recreating it", self.path)
            try:
                prepare_notify_file(self.path)
            except NotifyFileError as exc:
                log.warning("%s", exc)
            current = self._signature()
        if current == self._last:
            return False
        self._last = current
        return True


class Pacer:
    """A leaky bucket: at most ``max_events`` per ``unit`` seconds, evenly spaced (0: no limit)."""

    def __init__(self, max_events: int, unit: float) -> None:
        self.spacing = unit / max_events if max_events > 0 and unit > 0 else 0.0
        self._last: float | None = None

    def ready_at(self) -> float:
        return float("-inf") if self._last is None else self._last + self.spacing

    def fire(self, now: float) -> None:
        self._last = now


@dataclass
class _Retry:
    at: float
    trigger: Trigger


class Scheduler:
    """Decides when the next scan runs and with which trigger; see the module docstring."""

    def __init__(self, interval: float, pacer: Pacer, now: float) -> None:
        self.interval = interval
        self.pacer = pacer
        self.pending: Trigger | None = Trigger.REACTIVE  # the initial scan
        self._next_tick = now + interval if interval > 0 else None
        self._retry: _Retry | None = None

    def notify(self, trigger: Trigger = Trigger.REACTIVE) -> None:
        self.pending = trigger

    def retry(self, now: float, delay: float, trigger: Trigger) -> None:
        self._retry = _Retry(now + delay, trigger)

    def _collect(self, now: float) -> None:
        if self._next_tick is not None and now >= self._next_tick:
            self.pending = Trigger.PERIODIC
            while self._next_tick <= now:
                self._next_tick += self.interval
        if self._retry is not None and now >= self._retry.at:
            if self.pending is None:
                self.pending = self._retry.trigger
            self._retry = None

    def due(self, now: float) -> Trigger | None:
        """The trigger of the scan to run now, if one is due (and consumes it)."""
        self._collect(now)
        if self.pending is None or now < self.pacer.ready_at():
            return None
        trigger, self.pending = self.pending, None
        self._retry = None  # this scan supersedes any retry
        self.pacer.fire(now)
        return trigger

    def next_deadline(self, now: float) -> float:
        """Seconds until :meth:`due` may return something (notify-file changes aside)."""
        candidates = []
        if self.pending is not None:
            candidates.append(self.pacer.ready_at())
        if self._next_tick is not None:
            candidates.append(self._next_tick)
        if self._retry is not None:
            candidates.append(self._retry.at)
        if not candidates:
            return float("inf")
        return max(0.0, min(candidates) - now)
