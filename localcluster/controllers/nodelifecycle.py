"""The node lifecycle controller: Lease-based node health, conditions and taints.

The I/O shell of :mod:`.nodehealth`.  Every ``--node-monitor-period`` (and on every Node or
node Lease change) each node is checked: a node whose Lease in ``kube-node-lease`` (or
Ready heartbeat) has not been renewed for the grace period gets its kubelet conditions set
to ``Unknown`` through ``nodes/status`` (and a ``NodeNotReady`` event; a node seen for the
first time gets ``RegisteredNode``); its taints then
follow its conditions (``node.kubernetes.io/unreachable`` ``NoSchedule`` and ``NoExecute``
while Ready is Unknown, removed once the kubelet posts Ready again).  Pods on an
unreachable node are neither marked not ready nor evicted (upstream's taint-based
eviction is not emulated).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import nodehealth
from nrop.localcluster.controllers.decisions.workloads import get_condition
from nrop.localcluster.controllers.reconciling import Controller, kind_of

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["NodeLifecycleController"]

log = logging.getLogger(__name__)
_NODES = ("", "nodes")
_LEASES = ("coordination.k8s.io", "leases")
_LEASE_NAMESPACE = "kube-node-lease"


class NodeLifecycleController(Controller):
    name = "node-controller"

    def __init__(
        self,
        server: InProcessAPI,
        clock: Clock,
        *,
        grace_period: float = 40.0,
        startup_grace_period: float = 60.0,
        monitor_period: float = 5.0,
    ) -> None:
        super().__init__(server, clock)
        self.node_kind = kind_of(server, "", "nodes")
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.monitor_period = monitor_period
        self._probes: dict[str, nodehealth.Probe] = {}
        self._monitor: asyncio.Task[None] | None = None

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return ((_NODES, lambda e: [e.obj["metadata"]["name"]]), (_LEASES, self._lease_keys))

    @staticmethod
    def _lease_keys(event: WatchEvent) -> list[str]:
        meta = event.obj["metadata"]
        return [meta["name"]] if meta.get("namespace") == _LEASE_NAMESPACE else []

    def initial_keys(self) -> Iterable[str]:
        return [n["metadata"]["name"] for n in self.store.list(_NODES)]

    def start(self) -> None:
        super().start()
        self._monitor = asyncio.get_running_loop().create_task(self._monitor_loop(), name="node-monitor")

    async def stop(self) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
            await asyncio.wait({self._monitor}, timeout=1)
        await super().stop()

    async def _monitor_loop(self) -> None:
        while True:
            await asyncio.sleep(self.monitor_period)
            for key in self.initial_keys():
                self.enqueue(key)

    def sync(self, key: str) -> None:
        node = self.store.get(_NODES, "", key)
        if node is None:
            self._probes.pop(key, None)
            return
        now = self.clock.now()
        if key not in self._probes:
            self.recorder.event(
                node, "Normal", "RegisteredNode", f"Node {key} event: Registered Node {key} in Controller"
            )
        lease = self.store.get(_LEASES, _LEASE_NAMESPACE, key)
        probe = nodehealth.observe(self._probes.get(key), node, lease, now)
        self._probes[key] = probe
        conditions = nodehealth.stale_conditions(
            node, probe, now, self.grace_period, self.startup_grace_period
        )
        if conditions is not None:
            was_ready = (
                get_condition(list((node.get("status") or {}).get("conditions") or ()), "Ready") or {}
            ).get("status") == "True"
            updated = copy.deepcopy(node)
            updated.setdefault("status", {})["conditions"] = conditions
            node = self.update(self.node_kind, updated, status=True)
            log.info("node %s: no heartbeat for %.0fs, conditions set to Unknown", key, self.grace_period)
            if was_ready:
                self.recorder.event(
                    {**node, "metadata": {**node["metadata"], "uid": key}},
                    "Normal",
                    "NodeNotReady",
                    f"Node {key} status is now: NodeNotReady",
                )
        taints = nodehealth.wanted_taints(node, now)
        if taints != ((node.get("spec") or {}).get("taints") or []):
            updated = copy.deepcopy(node)
            spec = updated.setdefault("spec", {})
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)
            self.update(self.node_kind, updated)
        else:
            due = (probe.probe_time - now).total_seconds() + self.grace_period + 0.05
            if due > 0 and conditions is None:
                self.enqueue_after(key, due)
