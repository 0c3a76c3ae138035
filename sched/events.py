"""Scheduling events written as ``events.k8s.io/v1`` Events, the way kube-scheduler's recorder does.

An :class:`EventBroadcaster` owns the writing: a bounded in-memory queue (1000 events;
more are dropped) drained by one background task, so that recording never blocks or
fails a scheduling cycle — write errors are only logged.  As client-go's events/v1
broadcaster (``recordToSink`` starts a goroutine per event), each event to write gets its
own task: writes run side by side, and a slow or retried one holds up no other (a
pod's ``Scheduled`` event does not wait behind a burst's ``FailedScheduling`` ones).
Each scheduler profile gets an :class:`EventRecorder` from it whose
``reportingController`` is the profile's ``schedulerName`` and ``reportingInstance`` is
``<schedulerName>-<hostname>``.

Repetitions follow client-go's events/v1 broadcaster.  Events are *isomorphic* when
they share type, action, reason, reporting controller and instance, and the full
reference to the pod (uid and resourceVersion included).  The first is created (named
``<pod>.<hex wall-clock ns>``); the second isomorphic one patches the existing object
with ``series: {count: 2, lastObservedTime}``; later ones only count in memory, and
the count is written by the periodic refresh (every 30 min) or when the series ends
(no repetition for 6 min), after which the event leaves the cache.  Failed writes are
retried only when no response came, or when a series' create finds the event already
there (its first create was still in flight when the patch found nothing): up to 12
tries, 10–12.5 s apart; any other rejection by the server is final.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
import random
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nrop.api.metatime import from_unix_nanos, rfc3339_micro
from nrop.api.restapi import EVENTS, ApiConnectionError, ApiError, NotFoundError, PatchType
from nrop.sched.kubeclient import KubeClient

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "EventBroadcaster",
    "EventRecorder",
    "isomorphic_key",
    "make_event",
    "pod_reference",
    "truncate_note",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: The API server rejects longer notes (events.k8s.io validation).
NOTE_LENGTH_LIMIT = 1024
MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
RETRY_DELAY = 10.0
#: client-go's ``wait.Jitter(sleepDuration, 0.25)``: each retry waits up to a quarter longer.
RETRY_JITTER = 0.25
REFRESH_INTERVAL = 30 * 60.0
FINISH_INTERVAL = 6 * 60.0


def truncate_note(note: str) -> str:
    """A note that fits the limit, cut with `` ...`` as kube-scheduler cuts FailedScheduling messages."""
    if len(note) <= NOTE_LENGTH_LIMIT:
        return note
    suffix = " ..."
    return note[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def pod_reference(pod: Mapping[str, Any]) -> Obj:
    """The ``regarding`` reference of a pod: apiVersion, kind, namespace, name, uid, resourceVersion."""
    meta = pod.get("metadata") or {}
    ref: Obj = {"apiVersion": "v1", "kind": "Pod"}
    for key in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def make_event(
    regarding: Obj,
    event_type: str,
    reason: str,
    action: str,
    note: str,
    *,
    controller: str,
    instance: str,
    now_ns: int,
) -> Obj:
    """A new events.k8s.io/v1 Event (``now_ns``: wall-clock nanoseconds, also the name's suffix)."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": f"{regarding.get('name', '')}.{now_ns:x}",
            "namespace": regarding.get("namespace") or "default",
        },
        "eventTime": rfc3339_micro(from_unix_nanos(now_ns)),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "regarding": regarding,
        "note": truncate_note(note),
        "type": event_type,
    }


def isomorphic_key(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two events the same occurrence repeated (client-go's eventKey)."""
    return (
        event.get("type"),
        event.get("action"),
        event.get("reason"),
        event.get("reportingController"),
        event.get("reportingInstance"),
        tuple(sorted((event.get("regarding") or {}).items())),
        tuple(sorted((event.get("related") or {}).items())),
    )


@dataclass
class _Cached:
    event: Obj
    last_seen: float  # monotonic time of the latest occurrence


class EventRecorder:
    """Records events about pods for one reporting controller (a profile's schedulerName)."""

    def __init__(self, broadcaster: EventBroadcaster, reporting_controller: str, hostname: str) -> None:
        self._broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = f"{reporting_controller}-{hostname}"

    def record(self, pod: Mapping[str, Any], event_type: str, reason: str, action: str, note: str) -> None:
        """Queue one event about ``pod``; returns at once."""
        if event_type not in ("Normal", "Warning"):
            raise ValueError(f"type: Unsupported value: {event_type!r}: supported values: Normal, Warning")
        event = make_event(
            pod_reference(pod),
            event_type,
            reason,
            action,
            note,
            controller=self.reporting_controller,
            instance=self.reporting_instance,
            now_ns=self._broadcaster.wall_ns(),
        )
        self._broadcaster.submit(event)

    def scheduled(self, pod: Mapping[str, Any], node: str) -> None:
        meta = pod.get("metadata") or {}
        note = f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} to {node}"
        self.record(pod, "Normal", "Scheduled", "Binding", note)

    def failed_scheduling(self, pod: Mapping[str, Any], message: str) -> None:
        self.record(pod, "Warning", "FailedScheduling", "Scheduling", message)


class EventBroadcaster:
    """Writes the events of its recorders in the background; ``start()`` in a loop, ``close()`` at the end."""

    def __init__(
        self,
        client: KubeClient,
        *,
        hostname: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
        max_queued: int = MAX_QUEUED_EVENTS,
        retry_delay: float = RETRY_DELAY,
        max_tries: int = MAX_TRIES_PER_EVENT,
        refresh_interval: float = REFRESH_INTERVAL,
        finish_interval: float = FINISH_INTERVAL,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.hostname = hostname or socket.gethostname()
        self.wall_ns = wall_ns
        self._clock = clock
        self._jitter = jitter
        self._max_queued = max_queued
        self._retry_delay = retry_delay
        self._max_tries = max_tries
        self._refresh_interval = refresh_interval
        self._finish_interval = finish_interval
        self._queue: collections.deque[Obj] = collections.deque()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._cache: dict[tuple[Any, ...], _Cached] = {}
        self._task: asyncio.Task[None] | None = None
        #: The writes in flight, one task per event (client-go's goroutine per event).
        self._writes: set[asyncio.Task[None]] = set()
        #: Events dropped because the queue was full, and events the server did not take.
        self.dropped = 0
        self.failed = 0

    def recorder(self, reporting_controller: str) -> EventRecorder:
        return EventRecorder(self, reporting_controller, self.hostname)

    def submit(self, event: Obj) -> None:
        if len(self._queue) >= self._max_queued:
            if self.dropped == 0:
                log.warning("event queue full (%d); dropping events until it drains", self._max_queued)
            self.dropped += 1
            return
        self._queue.append(event)
        self._idle.clear()
        self._wakeup.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="event broadcaster")

    async def close(self, drain_timeout: float = 2.0) -> None:
        """Give queued and in-flight events ``drain_timeout`` seconds to be written, then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(drain_timeout):
                await self._idle.wait()
        self._task.cancel()
        for write in list(self._writes):
            write.cancel()
        for task in (self._task, *self._writes):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None

    # -- the writer

    async def _run(self) -> None:
        next_refresh = self._clock() + self._refresh_interval
        next_finish = self._clock() + self._finish_interval
        while True:
            wait = max(0.0, min(next_refresh, next_finish) - self._clock())
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation
            # that races with the event being set, and the writer would never stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                self._spawn(self._queue.popleft())
            self._mark_idle()
            now = self._clock()
            if now >= next_refresh:
                next_refresh = now + self._refresh_interval
                await self._refresh()
            if now >= next_finish:
                next_finish = now + self._finish_interval
                await self._finish(now)

    def _spawn(self, event: Obj) -> None:
        """One task per occurrence; tasks start in the order they are made, so each admits its
        occurrence (:meth:`_admit`, before its first await) in the order they were recorded."""
        write = asyncio.get_running_loop().create_task(self._record(event), name=f"event {_describe(event)}")
        self._writes.add(write)
        write.add_done_callback(self._written)

    def _written(self, write: asyncio.Task[None]) -> None:
        self._writes.discard(write)
        if not write.cancelled() and write.exception() is not None:
            # recording must never stop: log it; the other writes go on
            log.error("recording an event failed", exc_info=write.exception())
        self._mark_idle()

    def _mark_idle(self) -> None:
        if not self._queue and not self._writes:
            self._idle.set()

    def _admit(self, event: Obj) -> Obj | None:
        """The series bookkeeping of one occurrence: a copy of what to write now, or ``None``."""
        key = isomorphic_key(event)
        cached = self._cache.get(key)
        now = self._clock()
        if cached is None:
            self._cache[key] = _Cached(event, now)
            return copy.deepcopy(event)
        cached.last_seen = now
        series = cached.event.get("series")
        stamp = rfc3339_micro(from_unix_nanos(self.wall_ns()))
        if series is not None:
            # Counted only; the refresh or the end of the series writes the count.
            series["count"] += 1
            series["lastObservedTime"] = stamp
            return None
        cached.event["series"] = {"count": 2, "lastObservedTime": stamp}
        return copy.deepcopy(cached.event)

    async def _record(self, event: Obj) -> None:
        """One occurrence admitted and, when there is something to write, written."""
        to_write = self._admit(event)
        if to_write is not None:
            await self._attempt(to_write)

    async def _refresh(self) -> None:
        """client-go's heartbeat of the open series: each count written once (no retry)."""
        for cached in list(self._cache.values()):
            if cached.event.get("series") is not None:
                await self._record_event(copy.deepcopy(cached.event))

    async def _finish(self, now: float) -> None:
        """Series without a repetition for the finish interval: their last count written, then
        out of the cache (kept for the next round when the write may succeed later)."""
        for key, cached in list(self._cache.items()):
            if now - cached.last_seen < self._finish_interval:
                continue
            if cached.event.get("series") is not None and await self._record_event(
                copy.deepcopy(cached.event)
            ):
                continue
            del self._cache[key]

    async def _attempt(self, event: Obj) -> None:
        """client-go's ``attemptRecording``: write, retrying what may succeed later."""
        for attempt in range(1, self._max_tries + 1):
            if not await self._record_event(event):
                return
            if attempt == self._max_tries:
                break
            await asyncio.sleep(self._retry_delay * (1 + RETRY_JITTER * self._jitter()))
        self.failed += 1
        log.error("cannot write event %s: giving up after %d tries", _describe(event), self._max_tries)

    async def _record_event(self, event: Obj) -> bool:
        """client-go's ``recordEvent``: one write; ``True`` when trying again may succeed (no
        response came, or a series' create found the event its patch had not found)."""
        try:
            await self._write_once(event)
            return False
        except ApiConnectionError as exc:
            log.warning("cannot write event %s (may retry): %s", _describe(event), exc)
            return True
        except ApiError as exc:
            if exc.already_exists and event.get("series") is not None:
                log.debug("event %s created meanwhile (will patch again): %s", _describe(event), exc)
                return True
            self.failed += 1
            level = logging.DEBUG if exc.already_exists else logging.ERROR
            log.log(level, "server rejected event %s (will not retry): %s", _describe(event), exc)
            return False

    async def _write_once(self, event: Obj) -> None:
        meta = event["metadata"]
        series = event.get("series")
        if series is not None:
            try:
                await self.client.patch(
                    EVENTS,
                    meta["name"],
                    {"series": series},
                    meta["namespace"],
                    patch_type=PatchType.STRATEGIC,
                )
                return
            except NotFoundError:
                pass  # gone (expired or deleted), or not created yet: create it with its series
        await self.client.create(EVENTS, event, meta["namespace"])


def _describe(event: Mapping[str, Any]) -> str:
    regarding = event.get("regarding") or {}
    return f"{event.get('reason')} for {regarding.get('namespace')}/{regarding.get('name')}"
