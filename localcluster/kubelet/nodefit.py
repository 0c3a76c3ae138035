"""Node capacity/allocatable and the kubelet's "does the pod fit" predicate, as pure arithmetic.

Owns two upstream computations the admission pipeline needs and nothing else:

* Node Allocatable (``pkg/kubelet/cm`` + ``nodestatus``): capacity from the machine,
  minus systemReserved + kubeReserved + hard eviction thresholds, minus hugepages for
  ``memory``; device-plugin resources count their healthy devices.
* The predicate admit handler's resource check (``lifecycle/predicate.go`` →
  ``noderesources.Fits``): the pod's effective requests (init-container max, sidecar sums,
  overhead) against allocatable minus what the other active pods request, in upstream's
  check order (pods, cpu, memory, ephemeral-storage, then scalar resources), with the
  ``OutOf<resource>`` reason and ``Node didn't have enough resource: ...`` message.

Quantities are integers: cpu in millicores, everything else in whole units (bytes, counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nrop.api import quantity
from nrop.localcluster.kubelet.cpumanager import node_cpu_capacity_and_allocatable
from nrop.localcluster.kubelet.cpuset import CPUSet
from nrop.localcluster.kubelet.machine import NodeSpec
from nrop.localcluster.kubelet.memorymanager import hugepage_resource_name

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "InsufficientResource",
    "NodeResources",
    "container_requests",
    "cpu_reservation",
    "fits",
    "is_extended_resource",
    "memory_reservation",
    "node_resources",
    "pod_requests",
    "resource_amount",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

ResourceAmounts = dict[str, int]


def resource_amount(name: str, value: Any) -> int:
    """A quantity as the scheduler framework counts it: cpu in millicores, the rest in units."""
    parsed = quantity.coerce(value)
    return parsed.milli_value() if name == CPU else parsed.value()


def is_extended_resource(name: str) -> bool:
    """``IsExtendedResourceName``: domain-qualified, outside ``kubernetes.io``, not a quota name."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


def container_requests(container: Mapping[str, Any]) -> ResourceAmounts:
    """A container's requests, defaulted from its limits as the API server does."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return {name: resource_amount(name, value) for name, value in merged.items()}


def _add(into: ResourceAmounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max(into: ResourceAmounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = max(into.get(name, 0), value)


def pod_requests(spec: Mapping[str, Any]) -> ResourceAmounts:
    """``resourcehelper.PodRequests``: max(app sum + sidecars, each init + earlier sidecars) + overhead.

    With pod-level ``resources`` (PodLevelResources, on by default since 1.34) its cpu and
    memory requests replace the aggregated container values.
    """
    total: ResourceAmounts = {}
    for container in spec.get("containers") or ():
        _add(total, container_requests(container))
    sidecars: ResourceAmounts = {}
    init_max: ResourceAmounts = {}
    for container in spec.get("initContainers") or ():
        requests = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_max, sidecars)
        else:
            effective = dict(requests)
            _add(effective, sidecars)
            _max(init_max, effective)
    _max(total, init_max)
    pod_level = container_requests({"resources": spec.get("resources") or {}})
    for name in (CPU, MEMORY):
        if name in pod_level:
            total[name] = pod_level[name]
    _add(total, {n: resource_amount(n, v) for n, v in (spec.get("overhead") or {}).items()})
    return total


@dataclass(frozen=True)
class NodeResources:
    """``status.capacity`` and ``status.allocatable`` of a node, as integers."""

    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]


def _quantity_or_percentage(text: str, capacity: int) -> int:
    if text.endswith("%"):
        return int(capacity * float(text[:-1]) / 100)
    return quantity.coerce(text).value()


def node_resources(spec: NodeSpec, devices: Mapping[str, tuple[int, int]] | None = None) -> NodeResources:
    """Capacity and allocatable per reference section 6.

    ``devices`` maps a device-plugin resource to (capacity = healthy + unhealthy, allocatable =
    healthy), as the device manager reports it.
    """
    machine, config = spec.machine, spec.kubelet
    cpu_capacity, _, cpu_allocatable = _cpu(spec)
    capacity: ResourceAmounts = {
        CPU: cpu_capacity,
        MEMORY: sum(node.memory_bytes for node in machine.numa_nodes),
        EPHEMERAL_STORAGE: machine.ephemeral_storage_bytes,
        PODS: config.max_pods,
    }
    hugepages: ResourceAmounts = {}
    for node in machine.numa_nodes:
        for page_size, pages in node.hugepages.items():
            name = hugepage_resource_name(page_size)
            hugepages[name] = hugepages.get(name, 0) + page_size * pages
    capacity.update(hugepages)

    reservation = _reservation(spec, capacity)
    allocatable = {name: max(0, value - reservation.get(name, 0)) for name, value in capacity.items()}
    allocatable[CPU] = cpu_allocatable
    allocatable[MEMORY] = max(0, allocatable[MEMORY] - sum(hugepages.values()))
    for resource, (device_capacity, healthy) in (devices or {}).items():
        capacity[resource] = device_capacity
        allocatable[resource] = healthy
    return NodeResources(capacity, allocatable)


def _cpu(spec: NodeSpec) -> tuple[int, int | None, int]:
    config = spec.kubelet
    reserved_cpus = CPUSet.parse(config.reserved_system_cpus) if config.reserved_system_cpus else None
    millis = {
        source: resource_amount(CPU, reserved[CPU]) if CPU in reserved else None
        for source, reserved in (("system", config.system_reserved), ("kube", config.kube_reserved))
    }
    return node_cpu_capacity_and_allocatable(
        spec.machine.topology,
        system_reserved_millis=millis["system"],
        kube_reserved_millis=millis["kube"],
        reserved_system_cpus=reserved_cpus,
    )


def cpu_reservation(spec: NodeSpec) -> int | None:
    """systemReserved.cpu + kubeReserved.cpu in millicores (``None``: neither is set)."""
    return _cpu(spec)[1]


def _reservation(spec: NodeSpec, capacity: Mapping[str, int]) -> ResourceAmounts:
    # cpu is handled by the CPU manager's rules (reservedSystemCPUs replaces it).
    config = spec.kubelet
    reservation: ResourceAmounts = {}
    for reserved in (config.system_reserved, config.kube_reserved):
        for name in (MEMORY, EPHEMERAL_STORAGE):
            if name in reserved:
                reservation[name] = reservation.get(name, 0) + resource_amount(name, reserved[name])
    for signal, name in (("memory.available", MEMORY), ("nodefs.available", EPHEMERAL_STORAGE)):
        if signal in config.eviction_hard:
            amount = _quantity_or_percentage(config.eviction_hard[signal], capacity[name])
            reservation[name] = reservation.get(name, 0) + amount
    return reservation


def memory_reservation(spec: NodeSpec) -> ResourceAmounts:
    """systemReserved + kubeReserved + evictionHard of ``memory``: what reservedMemory must sum to."""
    capacity = {
        MEMORY: sum(node.memory_bytes for node in spec.machine.numa_nodes),
        EPHEMERAL_STORAGE: spec.machine.ephemeral_storage_bytes,
    }
    reservation = _reservation(spec, capacity)
    return {MEMORY: reservation[MEMORY]} if MEMORY in reservation else {}


@dataclass(frozen=True)
class InsufficientResource:
    """One failed resource check; ``reason`` and ``message`` are the kubelet's admission texts."""

    resource: str
    requested: int
    used: int
    capacity: int

    @property
    def reason(self) -> str:
        return f"OutOf{self.resource}"

    @property
    def message(self) -> str:
        return (
            f"Node didn't have enough resource: {self.resource}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}"
        )


def fits(
    request: Mapping[str, int], others: Iterable[Mapping[str, int]], allocatable: Mapping[str, int]
) -> list[InsufficientResource]:
    """``noderesources.Fits`` for the kubelet: every insufficient resource, in upstream order.

    ``others`` are the effective requests of the other active pods.  Extended resources the
    node does not advertise are ignored (``removeMissingExtendedResources``); the kubelet
    reports only the first failure.
    """
    others = list(others)
    used: ResourceAmounts = {}
    for other in others:
        _add(used, other)
    failures: list[InsufficientResource] = []
    allowed_pods = allocatable.get(PODS, 0)
    if len(others) + 1 > allowed_pods:
        failures.append(InsufficientResource(PODS, 1, len(others), allowed_pods))
    wanted = {
        name: value
        for name, value in request.items()
        if value > 0 and not (is_extended_resource(name) and name not in allocatable)
    }
    ordered = [n for n in (CPU, MEMORY, EPHEMERAL_STORAGE) if n in wanted]
    ordered += sorted(n for n in wanted if n not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) and _is_scalar(n))
    for name in ordered:
        capacity = allocatable.get(name, 0)
        if wanted[name] > capacity - used.get(name, 0):
            failures.append(InsufficientResource(name, wanted[name], used.get(name, 0), capacity))
    return failures


def _is_scalar(name: str) -> bool:
    # Extended, hugepages, prefixed native and attachable-volume resources are "scalar".
    return (
        is_extended_resource(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or "/" in name
        or name.startswith("attachable-volumes-")
    )
