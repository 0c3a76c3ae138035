"""Node capacity/allocatable and the kubelet's "does the pod fit" predicate, as pure arithmetic.

Owns the kubelet's fit predicate and the integer view of Node Allocatable it checks against:

* Node Allocatable as integers, taken from ``nodestatus`` (the one computation the Node's
  status also shows), with device-plugin resources counting their currently healthy devices.
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

from nrop.api import podrequests
from nrop.api.resources import is_extended_resource
from nrop.localcluster.kubelet.decisions import nodestatus
from nrop.localcluster.kubelet.machine import NodeSpec

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


resource_amount = podrequests.amount
container_requests = podrequests.container_requests
#: ``resourcehelper.PodRequests`` (init-container max, sidecar sums, pod-level resources, overhead).
pod_requests = podrequests.pod_requests


@dataclass(frozen=True)
class NodeResources:
    """``status.capacity`` and ``status.allocatable`` of a node, as integers."""

    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]


def node_resources(spec: NodeSpec, devices: Mapping[str, tuple[int, int]] | None = None) -> NodeResources:
    """Capacity and allocatable as integers, from the same computation as the Node's status.

    ``devices`` maps a device-plugin resource to (capacity = healthy + unhealthy, allocatable =
    healthy), as the device manager reports it now (plugins come and go).
    """
    status = nodestatus.node_resources(spec, include_devices=False)
    capacity = {name: resource_amount(name, value) for name, value in status.capacity.items()}
    allocatable = {name: resource_amount(name, value) for name, value in status.allocatable.items()}
    for resource, (device_capacity, healthy) in (devices or {}).items():
        capacity[resource] = device_capacity
        allocatable[resource] = healthy
    return NodeResources(capacity, allocatable)


def cpu_reservation(spec: NodeSpec) -> int | None:
    """The node's cpu reservation in millicores (``None``: nothing reserved)."""
    cpu = nodestatus.node_allocatable_reservation(spec).get(CPU)
    return None if cpu is None else cpu.milli_value()


def memory_reservation(spec: NodeSpec) -> ResourceAmounts:
    """systemReserved + kubeReserved + evictionHard of ``memory``: what reservedMemory must sum to."""
    memory = nodestatus.node_allocatable_reservation(spec).get(MEMORY)
    return {} if memory is None else {MEMORY: memory.value()}


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
        for name, value in other.items():
            used[name] = used.get(name, 0) + value
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
