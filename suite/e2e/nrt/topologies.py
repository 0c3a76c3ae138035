"""NodeResourceTopology objects of the suite (upstream ``test/internal/noderesourcetopologies``
and ``internal/noderesourcetopology``): read, parse, query and filter them.

NRTs travel as the plain dicts :class:`~nrop.suite.e2e.kube.Kube` returns; parsing goes
through :class:`nrop.api.nrt.NodeResourceTopology`, amounts are
:class:`~nrop.api.quantity.Quantity` maps (:data:`~nrop.suite.e2e.resourcelist.ResourceList`).
This module owns the topology-manager policy/scope names, the accessors (name, zones,
pod fingerprint, per-zone amounts), the resource-fit queries (``ResourceInfoProviding``,
``ResourceInfoMatchesRequest``, node totals) and the ``Filter*`` helpers. Comparing NRTs
lives in :mod:`nrop.suite.e2e.nrt.compare`, the consumed-resource checks in
:mod:`nrop.suite.e2e.nrt.consumed`, waiting for updated NRTs in :mod:`nrop.suite.e2e.nrt.updates`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nrop.api import fingerprint
from nrop.api.nrt import (
    ATTR_TOPOLOGY_MANAGER_POLICY,
    ATTR_TOPOLOGY_MANAGER_SCOPE,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)
from nrop.api.quantity import Quantity
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.resourcelist import HOST_LEVEL_RESOURCES, ResourceList, drop_host_level

__all__ = [
    "BEST_EFFORT",
    "NONE",
    "NUMACELL_PREFIX",
    "RESTRICTED",
    "SCOPE_CONTAINER",
    "SCOPE_POD",
    "SINGLE_NUMA_NODE",
    "NRTLike",
    "NotEnoughResourcesError",
    "ZoneLike",
    "accumulate_names",
    "accumulate_node_available",
    "allocatable_from_zone",
    "as_zone",
    "attribute",
    "available_from_zone",
    "capacity_from_zone",
    "filter_any_node_matching_resources",
    "filter_any_zone_matching_resources",
    "filter_by_node_names",
    "filter_by_policy",
    "filter_by_policy_and_scope",
    "filter_by_scope",
    "filter_only_numa_affine_resources",
    "filter_zone_count_equal",
    "find",
    "get_nrt",
    "list_nrts",
    "max_allocatable_numa_level",
    "nrt_name",
    "numacell_resource_found",
    "parse",
    "pod_fingerprint",
    "resource_info_matches_request",
    "resource_providing",
    "resources_match_request",
    "zone_resources",
    "zones_of",
]

log = logging.getLogger(__name__)

#: Topology manager policies and scopes as NRT attributes carry them (upstream ``intnrt``).
SINGLE_NUMA_NODE = "single-numa-node"
RESTRICTED = "restricted"
BEST_EFFORT = "best-effort"
NONE = "none"
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"

NUMACELL_PREFIX = "kni.node/"

NRTLike = NodeResourceTopology | Mapping[str, Any]
ZoneLike = Zone | Mapping[str, Any]


class NotEnoughResourcesError(ValueError):
    """A NUMA zone or node has not enough resources to reserve (upstream ``ErrNotEnoughResources``)."""


# ------------------------------------------------------------------------------- parsing


def parse(nrt: NRTLike) -> NodeResourceTopology:
    return nrt if isinstance(nrt, NodeResourceTopology) else NodeResourceTopology.from_dict(nrt)


def as_zone(zone: ZoneLike) -> Zone:
    return zone if isinstance(zone, Zone) else Zone.from_dict(zone)


def nrt_name(nrt: NRTLike) -> str:
    return nrt.name if isinstance(nrt, NodeResourceTopology) else str(nrt["metadata"]["name"])


def zones_of(nrt: NRTLike) -> list[Zone]:
    return parse(nrt).zones


def pod_fingerprint(nrt: NRTLike) -> str | None:
    """The ``nodeTopologyPodsFingerprint`` attribute (None when the exporter does not publish it)."""
    return parse(nrt).attribute(fingerprint.ATTRIBUTE)


# ------------------------------------------------------------------------------- reads


def list_nrts(kube: k.Kube) -> list[dict[str, Any]]:
    return kube.list(k.NRT)


def get_nrt(kube: k.Kube, name: str) -> dict[str, Any]:
    return kube.get(k.NRT, name)


def find(nrts: Iterable[NRTLike], name: str) -> NRTLike | None:
    """The NRT called ``name`` (upstream ``FindFromList``), or None."""
    for nrt in nrts:
        if nrt_name(nrt) == name:
            return nrt
    return None


def accumulate_names(nrts: Iterable[NRTLike]) -> set[str]:
    return {nrt_name(nrt) for nrt in nrts}


# ------------------------------------------------------------------------------- zones


def _zone_amounts(zone: ZoneLike, which: str) -> ResourceList:
    return {res.name: getattr(res, which) for res in as_zone(zone).resources}


def available_from_zone(zone: ZoneLike) -> ResourceList:
    return _zone_amounts(zone, "available")


def allocatable_from_zone(zone: ZoneLike) -> ResourceList:
    return _zone_amounts(zone, "allocatable")


def capacity_from_zone(zone: ZoneLike) -> ResourceList:
    return _zone_amounts(zone, "capacity")


def zone_resources(nrt: NRTLike, which: str = "available") -> dict[str, ResourceList]:
    """``{zone name: {resource: amount}}`` of one NRT (``which``: available/allocatable/capacity)."""
    return {zone.name: _zone_amounts(zone, which) for zone in parse(nrt).zones}


def numacell_resource_found(zone: ZoneLike) -> bool:
    """Whether the zone exposes a numacell resource (the device plugin runs on that node)."""
    return any(res.name.startswith(NUMACELL_PREFIX) for res in as_zone(zone).resources)


def resource_providing(
    available: Mapping[str, Quantity], name: str, qty: Quantity, on_equal: bool = True
) -> bool:
    """Whether ``available`` holds more than ``qty`` of ``name``, or exactly ``qty`` when
    ``on_equal`` (upstream ``ResourceInfoProviding``)."""
    have = available.get(name)
    if have is None or have < qty:
        return False
    return on_equal if have == qty else True


def resources_match_request(available: Mapping[str, Quantity], requests: Mapping[str, Quantity]) -> bool:
    """Every requested resource is present and available >= requested (``onEqual`` true)."""
    return all(resource_providing(available, name, qty) for name, qty in requests.items())


def resource_info_matches_request(
    resources: Sequence[ResourceInfo], requests: Mapping[str, Quantity]
) -> bool:
    """:func:`resources_match_request` on a zone's resources (upstream ``ResourceInfoMatchesRequest``)."""
    return resources_match_request({res.name: res.available for res in resources}, requests)


def accumulate_node_available(nrt: NRTLike) -> ResourceList:
    """The node's available amounts: every zone's ``available`` summed per resource.

    ``ValueError`` for an NRT with no resources at all (upstream errors too).
    """
    obj = parse(nrt)
    total: ResourceList = {}
    for zone in obj.zones:
        for res in zone.resources:
            total[res.name] = total[res.name] + res.available if res.name in total else res.available
    if not total:
        raise ValueError(f"failed to accumulate resources for node {obj.name!r}")
    return total


def max_allocatable_numa_level(nrt: NRTLike, resource: str) -> Quantity:
    """The highest ``allocatable`` of ``resource`` among the zones (0 when no zone has it)."""
    best = Quantity(0)
    for zone in parse(nrt).zones:
        res = zone.resource(resource)
        if res is not None and res.allocatable > best:
            best = res.allocatable
    return best


# ------------------------------------------------------------------------------- filters


def attribute(nrt: NRTLike, name: str) -> str | None:
    """The value of the NRT's attribute ``name`` (e.g. ``topologyManagerScope``), or None."""
    return parse(nrt).attribute(name)


def _filter_by_attribute(nrts: Iterable[NRTLike], attr: str, value: str) -> list[NRTLike]:
    out = []
    for nrt in nrts:
        actual = attribute(nrt, attr)
        if actual is None:
            log.info("SKIP: node %r doesn't have required attribute %s", nrt_name(nrt), attr)
        elif actual != value:
            log.info("SKIP: node %r has %s=%r, expected %r", nrt_name(nrt), attr, actual, value)
        else:
            out.append(nrt)
    return out


def filter_by_policy(nrts: Iterable[NRTLike], policy: str) -> list[NRTLike]:
    """NRTs whose ``topologyManagerPolicy`` attribute is ``policy``."""
    return _filter_by_attribute(nrts, ATTR_TOPOLOGY_MANAGER_POLICY, policy)


def filter_by_scope(nrts: Iterable[NRTLike], scope: str) -> list[NRTLike]:
    return _filter_by_attribute(nrts, ATTR_TOPOLOGY_MANAGER_SCOPE, scope)


def filter_by_policy_and_scope(nrts: Iterable[NRTLike], policy: str, scope: str) -> list[NRTLike]:
    return filter_by_scope(filter_by_policy(nrts, policy), scope)


def filter_zone_count_equal(nrts: Iterable[NRTLike], count: int) -> list[NRTLike]:
    return [nrt for nrt in nrts if len(parse(nrt).zones) == count]


def filter_by_node_names(nrts: Iterable[NRTLike], names: Iterable[str]) -> list[NRTLike]:
    """The NRTs of ``names``, in the order of ``names`` (upstream ``filterNrtByNodeName``)."""
    by_name = {nrt_name(nrt): nrt for nrt in nrts}
    return [by_name[name] for name in names if name in by_name]


def filter_only_numa_affine_resources(res: Mapping[str, Quantity], tag: str) -> ResourceList:
    """``res`` without the host-level resources (storage, ephemeral storage), each one dropped
    logged under ``tag`` (upstream ``FilterOnlyNUMAAffineResources``)."""
    out: ResourceList = {}
    for name, qty in res.items():
        if name in HOST_LEVEL_RESOURCES:
            log.info("%s: resource %r is host-local (hostlevel) not numa-local", tag, name)
            continue
        out[name] = qty
    return out


def filter_any_zone_matching_resources(
    nrts: Iterable[NRTLike], requests: Mapping[str, Quantity]
) -> list[NRTLike]:
    """NRTs with at least one zone that can hold ``requests`` (host-level resources dropped)."""
    wanted = drop_host_level(requests)
    return [
        nrt
        for nrt in nrts
        if any(resource_info_matches_request(zone.resources, wanted) for zone in parse(nrt).zones)
    ]


def filter_any_node_matching_resources(
    nrts: Iterable[NRTLike], requests: Mapping[str, Quantity]
) -> list[NRTLike]:
    """NRTs whose zones together can hold ``requests`` (host-level resources dropped)."""
    wanted = drop_host_level(requests)
    out = []
    for nrt in nrts:
        try:
            total = accumulate_node_available(nrt)
        except ValueError as err:
            log.error("%s", err)
            continue
        if all(name in total and total[name] >= qty for name, qty in wanted.items()):
            out.append(nrt)
    return out
