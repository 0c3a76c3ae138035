"""Watch streams: where a watch starts, which events a filtered watcher sees, bookmarks and timeouts.

A watch registers with the store and reads its starting point in the same
event-loop step, so no write can fall between them.  Start semantics follow
the watch cache: no resourceVersion (or ``0``) replays the current state as
ADDED events; ``N`` replays history after N or fails in-stream with 410;
``sendInitialEvents`` replays the state and then marks its end with a
bookmark.  Selector transitions turn MODIFIED into ADDED or DELETED, as the
real cacher does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.store import ADDED, DELETED, MODIFIED, Store, WatchEvent

Obj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True)
class WatchRequest:
    resource: tuple[str, str]
    namespace: str | None
    matches: Callable[[Obj], bool]
    resource_version: str = ""
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False
    timeout: float | None = None
    bookmark_interval: float = 60.0


@dataclass(frozen=True)
class Frame:
    """One event to send: type and object (``rendered`` caches the bytes per event when possible)."""

    type: str
    obj: Obj
    source: WatchEvent | None = None


def _visible(req: WatchRequest, obj: Obj | None) -> bool:
    if obj is None:
        return False
    if req.namespace is not None and obj["metadata"].get("namespace", "") != req.namespace:
        return False
    return req.matches(obj)


def translate(req: WatchRequest, event: WatchEvent) -> Frame | None:
    """What a filtered watcher sees of one committed event (None: nothing)."""
    new_ok = _visible(req, event.obj)
    if event.type == ADDED:
        return Frame(ADDED, event.obj, event) if new_ok else None
    if event.type == DELETED:
        return Frame(DELETED, event.obj, event) if _visible(req, event.old) or new_ok else None
    old_ok = _visible(req, event.old)
    if new_ok and old_ok:
        return Frame(MODIFIED, event.obj, event)
    if new_ok:
        return Frame(ADDED, event.obj)
    if old_ok:
        assert event.old is not None
        gone = {**event.old, "metadata": {**event.old["metadata"], "resourceVersion": str(event.rv)}}
        return Frame(DELETED, gone)
    return None


def validate(req: WatchRequest, resource_version_match: str) -> None:
    if req.send_initial_events is not None and resource_version_match != "NotOlderThan":
        raise errors.Invalid(
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the "
            'WatchList feature gate is enabled and resourceVersionMatch is set to "NotOlderThan"'
        )
    if req.send_initial_events and not req.allow_bookmarks:
        raise errors.Invalid(
            "allowWatchBookmarks: Required value: allowWatchBookmarks is required when sendInitialEvents is set"
        )


def _next(
    req: WatchRequest, store: Store, event: WatchEvent | None, last_rv: int
) -> tuple[int, Frame | None]:
    """One queued item of a watch: the revision reached and the frame to send (``None``: nothing,
    an event already sent or not visible). A compaction (``None``) is an ERROR frame (410) ending
    the stream."""
    if event is None:
        gone = errors.Gone(f"too old resource version: {last_rv} ({store.compacted_rv})")
        return last_rv, Frame("ERROR", gone.status())
    if event.rv <= last_rv:
        return last_rv, None
    return event.rv, translate(req, event)


async def stream(
    store: Store, req: WatchRequest, bookmark: Callable[[int, bool], Obj]
) -> AsyncIterator[Frame]:
    """The frames of one watch, until its timeout (or forever); 410 arrives as an ERROR frame."""
    # ``None`` marks a compaction: the stream ends with 410 after the events queued before it.
    queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
    unsubscribe = store.subscribe(req.resource, queue.put_nowait)
    unsubscribe_compaction = store.on_compact(lambda _floor: queue.put_nowait(None))
    try:
        start_rv = store.rv
        initial: list[Frame] = []
        rv_text = req.resource_version
        replay_state = req.send_initial_events or (req.send_initial_events is None and rv_text in ("", "0"))
        if replay_state:
            for obj in store.list(req.resource, req.namespace):
                if req.matches(obj):
                    initial.append(Frame(ADDED, obj))
        elif req.send_initial_events is None:
            try:
                since = int(rv_text)
            except ValueError:
                raise errors.BadRequest(
                    f'resourceVersion: Invalid value: "{rv_text}": must be a decimal integer'
                ) from None
            try:
                for event in store.events_since(req.resource, since):
                    frame = translate(req, event)
                    if frame is not None:
                        initial.append(frame)
            except errors.Gone as gone:
                yield Frame("ERROR", gone.status())
                return
        else:
            # sendInitialEvents=false: only changes after the requested (or current) revision.
            with contextlib.suppress(ValueError):
                start_rv = max(start_rv, int(rv_text))
        for frame in initial:
            yield frame
        last_rv = start_rv
        if req.send_initial_events and req.allow_bookmarks:
            yield Frame("BOOKMARK", bookmark(start_rv, True))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + req.timeout if req.timeout else None
        next_bookmark = time.monotonic() + req.bookmark_interval
        while True:
            wait = next_bookmark - time.monotonic() if req.allow_bookmarks else None
            if deadline is not None:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    # Events queued while the last frames were written go out first: the closing
                    # bookmark names the store's revision, and a client resuming from it must
                    # have seen every event up to there (a real watch delivers bookmarks in order
                    # with its events). The queue is empty when the bookmark is made: nothing is
                    # awaited between the last check and the bookmark.
                    while not queue.empty():
                        last_rv, frame = _next(req, store, queue.get_nowait(), last_rv)
                        if frame is not None:
                            yield frame
                        if frame is not None and frame.type == "ERROR":
                            return
                    if req.allow_bookmarks:
                        yield Frame("BOOKMARK", bookmark(max(last_rv, store.rv), False))
                    return
                wait = remaining if wait is None else min(wait, remaining)
            try:
                event = (
                    await asyncio.wait_for(queue.get(), timeout=wait)
                    if wait is not None
                    else await queue.get()
                )
            except TimeoutError:
                if queue.empty():
                    if req.allow_bookmarks and time.monotonic() >= next_bookmark:
                        next_bookmark = time.monotonic() + req.bookmark_interval
                        yield Frame("BOOKMARK", bookmark(max(last_rv, store.rv), False))
                    continue
                # an event queued since the timer fired goes first: bookmarks stay in order with events
                event = queue.get_nowait()
            last_rv, frame = _next(req, store, event, last_rv)
            if frame is not None:
                yield frame
            if frame is not None and frame.type == "ERROR":
                return
    finally:
        unsubscribe()
        unsubscribe_compaction()
