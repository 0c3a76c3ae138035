"""What the kubelet memory manager is given: the machine's NUMA nodes, ``reservedMemory``, and pods.

Owns the inputs of upstream ``pkg/kubelet/cm/memorymanager`` for a Linux node:

* the NUMA nodes as cadvisor reports them (total memory, hugepages per page size);
* the ``reservedMemory`` entries and their startup validation against Node Allocatable
  (``validateReservedMemory``), with upstream's texts (:class:`MemoryManagerConfigError`);
* pods and containers as the ``Static`` policy sees them: Guaranteed or not, ``memory`` and
  ``hugepages-<size>`` requests in bytes, and the pod-scope request (init-container max /
  sidecar rule).

The policy that decides with them is :mod:`.memorymanager`, which re-exports these names.
No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from nrop.api.quantity import Format, format_quantity
from nrop.api.resources import HUGEPAGES_PREFIX

__all__ = [
    "MEMORY",
    "MemoryContainer",
    "MemoryManagerConfigError",
    "MemoryPod",
    "MemoryPolicy",
    "MemoryReservation",
    "NUMANodeMemory",
    "format_binary_si",
    "validate_reserved_memory",
]

MEMORY = "memory"


class MemoryPolicy(StrEnum):
    NONE = "None"
    STATIC = "Static"


class MemoryManagerConfigError(ValueError):
    """The kubelet would refuse to start; the text is upstream's."""


# --- quantities ----------------------------------------------------------------------------


def format_binary_si(value: int) -> str:
    """Canonical string of a BinarySI quantity of ``value`` bytes ("1100Mi", "2Gi", "1536")."""
    return format_quantity(value, Format.BINARY_SI)


def _is_memory_resource(name: str) -> bool:
    return name == MEMORY or name.startswith(HUGEPAGES_PREFIX)


# --- inputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NUMANodeMemory:
    """One NUMA node as cadvisor reports it (``machineInfo.Topology[i]``)."""

    id: int
    #: Total memory of the node in bytes, hugepages included.
    memory: int
    #: Page size in bytes -> number of pages configured on this node.
    hugepages: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryReservation:
    """One ``reservedMemory`` entry: ``{numaNode: 0, limits: {memory: 1100Mi}}`` (bytes)."""

    numa_node: int
    limits: Mapping[str, int]


@dataclass(frozen=True)
class MemoryContainer:
    name: str
    #: Container requests in bytes; only ``memory`` and ``hugepages-*`` are considered.
    requests: Mapping[str, int] = field(default_factory=dict)
    #: An init container with ``restartPolicy: Always`` (sidecar); its memory is never reused.
    restartable: bool = False

    def memory_requests(self) -> dict[str, int]:
        return {name: int(size) for name, size in self.requests.items() if _is_memory_resource(name)}


@dataclass(frozen=True)
class MemoryPod:
    uid: str
    #: QoS class is Guaranteed (computed by the caller with the usual QoS rules).
    guaranteed: bool
    init_containers: Sequence[MemoryContainer] = ()
    containers: Sequence[MemoryContainer] = ()
    #: Pod-level ``resources`` set (1.34+): the static policy skips such pods.
    pod_level_resources: bool = False

    def all_containers(self) -> list[MemoryContainer]:
        return [*self.init_containers, *self.containers]

    def is_regular_init_container(self, name: str) -> bool:
        for container in self.init_containers:
            if container.name == name:
                return not container.restartable
        return False

    def requested(self) -> dict[str, int]:
        """Pod-scope request per type: max(init max with sidecars, app sum + sidecar sum)."""
        init_max: dict[str, int] = {}
        sidecars: dict[str, int] = {}
        for container in self.init_containers:
            for name, size in container.memory_requests().items():
                init_max.setdefault(name, 0)
                if container.restartable:
                    sidecars[name] = sidecars.get(name, 0) + size
                elif sidecars.get(name, 0) + size > init_max[name]:
                    init_max[name] = sidecars.get(name, 0) + size
        apps: dict[str, int] = {}
        for container in self.containers:
            for name, size in container.memory_requests().items():
                apps[name] = apps.get(name, 0) + size
        # Upstream only reports types requested by app containers.
        return {name: max(apps[name] + sidecars.get(name, 0), init_max.get(name, 0)) for name in apps}


# --- configuration -------------------------------------------------------------------------


def validate_reserved_memory(
    numa_nodes: Iterable[int],
    node_allocatable_reservation: Mapping[str, int],
    reserved_memory: Sequence[MemoryReservation],
) -> None:
    """``validateReservedMemory``: per memory type, Σ reservedMemory == Node Allocatable reservation.

    ``node_allocatable_reservation`` is systemReserved + kubeReserved + evictionHard
    (``memory.available`` counts as ``memory``), in bytes.
    """
    known = set(numa_nodes)
    totals: dict[str, int] = {}
    for reservation in reserved_memory:
        if reservation.numa_node not in known:
            raise MemoryManagerConfigError(
                "the reserved memory configuration references a NUMA node "
                f"{reservation.numa_node} that does not exist on this machine"
            )
        for name, size in reservation.limits.items():
            totals[name] = totals.get(name, 0) + int(size)
    types = set(totals) | {name for name in node_allocatable_reservation if _is_memory_resource(name)}
    for name in sorted(types):
        expected = int(node_allocatable_reservation.get(name, 0))
        reserved = totals.get(name, 0)
        if expected != reserved:
            raise MemoryManagerConfigError(
                f'the total amount "{format_binary_si(reserved)}" of type "{name}" is not equal to '
                f'the value "{format_binary_si(expected)}" determined by Node Allocatable feature'
            )
