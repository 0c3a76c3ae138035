"""The loop every controller runs: keys in a de-duplicated queue, one synchronous sync per key.

Plays client-go's informer + workqueue for in-process controllers.  The store is the
informer cache: subscribers are called synchronously on every write, so a controller's
callbacks only map an event to the keys (``namespace/name``) it concerns and enqueue them
one watch hop later (the store's ``WATCH_DELIVERY``: a real controller manager learns of a
change through a watch); the loop then calls :meth:`Controller.sync` for each key, which reads the current objects
from the store and writes through ``server.rest`` (validation, admission, generation and
watch events apply, as for any client).  Store calls never await, so a sync runs to
completion between two awaits and always sees its own writes: no expectations bookkeeping
is needed, unlike upstream.

Failed syncs are retried with a per-key exponential back-off (client-go's default item
rate limiter: 5 ms doubling, here capped at 10 s); :meth:`Controller.enqueue_after` serves
the time-based requeues (``minReadySeconds``, progress deadlines, back-offs).

Also here: :class:`Recorder`, the core/v1 events a controller emits about its objects.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.store import WATCH_DELIVERY, WatchEvent
from nrop.localcluster.clock import Clock

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["FIELD_MANAGER", "Controller", "Recorder", "key_of", "kind_of", "split_key"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: ``managedFields`` manager of every write the controller manager makes.
FIELD_MANAGER = "kube-controller-manager"
_BACKOFF_BASE = 0.005
_BACKOFF_MAX = 10.0


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace", "")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def kind_of(server: InProcessAPI, group: str, plural: str) -> Kind:
    version = "v1"
    kind = server.registry.lookup(group, version, plural)
    if kind is None:
        raise RuntimeError(f"the API server does not serve {plural}.{group or 'core'}/{version}")
    return kind


class Recorder:
    """Writes core/v1 Events about objects, as client-go's event recorder does for a component."""

    def __init__(self, server: InProcessAPI, component: str, clock: Clock) -> None:
        self.server = server
        self.component = component
        self.clock = clock
        self._kind = kind_of(server, "", "events")

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        stamp = rfc3339(self.clock.now())
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta["name"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
                **({"namespace": meta["namespace"]} if meta.get("namespace") else {}),
            },
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": "",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self.server.rest.create(self._kind, namespace, body, WriteOptions(field_manager=FIELD_MANAGER))
        except errors.StatusError as err:
            log.debug("%s: event %s on %s not recorded: %s", self.component, reason, meta["name"], err)


class Controller:
    """Base of the in-process controllers: subscriptions in, a keyed work queue, ``sync(key)`` out."""

    #: Component name (events' ``source.component``, log lines, the task name).
    name = "controller"
    #: Seconds from an event to the sync it causes (a controller that batches its reactions,
    #: such as MCO's, waits longer than the watch hop).
    reaction_delay = WATCH_DELIVERY

    def __init__(self, server: InProcessAPI, clock: Clock) -> None:
        self.server = server
        self.clock = clock
        self.rest = server.rest
        self.store = server.store
        self.recorder = Recorder(server, self.name, clock)
        self.opts = WriteOptions(field_manager=FIELD_MANAGER)
        self._dirty: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._failures: dict[str, int] = {}
        self._unsubscribe: list[Callable[[], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- what subclasses provide ---------------------------------------------------------------

    def subscriptions(self) -> Iterable[tuple[tuple[str, str], Callable[[WatchEvent], Iterable[str]]]]:
        """(resource, event -> keys) pairs to follow."""
        return ()

    def initial_keys(self) -> Iterable[str]:
        """Keys to sync at start (the objects that exist already)."""
        return ()

    def sync(self, key: str) -> None:
        raise NotImplementedError

    # -- queue -----------------------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        self._dirty[key] = None
        self._wake.set()

    def enqueue_after(self, key: str, delay: float) -> None:
        """Sync ``key`` again in ``delay`` seconds (an earlier pending requeue wins)."""
        if self._loop is None:
            return
        if delay <= 0:
            self.enqueue(key)
            return
        when = self._loop.time() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending.when() <= when:
                return
            pending.cancel()
        self._timers[key] = self._loop.call_at(when, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.enqueue(key)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for resource, mapper in self.subscriptions():
            self._unsubscribe.append(self.store.subscribe(resource, self._callback(mapper)))
        for key in self.initial_keys():
            self.enqueue(key)
        self._task = self._loop.create_task(self._work(), name=self.name)

    def _callback(self, mapper: Callable[[WatchEvent], Iterable[str]]) -> Callable[[WatchEvent], None]:
        def on_event(event: WatchEvent) -> None:
            for key in mapper(event):
                self.enqueue_after(key, self.reaction_delay)

        return on_event

    async def stop(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._task is not None:
            while not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=0.1)

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._dirty:
                key = next(iter(self._dirty))
                del self._dirty[key]
                self._sync_one(key)
                # Let the API server and the kubelets run between two keys.
                await asyncio.sleep(0)

    def _sync_one(self, key: str) -> None:
        try:
            self.sync(key)
        except Exception as err:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            delay = min(_BACKOFF_BASE * 2 ** (failures - 1), _BACKOFF_MAX)
            if isinstance(err, errors.StatusError):
                log.info("%s: syncing %s failed (%s); retrying in %.2fs", self.name, key, err, delay)
            else:
                log.exception("%s: syncing %s failed; retrying in %.2fs", self.name, key, delay)
            self.enqueue_after(key, delay)
        else:
            self._failures.pop(key, None)

    # -- API helpers --------------------------------------------------------------------------------

    def update(self, kind: Kind, obj: Obj, *, status: bool = False) -> Obj:
        meta = obj["metadata"]
        stored, _ = self.rest.update(
            kind,
            meta.get("namespace", ""),
            meta["name"],
            obj,
            self.opts,
            subresource="status" if status else "",
        )
        return stored

    def delete(self, kind: Kind, obj: Obj) -> bool:
        """Delete ``obj`` (uid precondition, background propagation); False when it was gone already."""
        meta = obj["metadata"]
        try:
            self.rest.delete(
                kind,
                meta.get("namespace", ""),
                meta["name"],
                DeleteOptions(propagation="Background", preconditions={"uid": meta["uid"]}),
            )
        except (errors.NotFound, errors.Conflict):
            return False
        return True
