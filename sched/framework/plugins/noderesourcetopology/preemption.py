"""NUMA-aware preemption: the NRT a node would publish once the preemption victims are gone.

This module owns the pure part of scheduler-plugins' preemption support
(``pkg/noderesourcetopology/preemption`` and ``cache/store.go`` ``getNUMAPlacementInfo``):

* :func:`pinned_containers` names the containers of a pod that hold exclusive resources
  (upstream ``categorizePodForPreemption``): sidecar init containers, then app
  containers, with a request :func:`~nrop.sched.framework.podrequests.is_exclusive` for the node;
* :func:`decode_placement` reads the ``numaplacement`` attributes of an NRT
  (:mod:`nrop.api.numaplacement`) against those containers of the pods the scheduler
  saw when the NRT was last proven current. Only for the ``single-numa-node`` policy;
  any inconsistency (count, vectors, metadata) gives an empty placement, which makes
  the Filter keep the NRT as it is;
* :func:`nrt_after_evictions` (upstream ``GetNRTPostPodsEviction``): a copy of the NRT
  with each victim's exclusive requests added back to the ``available`` of the NUMA zone
  its container is placed on. Victims that are neither Guaranteed nor request a
  non-native resource are skipped, and so are containers the placement does not know.
  Adding beyond ``allocatable``, or having nothing to add, is an
  :class:`EvictionSimulationError` with upstream's text.

The plugin (:mod:`nrop.sched.framework.plugins.noderesourcetopology.plugin`) decides when to call these and keeps the
decoded placement per node.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from nrop.api import numaplacement
from nrop.api.nrt import (
    ATTR_TOPOLOGY_MANAGER_POLICY,
    NodeResourceTopology,
    ResourceInfo,
    numa_id_from_zone_name,
)
from nrop.api.quantity import Quantity
from nrop.sched.framework.podrequests import (
    GUARANTEED,
    app_containers,
    container_requests,
    include_non_native,
    init_containers,
    is_exclusive,
    is_sidecar,
    pod_qos,
)

__all__ = [
    "EVICTION_SIMULATION_NOT_POSSIBLE",
    "EvictionSimulationError",
    "PlacementPod",
    "decode_placement",
    "nrt_after_evictions",
    "pinned_containers",
    "placement_pods",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

EVICTION_SIMULATION_NOT_POSSIBLE: Final = "eviction simulation in NRT is not possible:"
SINGLE_NUMA_NODE: Final = "single-numa-node"
_NO_PLACEMENT: Final = numaplacement.PlacementInfo()
_ZONE_PREFIX: Final = "node-"
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


class EvictionSimulationError(Exception):
    """Why the victims cannot be taken off the NRT; the Filter appends it to its message."""


@dataclass(frozen=True, slots=True)
class PlacementPod:
    """A pod as the placement decoder sees it: its identity and its pinned containers."""

    namespace: str
    name: str
    pinned: tuple[str, ...]


def _is_exclusive_for_container(qos: str, container: Obj, nrt_resources: Collection[str] | None) -> bool:
    return any(
        is_exclusive(qos, name, amount, nrt_resources)
        for name, amount in container_requests(container).items()
    )


def pinned_containers(pod: Obj, nrt_resources: Collection[str] | None) -> tuple[str, ...]:
    """The sidecar and app containers of ``pod`` holding an exclusive resource, in spec order.

    Ordinary init containers have finished in steady state, so they hold nothing.
    """
    qos = pod_qos(pod)
    steady = [c for c in init_containers(pod) if is_sidecar(c)] + list(app_containers(pod))
    return tuple(str(c.get("name", "")) for c in steady if _is_exclusive_for_container(qos, c, nrt_resources))


def placement_pods(pods: Iterable[Obj], nrt_resources: Collection[str] | None) -> list[PlacementPod]:
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        out.append(
            PlacementPod(
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                pinned_containers(pod, nrt_resources),
            )
        )
    return out


def decode_placement(nrt: NodeResourceTopology, pods: Sequence[PlacementPod]) -> numaplacement.PlacementInfo:
    """The container placement the NRT encodes for ``pods``; empty when it cannot be trusted."""
    if not pods:
        log.debug("node %s: no pods to decode the NUMA placement with", nrt.name)
        return _NO_PLACEMENT
    if nrt.attribute(ATTR_TOPOLOGY_MANAGER_POLICY) != SINGLE_NUMA_NODE:
        log.debug("node %s: NUMA placement decoded only under %s", nrt.name, SINGLE_NUMA_NODE)
        return _NO_PLACEMENT
    metadata = nrt.attribute(numaplacement.ATTRIBUTE_METADATA)
    if metadata is None:
        log.debug("node %s: no NUMA placement metadata", nrt.name)
        return _NO_PLACEMENT
    try:
        payload = numaplacement.unpack_metadata(metadata)
    except numaplacement.NumaPlacementError as exc:
        log.warning("node %s: failed to unpack the NUMA placement metadata: %s", nrt.name, exc)
        return _NO_PLACEMENT
    for zone in nrt.zones:
        vector = zone.attribute(numaplacement.ATTRIBUTE_VECTOR)
        if vector is None:
            continue  # the busiest node, or a zone without pinned containers
        suffix = zone.name.removeprefix(_ZONE_PREFIX)
        if not _INTEGER.fullmatch(suffix):
            log.warning("node %s: zone %r has a NUMA placement vector but no NUMA id", nrt.name, zone.name)
            return _NO_PLACEMENT
        payload.vectors[int(suffix)] = vector
    containers = [
        numaplacement.ContainerID(pod.namespace, pod.name, name) for pod in pods for name in pod.pinned
    ]
    if len(containers) != payload.containers:
        log.info(
            "node %s: inconsistent NUMA placement container count: computed %d, expected %d",
            nrt.name,
            len(containers),
            payload.containers,
        )
        return _NO_PLACEMENT
    if not containers:
        return _NO_PLACEMENT
    try:
        return numaplacement.decode(payload, containers)
    except numaplacement.NumaPlacementError as exc:
        log.warning("node %s: failed to decode the NUMA placement: %s", nrt.name, exc)
        return _NO_PLACEMENT


def _add(total: dict[str, Quantity], name: str, amount: Quantity) -> None:
    total[name] = total[name] + amount if name in total else amount


def _released_per_numa(
    victims: Iterable[Obj], placement: numaplacement.PlacementInfo, nrt_resources: Collection[str]
) -> dict[int, dict[str, Quantity]]:
    released: dict[int, dict[str, Quantity]] = {}
    for victim in victims:
        qos = pod_qos(victim)
        if qos != GUARANTEED and not include_non_native(victim):
            continue
        meta = victim.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        for container in app_containers(victim):
            ident = numaplacement.ContainerID(namespace, name, str(container.get("name", "")))
            try:
                numa = placement.numa_affinity(ident)
            except numaplacement.NumaPlacementError:
                log.debug("victim container %s skipped: no NUMA placement", ident)
                continue
            if numa == numaplacement.UNKNOWN:
                continue
            for res, amount in container_requests(container).items():
                if is_exclusive(qos, res, amount, nrt_resources):
                    _add(released.setdefault(numa, {}), res, amount)
    return released


def nrt_after_evictions(
    nrt: NodeResourceTopology, victims: Iterable[Obj], placement: numaplacement.PlacementInfo
) -> NodeResourceTopology:
    """A copy of ``nrt`` with the victims' exclusive requests given back to their NUMA zones."""
    nrt_resources = frozenset(res.name for zone in nrt.zones for res in zone.resources)
    released = _released_per_numa(victims, placement, nrt_resources)
    if not released:
        raise EvictionSimulationError("no resources to add, cannot process eviction simulation")
    zones = []
    for zone in nrt.zones:
        try:
            numa = numa_id_from_zone_name(zone.name)
        except ValueError:
            zones.append(zone)
            continue
        to_add = released.get(numa)
        if not to_add:
            zones.append(zone)
            continue
        resources = list(zone.resources)
        for res_name, amount in to_add.items():
            for idx, res in enumerate(resources):
                if res.name != res_name:
                    continue
                resources[idx] = _released(zone.name, res, amount)
                break
        zones.append(dataclasses.replace(zone, resources=resources))
    return NodeResourceTopology(nrt.name, zones, nrt.attributes, nrt.topology_policies, nrt.metadata)


def _released(zone_name: str, res: ResourceInfo, amount: Quantity) -> ResourceInfo:
    after = res.available + amount
    if after > res.allocatable:
        log.info(
            "resource release request exceeds NUMA allocatable: zone %s resource %s allocatable %s "
            "requestToAdd %s postAddAvailable %s",
            zone_name,
            res.name,
            res.allocatable,
            amount,
            after,
        )
        # One inconsistency voids the whole simulation.
        raise EvictionSimulationError("resource release request exceeds NUMA allocatable")
    return dataclasses.replace(res, available=after)
