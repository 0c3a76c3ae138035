"""Watch caches: a reflector and store per resource, shared through a factory (client-go's informers).

An :class:`Informer` lists a resource (in pages), then watches it, keeping an in-memory
store keyed ``namespace/name`` (or ``name`` for cluster-scoped objects) and calling its
handlers ``(event_type, obj, old_obj)`` in registration order for every change.  What comes
after a list, an event, a bookmark, the end of a watch or a failure is client-go's
reflector rule, decided in :mod:`nrop.api.reflector` (shared with the exporter's
terminal-pod watch); this module does the requests, the waiting and the logging: one
info line when a watch expired (410, re-listed at once), one warning with the back-off
for any other failure.  A re-list turns into the ADDED / MODIFIED / DELETED calls that
bring the handlers from the old store to the new one.

A resource may be *optional*: the NodeResourceTopology CRD is installed by the
operator, possibly after the scheduler starts.  Until it is served, the informer counts
as synced with an empty store and keeps polling quietly (debug log).

Handlers run synchronously on the event loop and must not block; an exception in one
is logged and does not stop the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Callable
from typing import Any

from nrop.api import reflector
from nrop.api.backoff import Backoff
from nrop.api.reflector import ADDED, DELETED, MODIFIED, Step, object_key
from nrop.api.restapi import NAMESPACES, NODES, NRTS, PODS, ApiError, NotFoundError, Resource
from nrop.sched.kubeclient import KubeClient

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "POD_FIELD_SELECTOR",
    "Handler",
    "Informer",
    "InformerFactory",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Handler = Callable[[str, Obj, "Obj | None"], None]

#: kube-scheduler's pod informer ignores terminated pods (they hold no resources).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
DEFAULT_PAGE_SIZE = 500


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
        self._backoff = backoff or reflector.backoff_schedule()
        self._absent_poll = absent_poll
        self._rand = rand
        self._store: dict[str, Obj] = {}
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._absent = False
        self._cursor = reflector.Cursor()
        #: How many times the informer has listed (the first list included).
        self.lists = 0

    @property
    def resource_version(self) -> str:
        """The resourceVersion the store is synced to (the last list's, then the last event's)."""
        return self._cursor.resource_version

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
            step = self._cursor.step
            if self._cursor.delay:
                await asyncio.sleep(self._cursor.delay)
            try:
                if step is Step.LIST:
                    await self._list()
                else:
                    await self._watch()
            except NotFoundError as exc:
                if not (self.optional and step is Step.LIST):
                    self._failed(step, exc)
                    continue
                self._mark_absent(exc)
                # Polling for the resource is not a failure: no back-off, the same poll each time.
                self._cursor = dataclasses.replace(self._cursor, delay=self._absent_poll)
            except ApiError as exc:
                self._failed(step, exc)

    def _failed(self, step: Step, exc: ApiError) -> None:
        self._cursor = reflector.failed(self._cursor, exc.status, exc.reason, self._backoff)
        if self._cursor.expired:
            log.info("%s: %s expired (%s); re-listing", self.name, step, exc.message)
        else:
            log.warning("%s: %s failed: %s; re-listing in %.1fs", self.name, step, exc, self._cursor.delay)

    def _mark_absent(self, exc: ApiError) -> None:
        if not self._absent:
            log.debug(
                "%s: not served yet (%s); polling every %.1fs", self.name, exc.message, self._absent_poll
            )
        self._absent = True
        self._store, changes = reflector.relist_changes(self._store, ())
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
        self._cursor = reflector.listed(self._cursor, listed)
        self._store, changes = reflector.relist_changes(self._store, listed.get("items") or [])
        for change in changes:
            self._dispatch(*change)
        self._synced.set()

    async def _watch(self) -> None:
        async for event_type, obj in self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self._cursor.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_seconds=reflector.watch_timeout(self._rand()),
        ):
            change = reflector.apply_event(self._store, event_type, obj)
            if change is not None:
                self._dispatch(*change)
            self._cursor = reflector.observed(self._cursor, obj)
        self._cursor = reflector.closed(self._cursor)


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
