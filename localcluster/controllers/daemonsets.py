"""The DaemonSet controller: one daemon pod per eligible node, rolled to new templates, and its status.

The I/O shell of :mod:`.daemonplacement`.  Follows DaemonSets, their pods and every Node
(labels, taints and new nodes change eligibility).  A sync claims the namespace's pods,
groups them by target node (``spec.nodeName`` or the pinned node affinity, so pods the
scheduler has not bound yet count for their node, as upstream), then:

* creates a pod for each eligible node without one (``SuccessfulCreate``), deletes pods on
  nodes that are no longer eligible and surplus pods (``SuccessfulDelete``);
* replaces failed daemon pods after a per-node back-off (1 s doubling, at most 15 min), so a
  kubelet that keeps rejecting the pod is not hammered (``FailedDaemonPod`` warning);
* with ``updateStrategy: RollingUpdate``, deletes old pods within ``maxUnavailable`` or
  surges new ones within ``maxSurge``; ``OnDelete`` leaves old pods alone;
* writes the status through ``daemonsets/status``.

The revision hash is :func:`.workloads.compute_hash` of the template and ``collisionCount``
(the registry serves no ControllerRevisions, so none are written).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import daemonplacement as placement
from nrop.localcluster.controllers.decisions.workloads import compute_hash, controller_of, pod_from_template
from nrop.localcluster.controllers.reconciling import Controller, key_of, kind_of, split_key
from nrop.localcluster.controllers.replicasets import claim_objects, owner_subscriptions, selector_of

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["DaemonSetController"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_DAEMONSETS = ("apps", "daemonsets")
_PODS = ("", "pods")
_NODES = ("", "nodes")


class DaemonSetController(Controller):
    name = "daemonset-controller"

    def __init__(
        self, server: InProcessAPI, clock: Clock, *, backoff_base: float = 1.0, backoff_max: float = 900.0
    ) -> None:
        super().__init__(server, clock)
        self.ds_kind = kind_of(server, "apps", "daemonsets")
        self.pod_kind = kind_of(server, "", "pods")
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        # (daemon set uid, node) -> (failures seen, earliest next deletion)
        self._failed_backoff: dict[tuple[str, str], tuple[int, datetime]] = {}

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return (
            *owner_subscriptions(self.store, _DAEMONSETS, "DaemonSet", _PODS),
            (_NODES, lambda e: [key_of(ds) for ds in self.store.list(_DAEMONSETS)]),
        )

    def initial_keys(self) -> Iterable[str]:
        return [key_of(ds) for ds in self.store.list(_DAEMONSETS)]

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        ds = self.store.get(_DAEMONSETS, namespace, name)
        if ds is None:
            return
        selector = selector_of(ds)
        if selector is None:
            return
        nodes = self.store.list(_NODES)
        revision_hash = compute_hash(
            (ds.get("spec") or {}).get("template") or {}, (ds.get("status") or {}).get("collisionCount")
        )
        claim_objects(self, ds, self.store.list(_PODS, namespace), selector, self.pod_kind)
        now = self.clock.now()
        if not ds["metadata"].get("deletionTimestamp"):
            self._update(ds, nodes, self._pods_by_node(ds), revision_hash, now)
        ds = self.store.get(_DAEMONSETS, namespace, name)
        if ds is None:
            return
        status = placement.daemon_set_status(ds, nodes, self._pods_by_node(ds), revision_hash, now)
        if status != (ds.get("status") or {}):
            updated = copy.deepcopy(ds)
            updated["status"] = status
            self.update(self.ds_kind, updated, status=True)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status.get("numberReady", 0) != status.get("numberAvailable", 0):
            self.enqueue_after(key, min_ready)

    def _pods_by_node(self, ds: Obj) -> dict[str, list[Obj]]:
        grouped: dict[str, list[Obj]] = {}
        uid = ds["metadata"]["uid"]
        for pod in self.store.list(_PODS, ds["metadata"]["namespace"]):
            if (controller_of(pod) or {}).get("uid") == uid:
                grouped.setdefault(placement.target_node(pod), []).append(pod)
        return grouped

    def _update(
        self, ds: Obj, nodes: list[Obj], pods_by_node: dict[str, list[Obj]], revision_hash: str, now: datetime
    ) -> None:
        plan = placement.manage(ds, nodes, pods_by_node, revision_hash, now)
        doomed = list(plan.delete)
        for pod in plan.failed:
            if self._failed_pod_may_go(ds, pod, now):
                doomed.append(pod)
        create_on = list(plan.create_on)
        strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
        if strategy == "RollingUpdate":
            desired = sum(1 for node in nodes if placement.should_run(ds, node)[0])
            old, surge_on = placement.rolling_update(ds, pods_by_node, revision_hash, desired, now)
            doomed.extend(old)
            create_on.extend(n for n in surge_on if n not in create_on)
        self._sync_nodes(ds, create_on, doomed, revision_hash)

    def _failed_pod_may_go(self, ds: Obj, pod: Obj, now: datetime) -> bool:
        node = placement.target_node(pod)
        key = (ds["metadata"]["uid"], node)
        failures, not_before = self._failed_backoff.get(key, (0, now))
        if now < not_before:
            self.enqueue_after(key_of(ds), (not_before - now).total_seconds())
            return False
        delay = min(self.backoff_base * 2**failures, self.backoff_max)
        self._failed_backoff[key] = (failures + 1, now + timedelta(seconds=delay))
        meta = pod["metadata"]
        self.recorder.event(
            ds,
            "Warning",
            "FailedDaemonPod",
            f"Found failed daemon pod {meta['namespace']}/{meta['name']} on node {node}, will try to kill it",
        )
        return True

    def _sync_nodes(self, ds: Obj, create_on: list[str], doomed: list[Obj], revision_hash: str) -> None:
        seen: set[str] = set()
        for pod in doomed:
            uid = pod["metadata"]["uid"]
            if uid in seen:
                continue
            seen.add(uid)
            try:
                self.rest.delete(
                    self.pod_kind,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    DeleteOptions(preconditions={"uid": uid}),
                )
            except (errors.NotFound, errors.Conflict):
                continue
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        if not create_on:
            return
        template = placement.daemon_pod_template(ds, revision_hash)
        namespace = ds["metadata"]["namespace"]
        for node in create_on:
            body = pod_from_template(placement.pod_for_node(template, node), ds)
            try:
                pod = self.rest.create(self.pod_kind, namespace, body, self.opts)
            except errors.StatusError as err:
                self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {err.message}")
                raise
            self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
