"""What a kubelet writes about its pods: ``status``, events, and the final delete.

Upstream's status manager and event recorder, as a thin I/O shell writing through the API server
in-process:

* a pod's API object is the pod itself, or for a static pod its mirror pod (annotation
  ``kubernetes.io/config.mirror`` = the static pod's UID); writes go to that object only;
* :meth:`PodReporter.write_status` merges the kubelet's own conditions over the others (keeping
  ``PodScheduled``, adding it if missing) and tolerates the pod being gone or changed;
* :meth:`PodReporter.event` records a pod event (``Warning`` unless told otherwise), with the
  container's ``fieldPath``;
* :meth:`PodReporter.delete_now` removes the pod with grace 0 once its containers stopped.

Runs on the cluster's event loop (store writes are synchronous on it).
"""

from __future__ import annotations

import copy
import logging
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.clock import Clock
from nrop.localcluster.kubelet import staticpods
from nrop.localcluster.kubelet.decisions import nodeobjects, podevents

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["PodRef", "PodReporter"]

log = logging.getLogger(__name__)

#: The pod conditions the kubelet owns (``PodScheduled`` is the scheduler's).
_OWN_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")

Obj = dict[str, Any]


class PodRef(Protocol):
    """Which pod a write is about: the kubelet's record of it."""

    uid: str
    namespace: str
    name: str
    #: From the manifest directory: its API object is its mirror pod.
    static: bool


class PodReporter:
    """The pod status, event and delete writes of the kubelet of node ``node_name``."""

    def __init__(
        self,
        server: InProcessAPI,
        node_name: str,
        clock: Clock,
        opts: WriteOptions,
        *,
        pod_kind: Kind,
        event_kind: Kind,
    ) -> None:
        self.server = server
        self.name = node_name
        self.clock = clock
        self._opts = opts
        self._pod_kind = pod_kind
        self._event_kind = event_kind

    def current(self, record: PodRef) -> Obj | None:
        """The pod's API object as stored, or ``None`` when it is gone (or is another pod now)."""
        try:
            pod = self.server.rest.get(self._pod_kind, record.namespace, record.name)
        except errors.NotFound:
            return None
        return pod if self.is_api_object(record, pod) else None

    @staticmethod
    def is_api_object(record: PodRef, pod: Obj) -> bool:
        """Whether ``pod`` is the API object of the record: the pod itself, or a static pod's mirror."""
        if record.static:
            annotations = pod["metadata"].get("annotations") or {}
            return annotations.get(staticpods.CONFIG_MIRROR) == record.uid
        return pod["metadata"].get("uid") == record.uid

    def write_status(self, record: PodRef, fields: Obj, extra_conditions: list[Obj] | None = None) -> None:
        try:
            current = self.server.rest.get(self._pod_kind, record.namespace, record.name)
        except errors.NotFound:
            return
        if not self.is_api_object(record, current):
            return
        pod = copy.deepcopy(current)
        status = pod.setdefault("status", {})
        if extra_conditions is not None:
            kept = [c for c in status.get("conditions") or () if c.get("type") not in _OWN_CONDITIONS]
            if not any(c.get("type") == "PodScheduled" for c in kept):
                kept.append(
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": fields["startTime"],
                    }
                )
            status["conditions"] = extra_conditions + kept
        status.update(fields)
        try:
            self.server.rest.update(
                self._pod_kind, record.namespace, record.name, pod, self._opts, subresource="status"
            )
        except (errors.NotFound, errors.Conflict) as err:
            log.debug(
                "node %s: status of %s/%s not written: %s", self.name, record.namespace, record.name, err
            )

    def container_events(self, pod: Obj, events: list[podevents.ContainerEvent]) -> None:
        now = self.clock.now()
        for event in events:
            self.event(
                pod,
                event.reason,
                event.message,
                now,
                field_path=event.field_path,
                warning=event.type == "Warning",
            )

    def event(
        self,
        pod: Obj,
        reason: str,
        message: str,
        now: datetime,
        *,
        container: str = "",
        field_path: str = "",
        warning: bool = True,
    ) -> None:
        body = nodeobjects.rejection_event(pod, reason, message, self.name, now, unique=uuid.uuid4().hex[:16])
        if container:
            field_path = f"spec.containers{{{container}}}"
        if field_path:
            body["involvedObject"]["fieldPath"] = field_path
        if not warning:
            body["type"] = "Normal"
        try:
            self.server.rest.create(self._event_kind, pod["metadata"]["namespace"], body, self._opts)
        except errors.StatusError as err:
            log.warning("node %s: event %s not recorded: %s", self.name, reason, err)

    def delete_now(self, namespace: str, name: str, uid: str) -> None:
        try:
            self.server.rest.delete(
                self._pod_kind, namespace, name, DeleteOptions(grace_period=0, preconditions={"uid": uid})
            )
        except (errors.NotFound, errors.Conflict):
            pass
