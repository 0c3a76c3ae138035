"""What a kubelet writes about its Node: registration, capacity, conditions, the Lease and node events.

Upstream's ``kubelet_node_status.go`` and node lease controller, as a thin I/O shell over the
bodies of :mod:`.nodeobjects`, writing through the API server in-process:

* :meth:`NodeReporter.register` creates the Node, or on a restart writes only its status so that
  what others wrote on it (labels, annotations, taints, cordon) stays;
* :meth:`NodeReporter.update_resources` writes ``capacity``/``allocatable`` when they changed
  (device plugins coming and going);
* :meth:`NodeReporter.renew_lease` and :meth:`NodeReporter.sync_conditions` are the heartbeat:
  the Lease, and ``Ready`` conditions posted again after the node lifecycle controller marked
  them ``Unknown``;
* :meth:`NodeReporter.post_events` records the node's start-up events.

Runs on the cluster's event loop (store writes are synchronous on it); the kubelet decides when.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from nrop.api.metatime import rfc3339
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.clock import Clock
from nrop.localcluster.kubelet.decisions import nodeobjects, nodestatus, podevents
from nrop.localcluster.kubelet.machine import NodeSpec

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["NodeReporter"]

log = logging.getLogger(__name__)


class NodeReporter:
    """The Node and Lease writes of one kubelet, at ``address`` with ``pod_cidr``.

    ``resources`` gives the node's current capacity/allocatable (the kubelet's device manager
    counts devices as plugins come and go).
    """

    def __init__(
        self,
        server: InProcessAPI,
        spec: NodeSpec,
        clock: Clock,
        opts: WriteOptions,
        *,
        address: str,
        pod_cidr: str,
        node_kind: Kind,
        lease_kind: Kind,
        event_kind: Kind,
        resources: Callable[[], nodestatus.NodeResources],
    ) -> None:
        self.server = server
        self.spec = spec
        self.name = spec.name
        self.address = address
        self.pod_cidr = pod_cidr
        self.clock = clock
        self._opts = opts
        self._node_kind = node_kind
        self._lease_kind = lease_kind
        self._event_kind = event_kind
        self._resources = resources

    def register(self) -> None:
        resources = self._resources()
        body = nodeobjects.node_object(
            self.spec,
            address=self.address,
            pod_cidr=self.pod_cidr,
            capacity=resources.capacity,
            allocatable=resources.allocatable,
            now=self.clock.now(),
        )
        try:
            self.server.rest.create(self._node_kind, "", body, self._opts)
        except errors.AlreadyExists:
            # Re-registration (a restart): as upstream's kubelet, leave what others wrote on the
            # Node (labels, annotations, taints, cordon) and write only the status.
            current = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
            current["status"] = body["status"]
            self.server.rest.update(self._node_kind, "", self.name, current, self._opts, subresource="status")

    def post_events(self, mount_namespaces_refused: str | None = None) -> None:
        now = self.clock.now()
        for kind, reason, message in podevents.node_events(self.name, mount_namespaces_refused):
            body = nodeobjects.node_event(self.name, kind, reason, message, now, unique=uuid.uuid4().hex[:16])
            try:
                self.server.rest.create(self._event_kind, "default", body, self._opts)
            except errors.StatusError as err:
                log.warning("node %s: event %s not recorded: %s", self.name, reason, err)

    def update_resources(self) -> None:
        try:
            node = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
        except errors.NotFound:
            return
        resources = self._resources()
        status = node.setdefault("status", {})
        if (
            status.get("capacity") == resources.capacity
            and status.get("allocatable") == resources.allocatable
        ):
            return
        status["capacity"], status["allocatable"] = resources.capacity, resources.allocatable
        heartbeat = rfc3339(self.clock.now())
        for condition in status.get("conditions") or ():
            condition["lastHeartbeatTime"] = heartbeat
        self.server.rest.update(self._node_kind, "", self.name, node, self._opts, subresource="status")
        log.info("node %s: capacity/allocatable updated", self.name)

    def renew_lease(self) -> None:
        namespace = nodeobjects.NODE_LEASE_NAMESPACE
        try:
            lease = copy.deepcopy(self.server.rest.get(self._lease_kind, namespace, self.name))
        except errors.NotFound:
            node = self.server.rest.get(self._node_kind, "", self.name)
            body = nodeobjects.lease_object(self.name, node["metadata"]["uid"], self.clock.now())
            self.server.rest.create(self._lease_kind, namespace, body, self._opts)
            return
        fresh = nodeobjects.lease_object(self.name, "", self.clock.now())
        lease.setdefault("spec", {}).update(fresh["spec"])
        self.server.rest.update(self._lease_kind, namespace, self.name, lease, self._opts)

    def sync_conditions(self) -> None:
        """Post healthy conditions again if someone else (the node lifecycle controller) changed them.

        Upstream's kubelet recomputes its status every ``nodeStatusUpdateFrequency`` and
        writes it when it differs from the Node's, which is how a node that was marked
        ``Unknown`` while its lease lapsed becomes Ready again.
        """
        try:
            node = copy.deepcopy(self.server.rest.get(self._node_kind, "", self.name))
        except errors.NotFound:
            return
        status = node.setdefault("status", {})
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") == "True":
            return
        now = self.clock.now()
        status["conditions"] = nodeobjects.node_conditions(now, now)
        self.server.rest.update(self._node_kind, "", self.name, node, self._opts, subresource="status")
        log.info("node %s: conditions posted as Ready again", self.name)
