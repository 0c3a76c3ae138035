"""The decision part of the kubelet device manager, and its checkpoint format.

Owns what upstream ``pkg/kubelet/cm/devicemanager`` decides once device plugins have
reported their devices:

* the inventory per resource (healthy / unhealthy devices, NUMA affinity or none, as
  :class:`nrop.api.deviceplugin.Device`) and the capacity/allocatable it implies;
* topology hints for the container and pod scopes (``GetTopologyHints``,
  ``GetPodTopologyHints``, ``generateDeviceTopologyHints``);
* ``devicesToAllocate`` (reusable init-container devices first, then aligned devices,
  the plugin's preferred allocation, unaligned and topology-less ones) with upstream's
  error texts, and the init-container reuse bookkeeping of ``Allocate``;
* what the ``kubelet_internal_checkpoint`` holds (its format, with the FNV-32a/go-spew
  checksum, is :mod:`nrop.api.checkpoints`, whose names are re-exported here).

No I/O and no gRPC: the ``GetPreferredAllocation`` RPC is an optional callable, and the
``Allocate`` RPC's response bytes are recorded by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nrop.api.checkpoints import DEVICE_MANAGER_CHECKPOINT_FILE as CHECKPOINT_FILE
from nrop.api.checkpoints import CorruptCheckpointError, DeviceCheckpoint, PodDevicesEntry
from nrop.api.deviceplugin import Device, sorted_device_ids
from nrop.localcluster.kubelet.cm import bitmask
from nrop.localcluster.kubelet.cm.hints import TopologyHint

__all__ = [
    "CHECKPOINT_FILE",
    "NODE_WITHOUT_TOPOLOGY",
    "CorruptCheckpointError",
    "DeviceAllocationError",
    "DeviceCheckpoint",
    "DeviceContainer",
    "DeviceManager",
    "DevicePod",
    "PodDevicesEntry",
    "PreferredAllocation",
]

#: NUMA key under which devices without topology are recorded.
NODE_WITHOUT_TOPOLOGY = -1

#: ``GetPreferredAllocation(available, must_include, size)`` of a plugin that supports it.
PreferredAllocation = Callable[[frozenset[str], frozenset[str], int], Iterable[str]]


class DeviceAllocationError(Exception):
    """A ``devicesToAllocate`` failure; the topology manager reports ``UnexpectedAdmissionError``."""


@dataclass(frozen=True)
class DeviceContainer:
    name: str
    #: Container ``resources.limits`` as integers (only device-plugin resources are used).
    limits: Mapping[str, int] = field(default_factory=dict)
    #: An init container with ``restartPolicy: Always`` (sidecar); its devices are never reused.
    restartable: bool = False


@dataclass(frozen=True)
class DevicePod:
    uid: str
    init_containers: Sequence[DeviceContainer] = ()
    containers: Sequence[DeviceContainer] = ()

    def container(self, name: str) -> DeviceContainer | None:
        for container in (*self.init_containers, *self.containers):
            if container.name == name:
                return container
        return None

    def limits(self) -> dict[str, int]:
        """``resource.PodLimits``: max(init max with sidecars, app sum + sidecar sum) per resource."""
        init_max: dict[str, int] = {}
        sidecars: dict[str, int] = {}
        for container in self.init_containers:
            for name, value in container.limits.items():
                if container.restartable:
                    sidecars[name] = sidecars.get(name, 0) + value
                else:
                    init_max[name] = max(init_max.get(name, 0), sidecars.get(name, 0) + value)
        result: dict[str, int] = {}
        for container in self.containers:
            for name, value in container.limits.items():
                result[name] = result.get(name, 0) + value
        for name, value in sidecars.items():
            result[name] = result.get(name, 0) + value
        for name, value in init_max.items():
            result[name] = max(result.get(name, 0), value)
        return result


#: NUMA node id (or -1) -> device ids, as recorded per (pod, container, resource).
DevicesPerNUMA = dict[int, list[str]]


@dataclass
class _ContainerDevices:
    per_numa: DevicesPerNUMA
    alloc_resp: bytes | None = None

    def devices(self) -> set[str]:
        return {d for ids in self.per_numa.values() for d in ids}


class DeviceManager:
    """Device inventory and allocation state of one node."""

    def __init__(self, numa_nodes: Sequence[int]) -> None:
        self.numa_nodes = sorted(numa_nodes)
        self.all_devices: dict[str, dict[str, Device]] = {}
        self.healthy: dict[str, set[str]] = {}
        self.unhealthy: dict[str, set[str]] = {}
        #: pod UID -> container -> resource -> devices.
        self.pod_devices: dict[str, dict[str, dict[str, _ContainerDevices]]] = {}
        self.allocated: dict[str, set[str]] = {}
        #: pod UID -> resource -> devices of regular init containers that later containers may take.
        self.devices_to_reuse: dict[str, dict[str, set[str]]] = {}

    # inventory

    def set_devices(self, resource: str, devices: Iterable[Device]) -> None:
        """A plugin's full device list (registration or ``ListAndWatch`` update)."""
        listed = {d.id: d for d in devices}
        self.all_devices[resource] = listed
        self.healthy[resource] = {i for i, d in listed.items() if d.healthy}
        self.unhealthy[resource] = {i for i, d in listed.items() if not d.healthy}

    def capacity(self) -> dict[str, tuple[int, int]]:
        """resource -> (capacity = healthy + unhealthy, allocatable = healthy)."""
        return {
            res: (len(self.healthy[res]) + len(self.unhealthy.get(res, ())), len(self.healthy[res]))
            for res in sorted(self.healthy)
        }

    def is_device_plugin_resource(self, resource: str) -> bool:
        return resource in self.healthy or resource in self.allocated

    def has_topology_alignment(self, resource: str) -> bool:
        return any(d.numa_nodes for d in self.all_devices.get(resource, {}).values())

    def available(self, resource: str) -> set[str]:
        return self.healthy.get(resource, set()) - self.allocated.get(resource, set())

    def container_devices(self, pod_uid: str, container: str, resource: str) -> set[str] | None:
        entry = self.pod_devices.get(pod_uid, {}).get(container, {}).get(resource)
        return None if entry is None else entry.devices()

    def pod_resource_devices(self, pod_uid: str, resource: str) -> set[str]:
        return {
            d
            for per_ctr in self.pod_devices.get(pod_uid, {}).values()
            if resource in per_ctr
            for d in per_ctr[resource].devices()
        }

    def _recompute_allocated(self) -> None:
        allocated: dict[str, set[str]] = {}
        for per_pod in self.pod_devices.values():
            for per_ctr in per_pod.values():
                for resource, entry in per_ctr.items():
                    allocated.setdefault(resource, set()).update(entry.devices())
        self.allocated = allocated

    def update_allocated_devices(self, active_pod_uids: Iterable[str]) -> None:
        """``UpdateAllocatedDevices``: forget the devices of pods no longer active.

        Include the pod being admitted in ``active_pod_uids``, as upstream does.
        """
        active = set(active_pod_uids)
        stale = [uid for uid in self.pod_devices if uid not in active]
        if not stale:
            return
        for uid in stale:
            del self.pod_devices[uid]
        self._recompute_allocated()

    # hints

    def _device_nodes(self, resource: str, device_id: str) -> tuple[int, ...]:
        device = self.all_devices.get(resource, {}).get(device_id)
        return () if device is None else device.nodes()

    def generate_hints(
        self, resource: str, available: set[str], reusable: set[str], request: int
    ) -> list[TopologyHint]:
        """``generateDeviceTopologyHints``; preferred = the fewest NUMA nodes that could ever hold it."""
        min_affinity_size = len(self.numa_nodes)
        devices = self.all_devices.get(resource, {})
        masks: list[frozenset[int]] = []
        for mask in bitmask.iterate_bitmasks(self.numa_nodes):
            in_mask = sum(1 for d in devices.values() if mask & set(d.nodes()))
            if in_mask >= request and len(mask) < min_affinity_size:
                min_affinity_size = len(mask)
            matching = 0
            skip = False
            for device_id in reusable:
                device = devices.get(device_id)
                if device is None or device.numa_nodes is None:
                    continue
                if not mask & set(device.numa_nodes):
                    skip = True
                    break
                matching += 1
            if skip:
                continue
            matching += sum(1 for d in available if mask & set(self._device_nodes(resource, d)))
            if matching >= request:
                masks.append(mask)
        return [TopologyHint(mask, len(mask) == min_affinity_size) for mask in masks]

    def _container_requests(self, container: DeviceContainer) -> dict[str, int]:
        return {res: int(n) for res, n in container.limits.items() if self.is_device_plugin_resource(res)}

    def _allocated_hints(self, resource: str, allocated: set[str], requested: int) -> list[TopologyHint]:
        """Hints for devices allocated already (a restart or re-admission): exactly those, or none
        when the request no longer matches the count."""
        if len(allocated) != requested:
            return []
        return self.generate_hints(resource, allocated, set(), requested)

    def get_topology_hints(
        self, pod: DevicePod, container: DeviceContainer
    ) -> dict[str, list[TopologyHint] | None]:
        """Container-scope ``GetTopologyHints`` (call :meth:`update_allocated_devices` first)."""
        hints: dict[str, list[TopologyHint] | None] = {}
        for resource, requested in sorted(self._container_requests(container).items()):
            if not self.has_topology_alignment(resource):
                hints[resource] = None
                continue
            allocated = self.container_devices(pod.uid, container.name, resource)
            if allocated:
                hints[resource] = self._allocated_hints(resource, allocated, requested)
                continue
            available = self.available(resource)
            reusable = self.devices_to_reuse.get(pod.uid, {}).get(resource, set())
            if len(available | reusable) < requested:
                hints[resource] = []
                continue
            hints[resource] = self.generate_hints(resource, available, reusable, requested)
        return hints

    def get_pod_topology_hints(self, pod: DevicePod) -> dict[str, list[TopologyHint] | None]:
        """Pod-scope ``GetPodTopologyHints`` on the pod's limits (init max / sidecar rule)."""
        hints: dict[str, list[TopologyHint] | None] = {}
        requests = {res: n for res, n in pod.limits().items() if self.is_device_plugin_resource(res)}
        for resource, requested in sorted(requests.items()):
            if not self.has_topology_alignment(resource):
                hints[resource] = None
                continue
            allocated = self.pod_resource_devices(pod.uid, resource)
            if allocated:
                hints[resource] = self._allocated_hints(resource, allocated, requested)
                continue
            available = self.available(resource)
            if len(available) < requested:
                hints[resource] = []
                continue
            hints[resource] = self.generate_hints(resource, available, set(), requested)
        return hints

    # allocation

    def filter_by_affinity(
        self, resource: str, available: set[str], affinity: TopologyHint
    ) -> tuple[set[str], set[str], set[str]]:
        """Split ``available`` into (aligned, unaligned, without topology) for ``affinity``."""
        if not self.has_topology_alignment(resource) or affinity.numa_nodes is None:
            return set(), set(), set(available)
        hint_nodes = affinity.numa_nodes
        per_node: dict[int, set[str]] = {}
        for device_id in available:
            nodes = self._device_nodes(resource, device_id) or (NODE_WITHOUT_TOPOLOGY,)
            for node in nodes:
                per_node.setdefault(node, set()).add(device_id)

        def order(node: int) -> tuple[int, int, int]:
            group = 0 if node in hint_nodes else (2 if node == NODE_WITHOUT_TOPOLOGY else 1)
            return (group, len(per_node[node]), node)

        nodes_in_order = sorted(per_node, key=order)
        aligned: set[str] = set()
        unaligned: set[str] = set()
        without: set[str] = set()
        for device_id in available:
            # A multi-NUMA device goes by the first of its nodes in that order.
            for node in nodes_in_order:
                if device_id in per_node[node]:
                    if node == NODE_WITHOUT_TOPOLOGY:
                        without.add(device_id)
                    elif node in hint_nodes:
                        aligned.add(device_id)
                    else:
                        unaligned.add(device_id)
                    break
        return aligned, unaligned, without

    def devices_to_allocate(
        self,
        pod_uid: str,
        container: str,
        resource: str,
        required: int,
        *,
        reusable: Iterable[str],
        affinity: TopologyHint,
        preferred_allocation: PreferredAllocation | None = None,
    ) -> set[str]:
        """``devicesToAllocate``: the new devices for (pod, container, resource).

        Marks them allocated; an empty set means nothing to do.  Raises
        :class:`DeviceAllocationError` with upstream's text.
        """
        needed = required
        existing = self.container_devices(pod_uid, container, resource)
        if existing is not None:
            needed -= len(existing)
            if needed != 0:
                raise DeviceAllocationError(
                    f'pod "{pod_uid}" container "{container}" changed request for resource "{resource}" '
                    f"from {len(existing)} to {required}"
                )
        if resource not in self.healthy:
            raise DeviceAllocationError(f"cannot allocate unregistered device {resource}")
        healthy = self.healthy[resource]
        if not healthy:
            raise DeviceAllocationError(
                f"no healthy devices present; cannot allocate unhealthy devices {resource}"
            )
        if existing is not None and not existing <= healthy:
            raise DeviceAllocationError(
                f"previously allocated devices are no longer healthy; cannot allocate unhealthy devices {resource}"
            )
        if needed == 0:
            return set()

        allocated: set[str] = set()
        in_use = self.allocated.setdefault(resource, set())

        def take_from(candidates: Iterable[str]) -> bool:
            nonlocal needed
            for device_id in sorted_device_ids(set(candidates) - allocated):
                in_use.add(device_id)
                allocated.add(device_id)
                needed -= 1
                if needed == 0:
                    return True
            return False

        def preferred(pool: set[str]) -> set[str]:
            if preferred_allocation is None:
                return set()
            return set(preferred_allocation(frozenset(pool | allocated), frozenset(allocated), required))

        if take_from(reusable):
            return allocated
        available = healthy - in_use
        if len(available) < needed:
            raise DeviceAllocationError(
                f"requested number of devices unavailable for {resource}. Requested: {needed}, Available: {len(available)}"
            )
        aligned, unaligned, without = self.filter_by_affinity(resource, available, affinity)
        if needed < len(aligned):
            if take_from(preferred(aligned) & aligned) or take_from(aligned):
                return allocated
            raise DeviceAllocationError(
                f"unexpectedly allocated less resources than required. Requested: {required}, Got: {required - needed}"
            )
        if take_from(aligned):
            return allocated
        if take_from(preferred(available) & available) or take_from(unaligned) or take_from(without):
            return allocated
        raise DeviceAllocationError(
            f"unexpectedly allocated less resources than required. Requested: {required}, Got: {required - needed}"
        )

    def _record(self, pod_uid: str, container: str, resource: str, devices: set[str]) -> None:
        per_numa: DevicesPerNUMA = {}
        for device_id in sorted_device_ids(devices):
            for node in self._device_nodes(resource, device_id) or (NODE_WITHOUT_TOPOLOGY,):
                per_numa.setdefault(node, []).append(device_id)
        self.pod_devices.setdefault(pod_uid, {}).setdefault(container, {})[resource] = _ContainerDevices(
            per_numa
        )

    def allocate(
        self,
        pod: DevicePod,
        container: DeviceContainer,
        affinity: TopologyHint,
        preferred_allocation: Mapping[str, PreferredAllocation] | None = None,
    ) -> dict[str, set[str]]:
        """``Allocate(pod, container)``: choose and record devices for every device resource.

        Returns resource -> newly chosen devices (what the plugin ``Allocate`` RPC is sent).
        Regular init containers' devices become reusable by the following containers;
        sidecars' and app containers' devices are removed from the reusable pool.
        """
        reuse = self.devices_to_reuse.setdefault(pod.uid, {})
        for uid in list(self.devices_to_reuse):
            if uid != pod.uid:
                del self.devices_to_reuse[uid]
        chosen: dict[str, set[str]] = {}
        for resource, needed in sorted(container.limits.items()):
            if not self.is_device_plugin_resource(resource):
                continue
            devices = self.devices_to_allocate(
                pod.uid,
                container.name,
                resource,
                int(needed),
                reusable=reuse.get(resource, set()),
                affinity=affinity,
                preferred_allocation=(preferred_allocation or {}).get(resource),
            )
            if devices:
                self._record(pod.uid, container.name, resource, devices)
                chosen[resource] = devices
        is_init = any(c.name == container.name for c in pod.init_containers)
        own = self.pod_devices.get(pod.uid, {}).get(container.name, {})
        for resource, entry in own.items():
            if is_init and not container.restartable:
                reuse.setdefault(resource, set()).update(entry.devices())
            elif resource in reuse:
                reuse[resource] -= entry.devices()
        return chosen

    def set_alloc_response(self, pod_uid: str, container: str, resource: str, response: bytes) -> None:
        """Record the plugin's serialised ``ContainerAllocateResponse`` for the checkpoint."""
        self.pod_devices[pod_uid][container][resource].alloc_resp = response

    def remove_container(self, pod_uid: str, container: str) -> None:
        """Forget a container's devices (e.g. after a failed ``Allocate`` RPC)."""
        per_pod = self.pod_devices.get(pod_uid, {})
        per_pod.pop(container, None)
        if not per_pod:
            self.pod_devices.pop(pod_uid, None)
        self._recompute_allocated()

    # checkpoint

    def checkpoint(self) -> DeviceCheckpoint:
        entries = [
            PodDevicesEntry(
                uid, ctr, res, {n: list(ids) for n, ids in entry.per_numa.items()}, entry.alloc_resp
            )
            for uid in sorted(self.pod_devices)
            for ctr in sorted(self.pod_devices[uid])
            for res, entry in sorted(self.pod_devices[uid][ctr].items())
        ]
        registered = {res: sorted_device_ids(ids) for res, ids in sorted(self.healthy.items())}
        return DeviceCheckpoint(entries or None, registered)

    def restore(self, checkpoint: DeviceCheckpoint) -> None:
        """Adopt a checkpoint at startup: allocations come back, registered resources exist
        with no healthy device until their plugin registers again."""
        self.pod_devices = {}
        for entry in checkpoint.entries or ():
            self.pod_devices.setdefault(entry.pod_uid, {}).setdefault(entry.container_name, {})[
                entry.resource_name
            ] = _ContainerDevices(
                {n: list(ids or ()) for n, ids in entry.device_ids.items()}, entry.alloc_resp
            )
        self._recompute_allocated()
        for resource in checkpoint.registered or {}:
            self.healthy[resource] = set()
            self.unhealthy[resource] = set()
            self.all_devices.setdefault(resource, {})
