"""What a workload took from the NodeResourceTopology objects: checks between two NRTs of a node.

:func:`check_equal_available_resources` (nothing was taken: every zone resource kept its
``available``), and the ``at least`` checks: :func:`check_zone_consumed_resources_at_least`
(one zone's ``available`` dropped by the requests), :func:`check_node_consumed_resources_at_least`
(the node total did) and :func:`check_consumed_resources_for_scope`, which picks between
them by topology-manager scope (upstream ``tmScopeFuncs``). cpu and memory count only for
``Guaranteed`` pods; host-level resources never count.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from nrop.api.quantity import Quantity
from nrop.suite.e2e.nrt.topologies import (
    SCOPE_POD,
    NRTLike,
    accumulate_node_available,
    available_from_zone,
    nrt_name,
    parse,
)
from nrop.suite.e2e.resourcelist import drop_host_level

__all__ = [
    "check_consumed_resources_for_scope",
    "check_equal_available_resources",
    "check_node_consumed_resources_at_least",
    "check_zone_consumed_resources_at_least",
]

log = logging.getLogger(__name__)


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
    return nrt_name(initial) if ok else ""


def check_consumed_resources_for_scope(
    scope: str, initial: NRTLike, updated: NRTLike, required: Mapping[str, Quantity], qos: str
) -> str:
    """What the topology-manager ``scope`` says must show the consumption (upstream
    ``tmScopeFuncs.checkConsumedRes``): one zone for pod scope, the node total otherwise."""
    if scope == SCOPE_POD:
        return check_zone_consumed_resources_at_least(initial, updated, required, qos)
    return check_node_consumed_resources_at_least(initial, updated, required, qos)
