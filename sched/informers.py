"""Watch caches: a reflector and store per resource, shared through a factory (client-go's informers).

An :class:`Informer` lists a resource (in pages), then watches it from the list's
resourceVersion, keeping an in-memory store keyed ``namespace/name`` (or ``name`` for
cluster-scoped objects) and calling its handlers ``(event_type, obj, old_obj)`` in
registration order for every change.  Bookmarks only move the resourceVersion on.  A
watch that ends normally (its ``timeoutSeconds``) is resumed from the last
resourceVersion; a 410 (``too old resource version``, after compaction) makes it list
again at once, and any other failure makes it list again after an exponential
back-off, with one log line saying why.  A re-list turns into the ADDED / MODIFIED /
DELETED calls that bring the handlers from the old store to the new one
(:func:`relist_changes`).

A resource may be *optional*: the NodeResourceTopology CRD is installed by the
operator, possibly after the scheduler starts.  Until it is served, the informer counts
as synced with an empty store and keeps polling quietly (debug log).

Handlers run synchronously on the event loop and must not block; an exception in one
is logged and does not stop the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nrop.api.backoff import Backoff
from nrop.sched.kubeclient import (
    NAMESPACES,
    NODES,
    NRTS,
    PODS,
    ApiError,
    GoneError,
    KubeClient,
    NotFoundError,
    Resource,
)

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "POD_FIELD_SELECTOR",
    "Backoff",
    "Handler",
    "Informer",
    "InformerFactory",
    "object_key",
    "relist_changes",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Handler = Callable[[str, Obj, "Obj | None"], None]
Change = tuple[str, Obj, "Obj | None"]

ADDED, MODIFIED, DELETED, BOOKMARK = "ADDED", "MODIFIED", "DELETED", "BOOKMARK"

#: kube-scheduler's pod informer ignores terminated pods (they hold no resources).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
#: client-go's reflector asks for watches of 5 to 10 minutes.
MIN_WATCH_TIMEOUT = 300
DEFAULT_PAGE_SIZE = 500


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def relist_changes(store: Mapping[str, Obj], items: Iterable[Obj]) -> tuple[dict[str, Obj], list[Change]]:
    """The new store after a list, and the handler calls that lead from ``store`` to it.

    New keys are ADDED, keys whose resourceVersion changed are MODIFIED (with the old
    object), keys no longer listed are DELETED (with their last known state).  Unchanged
    objects cause no call.
    """
    fresh = {object_key(obj): obj for obj in items}
    changes: list[Change] = []
    for key, obj in fresh.items():
        old = store.get(key)
        if old is None:
            changes.append((ADDED, obj, None))
        elif _rv(old) != _rv(obj):
            changes.append((MODIFIED, obj, old))
    changes.extend((DELETED, old, old) for key, old in store.items() if key not in fresh)
    return fresh, changes


def reflector_backoff() -> Backoff:
    """client-go's reflector back-off: 0.8 s doubling to 30 s."""
    return Backoff(initial=0.8, maximum=30.0)


class Informer:
    """A list-then-watch cache of one resource with ordered change handlers."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        optional: bool = False,
        page_size: int = DEFAULT_PAGE_SIZE,
        backoff: Backoff | None = None,
        absent_poll: float = 2.0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.optional = optional
        self._page_size = page_size
        self._backoff = backoff or reflector_backoff()
        self._absent_poll = absent_poll
        self._rand = rand
        self._store: dict[str, Obj] = {}
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._absent = False
        self.resource_version = ""
        #: How many times the informer has listed (the first list included).
        self.lists = 0

    @property
    def name(self) -> str:
        return str(self.resource) if self.namespace is None else f"{self.resource} in {self.namespace}"

    # -- reading

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def absent(self) -> bool:
        """An optional resource that the server does not serve (yet)."""
        return self._absent

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Return once the first list is in the store; ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            await self._synced.wait()

    def list(self) -> list[Obj]:
        return list(self._store.values())

    def get(self, key: str) -> Obj | None:
        return self._store.get(key)

    def __len__(self) -> int:
        return len(self._store)

    # -- handlers

    def add_handler(self, handler: Handler, *, replay: bool = True) -> None:
        """Register ``handler``; with ``replay`` it is first told about every stored object as ADDED."""
        self._handlers.append(handler)
        if replay:
            for obj in list(self._store.values()):
                self._call(handler, ADDED, obj, None)

    def _call(self, handler: Handler, event_type: str, obj: Obj, old: Obj | None) -> None:
        try:
            handler(event_type, obj, old)
        except Exception:
            log.exception("%s: a handler failed on %s %s", self.name, event_type, object_key(obj))

    def _dispatch(self, event_type: str, obj: Obj, old: Obj | None) -> None:
        for handler in self._handlers:
            self._call(handler, event_type, obj, old)

    # -- lifecycle

    def start(self) -> None:
        """Start listing and watching in a task of the running loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"informer {self.name}")

    @property
    def started(self) -> bool:
        return self._task is not None

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -- the reflector

    async def _run(self) -> None:
        while True:
            try:
                await self._list()
            except NotFoundError as exc:
                if not self.optional:
                    await self._failed("list", exc)
                    continue
                self._mark_absent(exc)
                await asyncio.sleep(self._absent_poll)
                continue
            except ApiError as exc:
                await self._failed("list", exc)
                continue
            try:
                await self._watch()
            except GoneError as exc:
                log.info("%s: watch expired (%s); re-listing", self.name, exc.message)
            except ApiError as exc:
                await self._failed("watch", exc)

    async def _failed(self, what: str, exc: ApiError) -> None:
        delay = self._backoff.next_delay()
        log.warning("%s: %s failed: %s; re-listing in %.1fs", self.name, what, exc, delay)
        await asyncio.sleep(delay)

    def _mark_absent(self, exc: ApiError) -> None:
        if not self._absent:
            log.debug(
                "%s: not served yet (%s); polling every %.1fs", self.name, exc.message, self._absent_poll
            )
        self._absent = True
        self._store, changes = relist_changes(self._store, ())
        for change in changes:
            self._dispatch(*change)
        self._synced.set()

    async def _list(self) -> None:
        listed = await self.client.list(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self._page_size,
        )
        if self._absent:
            log.info("%s: now served; listing", self.name)
            self._absent = False
        self.lists += 1
        self.resource_version = _rv(listed)
        self._store, changes = relist_changes(self._store, listed.get("items") or [])
        for change in changes:
            self._dispatch(*change)
        self._synced.set()

    async def _watch(self) -> None:
        while True:
            timeout = int(MIN_WATCH_TIMEOUT * (1 + self._rand()))
            async for event_type, obj in self.client.watch(
                self.resource,
                self.namespace,
                resource_version=self.resource_version,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                allow_bookmarks=True,
                timeout_seconds=timeout,
            ):
                self._backoff.reset()
                if event_type != BOOKMARK:
                    self._apply(event_type, obj)
                self.resource_version = _rv(obj) or self.resource_version
            # The server ended the stream (its timeout): resume from where it stopped.
            self._backoff.reset()

    def _apply(self, event_type: str, obj: Obj) -> None:
        key = object_key(obj)
        old = self._store.get(key)
        if event_type == DELETED:
            self._store.pop(key, None)
            self._dispatch(DELETED, obj, old)
            return
        self._store[key] = obj
        # Whether an object is new is the store's call, as in client-go's shared informers.
        self._dispatch(ADDED if old is None else MODIFIED, obj, old)


class InformerFactory:
    """One shared informer per (resource, namespace, selectors); start them together, close them together."""

    def __init__(self, client: KubeClient, **informer_options: Any) -> None:
        self.client = client
        self._options = informer_options
        self._informers: dict[tuple[Resource, str | None, str | None, str | None], Informer] = {}

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        optional: bool = False,
    ) -> Informer:
        key = (resource, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.client,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                optional=optional,
                **self._options,
            )
            self._informers[key] = informer
        return informer

    def pods(self) -> Informer:
        """Non-terminated pods of every namespace (kube-scheduler's pod informer)."""
        return self.informer(PODS, field_selector=POD_FIELD_SELECTOR)

    def nodes(self) -> Informer:
        return self.informer(NODES)

    def namespaces(self) -> Informer:
        """Namespaces, for their labels (InterPodAffinity's namespaceSelector)."""
        return self.informer(NAMESPACES)

    def nrts(self) -> Informer:
        """NodeResourceTopology v1alpha2 objects; the CRD may appear later (optional)."""
        return self.informer(NRTS, optional=True)

    def start(self) -> None:
        """Start every informer asked for so far that is not running yet."""
        for informer in self._informers.values():
            informer.start()

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Return once every started informer has synced; ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            for informer in self._informers.values():
                if informer.started:
                    await informer.wait_synced()

    async def close(self) -> None:
        for informer in self._informers.values():
            await informer.close()
