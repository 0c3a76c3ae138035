"""Comparing NodeResourceTopology objects, and rendering them and their differences for messages.

The comparisons are pure and match upstream's semantics:

* :func:`equal_zones` (``EqualZones``): same zone count, zones compared by name after
  sorting, node-level memory totals, then every resource's capacity, allocatable and
  available; for reboot tests memory may deviate < 52Mi per zone and < 64KiB per node
  and device counts may drift as long as consumption matches;
* :func:`is_nrt_equal` (the cooldown check): the same ``resourceVersion`` is equal,
  else :func:`equal_zones`;
* :func:`is_nrt_unchanged` (``GetUpdated``'s ``isEqualNRT``): the same ``resourceVersion``,
  or zones *and* attributes semantically equal, list order included;
* :func:`equal_nrt_lists_items` (``EqualNRTListsItems``).

:func:`to_string_nrt` and :func:`list_to_string` dump NRTs as upstream does;
:func:`nrt_diff` renders what changed in ``available`` for failure messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from nrop.api.nrt import NodeResourceTopology, ResourceInfo, Zone, diff_available, format_diff
from nrop.api.quantity import Quantity
from nrop.suite.e2e.nrt.topologies import NRTLike, ZoneLike, as_zone, find, nrt_name, parse

__all__ = [
    "MEMORY_NODE_DEVIATION",
    "MEMORY_ZONE_DEVIATION",
    "equal_nrt_lists_items",
    "equal_zones",
    "is_nrt_equal",
    "is_nrt_unchanged",
    "list_to_string",
    "nrt_diff",
    "to_string_nrt",
]

log = logging.getLogger(__name__)

#: Reboot tests: memory may move between zones by < 52Mi, and the node total by < 64KiB.
MEMORY_ZONE_DEVIATION = Quantity.from_int(54525952)
MEMORY_NODE_DEVIATION = Quantity.from_int(65536)


def _resource_version(nrt: NRTLike) -> str | None:
    meta = nrt.metadata if isinstance(nrt, NodeResourceTopology) else nrt.get("metadata", {})
    return meta.get("resourceVersion")


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
    za = sorted((as_zone(z) for z in zones_a), key=lambda z: z.name)
    zb = sorted((as_zone(z) for z in zones_b), key=lambda z: z.name)
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
        log.info("NRT %r differs from the reference: %s", nrt_name(initial), why)
    return ok


def is_nrt_unchanged(initial: NRTLike, updated: NRTLike) -> bool:
    """``GetUpdated``'s test (``isEqualNRT``): the same ``resourceVersion``, or zones and
    attributes equal as ``apiequality.Semantic.DeepEqual`` sees them: lists in order, each
    quantity by value, a missing list equal to an empty one."""
    if _resource_version(updated) == _resource_version(initial):
        log.warning("NRT %r resource version didn't change", nrt_name(initial))
        return True
    a, b = parse(initial), parse(updated)
    equal = a.zones == b.zones and a.attributes == b.attributes
    if not equal:
        log.info("NRT %r change: updated to %s", nrt_name(initial), to_string_nrt(updated))
    return equal


def equal_nrt_lists_items(list_a: Iterable[NRTLike], list_b: Iterable[NRTLike]) -> tuple[bool, str]:
    """Every NRT of ``list_a`` has an equal-zoned twin in ``list_b`` (``EqualNRTListsItems``)."""
    list_b = list(list_b)
    for nrt_a in list_a:
        nrt_b = find(list_b, nrt_name(nrt_a))
        if nrt_b is None:
            return False, f"failed to find NRT data for node {nrt_name(nrt_a)!r} in both lists"
        ok, why = equal_zones(parse(nrt_b).zones, parse(nrt_a).zones)
        if not ok:
            return False, f"NRT mismatch for node {nrt_name(nrt_a)!r}: {why}"
    return True, ""


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
        new = find(after, nrt_name(old))
        if new is None:
            lines.append(f"{nrt_name(old)}: missing now")
            continue
        delta = diff_available(parse(old), parse(new))
        if delta:
            body = format_diff(delta).replace("\n", "\n  ")
            lines.append(f"{nrt_name(old)}:\n  {body}")
    lines.extend(f"{nrt_name(new)}: new" for new in after if find(before, nrt_name(new)) is None)
    return "\n".join(lines) if lines else "no change"
