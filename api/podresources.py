"""The kubelet PodResources API v1 as plain data: one model for the server and its clients.

Owns the shape of what ``PodResourcesLister`` (``pkg/kubelet/apis/podresources/v1``)
reports, as frozen dataclasses named after its protobuf messages. The emulated kubelet's
managers build these records and its gRPC server turns them into protobuf; the exporter
(``nrop.rte``) turns the protobuf it receives back into them and computes the NRT from
them. Neither side needs the other's code, only this module, which does no I/O.

Conventions shared by every message:

* ``numa_nodes=None`` is an unset ``topology`` field; ``()`` is a topology listing no
  node. The two differ on the wire, and the exporter counts neither anywhere.
* CPU ids are plain integers, device ids strings, memory sizes bytes.
* Sequences are tuples, so a record handed to another thread can never change under it.

``ContainerResources.dynamic_resources`` (DRA claims) is not modelled: no component here
reports or reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AllocatableResources",
    "ContainerDevices",
    "ContainerMemory",
    "ContainerResources",
    "PodResources",
]


@dataclass(frozen=True)
class ContainerDevices:
    """Devices of one resource (``resource_name``, ``device_ids``, ``topology``).

    The kubelet reports one entry per (device, NUMA node): a device on two nodes appears
    twice, each time with a single node.
    """

    resource: str
    ids: tuple[str, ...]
    numa_nodes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ContainerMemory:
    """A memory block (``memory_type``, ``size``, ``topology``).

    ``type`` is ``memory`` or ``hugepages-<size>``; ``size`` is in bytes. Only the memory
    manager's Static policy reports blocks; one may span several NUMA nodes.
    """

    type: str
    size: int
    numa_nodes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ContainerResources:
    """What one container was given exclusively."""

    name: str
    #: Exclusive CPUs only (CPU manager static policy); empty for shared-pool containers,
    #: so burstable and best-effort requests never show up here.
    cpu_ids: tuple[int, ...] = ()
    devices: tuple[ContainerDevices, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()


@dataclass(frozen=True)
class PodResources:
    """One pod of the ``List`` / ``Get`` answers."""

    name: str
    namespace: str
    #: Restartable init containers in spec order, then app containers; regular init
    #: containers are never listed.
    containers: tuple[ContainerResources, ...] = ()
    #: Pod-level exclusive allocations (gate ``PodLevelResourceManagers``), usually empty;
    #: the exporter ignores them, as upstream RTE does.
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()


@dataclass(frozen=True)
class AllocatableResources:
    """The ``GetAllocatableResources`` answer."""

    #: Every online CPU but the reserved ones under the static policy, else empty.
    cpu_ids: tuple[int, ...] = ()
    #: Healthy devices only, one entry per (device, NUMA node).
    devices: tuple[ContainerDevices, ...] = ()
    #: One block per (NUMA node, type) with a non-zero allocatable amount (memory
    #: manager Static policy), else empty.
    memory: tuple[ContainerMemory, ...] = ()
