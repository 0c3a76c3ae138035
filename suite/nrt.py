"""NodeResourceTopology helpers of the suite (upstream ``test/internal/noderesourcetopologies``
and ``internal/noderesourcetopology``): list, filter, compare and explain NRT objects.

NRTs travel as the plain dicts :class:`~nrop.suite.kube.Kube` returns; parsing goes
through :class:`nrop.api.nrt.NodeResourceTopology`, amounts are
:class:`~nrop.api.quantity.Quantity` maps (:data:`~nrop.suite.resourcelist.ResourceList`).
The comparisons are pure and match upstream's semantics:

* :func:`equal_zones` (``EqualZones``): same zone count, zones compared by name after
  sorting, node-level memory totals, then every resource's capacity, allocatable and
  available; for reboot tests memory may deviate < 52Mi per zone and < 64KiB per node
  and device counts may drift as long as consumption matches;
* :func:`is_nrt_equal` (the cooldown check): the same ``resourceVersion`` is equal,
  else :func:`equal_zones`;
* :func:`is_nrt_unchanged` (``GetUpdated``): the same ``resourceVersion``, or identical
  zones *and* attributes.

The two pollers :func:`get_updated` and :func:`get_updated_for_node` are thin loops over
:func:`nrop.suite.waiting.wait_for`: they return once the NRTs changed or were re-published
unchanged (one exporter refresh period, see :func:`republish_grace`). :func:`nrt_diff`
renders what changed for failure messages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api import fingerprint
from nrop.api.durations import parse_duration
from nrop.api.nrt import (
    ATTR_TOPOLOGY_MANAGER_POLICY,
    ATTR_TOPOLOGY_MANAGER_SCOPE,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
    diff_available,
    format_diff,
)
from nrop.api.quantity import Quantity

from . import kube as k
from .resourcelist import HOST_LEVEL_RESOURCES, ResourceList, drop_host_level
from .waiting import wait_for

__all__ = [
    "BEST_EFFORT",
    "MEMORY_NODE_DEVIATION",
    "MEMORY_ZONE_DEVIATION",
    "NONE",
    "NUMACELL_PREFIX",
    "RESTRICTED",
    "SCOPE_CONTAINER",
    "SCOPE_POD",
    "SINGLE_NUMA_NODE",
    "NotEnoughResourcesError",
    "accumulate_names",
    "accumulate_node_available",
    "allocatable_from_zone",
    "available_from_zone",
    "capacity_from_zone",
    "check_consumed_resources_for_scope",
    "check_equal_available_resources",
    "check_node_consumed_resources_at_least",
    "check_zone_consumed_resources_at_least",
    "equal_nrt_lists_items",
    "equal_zones",
    "exporter_refresh_period",
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
    "get_updated",
    "get_updated_for_node",
    "is_nrt_equal",
    "is_nrt_unchanged",
    "list_nrts",
    "list_to_string",
    "max_allocatable_numa_level",
    "nrt_diff",
    "numacell_resource_found",
    "parse",
    "pod_fingerprint",
    "refresh_period_of",
    "republish_grace",
    "resource_info_matches_request",
    "resource_providing",
    "resources_match_request",
    "to_string_nrt",
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

#: Reboot tests: memory may move between zones by < 52Mi, and the node total by < 64KiB.
MEMORY_ZONE_DEVIATION = Quantity.from_int(54525952)
MEMORY_NODE_DEVIATION = Quantity.from_int(65536)
NUMACELL_PREFIX = "kni.node/"
#: The operator's default ``infoRefreshPeriod``, and the margin added to it for a re-publish.
DEFAULT_REFRESH_PERIOD = 10.0
REPUBLISH_MARGIN = 5.0

NRTLike = NodeResourceTopology | Mapping[str, Any]
ZoneLike = Zone | Mapping[str, Any]


class NotEnoughResourcesError(ValueError):
    """A NUMA zone or node has not enough resources to reserve (upstream ``ErrNotEnoughResources``)."""


# ------------------------------------------------------------------------------- parsing


def parse(nrt: NRTLike) -> NodeResourceTopology:
    return nrt if isinstance(nrt, NodeResourceTopology) else NodeResourceTopology.from_dict(nrt)


def _zone(zone: ZoneLike) -> Zone:
    return zone if isinstance(zone, Zone) else Zone.from_dict(zone)


def _name(nrt: NRTLike) -> str:
    return nrt.name if isinstance(nrt, NodeResourceTopology) else str(nrt["metadata"]["name"])


def _resource_version(nrt: NRTLike) -> str | None:
    meta = nrt.metadata if isinstance(nrt, NodeResourceTopology) else nrt.get("metadata", {})
    return meta.get("resourceVersion")


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
        if _name(nrt) == name:
            return nrt
    return None


def accumulate_names(nrts: Iterable[NRTLike]) -> set[str]:
    return {_name(nrt) for nrt in nrts}


# ------------------------------------------------------------------------------- zones


def _zone_amounts(zone: ZoneLike, which: str) -> ResourceList:
    return {res.name: getattr(res, which) for res in _zone(zone).resources}


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
    return any(res.name.startswith(NUMACELL_PREFIX) for res in _zone(zone).resources)


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


def _filter_by_attribute(nrts: Iterable[NRTLike], attr: str, value: str) -> list[NRTLike]:
    out = []
    for nrt in nrts:
        actual = parse(nrt).attribute(attr)
        if actual is None:
            log.info("SKIP: node %r doesn't have required attribute %s", _name(nrt), attr)
        elif actual != value:
            log.info("SKIP: node %r has %s=%r, expected %r", _name(nrt), attr, actual, value)
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
    by_name = {_name(nrt): nrt for nrt in nrts}
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


# ------------------------------------------------------------------------------- equality


def _within(a: Quantity, b: Quantity, dev: Quantity) -> bool:
    """``-dev <= a - b < dev`` (upstream ``QuantityAbsCmp``)."""
    delta = a - b
    return -dev <= delta < dev


def _memory_totals(zones: Iterable[Zone]) -> tuple[Quantity, Quantity, Quantity]:
    cap = alloc = avail = Quantity(0)
    for zone in zones:
        res = zone.resource("memory")
        if res is not None:
            cap, alloc, avail = cap + res.capacity, alloc + res.allocatable, avail + res.available
    return cap, alloc, avail


def _equal_resource(a: ResourceInfo, b: ResourceInfo, reboot: bool, devices: Sequence[str]) -> str | None:
    """None when equal, else why not (upstream ``EqualResourceInfo``)."""
    if a.name != b.name:
        return f"mismatched resource name initial={a.name!r} vs updated={b.name!r}"
    if reboot and a.name == "memory":
        for which in ("capacity", "allocatable", "available"):
            if not _within(getattr(a, which), getattr(b, which), MEMORY_ZONE_DEVIATION):
                return (
                    f"resource 'memory': mismatched resource {which.capitalize()} "
                    f"initial={getattr(a, which)} vs updated={getattr(b, which)}"
                )
        return None
    if reboot and a.name in devices:
        for which in ("allocatable", "available"):
            if getattr(a, which) != getattr(b, which) and (
                a.capacity - getattr(a, which) != b.capacity - getattr(b, which)
            ):
                used_a, used_b = a.capacity - getattr(a, which), b.capacity - getattr(b, which)
                return f"mismatched resource consumption; expected {used_a}=={used_b}=true"
        return None
    for which in ("capacity", "allocatable", "available"):
        if getattr(a, which) != getattr(b, which):
            return f"mismatched resource {which.capitalize()} initial={_res_str(a)} vs updated={_res_str(b)}"
    return None


def equal_zones(
    zones_a: Sequence[ZoneLike],
    zones_b: Sequence[ZoneLike],
    is_reboot_test: bool = False,
    device_names: Sequence[str] = (),
) -> tuple[bool, str]:
    """``(equal, why not)`` for two zone lists (upstream ``EqualZones``; ``device_names``:
    the E2E_NROP_DEVICE_TYPE_* resources, tolerated as devices in reboot tests)."""
    za = sorted((_zone(z) for z in zones_a), key=lambda z: z.name)
    zb = sorted((_zone(z) for z in zones_b), key=lambda z: z.name)
    if len(za) != len(zb):
        return False, "unequal zone count"
    totals_a, totals_b = _memory_totals(za), _memory_totals(zb)
    problems = []
    for which, qa, qb in zip(("capacity", "allocatable", "available"), totals_a, totals_b, strict=True):
        ok = _within(qa, qb, MEMORY_NODE_DEVIATION) if is_reboot_test else qa == qb
        if not ok:
            problems.append(f"mismatched total memory {which}: initial={qa} updated={qb}")
    if problems:
        return False, "\n".join(problems)
    for zone_a, zone_b in zip(za, zb, strict=True):
        if zone_a.name != zone_b.name:
            return False, f"mismatched zones initial={zone_a.name!r} vs updated={zone_b.name!r}"
        ra = sorted(zone_a.resources, key=lambda r: r.name)
        rb = sorted(zone_b.resources, key=lambda r: r.name)
        if len(ra) != len(rb):
            return False, f"zone {zone_a.name}: unequal resourceinfo count"
        for res_a, res_b in zip(ra, rb, strict=True):
            why = _equal_resource(res_a, res_b, is_reboot_test, device_names)
            if why is not None:
                return False, f"zone {zone_a.name}: {why}"
    return True, ""


def is_nrt_equal(
    initial: NRTLike, updated: NRTLike, is_reboot_test: bool = False, device_names: Sequence[str] = ()
) -> bool:
    """The cooldown comparison: an unchanged ``resourceVersion`` is equal, else :func:`equal_zones`."""
    rv = _resource_version(initial)
    if rv is not None and rv == _resource_version(updated):
        return True
    ok, why = equal_zones(parse(initial).zones, parse(updated).zones, is_reboot_test, device_names)
    if not ok:
        log.info("NRT %r differs from the reference: %s", _name(initial), why)
    return ok


def is_nrt_unchanged(initial: NRTLike, updated: NRTLike) -> bool:
    """``GetUpdated``'s test: same ``resourceVersion``, or the same zones and attributes."""
    rv = _resource_version(initial)
    if rv is not None and rv == _resource_version(updated):
        return True
    a, b = parse(initial), parse(updated)
    return [z.to_dict() for z in a.zones] == [z.to_dict() for z in b.zones] and [
        x.to_dict() for x in a.attributes
    ] == [x.to_dict() for x in b.attributes]


def equal_nrt_lists_items(list_a: Iterable[NRTLike], list_b: Iterable[NRTLike]) -> tuple[bool, str]:
    """Every NRT of ``list_a`` has an equal-zoned twin in ``list_b`` (``EqualNRTListsItems``)."""
    list_b = list(list_b)
    for nrt_a in list_a:
        nrt_b = find(list_b, _name(nrt_a))
        if nrt_b is None:
            return False, f"failed to find NRT data for node {_name(nrt_a)!r} in both lists"
        ok, why = equal_zones(parse(nrt_b).zones, parse(nrt_a).zones)
        if not ok:
            return False, f"NRT mismatch for node {_name(nrt_a)!r}: {why}"
    return True, ""


def check_equal_available_resources(initial: NRTLike, updated: NRTLike) -> bool:
    """Every zone resource of ``initial`` has the same ``available`` in ``updated``.

    ``ValueError`` when a zone or resource of ``initial`` is missing from ``updated``.
    """
    a, b = parse(initial), parse(updated)
    for zone_a in a.zones:
        zone_b = b.zone(zone_a.name)
        if zone_b is None:
            raise ValueError(f"cannot find zone {zone_a.name!r}")
        for res in zone_a.resources:
            other = zone_b.resource(res.name)
            if other is None:
                raise ValueError(f"resource {res.name!r} not found in the updated set")
            if res.available != other.available:
                log.info(
                    "node %r zone %r resource %r initial=%s updated=%s",
                    a.name,
                    zone_a.name,
                    res.name,
                    res.available,
                    other.available,
                )
                return False
    return True


def _consumed_at_least(
    initial: Mapping[str, Quantity],
    updated: Mapping[str, Quantity],
    required: Mapping[str, Quantity],
    qos: str,
) -> bool:
    for name, qty in required.items():
        if qos != "Guaranteed" and name in ("cpu", "memory"):
            continue  # only guaranteed pods take exclusive CPUs and NUMA memory
        if name not in initial:
            raise ValueError(f"resource {name!r} not found in the initial set")
        if name not in updated:
            raise ValueError(f"resource {name!r} not found in the updated set")
        if updated[name] > initial[name] - qty:
            return False
    return True


def check_zone_consumed_resources_at_least(
    initial: NRTLike, updated: NRTLike, required: Mapping[str, Quantity], qos: str
) -> str:
    """The first zone whose ``available`` dropped by at least ``required`` ("" when none).

    cpu and memory count only for ``Guaranteed`` pods; host-level resources are dropped.
    """
    wanted = drop_host_level(required)
    a, b = parse(initial), parse(updated)
    for zone_a in a.zones:
        zone_b = b.zone(zone_a.name)
        if zone_b is None:
            raise ValueError(f"cannot find zone {zone_a.name!r}")
        if _consumed_at_least(available_from_zone(zone_a), available_from_zone(zone_b), wanted, qos):
            return zone_a.name
    return ""


def check_node_consumed_resources_at_least(
    initial: NRTLike, updated: NRTLike, required: Mapping[str, Quantity], qos: str
) -> str:
    """The node name when its total ``available`` dropped by at least ``required`` ("" otherwise)."""
    wanted = drop_host_level(required)
    ok = _consumed_at_least(
        accumulate_node_available(initial), accumulate_node_available(updated), wanted, qos
    )
    return _name(initial) if ok else ""


def check_consumed_resources_for_scope(
    scope: str, initial: NRTLike, updated: NRTLike, required: Mapping[str, Quantity], qos: str
) -> str:
    """What the topology-manager ``scope`` says must show the consumption (upstream
    ``tmScopeFuncs.checkConsumedRes``): one zone for pod scope, the node total otherwise."""
    if scope == SCOPE_POD:
        return check_zone_consumed_resources_at_least(initial, updated, required, qos)
    return check_node_consumed_resources_at_least(initial, updated, required, qos)


# ------------------------------------------------------------------------------- text


def _res_str(res: ResourceInfo) -> str:
    return f"{res.name}={res.capacity}/{res.allocatable}/{res.available}"


def to_string_nrt(nrt: NRTLike) -> str:
    """``<node> policy=..., scope=...`` then ``- zone: node-0 [Node]: cpu=cap/alloc/avail,...``."""
    obj = parse(nrt)
    lines = [
        f"{obj.name or '<MISSING>'} policy={obj.topology_manager_policy or 'N/A'}, "
        f"scope={obj.topology_manager_scope or 'N/A'}"
    ]
    for zone in obj.zones:
        resources = ",".join(_res_str(r) for r in sorted(zone.resources, key=lambda r: r.name)) or "N/A"
        lines.append(f"- zone: {zone.name or '<MISSING>'} [{zone.type or 'N/A'}]: {resources}")
    return "\n".join(lines) + "\n"


def list_to_string(nrts: Iterable[NRTLike], tag: str = "") -> str:
    return "NRT BEGIN dump" + tag + "\n" + "".join(to_string_nrt(n) for n in nrts) + "NRT END dump\n"


def nrt_diff(before: Iterable[NRTLike], after: Iterable[NRTLike]) -> str:
    """What changed in ``available`` from ``before`` to ``after``, node by node, for failure messages.

    Each changed node gets its zone deltas (``node-0: cpu -4, memory -2Gi``); nodes present
    on one side only are named; "no change" when nothing differs.
    """
    before, after = list(before), list(after)
    lines: list[str] = []
    for old in before:
        new = find(after, _name(old))
        if new is None:
            lines.append(f"{_name(old)}: missing now")
            continue
        delta = diff_available(parse(old), parse(new))
        if delta:
            body = format_diff(delta).replace("\n", "\n  ")
            lines.append(f"{_name(old)}:\n  {body}")
    lines.extend(f"{_name(new)}: new" for new in after if find(before, _name(new)) is None)
    return "\n".join(lines) if lines else "no change"


# ------------------------------------------------------------------------------- pollers


def refresh_period_of(nrops: Iterable[Mapping[str, Any]]) -> float:
    """The longest ``infoRefreshPeriod`` of the node groups of ``nrops`` (effective config in the
    status, else the spec); 10s (the operator's default) when none sets one."""
    periods = []
    for nrop in nrops:
        status, spec = nrop.get("status") or {}, nrop.get("spec") or {}
        groups = status.get("nodeGroups") or status.get("machineConfigPools") or spec.get("nodeGroups") or ()
        for group in groups:
            raw = (group.get("config") or {}).get("infoRefreshPeriod")
            if raw:
                try:
                    periods.append(parse_duration(str(raw)))
                except ValueError:
                    log.warning("ignoring invalid infoRefreshPeriod %r", raw)
    return max(periods, default=DEFAULT_REFRESH_PERIOD)


def exporter_refresh_period(kube: k.Kube) -> float:
    """:func:`refresh_period_of` the cluster's NUMAResourcesOperators (none: the default)."""
    try:
        return refresh_period_of(kube.list(k.NROP))
    except k.UnknownKindError:
        return DEFAULT_REFRESH_PERIOD


def republish_grace(kube: k.Kube) -> float:
    """After this long an NRT that did not change counts as re-published unchanged.

    Upstream's ``GetUpdated`` waits for different zones or attributes, and its exporter
    emits resources in Go map order, so each periodic refresh looks like a change: the wait
    means "re-published since the reference". An exporter with a stable order changes an
    NRT only when the data change, and the API server keeps the resourceVersion of a no-op
    update: the same meaning is then one refresh period (plus a margin).
    """
    return exporter_refresh_period(kube) + REPUBLISH_MARGIN


@dataclass
class _Updates:
    """NRTs seen by an update wait; ``to_dict`` keeps failure messages short."""

    nrts: list[dict[str, Any]]
    unchanged: list[str]
    missing: list[str]
    elapsed: float

    def to_dict(self) -> str:
        return f"unchanged={self.unchanged} missing={self.missing} after {self.elapsed:.1f}s"


def _changed_or_republished(
    get: Callable[[], list[dict[str, Any]]],
    reference: Sequence[NRTLike],
    timeout: float,
    interval: float,
    grace: float,
    immediate: bool,
) -> list[dict[str, Any]]:
    names = [_name(nrt) for nrt in reference]
    started = time.monotonic()

    def look() -> _Updates:
        current = get()
        missing = [n for n in names if find(current, n) is None]
        unchanged = [
            _name(ref)
            for ref in reference
            if (now := find(current, _name(ref))) is not None and is_nrt_unchanged(ref, now)
        ]
        return _Updates(current, unchanged, missing, time.monotonic() - started)

    seen = wait_for(
        look,
        lambda u: not u.missing and (not u.unchanged or u.elapsed >= grace),
        f"NRTs {names} to be updated",
        timeout,
        interval=interval,
        terminal=lambda u: bool(u.missing),
        immediate=immediate,
    )
    if seen.unchanged:
        log.info("NRTs %s re-published unchanged within %.0fs", seen.unchanged, grace)
    return seen.nrts


def get_updated(
    kube: k.Kube,
    reference: Sequence[NRTLike],
    timeout: float,
    *,
    interval: float = 5.0,
    grace: float | None = None,
) -> list[dict[str, Any]]:
    """The NRT list once every NRT of ``reference`` changed (``GetUpdated``), or was re-published
    unchanged: after ``grace`` (default :func:`republish_grace`; ``math.inf`` = only a change).

    The first look comes after one ``interval``, as upstream; an empty ``reference``
    returns the current list at once. A reference NRT that is gone ends the wait at once;
    ``WaitTimeout`` when the NRTs did not update within ``timeout``.
    """
    if not reference:
        return list_nrts(kube)
    limit = republish_grace(kube) if grace is None else grace
    return _changed_or_republished(lambda: list_nrts(kube), reference, timeout, interval, limit, False)


def get_updated_for_node(
    kube: k.Kube,
    reference: NRTLike,
    timeout: float,
    *,
    interval: float = 5.0,
    grace: float | None = None,
) -> dict[str, Any]:
    """The node's NRT once it differs from ``reference`` (``GetUpdatedForNode``), or was
    re-published unchanged (see :func:`get_updated`)."""
    limit = republish_grace(kube) if grace is None else grace
    name = _name(reference)
    return _changed_or_republished(
        lambda: [nrt] if (nrt := kube.get_or_none(k.NRT, name)) else [],
        [reference],
        timeout,
        interval,
        limit,
        True,
    )[0]
