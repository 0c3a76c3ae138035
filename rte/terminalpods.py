"""The node's terminal pods (``--exclude-terminal-pods``), kept current by list + watch in a thread.

This module owns the I/O half of upstream's ``terminalpods`` podresources middleware:
knowing which pods bound to this node have ended (phase ``Succeeded`` or ``Failed``),
so that :func:`nrop.rte.decisions.scan.exclude_terminal_pods` can drop them from the ``List``
response (some kubelets keep listing a terminal pod until it is deleted, and its
resources are no longer held).

Upstream runs a cluster-wide pod informer with the field selector
``status.phase==Failed,status.phase==Succeeded``. Field selector terms are ANDed, so on
a real API server that selector matches no pod at all and the middleware drops nothing.
Here the selector says what upstream means — this node's pods in neither ``Pending``,
``Running`` nor ``Unknown`` (:func:`field_selector`) — and is scoped to the node, as the
kubelet only lists its own pods anyway.

:class:`TerminalPods` follows client-go's reflector rule (:mod:`nrop.api.reflector`, shared
with the scheduler's informers) in a thread: it lists, then watches from the list's
resourceVersion, watches again from the last one seen when the server ends a watch (5 to
10 minutes; bookmarks keep it current), lists again at once when a watch expired (410,
an info line) and after a back-off on any other failure (a deduplicated warning). Pods
that leave the selection arrive as ``DELETED`` events. Upstream's informer resyncs its
handlers every minute, which changes nothing for a cache without handlers, so there is
no resync here. The first scan waits for the first list (:attr:`TerminalPods.synced`), as
upstream waits for its informer cache to sync.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Any, Final

from nrop.api import reflector
from nrop.api.reflector import Step
from nrop.api.restapi import PODS, ApiError, query
from nrop.api.restclient import RestClient, Watch
from nrop.rte.retrying import FailureLog

__all__ = ["TerminalPods", "field_selector"]

log = logging.getLogger(__name__)

#: A list taking longer than this fails (and is retried after the back-off).
LIST_TIMEOUT: Final = 60.0
_NON_TERMINAL_PHASES: Final = ("Pending", "Running", "Unknown")

PodKey = tuple[str, str]


def field_selector(node_name: str) -> str:
    """Pods bound to ``node_name`` whose phase is ``Succeeded`` or ``Failed``."""
    terms = [f"spec.nodeName={node_name}"] + [f"status.phase!={phase}" for phase in _NON_TERMINAL_PHASES]
    return ",".join(terms)


def _pod_key(obj: dict[str, Any]) -> PodKey:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace", "")), str(metadata.get("name", "")))


class TerminalPods:
    """The set of ``(namespace, name)`` of this node's terminal pods; see the module docstring."""

    def __init__(
        self,
        api: RestClient,
        node_name: str,
        *,
        min_watch_timeout: float = reflector.MIN_WATCH_TIMEOUT,
    ) -> None:
        self.node_name = node_name
        self.selector = field_selector(node_name)
        self.synced = threading.Event()
        self._api = api
        self._min_watch_timeout = min_watch_timeout
        self._backoff = reflector.backoff_schedule()
        self._cursor = reflector.Cursor()
        self._pods: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch: Watch | None = None
        self._thread = threading.Thread(target=self._run, name="terminal-pods", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.close()

    def current(self) -> frozenset[PodKey]:
        with self._lock:
            return frozenset(_pod_key(pod) for pod in self._pods.values())

    def _list(self) -> None:
        listed = self._api.request(
            "GET", PODS.path(), params=query(fieldSelector=self.selector), timeout=LIST_TIMEOUT
        )
        with self._lock:
            self._pods, _ = reflector.relist_changes(self._pods, listed.get("items") or [])
        self._cursor = reflector.listed(self._cursor, listed)

    def _follow(self) -> None:
        self._watch = self._api.watch(
            PODS.path(),
            params=query(
                fieldSelector=self.selector,
                resourceVersion=self._cursor.resource_version,
                allowWatchBookmarks=True,
            ),
            timeout_seconds=reflector.watch_timeout(random.random(), self._min_watch_timeout),
        )
        if self._stop.is_set():
            self._watch.close()
        for kind, obj in self._watch:
            if self._stop.is_set():
                return
            with self._lock:
                reflector.apply_event(self._pods, kind, obj)
            self._cursor = reflector.observed(self._cursor, obj)
        if self._stop.is_set():
            return
        self._cursor = reflector.closed(self._cursor)

    def _run(self) -> None:
        failures = FailureLog(log)
        what = f"terminal pods of node {self.node_name}"
        while not self._stop.is_set():
            step = self._cursor.step
            if self._stop.wait(self._cursor.delay):
                return
            try:
                if step is Step.WATCH:
                    self._follow()
                    continue
                self._list()
                if not self.synced.is_set():
                    log.info("%s: %d at start", what, len(self.current()))
                self.synced.set()
                failures.recovered(f"watching {what}")
            except Exception as exc:  # the thread must outlive every fault, as the exporter does
                if self._stop.is_set():
                    return
                if isinstance(exc, ApiError):  # status 0: no response, the message says why
                    code, reason, text = exc.status, exc.reason if exc.status else "", str(exc)
                else:
                    code, reason, text = 0, "", f"{type(exc).__name__}: {exc}"
                self._cursor = reflector.failed(self._cursor, code, reason, self._backoff)
                if self._cursor.expired:
                    log.info("%s: watch expired (%s); re-listing", what, text)
                    continue
                failures.failed(f"cannot list/watch {what}: {text}", self._cursor.delay)
