"""Resource lists (``name -> Quantity``) and their arithmetic, as the suite's helpers use them.

A resource list is what a container's ``requests``/``limits`` hold and what a NUMA zone
offers: ``dict[str, Quantity]``. Builders take anything JSON may hold (``"2"``, ``"1Gi"``,
``4``, a :class:`~nrop.api.quantity.Quantity`) and parse it with :mod:`nrop.api.quantity`;
manifests get strings back through :func:`to_manifest`. Everything here is pure
(upstream ``internal/resourcelist``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nrop.api.quantity import Format, Quantity, coerce

__all__ = [
    "EPHEMERAL_STORAGE",
    "HOST_LEVEL_RESOURCES",
    "STORAGE",
    "WORKLOAD_PARTITIONING_PREFIX",
    "ResourceList",
    "accumulate",
    "add",
    "drop_host_level",
    "equal",
    "filter_exclusive",
    "from_container_limits",
    "from_container_requests",
    "from_guaranteed_pod",
    "from_replicaset",
    "highest",
    "of",
    "round_up_core_resources",
    "scale_core_resources",
    "sub",
    "to_manifest",
    "to_string",
]

ResourceList = dict[str, Quantity]

EPHEMERAL_STORAGE = "ephemeral-storage"
STORAGE = "storage"
#: Resources a node offers as a whole, never per NUMA zone.
HOST_LEVEL_RESOURCES = (EPHEMERAL_STORAGE, STORAGE)
#: Workload-partitioning resources are in node allocatable but never in NRT zones.
WORKLOAD_PARTITIONING_PREFIX = "management.workload.openshift.io/"

_GIGA = 10**9


def of(
    values: Mapping[str, Quantity | str | int] | None = None, **named: Quantity | str | int
) -> ResourceList:
    """A resource list from plain values: ``of({"cpu": "2", "memory": "1Gi"})`` or ``of(cpu=2)``."""
    merged: dict[str, Quantity | str | int] = dict(values or {})
    merged.update(named)
    return {name: coerce(value) for name, value in merged.items()}


def to_manifest(res: Mapping[str, Quantity]) -> dict[str, str]:
    """The strings a pod manifest carries (upstream's ``Quantity.String()``)."""
    return {name: str(qty) for name, qty in res.items()}


def to_string(res: Mapping[str, Quantity]) -> str:
    """``cpu=2, memory=1Gi`` sorted by name (upstream ``ToString``)."""
    return ", ".join(f"{name}={res[name]}" for name in sorted(res))


def add(res: Mapping[str, Quantity], other: Mapping[str, Quantity]) -> ResourceList:
    """``res + other`` per resource; names of either side are kept."""
    out = dict(res)
    for name, qty in other.items():
        out[name] = out[name] + qty if name in out else qty
    return out


def sub(res: Mapping[str, Quantity], other: Mapping[str, Quantity]) -> ResourceList:
    """``res - other``; ``ValueError`` when ``other`` asks more of a resource than ``res`` has.

    The error says "not found" even when the resource is only too scarce, as upstream's
    ``SubInPlace`` does.
    """
    out = dict(res)
    for name, qty in other.items():
        have = out.get(name, Quantity(0))
        if qty > have:
            raise ValueError(
                f"cannot subtract resource {name!r} because it is not found in the current resources"
            )
        out[name] = have - qty
    return out


def equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    """Same names and the same values (``1Gi == 1024Mi``)."""
    return a.keys() == b.keys() and all(a[name] == b[name] for name in a)


def highest(*lists: Mapping[str, Quantity]) -> ResourceList:
    """Per resource of the first list, the highest value among all lists (upstream ``Highest``)."""
    if not lists:
        return {}
    out = dict(lists[0])
    for other in lists[1:]:
        for name, value in list(out.items()):
            if name in other and other[name] > value:
                out[name] = other[name]
    return out


def accumulate(
    lists: Iterable[Mapping[str, Quantity]], keep: Callable[[str, Quantity], bool] = lambda _n, _q: True
) -> ResourceList:
    """The sum of ``lists``, counting only the entries ``keep`` accepts."""
    out: ResourceList = {}
    for res in lists:
        for name, qty in res.items():
            if keep(name, qty):
                out[name] = out[name] + qty if name in out else qty
    return out


def filter_exclusive(name: str, qty: Quantity) -> bool:
    """Resources that can be exclusive: no storage, and CPUs only in whole units."""
    if name in HOST_LEVEL_RESOURCES:
        return False
    return not (name == "cpu" and qty.milli_value() % 1000 != 0)


def drop_host_level(res: Mapping[str, Quantity]) -> ResourceList:
    """Without what NRTs never show: ephemeral storage and workload-partitioning resources."""
    return {
        name: qty
        for name, qty in res.items()
        if name != EPHEMERAL_STORAGE and not name.startswith(WORKLOAD_PARTITIONING_PREFIX)
    }


def _containers_field(containers: Iterable[Mapping[str, Any]], field: str) -> ResourceList:
    return accumulate(of((c.get("resources") or {}).get(field) or {}) for c in containers)


def from_container_limits(containers: Iterable[Mapping[str, Any]]) -> ResourceList:
    return _containers_field(containers, "limits")


def from_container_requests(containers: Iterable[Mapping[str, Any]]) -> ResourceList:
    return _containers_field(containers, "requests")


def from_guaranteed_pod(pod: Mapping[str, Any]) -> ResourceList:
    """The sum of the app containers' limits (what a guaranteed pod takes)."""
    return from_container_limits(pod["spec"].get("containers") or ())


def from_replicaset(rs: Mapping[str, Any]) -> ResourceList:
    """A ReplicaSet's (or Deployment's) container limits times its replicas."""
    one = from_container_limits(rs["spec"]["template"]["spec"].get("containers") or ())
    replicas = int(rs["spec"].get("replicas", 1))
    return {name: qty * replicas for name, qty in one.items()}


def round_up_core_resources(cpu: Quantity, memory: Quantity) -> tuple[Quantity, Quantity]:
    """CPU up to whole cores and then to an even count; memory up to a multiple of 1G (10^9).

    Whole cores first (``2900m`` is 3 cores), then even (4), as upstream
    ``RoundUpCoreResources`` does; memory rounds to G, not Gi, as upstream does.
    """
    cores = cpu.value()
    cores = -(-cores // 2) * 2
    mem_units = -(-memory.nanos // (_GIGA * 10**9))
    return Quantity.from_int(cores), Quantity(mem_units * _GIGA * 10**9, Format.DECIMAL_SI)


def scale_core_resources(res: Mapping[str, Quantity], num: int, den: int) -> ResourceList:
    """cpu and memory times ``num/den``, rounded up, memory then up to a multiple of 1024
    (upstream ``ScaleCoreResources``); the other resources are kept as they are."""
    out = dict(res)
    if "cpu" in res:
        out["cpu"] = Quantity.from_int(-(-res["cpu"].value() * num // den))
    if "memory" in res:
        mem = -(-res["memory"].value() * num // den)
        out["memory"] = Quantity.from_int(-(-mem // 1024) * 1024)
    return out
