"""NodeResourceTopologyMatch's Filter decision: can the pod's containers each fit one NUMA node?

This module owns the pure part of upstream's Filter (``pkg/noderesourcetopology/filter.go``):

* :func:`numa_node_list` turns the zones of an NRT object into the per-NUMA ``available``
  amounts and distances the filter and score use (``createNUMANodeList``);
* :func:`resources_available_in_any_numa_node` is the simplified topology manager: the
  lowest NUMA node on which every requested resource fits, as a kubelet with the
  ``single-numa-node`` policy would pick it;
* the container-scope and pod-scope handlers, with upstream's exact status strings;
* :func:`filter_with_topology`, the decision once an NRT object is in hand, and
  :func:`filter_with_parsed`, the same over a :class:`ParsedTopology` (the NRT read
  once, so callers can reuse it across nodes' Filter and Score calls).

What comes before (node missing, BestEffort pods, the cache lookup, marking a node for
resync) is the plugin's flow in :mod:`nrop.sched.framework.plugins.noderesourcetopology.plugin`.

Quantities are compared exactly; requests are visited in pod-spec order, which is one of
the orders Go's map iteration may produce (only the text of an ``inconsistent resource
accounting`` error can depend on it).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from nrop.api.fielderrors import go_quote
from nrop.api.nrt import (
    NodeResourceTopology,
    TopologyManagerConfig,
    Zone,
    numa_id_from_zone_name,
    topology_manager_config,
)
from nrop.api.quantity import Quantity
from nrop.sched.framework.interface import Code, NodeInfo, Status
from nrop.sched.framework.podrequests import (
    GUARANTEED,
    ResourceList,
    app_containers,
    container_requests,
    init_containers,
    is_host_level_resource,
    is_numa_affine_resource,
    is_scalar_resource,
    is_sidecar,
    pod_effective_request,
)

__all__ = [
    "CANNOT_ALIGN_CONTAINER",
    "CANNOT_ALIGN_INIT_CONTAINER",
    "CANNOT_ALIGN_POD",
    "CANNOT_ALIGN_SIDECAR_CONTAINER",
    "INCONSISTENT_RESOURCE_ACCOUNTING",
    "INVALID_NODE_TOPOLOGY_DATA",
    "NODE_NOT_FOUND",
    "SINGLE_NUMA_NODE",
    "Fit",
    "NUMANode",
    "ParsedTopology",
    "PodDemand",
    "filter_with_parsed",
    "filter_with_topology",
    "is_resource_set_suitable",
    "node_resource_names",
    "numa_node_list",
    "parse_topology",
    "pod_demand",
    "resources_available_in_any_numa_node",
    "single_numa_container_level",
    "single_numa_pod_level",
    "subtract_from_numa_node",
]

log = logging.getLogger(__name__)

NODE_NOT_FOUND: Final = "node not found"
INVALID_NODE_TOPOLOGY_DATA: Final = "invalid node topology data"
CANNOT_ALIGN_CONTAINER: Final = "cannot align container"
CANNOT_ALIGN_INIT_CONTAINER: Final = "cannot align init container"
CANNOT_ALIGN_SIDECAR_CONTAINER: Final = "cannot align sidecar container"
CANNOT_ALIGN_POD: Final = "cannot align pod"
INCONSISTENT_RESOURCE_ACCOUNTING: Final = "inconsistent resource accounting"

SINGLE_NUMA_NODE: Final = "single-numa-node"

#: NUMA ids the plugin can represent (a 64-bit mask). Upstream skips ids above 64 and
#: would index out of range on 64 itself, so 0..63 are the usable ones.
MAX_NUMA_ID: Final = 63
_ALL_NUMA_IDS: Final = frozenset(range(MAX_NUMA_ID + 1))

#: What ``NodeInfo.Allocatable`` always has, whatever the node reports.
_BASE_NODE_RESOURCES: Final = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


# ------------------------------------------------------------------------- NUMA node list


@dataclass(slots=True)
class NUMANode:
    """One NUMA zone: ``available`` per resource, and the distance to each other NUMA id."""

    numa_id: int
    resources: ResourceList = field(default_factory=dict)
    costs: dict[int, int] = field(default_factory=dict)

    def copy(self) -> NUMANode:
        return NUMANode(self.numa_id, dict(self.resources), dict(self.costs))


def _numa_id(name: str) -> int | None:
    try:
        numa_id = numa_id_from_zone_name(name)
    except ValueError:
        return None
    return numa_id


def numa_node_list(zones: Iterable[Zone]) -> list[NUMANode]:
    """The ``Node``-type zones in object order; only ``available`` is read.

    Zones whose name is not ``node-<id>`` with 0 <= id <= 63 are skipped (logged). Costs
    naming an unparsable zone, or an id above 64, are dropped. As upstream, a node's costs
    come from the *last* zone carrying its id.
    """
    nodes: list[NUMANode] = []
    zone_of: dict[int, Zone] = {}
    for zone in zones:
        if not zone.is_numa_node:
            continue
        numa_id = _numa_id(zone.name)
        if numa_id is None or numa_id > MAX_NUMA_ID:
            log.error("error getting the NUMA id of zone %r: skipped", zone.name)
            continue
        zone_of[numa_id] = zone
        nodes.append(NUMANode(numa_id, {res.name: res.available for res in zone.resources}))
    for node in nodes:
        for cost in zone_of[node.numa_id].costs:
            cost_id = _numa_id(cost.name)
            if cost_id is not None and cost_id <= MAX_NUMA_ID + 1:
                node.costs[cost_id] = cost.value
    return nodes


@dataclass(frozen=True, slots=True)
class ParsedTopology:
    """What Filter and Score read from an NRT: its topology-manager settings and NUMA node list."""

    conf: TopologyManagerConfig
    numa_nodes: tuple[NUMANode, ...]

    def fresh_numa_nodes(self) -> list[NUMANode]:
        """Private copies: the handlers take requests off them in place."""
        return [node.copy() for node in self.numa_nodes]


def parse_topology(nrt: NodeResourceTopology) -> ParsedTopology:
    return ParsedTopology(topology_manager_config(nrt), tuple(numa_node_list(nrt.zones)))


@dataclass(frozen=True, slots=True)
class PodDemand:
    """A pod's requests read once: the effective pod request and each (init, app) container's."""

    effective: ResourceList
    init: tuple[tuple[Mapping[str, Any], ResourceList], ...]
    app: tuple[tuple[Mapping[str, Any], ResourceList], ...]


def pod_demand(pod: Mapping[str, Any] | PodDemand) -> PodDemand:
    """The pod's :class:`PodDemand` (handlers accept either, so a caller can compute it once per cycle)."""
    if isinstance(pod, PodDemand):
        return pod
    return PodDemand(
        pod_effective_request(pod),
        tuple((c, container_requests(c)) for c in init_containers(pod)),
        tuple((c, container_requests(c)) for c in app_containers(pod)),
    )


def node_resource_names(allocatable: Mapping[str, Any]) -> frozenset[str]:
    """Resource names the scheduler's view of a node has: the base four plus scalar ones."""
    return _BASE_NODE_RESOURCES | {name for name in allocatable if is_scalar_resource(name)}


# --------------------------------------------------------------------------- fitting


def is_resource_set_suitable(qos: str, name: str, amount: Quantity, numa_amount: Quantity) -> bool:
    """Non-Guaranteed pods share cpu/memory/hugepages pools, so those always fit; else compare."""
    if qos != GUARANTEED and is_numa_affine_resource(name):
        return True
    return numa_amount >= amount


@dataclass(frozen=True, slots=True)
class Fit:
    """The NUMA node a kubelet would pick (``None`` when none fits) and, if not, the resource at fault."""

    numa_id: int | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.numa_id is not None


def resources_available_in_any_numa_node(
    numa_nodes: Iterable[NUMANode],
    requests: Mapping[str, Quantity],
    qos: str,
    node_resources: Collection[str],
) -> Fit:
    """The lowest NUMA id on which every non-zero request fits (upstream ``resourcesAvailableInAnyNUMANodes``).

    A resource the node does not expose at all fails at once. A host-level resource
    (storage, devices...) that no NUMA zone reports is skipped; any other resource that
    no zone reports empties the mask and fails.
    """
    nodes = list(numa_nodes)
    mask = set(_ALL_NUMA_IDS)
    for name, amount in requests.items():
        if amount.is_zero():
            continue
        if name not in node_resources:
            log.debug("early verdict: cannot meet request for %s", name)
            return Fit(None, name)
        has_affinity = False
        fitting: set[int] = set()
        for node in nodes:
            numa_amount = node.resources.get(name)
            if numa_amount is None:
                continue
            has_affinity = True
            if is_resource_set_suitable(qos, name, amount, numa_amount):
                fitting.add(node.numa_id)
        if not has_affinity and is_host_level_resource(name):
            continue
        mask &= fitting
        if not mask:
            log.debug("early verdict: %s fits no NUMA node", name)
            return Fit(None, name)
    return Fit(min(mask), "generic")


def subtract_from_numa_node(
    numa_nodes: Iterable[NUMANode], numa_id: int, qos: str, requests: Mapping[str, Quantity]
) -> str | None:
    """Take a container's exclusive requests off NUMA node ``numa_id`` in place.

    Shared-pool resources of non-Guaranteed pods, zero requests and resources the zone
    does not report are left alone. Returns the error detail if a request exceeds what is
    left (which the preceding fit check should make impossible), else None.
    """
    for node in numa_nodes:
        if node.numa_id != numa_id:
            continue
        for name, amount in requests.items():
            if qos != GUARANTEED and is_numa_affine_resource(name):
                continue
            if amount.is_zero() or name not in node.resources:
                continue
            left = node.resources[name] - amount
            if left.sign() < 0:
                return (
                    f"resource {go_quote(name)} request {amount} exceeds NUMA {numa_id} "
                    f"availability {node.resources[name]}"
                )
            node.resources[name] = left
    return None


# --------------------------------------------------------------------------- handlers


def single_numa_container_level(
    pod: Mapping[str, Any] | PodDemand, numa_nodes: list[NUMANode], qos: str, node_resources: Collection[str]
) -> Status:
    """Container scope: each init container alone, then app containers one after the other.

    Init containers run serially before the app containers, so they are checked one by
    one and take nothing away; app containers consume from the NUMA node they land on.
    """
    demand = pod_demand(pod)
    for container, requests in demand.init:
        kind = "sidecar" if is_sidecar(container) else "init"
        if not resources_available_in_any_numa_node(numa_nodes, requests, qos, node_resources).ok:
            log.info("cannot align %s container %r", kind, container.get("name"))
            return Status.unschedulable(
                CANNOT_ALIGN_SIDECAR_CONTAINER if kind == "sidecar" else CANNOT_ALIGN_INIT_CONTAINER
            )
    for container, requests in demand.app:
        fit = resources_available_in_any_numa_node(numa_nodes, requests, qos, node_resources)
        if fit.numa_id is None:
            log.info("cannot align container %r (%s)", container.get("name"), fit.reason)
            return Status.unschedulable(CANNOT_ALIGN_CONTAINER)
        error = subtract_from_numa_node(numa_nodes, fit.numa_id, qos, requests)
        if error is not None:
            return Status(Code.ERROR, (INCONSISTENT_RESOURCE_ACCOUNTING, error))
    return Status.success()


def single_numa_pod_level(
    pod: Mapping[str, Any] | PodDemand, numa_nodes: list[NUMANode], qos: str, node_resources: Collection[str]
) -> Status:
    """Pod scope: the pod's effective request as a whole must fit one NUMA node."""
    fit = resources_available_in_any_numa_node(numa_nodes, pod_demand(pod).effective, qos, node_resources)
    if not fit.ok:
        log.info("cannot align pod (%s)", fit.reason)
        return Status.unschedulable(CANNOT_ALIGN_POD)
    return Status.success()


def filter_with_topology(
    pod: Mapping[str, Any], qos: str, node_info: NodeInfo, nrt: NodeResourceTopology
) -> Status:
    """The verdict for a node whose NRT is known: only ``single-numa-node`` nodes are filtered."""
    return filter_with_parsed(pod, qos, node_info, parse_topology(nrt))


def filter_with_parsed(
    pod: Mapping[str, Any] | PodDemand, qos: str, node_info: NodeInfo, topology: ParsedTopology
) -> Status:
    """:func:`filter_with_topology` over an already parsed NRT."""
    if topology.conf.policy != SINGLE_NUMA_NODE:
        return Status.success()
    node_resources = node_resource_names(node_info.allocatable)
    if topology.conf.scope == "pod":  # reads the NUMA nodes only
        return single_numa_pod_level(pod, list(topology.numa_nodes), qos, node_resources)
    return single_numa_container_level(pod, topology.fresh_numa_nodes(), qos, node_resources)
