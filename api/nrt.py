"""NodeResourceTopology (``topology.node.k8s.io/v1alpha2``) objects as typed values.

This module owns the shape of an NRT object for everyone who reads or writes one: the
exporter builds them, the scheduler filters and scores with them, the suite compares and
explains them. The dataclasses convert from and to the plain dicts the Kubernetes API
carries; ``to_dict`` emits fields in the order and with the omissions of the Go types'
JSON encoding, and quantities as upstream prints them (see :mod:`nrop.api.quantity`).

Well-known attribute names are conventions, not schema: the helpers here read them the
way the scheduler does (first match from the left) and write them the way the API's
``attribute`` helpers do (update in place, else append).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from nrop.api import fingerprint
from nrop.api.quantity import Quantity, coerce

__all__ = [
    "API_VERSION",
    "ATTR_PODS_FINGERPRINT",
    "ATTR_PODS_FINGERPRINT_METHOD",
    "ATTR_TOPOLOGY_MANAGER_MAX_NUMA_NODES",
    "ATTR_TOPOLOGY_MANAGER_POLICY",
    "ATTR_TOPOLOGY_MANAGER_SCOPE",
    "CRD_NAME",
    "GROUP",
    "KIND",
    "LIST_KIND",
    "PLURAL",
    "SHORT_NAME",
    "SINGULAR",
    "VERSION",
    "ZONE_TYPE_NUMA_NODE",
    "AttributeInfo",
    "CostInfo",
    "NodeResourceTopology",
    "ResourceInfo",
    "TopologyManagerConfig",
    "Zone",
    "diff_available",
    "format_diff",
    "get_attribute",
    "merge_attributes",
    "numa_id_from_zone_name",
    "set_attribute",
    "topology_manager_config",
    "zone_name_from_numa_id",
]

GROUP: Final = "topology.node.k8s.io"
VERSION: Final = "v1alpha2"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "NodeResourceTopology"
LIST_KIND: Final = "NodeResourceTopologyList"
PLURAL: Final = "noderesourcetopologies"
SINGULAR: Final = "noderesourcetopology"
SHORT_NAME: Final = "node-res-topo"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

#: The zone ``type`` of a NUMA node; such zones are named ``node-<id>``.
ZONE_TYPE_NUMA_NODE: Final = "Node"
_NUMA_ZONE_PREFIX: Final = "node-"

ATTR_TOPOLOGY_MANAGER_POLICY: Final = "topologyManagerPolicy"
ATTR_TOPOLOGY_MANAGER_SCOPE: Final = "topologyManagerScope"
ATTR_TOPOLOGY_MANAGER_MAX_NUMA_NODES: Final = "topologyManagerMaxNUMANodes"
ATTR_TOPOLOGY_MANAGER_OPTION_PREFIX: Final = "topologyManagerOption"
ATTR_PODS_FINGERPRINT: Final = fingerprint.ATTRIBUTE
ATTR_PODS_FINGERPRINT_METHOD: Final = fingerprint.ATTRIBUTE_METHOD
ATTR_NUMAPLACEMENT_METADATA: Final = "topology.node.k8s.io/numaplacement-metadata"
ATTR_NUMAPLACEMENT_VECTOR: Final = "topology.node.k8s.io/numaplacement-vector"  # a zone attribute
ANNOTATION_FINGERPRINT: Final = fingerprint.ANNOTATION
ANNOTATION_RTE_UPDATE: Final = "k8stopoawareschedwg/rte-update"  # "periodic" or "reactive"

TOPOLOGY_MANAGER_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_MANAGER_SCOPES: Final = ("container", "pod")

#: Deprecated ``topologyPolicies[0]`` values that name a (policy, scope) pair.
LEGACY_TOPOLOGY_POLICIES: Final[Mapping[str, tuple[str, str]]] = {
    "SingleNUMANodePodLevel": ("single-numa-node", "pod"),
    "SingleNUMANodeContainerLevel": ("single-numa-node", "container"),
    "BestEffortPodLevel": ("best-effort", "pod"),
    "BestEffortContainerLevel": ("best-effort", "container"),
    "RestrictedPodLevel": ("restricted", "pod"),
    "RestrictedContainerLevel": ("restricted", "container"),
}


# ------------------------------------------------------------------------ NUMA zones


def zone_name_from_numa_id(numa_id: int) -> str:
    """``node-<id>``, the name of the zone of NUMA node ``numa_id``."""
    if numa_id < 0:
        raise ValueError(f"invalid NUMA id {numa_id}: must not be negative")
    return f"{_NUMA_ZONE_PREFIX}{numa_id}"


def numa_id_from_zone_name(name: str) -> int:
    """The NUMA id in a ``node-<id>`` zone name; ``ValueError`` when it has none."""
    if not name.startswith(_NUMA_ZONE_PREFIX):
        raise ValueError(f"zone name {name!r} does not start with {_NUMA_ZONE_PREFIX!r}")
    suffix = name[len(_NUMA_ZONE_PREFIX) :]
    try:
        numa_id = int(suffix, 10)
    except ValueError:
        raise ValueError(f"zone name {name!r} does not end in a NUMA id") from None
    if numa_id < 0:
        raise ValueError(f"zone name {name!r} has a negative NUMA id")
    return numa_id


# ------------------------------------------------------------------------ attributes


@dataclass(frozen=True, slots=True)
class AttributeInfo:
    name: str
    value: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttributeInfo:
        return cls(str(data["name"]), str(data["value"]))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value}


def get_attribute(attributes: Iterable[AttributeInfo], name: str) -> str | None:
    """The value of the first attribute called ``name``, or None."""
    for attr in attributes:
        if attr.name == name:
            return attr.value
    return None


def set_attribute(attributes: list[AttributeInfo], name: str, value: str) -> None:
    """Update the first attribute called ``name`` in place, or append it."""
    for index, attr in enumerate(attributes):
        if attr.name == name:
            attributes[index] = AttributeInfo(name, value)
            return
    attributes.append(AttributeInfo(name, value))


def merge_attributes(
    existing: Iterable[AttributeInfo], updated: Iterable[AttributeInfo]
) -> list[AttributeInfo]:
    """Existing attributes updated in place, then the new ones in ``updated`` order."""
    merged = list(existing)
    for attr in updated:
        set_attribute(merged, attr.name, attr.value)
    return merged


# ------------------------------------------------------------------- resources, zones


@dataclass(frozen=True, slots=True)
class CostInfo:
    """The cost (distance) from the owning zone to the zone called ``name``."""

    name: str
    value: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CostInfo:
        return cls(str(data["name"]), int(data["value"]))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value}


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    name: str
    capacity: Quantity
    allocatable: Quantity
    available: Quantity

    @classmethod
    def of(cls, name: str, capacity: int, allocatable: int, available: int) -> ResourceInfo:
        """Integer amounts as the exporter writes them (``NewQuantity(v, DecimalSI)``)."""
        return cls(
            name, Quantity.from_int(capacity), Quantity.from_int(allocatable), Quantity.from_int(available)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResourceInfo:
        return cls(
            str(data["name"]),
            coerce(data["capacity"]),
            coerce(data["allocatable"]),
            coerce(data["available"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "capacity": str(self.capacity),
            "allocatable": str(self.allocatable),
            "available": str(self.available),
        }


@dataclass(slots=True)
class Zone:
    name: str
    type: str
    parent: str = ""
    costs: list[CostInfo] = field(default_factory=list)
    attributes: list[AttributeInfo] = field(default_factory=list)
    resources: list[ResourceInfo] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Zone:
        return cls(
            name=str(data["name"]),
            type=str(data["type"]),
            parent=str(data.get("parent") or ""),
            costs=[CostInfo.from_dict(c) for c in data.get("costs") or ()],
            attributes=[AttributeInfo.from_dict(a) for a in data.get("attributes") or ()],
            resources=[ResourceInfo.from_dict(r) for r in data.get("resources") or ()],
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.parent:
            out["parent"] = self.parent
        if self.costs:
            out["costs"] = [c.to_dict() for c in self.costs]
        if self.attributes:
            out["attributes"] = [a.to_dict() for a in self.attributes]
        if self.resources:
            out["resources"] = [r.to_dict() for r in self.resources]
        return out

    @property
    def is_numa_node(self) -> bool:
        return self.type == ZONE_TYPE_NUMA_NODE

    @property
    def numa_id(self) -> int:
        """The NUMA id from the zone name; ``ValueError`` if it has none."""
        return numa_id_from_zone_name(self.name)

    def resource(self, name: str) -> ResourceInfo | None:
        for res in self.resources:
            if res.name == name:
                return res
        return None

    def available(self, name: str) -> Quantity | None:
        res = self.resource(name)
        return None if res is None else res.available

    def attribute(self, name: str) -> str | None:
        return get_attribute(self.attributes, name)

    def cost_to(self, zone_name: str) -> int | None:
        for cost in self.costs:
            if cost.name == zone_name:
                return cost.value
        return None


# ----------------------------------------------------------------------- the object


@dataclass(slots=True)
class NodeResourceTopology:
    """One NRT object. ``metadata`` is kept whole (labels, annotations, owner refs…)."""

    name: str
    zones: list[Zone] = field(default_factory=list)
    attributes: list[AttributeInfo] = field(default_factory=list)
    topology_policies: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeResourceTopology:
        kind = data.get("kind")
        if kind not in (None, KIND):
            raise ValueError(f"expected kind {KIND}, got {kind!r}")
        metadata = copy.deepcopy(dict(data.get("metadata") or {}))
        return cls(
            name=str(metadata.get("name", "")),
            zones=[Zone.from_dict(z) for z in data.get("zones") or ()],
            attributes=[AttributeInfo.from_dict(a) for a in data.get("attributes") or ()],
            topology_policies=[str(p) for p in data.get("topologyPolicies") or ()],
            metadata=metadata,
        )

    def to_dict(self) -> dict[str, Any]:
        metadata = copy.deepcopy(self.metadata)
        metadata["name"] = self.name
        out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata}
        if self.topology_policies:
            out["topologyPolicies"] = list(self.topology_policies)
        out["zones"] = [z.to_dict() for z in self.zones]
        if self.attributes:
            out["attributes"] = [a.to_dict() for a in self.attributes]
        return out

    # -- attributes
    def attribute(self, name: str) -> str | None:
        return get_attribute(self.attributes, name)

    def set_attribute(self, name: str, value: str) -> None:
        set_attribute(self.attributes, name, value)

    @property
    def topology_manager_policy(self) -> str | None:
        return self.attribute(ATTR_TOPOLOGY_MANAGER_POLICY)

    @property
    def topology_manager_scope(self) -> str | None:
        return self.attribute(ATTR_TOPOLOGY_MANAGER_SCOPE)

    @property
    def pods_fingerprint(self) -> str | None:
        """The fingerprint attribute, else the legacy annotation (the scheduler's order)."""
        value = self.attribute(ATTR_PODS_FINGERPRINT)
        if value is None:
            value = (self.metadata.get("annotations") or {}).get(ANNOTATION_FINGERPRINT)
        return value

    @property
    def pods_fingerprint_method(self) -> str | None:
        return self.attribute(ATTR_PODS_FINGERPRINT_METHOD)

    # -- zones and resources
    def zone(self, name: str) -> Zone | None:
        for zone in self.zones:
            if zone.name == name:
                return zone
        return None

    def numa_zones(self) -> list[Zone]:
        """Zones of type ``Node``, in object order."""
        return [z for z in self.zones if z.is_numa_node]

    def resource(self, zone: str, resource: str) -> ResourceInfo | None:
        found = self.zone(zone)
        return None if found is None else found.resource(resource)

    def available(self, zone: str, resource: str) -> Quantity | None:
        found = self.resource(zone, resource)
        return None if found is None else found.available

    def total(self, resource: str, which: str = "available") -> Quantity:
        """Sum of ``which`` (capacity, allocatable or available) over all zones."""
        if which not in ("capacity", "allocatable", "available"):
            raise ValueError(f"unknown amount {which!r}: expected capacity, allocatable or available")
        total = Quantity(0)
        for zone in self.zones:
            res = zone.resource(resource)
            if res is not None:
                total = total + getattr(res, which)
        return total

    def iter_resources(self) -> Iterator[tuple[Zone, ResourceInfo]]:
        for zone in self.zones:
            for res in zone.resources:
                yield zone, res


# ------------------------------------------------------------- topology manager config


@dataclass(frozen=True, slots=True)
class TopologyManagerConfig:
    policy: str = "none"
    scope: str = "container"
    max_numa_nodes: int = 8


_MAX_NUMA_NODES_CAP: Final = 1024


def topology_manager_config(nrt: NodeResourceTopology) -> TopologyManagerConfig:
    """The kubelet topology-manager settings an NRT declares, read as the scheduler does.

    Defaults, then the deprecated ``topologyPolicies[0]``, then the attributes; invalid
    attribute values are ignored.
    """
    policy, scope, max_numa = "none", "container", 8
    if nrt.topology_policies and nrt.topology_policies[0] in LEGACY_TOPOLOGY_POLICIES:
        policy, scope = LEGACY_TOPOLOGY_POLICIES[nrt.topology_policies[0]]
    value = nrt.attribute(ATTR_TOPOLOGY_MANAGER_SCOPE)
    if value in TOPOLOGY_MANAGER_SCOPES:
        scope = value
    value = nrt.attribute(ATTR_TOPOLOGY_MANAGER_POLICY)
    if value in TOPOLOGY_MANAGER_POLICIES:
        policy = value
    value = nrt.attribute(ATTR_TOPOLOGY_MANAGER_MAX_NUMA_NODES)
    if value is not None:
        try:
            parsed = int(value, 10)
        except ValueError:
            parsed = 0
        if parsed > 1:
            max_numa = min(parsed, _MAX_NUMA_NODES_CAP)
    return TopologyManagerConfig(policy, scope, max_numa)


# ---------------------------------------------------------------------------- diffs


def _available_by_zone(nrt: NodeResourceTopology | Mapping[str, Any]) -> dict[str, dict[str, Quantity]]:
    obj = nrt if isinstance(nrt, NodeResourceTopology) else NodeResourceTopology.from_dict(nrt)
    return {zone.name: {res.name: res.available for res in zone.resources} for zone in obj.zones}


def diff_available(
    before: NodeResourceTopology | Mapping[str, Any],
    after: NodeResourceTopology | Mapping[str, Any],
) -> dict[str, dict[str, Quantity]]:
    """How ``available`` changed, per zone and resource: ``after - before``.

    Only non-zero changes are listed. A zone or resource present on one side only counts
    as zero on the other. Zones keep ``after``'s order, then those only in ``before``.
    """
    old, new = _available_by_zone(before), _available_by_zone(after)
    result: dict[str, dict[str, Quantity]] = {}
    for zone in list(new) + [z for z in old if z not in new]:
        old_res, new_res = old.get(zone, {}), new.get(zone, {})
        deltas: dict[str, Quantity] = {}
        for name in list(new_res) + [r for r in old_res if r not in new_res]:
            delta = new_res.get(name, Quantity(0)) - old_res.get(name, Quantity(0))
            if delta:
                deltas[name] = delta
        if deltas:
            result[zone] = deltas
    return result


def format_diff(diff: Mapping[str, Mapping[str, Quantity]]) -> str:
    """One line per zone, e.g. ``node-0: cpu -2, memory -1Gi``; ``no change`` if empty."""
    if not diff:
        return "no change"
    lines = []
    for zone, deltas in diff.items():
        parts = [f"{name} {'+' if delta > 0 else ''}{delta}" for name, delta in sorted(deltas.items())]
        lines.append(f"{zone}: {', '.join(parts)}")
    return "\n".join(lines)
