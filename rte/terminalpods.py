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

import json
import logging
import random
import threading
from typing import Any, Final

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from nrop.api import reflector
from nrop.api.reflector import Step
from nrop.rte.retrying import FailureLog

__all__ = ["TerminalPods", "field_selector"]

log = logging.getLogger(__name__)

#: A list taking longer than this fails (and is retried after the back-off).
LIST_TIMEOUT: Final = 60.0
_NON_TERMINAL_PHASES: Final = ("Pending", "Running", "Unknown")
_CLIENT_ERRORS: Final = (urllib3.exceptions.HTTPError, OSError, ValueError)

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
        api_client: client.ApiClient,
        node_name: str,
        *,
        min_watch_timeout: float = reflector.MIN_WATCH_TIMEOUT,
    ) -> None:
        self.node_name = node_name
        self.selector = field_selector(node_name)
        self.synced = threading.Event()
        self._core = client.CoreV1Api(api_client)
        self._min_watch_timeout = min_watch_timeout
        self._backoff = reflector.backoff_schedule()
        self._cursor = reflector.Cursor()
        self._pods: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name="terminal-pods", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()

    def current(self) -> frozenset[PodKey]:
        with self._lock:
            return frozenset(_pod_key(pod) for pod in self._pods.values())

    def _list(self) -> None:
        response = self._core.list_pod_for_all_namespaces(
            field_selector=self.selector, _request_timeout=LIST_TIMEOUT, _preload_content=False
        )
        listed = json.loads(response.data)
        with self._lock:
            self._pods, _ = reflector.relist_changes(self._pods, listed.get("items") or [])
        self._cursor = reflector.listed(self._cursor, listed)

    def _follow(self) -> None:
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self._core.list_pod_for_all_namespaces,
            field_selector=self.selector,
            resource_version=self._cursor.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=reflector.watch_timeout(random.random(), self._min_watch_timeout),
        )
        # Deserialising events is what makes the client raise an in-stream 410 as an
        # ApiException (with deserialize=False it fails on the ERROR event with a KeyError).
        for event in stream:
            if self._stop.is_set():
                return
            obj = event.get("raw_object") or {}
            with self._lock:
                reflector.apply_event(self._pods, event.get("type", ""), obj)
            self._cursor = reflector.observed(self._cursor, obj)
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
                if isinstance(exc, ApiException):
                    code, reason, text = exc.status or 0, exc.reason or "", f"HTTP {exc.status} {exc.reason}"
                else:  # no response: a client error as its text says it, anything else with its type
                    code, reason = 0, ""
                    text = str(exc) if isinstance(exc, _CLIENT_ERRORS) else f"{type(exc).__name__}: {exc}"
                self._cursor = reflector.failed(self._cursor, code, reason, self._backoff)
                if self._cursor.expired:
                    log.info("%s: watch expired (%s); re-listing", what, reason)
                    continue
                failures.failed(f"cannot list/watch {what}: {text}", self._cursor.delay)
