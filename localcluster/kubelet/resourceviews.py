"""What the podresources API reports, as immutable snapshots of a node's resource managers.

The kubelet rebuilds a :class:`ResourceSnapshot` (under its managers' lock) after every
allocation or device change and swaps it into :class:`ResourceViews`; the podresources
server (on the gRPC loop) reads whichever snapshot is current, never the managers themselves.

The mapping follows upstream's ``pkg/kubelet/apis/podresources/server_v1.go``: regular init
containers are not listed, restartable init containers come before app containers, CPUs are
the exclusive ones only, and every device is reported once per (device, NUMA node).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.localcluster.kubelet.decisions.admission import (
    Allocatable,
    ContainerKind,
    DeviceAllocation,
    MemoryAllocation,
    PodAllocation,
)

__all__ = ["ResourceSnapshot", "ResourceViews", "snapshot"]


def _devices(devices: Iterable[DeviceAllocation]) -> tuple[ContainerDevices, ...]:
    return tuple(
        ContainerDevices(d.resource, (d.device_id,), None if d.numa_node is None else (d.numa_node,))
        for d in devices
    )


def _memory(blocks: Iterable[MemoryAllocation]) -> tuple[ContainerMemory, ...]:
    return tuple(ContainerMemory(b.type, b.size, tuple(b.numa_nodes)) for b in blocks)


def _pod(allocation: PodAllocation) -> PodResources:
    sidecars = [c for c in allocation.containers if c.kind == ContainerKind.SIDECAR]
    apps = [c for c in allocation.containers if c.kind == ContainerKind.APP]
    return PodResources(
        name=allocation.name,
        namespace=allocation.namespace,
        containers=tuple(
            ContainerResources(
                name=c.name,
                cpu_ids=tuple(c.cpus.to_list()),
                devices=_devices(c.devices),
                memory=_memory(c.memory),
            )
            for c in (*sidecars, *apps)
        ),
    )


@dataclass(frozen=True)
class ResourceSnapshot:
    pods: tuple[PodResources, ...] = ()
    allocatable: AllocatableResources = field(default_factory=AllocatableResources)

    def get(self, namespace: str, name: str) -> PodResources | None:
        return next((p for p in self.pods if p.namespace == namespace and p.name == name), None)


def snapshot(allocations: Iterable[PodAllocation], allocatable: Allocatable) -> ResourceSnapshot:
    """A snapshot from :meth:`NodeResourceManagers.allocations` and ``allocatable``."""
    return ResourceSnapshot(
        pods=tuple(_pod(a) for a in allocations),
        allocatable=AllocatableResources(
            cpu_ids=tuple(allocatable.cpus.to_list()),
            devices=_devices(allocatable.devices),
            memory=_memory(allocatable.memory),
        ),
    )


class ResourceViews:
    """A :class:`~nrop.localcluster.kubelet.grpcservers.podresources.PodResourcesProvider`.

    Replacing the snapshot is one attribute store, so readers in other threads always see
    a whole snapshot, old or new.
    """

    def __init__(self) -> None:
        self.current = ResourceSnapshot()

    def list_pods(self) -> Sequence[PodResources]:
        return self.current.pods

    def allocatable(self) -> AllocatableResources:
        return self.current.allocatable

    def get_pod(self, namespace: str, name: str) -> PodResources | None:
        return self.current.get(namespace, name)
