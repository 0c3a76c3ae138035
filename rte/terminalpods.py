"""The node's terminal pods (``--exclude-terminal-pods``), kept current by list + watch in a thread.

This module owns the I/O half of upstream's ``terminalpods`` podresources middleware:
knowing which pods bound to this node have ended (phase ``Succeeded`` or ``Failed``),
so that :func:`nrop.rte.scan.exclude_terminal_pods` can drop them from the ``List``
response (some kubelets keep listing a terminal pod until it is deleted, and its
resources are no longer held).

Upstream runs a cluster-wide pod informer with the field selector
``status.phase==Failed,status.phase==Succeeded``. Field selector terms are ANDed, so on
a real API server that selector matches no pod at all and the middleware drops nothing.
Here the selector says what upstream means — this node's pods in neither ``Pending``,
``Running`` nor ``Unknown`` (:func:`field_selector`) — and is scoped to the node, as the
kubelet only lists its own pods anyway.

:class:`TerminalPods` lists, then watches from the list's resourceVersion; a watch ends
after ``resync`` seconds (upstream's informer resyncs every minute) or on any error, and
is followed by a fresh list (after a back-off when it failed; at once, with an info line,
when the watch expired with 410, as client-go's reflector does). Pods that leave the
selection arrive as ``DELETED`` events. The first scan waits for the first list
(:attr:`TerminalPods.synced`), as upstream waits for its informer cache to sync.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from nrop.rte.retrying import Backoff, FailureLog

__all__ = ["TerminalPods", "apply_event", "field_selector"]

log = logging.getLogger(__name__)

DEFAULT_RESYNC: Final = 60.0
_NON_TERMINAL_PHASES: Final = ("Pending", "Running", "Unknown")
_CLIENT_ERRORS: Final = (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError)

PodKey = tuple[str, str]


def field_selector(node_name: str) -> str:
    """Pods bound to ``node_name`` whose phase is ``Succeeded`` or ``Failed``."""
    terms = [f"spec.nodeName={node_name}"] + [f"status.phase!={phase}" for phase in _NON_TERMINAL_PHASES]
    return ",".join(terms)


def _key(obj: Mapping[str, Any]) -> PodKey:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace", "")), str(metadata.get("name", "")))


def apply_event(pods: set[PodKey], event_type: str, obj: Mapping[str, Any]) -> None:
    """Fold one watch event of the terminal-pod selection into ``pods``."""
    if event_type in ("ADDED", "MODIFIED"):
        pods.add(_key(obj))
    elif event_type == "DELETED":
        pods.discard(_key(obj))


class TerminalPods:
    """The set of ``(namespace, name)`` of this node's terminal pods; see the module docstring."""

    def __init__(
        self, api_client: client.ApiClient, node_name: str, *, resync: float = DEFAULT_RESYNC
    ) -> None:
        self.node_name = node_name
        self.selector = field_selector(node_name)
        self.synced = threading.Event()
        self._core = client.CoreV1Api(api_client)
        self._resync = resync
        self._pods: set[PodKey] = set()
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
            return frozenset(self._pods)

    def _replace(self, pods: Iterable[PodKey]) -> None:
        with self._lock:
            self._pods = set(pods)

    def _list(self) -> str:
        response = self._core.list_pod_for_all_namespaces(
            field_selector=self.selector, _request_timeout=self._resync
        )
        self._replace((pod.metadata.namespace, pod.metadata.name) for pod in response.items)
        return str(response.metadata.resource_version)

    def _follow(self, resource_version: str) -> None:
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self._core.list_pod_for_all_namespaces,
            field_selector=self.selector,
            resource_version=resource_version,
            timeout_seconds=max(1, int(self._resync)),
        )
        # Deserialising events is what makes the client raise an in-stream 410 as an
        # ApiException (with deserialize=False it fails on the ERROR event with a KeyError).
        for event in stream:
            if self._stop.is_set():
                break
            with self._lock:
                apply_event(self._pods, event.get("type", ""), event.get("raw_object") or {})

    def _run(self) -> None:
        failures = FailureLog(log)
        backoff = Backoff(initial=0.5, maximum=30.0)
        what = f"terminal pods of node {self.node_name}"
        while not self._stop.is_set():
            try:
                resource_version = self._list()
                if not self.synced.is_set():
                    log.info("%s: %d at start", what, len(self.current()))
                self.synced.set()
                failures.recovered(f"watching {what}")
                backoff.reset()
                self._follow(resource_version)
            except Exception as exc:  # the thread must outlive every fault, as the exporter does
                if self._stop.is_set():
                    return
                if isinstance(exc, ApiException) and exc.status == 410:
                    log.info("%s: watch expired (%s); re-listing", what, exc.reason)
                    continue
                if isinstance(exc, ApiException):
                    text = f"HTTP {exc.status} {exc.reason}"
                elif isinstance(exc, _CLIENT_ERRORS):
                    text = str(exc)
                else:
                    text = f"{type(exc).__name__}: {exc}"
                delay = backoff.next_delay()
                failures.failed(f"cannot list/watch {what}: {text}", delay)
                self._stop.wait(delay)
