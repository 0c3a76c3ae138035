"""The object store: every object of the cluster, one global resourceVersion, and the event history.

It plays etcd plus the watch cache.  Each successful write takes the next
revision, stamps it into ``metadata.resourceVersion`` and appends an event to a
bounded history that watches resume from; a watch asking for a revision older
than the history gets ``410 Expired``.  Subscribers (watch streams, controllers)
are called synchronously on every write, so a subscriber that registers and
then reads the current state in the same event-loop step misses nothing.  An in-process
subscriber that plays a remote component (a controller manager's informer, a kubelet's pod
source) acts on an event :data:`WATCH_DELIVERY` later: the one watch hop that component is
away from the API server.

Stored objects are never mutated in place: a write hands over a fresh dict and
readers may serialise what they get without copying it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nrop.localcluster.apiserver import errors

log = logging.getLogger(__name__)

Resource = tuple[str, str]  # (storage group, plural)
Key = tuple[str, str]  # (namespace or "", name)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

#: Seconds between a write and the moment an in-process subscriber that plays a remote
#: component acts on it: one watch hop (API server watch cache to an informer) on a quiet
#: cluster.  Reacting in the same instant would let chains such as Deployment → ReplicaSet →
#: pods → statuses, or create → bind → kubelet rejection, finish faster than any cluster and
#: before remote watchers (a secondary scheduler, the controllers) have seen the steps.
WATCH_DELIVERY = 0.01


@dataclass
class WatchEvent:
    """One committed change of one object, as kept in the history."""

    rv: int
    type: str
    resource: Resource
    obj: dict[str, Any]
    old: dict[str, Any] | None
    #: ``time.monotonic()`` of the write (the history keeps :data:`HISTORY_WINDOW` seconds).
    at: float = 0.0
    # Serialised forms, filled lazily by whoever renders the event first.
    rendered: dict[Any, bytes] = field(default_factory=dict, repr=False)

    @property
    def namespace(self) -> str:
        return self.obj.get("metadata", {}).get("namespace", "")


Subscriber = Callable[[WatchEvent], None]


def _key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def _owner_uids(obj: dict[str, Any] | None) -> set[str]:
    if not obj:
        return set()
    return {ref.get("uid", "") for ref in obj.get("metadata", {}).get("ownerReferences") or ()}


#: Seconds of history a watch may resume from: etcd's compaction interval in kube-apiserver
#: (``--etcd-compaction-interval``, 5 minutes); older revisions answer 410 as after a compaction.
HISTORY_WINDOW = 300.0


class Store:
    """In-memory objects by resource and key, with a global revision and a bounded history
    (at most ``history_size`` events, none older than ``history_window`` seconds)."""

    def __init__(
        self,
        history_size: int = 50_000,
        history_window: float = HISTORY_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rv = 1
        self._objects: dict[Resource, dict[Key, dict[str, Any]]] = {}
        self._history: deque[WatchEvent] = deque(maxlen=history_size)
        self._history_window = history_window
        self._clock = clock
        # Oldest revision a watch may still resume from.
        self._compacted_rv = 1
        self._subscribers: dict[Resource | None, list[Subscriber]] = {}
        # Called with the new floor on compaction (open watch streams end with 410).
        self._compaction_listeners: list[Callable[[int], None]] = []
        self._last_write: dict[Resource, int] = {}
        # uid -> (resource, key) of objects naming it in ownerReferences
        self._dependents: dict[str, set[tuple[Resource, Key]]] = {}
        self._uids: dict[str, tuple[Resource, Key]] = {}

    # -- reads -----------------------------------------------------------------

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(resource, {}).get((namespace, name))

    def list(self, resource: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        """Current objects in key order (namespace, then name); ``namespace=None`` means all."""
        objs = self._objects.get(resource, {})
        keys = sorted(k for k in objs if namespace is None or k[0] == namespace)
        return [objs[k] for k in keys]

    def count(self, resource: Resource, namespace: str | None = None) -> int:
        objs = self._objects.get(resource, {})
        if namespace is None:
            return len(objs)
        return sum(1 for k in objs if k[0] == namespace)

    def snapshot(self, resource: Resource, namespace: str | None, at_rv: int) -> list[dict[str, Any]]:
        """The objects as they were at revision ``at_rv`` (for paginated lists), in key order."""
        if at_rv >= self.rv:
            return self.list(resource, namespace)
        if at_rv < self._compacted_rv:
            raise errors.Gone(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter, or use the continue token "
                "in this response to retrieve the remainder of the results. Continuing with the "
                "provided token results in an inconsistent list - objects that were created, modified, "
                "or deleted between the time the first chunk was returned and now may show up in the list."
            )
        state = dict(self._objects.get(resource, {}))
        for event in reversed(self._history):
            if event.rv <= at_rv:
                break
            if event.resource != resource:
                continue
            key = _key(event.obj)
            if event.type == ADDED:
                state.pop(key, None)
            else:
                assert event.old is not None
                state[key] = event.old
        keys = sorted(k for k in state if namespace is None or k[0] == namespace)
        return [state[k] for k in keys]

    def by_uid(self, uid: str) -> tuple[Resource, dict[str, Any]] | None:
        where = self._uids.get(uid)
        if where is None:
            return None
        obj = self._objects.get(where[0], {}).get(where[1])
        return (where[0], obj) if obj is not None else None

    def dependents(self, uid: str) -> list[tuple[Resource, dict[str, Any]]]:
        """Objects whose ownerReferences name ``uid``."""
        out = []
        for resource, key in sorted(self._dependents.get(uid, ())):
            obj = self._objects.get(resource, {}).get(key)
            if obj is not None:
                out.append((resource, obj))
        return out

    def last_write(self, resource: Resource) -> int:
        """Revision of the latest write to a resource (cache keys for derived data)."""
        return self._last_write.get(resource, 0)

    def resources(self) -> list[Resource]:
        return list(self._objects)

    # -- history ----------------------------------------------------------------

    @property
    def compacted_rv(self) -> int:
        return self._compacted_rv

    def events_since(self, resource: Resource, rv: int) -> Iterator[WatchEvent]:
        """History events of a resource after revision ``rv``; 410 if ``rv`` was compacted away."""
        if rv < self._compacted_rv:
            raise errors.Gone(f"too old resource version: {rv} ({self._compacted_rv})")
        return (e for e in list(self._history) if e.rv > rv and e.resource == resource)

    def compact(self) -> int:
        """Forget all history (a test hook to exercise clients' 410 handling); returns the new floor.

        Open watches are told too: clients that send bookmarks always resume from a
        revision at or above the floor, so only ending their streams with 410 (as when
        the watch cache is re-initialised from a compacted etcd) makes them re-list.
        """
        self._history.clear()
        self._compacted_rv = self.rv
        for callback in list(self._compaction_listeners):
            callback(self._compacted_rv)
        return self._compacted_rv

    def on_compact(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(floor)`` on each compaction; returns the unsubscribe function."""
        self._compaction_listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._compaction_listeners:
                self._compaction_listeners.remove(callback)

        return unsubscribe

    # -- subscriptions ------------------------------------------------------------

    def subscribe(self, resource: Resource | None, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` on each write to ``resource`` (``None``: every resource)."""
        self._subscribers.setdefault(resource, []).append(callback)

        def unsubscribe() -> None:
            subs = self._subscribers.get(resource, [])
            if callback in subs:
                subs.remove(callback)

        return unsubscribe

    # -- writes -------------------------------------------------------------------

    def next_rv(self) -> int:
        return self.rv + 1

    def create(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        return self._commit(resource, ADDED, obj, None)

    def update(self, resource: Resource, obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        return self._commit(resource, MODIFIED, obj, old)

    def delete(self, resource: Resource, obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """Remove an object; ``obj`` is its final state (it gets the deletion revision)."""
        return self._commit(resource, DELETED, obj, old)

    def _commit(
        self, resource: Resource, kind: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        key = _key(obj)
        bucket = self._objects.setdefault(resource, {})
        if kind == DELETED:
            bucket.pop(key, None)
        else:
            bucket[key] = obj
        self._index(resource, key, obj if kind != DELETED else None, old)
        self._last_write[resource] = self.rv
        now = self._clock()
        # Events past the window or the size bound go; a watch resuming before them gets 410.
        while self._history and (
            len(self._history) == self._history.maxlen or self._history[0].at < now - self._history_window
        ):
            self._compacted_rv = self._history.popleft().rv
        event = WatchEvent(self.rv, kind, resource, obj, old, at=now)
        self._history.append(event)
        for callback in (*self._subscribers.get(resource, ()), *self._subscribers.get(None, ())):
            try:
                callback(event)
            except Exception:  # a broken subscriber must not break writes
                log.exception("watch subscriber failed on %s %s", kind, key)
        return obj

    def _index(
        self, resource: Resource, key: Key, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        where = (resource, key)
        for uid in _owner_uids(old) - _owner_uids(new):
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(where)
                if not deps:
                    del self._dependents[uid]
        for uid in _owner_uids(new):
            self._dependents.setdefault(uid, set()).add(where)
        if new is None:
            if old is not None:
                self._uids.pop(old["metadata"].get("uid", ""), None)
        else:
            self._uids[new["metadata"].get("uid", "")] = where
