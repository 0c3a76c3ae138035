"""The emulated kubelet's admission pipeline: the resource managers of one node, composed.

Owns what upstream's ``canAdmitPod`` decides about resources and what the managers then
hold, so that a pod is admitted, pinned or rejected exactly as on a real node:

1. the resource-allocation admit handler (topology manager ``Admit``) with the hint
   providers in upstream order -- device, CPU, memory manager -- and the allocation of each
   container (or of the pod, in pod scope) through the chosen affinity;
2. then the predicate admit handler's resource fit (:mod:`.nodefit`): allocatable minus the
   requests of the other admitted pods (``OutOf<resource>``).

Upstream runs the allocation *before* the fit (``kubelet.go`` registers the handlers in that
order), which is why a Guaranteed pod asking for too many exclusive CPUs is refused with
``TopologyAffinityError``/``UnexpectedAdmissionError`` rather than ``OutOfcpu``.  On rejection
the pod's partial allocations are rolled back at once; upstream leaves them for
``removeStaleState``, which runs before the next admission or within the reconcile period,
so only that short window differs.

Pure: no I/O, no API client, no gRPC.  The kubelet shell reads/writes the checkpoint bytes,
calls device plugins' ``Allocate`` with :attr:`ContainerAllocation.devices`, and serves the
podresources API from :meth:`NodeResourceManagers.allocations` / ``allocatable``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from nrop.api.deviceplugin import Device
from nrop.api.qos import pod_qos_class
from nrop.localcluster.kubelet.cm import (
    NODE_WITHOUT_TOPOLOGY,
    ContainerCPURequest,
    CPUManagerState,
    DeviceCheckpoint,
    DeviceContainer,
    DeviceManager,
    DevicePod,
    MemoryManagerCheckpoint,
    PodCPURequest,
    PreferredAllocation,
    ProviderHints,
    TopologyHint,
    TopologyManager,
    num_reserved_cpus,
)
from nrop.localcluster.kubelet.cm import memorymanager as mm
from nrop.localcluster.kubelet.cm.cpumanager import StaticPolicy
from nrop.localcluster.kubelet.cm.cpumanagerstate import decode_checkpoint, encode_checkpoint
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.decisions import nodefit
from nrop.localcluster.kubelet.machine import DeviceGroup, NodeSpec

__all__ = [
    "REJECTED_MESSAGE_PREFIX",
    "AdmissionResult",
    "Allocatable",
    "ContainerAllocation",
    "ContainerKind",
    "DeviceAllocation",
    "MemoryAllocation",
    "NodeResourceManagers",
    "PodAllocation",
    "RejectionReason",
    "ZoneSummary",
    "machine_devices",
]

#: ``status.message`` of a rejected pod is this prefix plus the admission message.
REJECTED_MESSAGE_PREFIX = "Pod was rejected: "


class RejectionReason(StrEnum):
    """The ``status.reason`` values of resource rejections (``OutOf<name>`` for any resource)."""

    TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
    SMT_ALIGNMENT_ERROR = "SMTAlignmentError"
    UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
    OUT_OF_PODS = "OutOfpods"
    OUT_OF_CPU = "OutOfcpu"
    OUT_OF_MEMORY = "OutOfmemory"
    OUT_OF_EPHEMERAL_STORAGE = "OutOfephemeral-storage"


class ContainerKind(StrEnum):
    INIT = "init"
    SIDECAR = "sidecar"  # init container with restartPolicy Always: podresources lists it
    APP = "app"


@dataclass(frozen=True)
class MemoryAllocation:
    """A memory-manager block (or an allocatable entry): ``type`` is memory or hugepages-<size>."""

    type: str
    size: int
    numa_nodes: tuple[int, ...]


@dataclass(frozen=True)
class DeviceAllocation:
    """One device on one NUMA node (``None``: the device has no topology)."""

    resource: str
    device_id: str
    numa_node: int | None


@dataclass(frozen=True)
class ContainerAllocation:
    name: str
    kind: ContainerKind
    #: Exclusive CPUs; empty when the container runs in the shared pool.
    cpus: CPUSet
    memory: tuple[MemoryAllocation, ...] = ()
    devices: tuple[DeviceAllocation, ...] = ()


@dataclass(frozen=True)
class PodAllocation:
    uid: str
    name: str
    namespace: str
    containers: tuple[ContainerAllocation, ...]


@dataclass(frozen=True)
class AdmissionResult:
    admitted: bool
    reason: str = ""
    message: str = ""
    allocation: PodAllocation | None = None

    def rejection_status(self) -> dict[str, str]:
        """The pod status fields the kubelet writes on rejection (conditions and qosClass kept)."""
        return {"phase": "Failed", "reason": self.reason, "message": REJECTED_MESSAGE_PREFIX + self.message}


@dataclass(frozen=True)
class Allocatable:
    """``GetAllocatableResources``: not reduced by current allocations."""

    cpus: CPUSet
    memory: tuple[MemoryAllocation, ...]
    devices: tuple[DeviceAllocation, ...]


@dataclass(frozen=True)
class ZoneSummary:
    """One NUMA node for humans (``nrop-cluster nodes``): allocatable vs. exclusively allocated."""

    numa: int
    cpus_allocatable: int
    cpus_allocated: int
    memory_allocatable: int
    memory_allocated: int
    hugepages_allocatable: Mapping[str, int]
    hugepages_allocated: Mapping[str, int]
    devices_allocatable: Mapping[str, int]
    devices_allocated: Mapping[str, int]


def machine_devices(group: DeviceGroup) -> list[Device]:
    """The devices of a machine's device group, named ``<resource basename>-<n>``.

    Numbered NUMA node by NUMA node (topology-less devices last); the last ``unhealthy``
    of them are unhealthy.
    """
    base = group.resource.rsplit("/", 1)[-1]
    nodes: list[int | None] = sorted(n for n in group.per_numa if n is not None)
    if None in group.per_numa:
        nodes.append(None)
    devices: list[Device] = []
    for node in nodes:
        for _ in range(group.per_numa[node]):
            devices.append(Device(f"{base}-{len(devices)}", True, None if node is None else (node,)))
    for index in range(max(0, len(devices) - group.unhealthy), len(devices)):
        devices[index] = Device(devices[index].id, False, devices[index].numa_nodes)
    return devices


@dataclass(frozen=True)
class _Pod:
    """An admitted pod as every manager sees it."""

    uid: str
    name: str
    namespace: str
    requests: Mapping[str, int]
    kinds: Mapping[str, ContainerKind]
    cpu: PodCPURequest
    memory: mm.MemoryPod
    devices: DevicePod


def _describe(pod: Mapping[str, Any]) -> _Pod:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    qos = (pod.get("status") or {}).get("qosClass") or pod_qos_class(spec)
    pod_level = bool(
        (spec.get("resources") or {}).get("requests") or (spec.get("resources") or {}).get("limits")
    )
    kinds: dict[str, ContainerKind] = {}
    parts: dict[str, list[tuple[ContainerCPURequest, mm.MemoryContainer, DeviceContainer]]] = {
        "init": [],
        "app": [],
    }
    for group, containers in (("init", spec.get("initContainers")), ("app", spec.get("containers"))):
        for container in containers or ():
            name = container["name"]
            restartable = group == "init" and container.get("restartPolicy") == "Always"
            kinds[name] = (
                ContainerKind.APP
                if group == "app"
                else (ContainerKind.SIDECAR if restartable else ContainerKind.INIT)
            )
            requests = nodefit.container_requests(container)
            parts[group].append(
                (
                    ContainerCPURequest(name, requests.get(nodefit.CPU), restartable),
                    mm.MemoryContainer(name, requests, restartable),
                    DeviceContainer(name, {n: v for n, v in requests.items() if "/" in n}, restartable),
                )
            )
    init, app = parts["init"], parts["app"]
    uid = str(meta.get("uid", ""))
    return _Pod(
        uid=uid,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        requests=nodefit.pod_requests(spec),
        kinds=kinds,
        cpu=PodCPURequest(uid, qos, tuple(c for c, _, _ in init), tuple(c for c, _, _ in app), pod_level),
        memory=mm.MemoryPod(
            uid, qos == "Guaranteed", [m for _, m, _ in init], [m for _, m, _ in app], pod_level
        ),
        devices=DevicePod(uid, [d for _, _, d in init], [d for _, _, d in app]),
    )


class NodeResourceManagers:
    """The CPU, memory, device and topology managers of one node, and the pods they admitted."""

    def __init__(self, spec: NodeSpec) -> None:
        """Configure every manager like kubelet startup; raises the managers' configuration errors."""
        self.spec = spec
        machine, config = spec.machine, spec.kubelet
        self.numa_nodes = [node.id for node in machine.numa_nodes]
        self.topology = TopologyManager(
            self.numa_nodes,
            config.topology_manager_policy,
            config.topology_manager_scope,
            config.topology_manager_policy_options,
            {node.id: node.distances for node in machine.numa_nodes if node.distances} or None,
        )
        self.cpu_state = CPUManagerState()
        self.cpu: StaticPolicy | None = None
        if config.cpu_manager_policy == "static":
            reserved = CPUSet.parse(config.reserved_system_cpus) if config.reserved_system_cpus else None
            self.cpu = StaticPolicy(
                machine.topology,
                num_reserved_cpus=num_reserved_cpus(nodefit.cpu_reservation(spec)),
                reserved_cpus=reserved,
                options=config.cpu_manager_policy_options,
                topology_manager_policy=config.topology_manager_policy,
                # The same gates the startup validation consults (nodestatus).
                alpha_options_enabled=config.feature_gates.get("CPUManagerPolicyAlphaOptions", False),
                beta_options_enabled=config.feature_gates.get("CPUManagerPolicyBetaOptions", True),
            )
            self.cpu.start(self.cpu_state)
        self.memory: mm.StaticPolicy | None = None
        if config.memory_manager_policy == mm.MemoryPolicy.STATIC:
            self.memory = mm.new_static_policy(
                [mm.NUMANodeMemory(n.id, n.memory_bytes, dict(n.hugepages)) for n in machine.numa_nodes],
                nodefit.memory_reservation(spec),
                [mm.MemoryReservation(r.numa_node, dict(r.limits)) for r in config.reserved_memory],
            )
        self.devices = DeviceManager(self.numa_nodes)
        self._preferred: dict[str, PreferredAllocation] = {}
        for group in machine.devices:
            self.devices.set_devices(group.resource, machine_devices(group))
        self._pods: dict[str, _Pod] = {}

    # -- device plugins ------------------------------------------------------------------

    def set_plugin_devices(
        self,
        resource: str,
        devices: Iterable[Device],
        preferred_allocation: PreferredAllocation | None = None,
    ) -> None:
        """A device plugin registered or sent a ``ListAndWatch`` update (its full device list)."""
        self.devices.set_devices(resource, devices)
        if preferred_allocation is not None:
            self._preferred[resource] = preferred_allocation

    def remove_plugin_devices(self, resource: str) -> None:
        """A plugin is gone for good: its resource leaves the inventory; allocations stay."""
        for inventory in (self.devices.all_devices, self.devices.healthy, self.devices.unhealthy):
            inventory.pop(resource, None)
        self._preferred.pop(resource, None)

    def record_device_allocate_response(
        self, pod_uid: str, container: str, resource: str, response: bytes
    ) -> None:
        """Keep the plugin's ``ContainerAllocateResponse`` bytes for the device checkpoint."""
        self.devices.set_alloc_response(pod_uid, container, resource, response)

    def node_resources(self) -> nodefit.NodeResources:
        """Capacity/allocatable, with device-plugin resources as the device manager counts them."""
        return nodefit.node_resources(self.spec, self.devices.capacity())

    # -- admission -------------------------------------------------------------------------

    def is_admitted(self, pod_uid: str) -> bool:
        return pod_uid in self._pods

    def admit(self, pod: Mapping[str, Any]) -> AdmissionResult:
        """Run the resource admit handlers for a new pod; allocate on success, roll back on refusal.

        Re-admitting an admitted pod returns its allocation; re-admitting a pod whose
        allocations were restored from checkpoints finds them again (kubelet restart).
        """
        record = _describe(pod)
        if record.uid in self._pods:
            return AdmissionResult(True, allocation=self._allocation(self._pods[record.uid]))
        names = [c.name for c in record.cpu.all_containers()]
        result = self.topology.admit(
            names,
            container_hints=lambda name: self._container_hints(record, name),
            pod_hints=lambda: self._pod_hints(record),
            allocate=lambda name, hint: self._allocate(record, name, hint),
        )
        if not result.admit:
            self._forget(record.uid)
            return AdmissionResult(False, result.reason, result.message)
        failures = nodefit.fits(
            record.requests, [p.requests for p in self._pods.values()], self._fit_allocatable()
        )
        if failures:
            self._forget(record.uid)
            return AdmissionResult(False, failures[0].reason, failures[0].message)
        self._pods[record.uid] = record
        return AdmissionResult(True, allocation=self._allocation(record))

    def _container_hints(self, pod: _Pod, name: str) -> list[ProviderHints]:
        hints: list[ProviderHints] = []
        device_ctr = next(
            c for c in (*pod.devices.init_containers, *pod.devices.containers) if c.name == name
        )
        hints.append(self.devices.get_topology_hints(pod.devices, device_ctr))
        if self.cpu is not None:
            cpu_ctr = next(c for c in pod.cpu.all_containers() if c.name == name)
            hints.append(self.cpu.get_topology_hints(self.cpu_state, pod.cpu, cpu_ctr))
        if self.memory is not None:
            mem_ctr = next(c for c in pod.memory.all_containers() if c.name == name)
            hints.append(self.memory.get_topology_hints(pod.memory, mem_ctr))
        return hints

    def _pod_hints(self, pod: _Pod) -> list[ProviderHints]:
        hints: list[ProviderHints] = [self.devices.get_pod_topology_hints(pod.devices)]
        if self.cpu is not None:
            hints.append(self.cpu.get_pod_topology_hints(self.cpu_state, pod.cpu))
        if self.memory is not None:
            hints.append(self.memory.get_pod_topology_hints(pod.memory))
        return hints

    def _allocate(self, pod: _Pod, name: str, hint: TopologyHint) -> None:
        # Same order as upstream's providers: devices, CPUs, memory.
        device_ctr = next(
            c for c in (*pod.devices.init_containers, *pod.devices.containers) if c.name == name
        )
        self.devices.allocate(pod.devices, device_ctr, hint, self._preferred)
        if self.cpu is not None:
            cpu_ctr = next(c for c in pod.cpu.all_containers() if c.name == name)
            self.cpu.allocate(self.cpu_state, pod.cpu, cpu_ctr, hint.numa_nodes)
        if self.memory is not None:
            mem_ctr = next(c for c in pod.memory.all_containers() if c.name == name)
            self.memory.allocate(pod.memory, mem_ctr, hint)

    def _fit_allocatable(self) -> dict[str, int]:
        allocatable = dict(self.node_resources().allocatable)
        # UpdatePluginResources: never advertise fewer devices than are already allocated.
        for resource, devices in self.devices.allocated.items():
            allocatable[resource] = max(allocatable.get(resource, 0), len(devices))
        return allocatable

    # -- release ---------------------------------------------------------------------------

    def _forget(self, pod_uid: str) -> None:
        containers: set[str] = set(self.cpu_state.entries.get(pod_uid, {}))
        if self.memory is not None:
            containers |= set(self.memory.assignments.get(pod_uid, {}))
        containers |= set(self.devices.pod_devices.get(pod_uid, {}))
        for name in sorted(containers):
            self._remove_container(pod_uid, name)
        if self.cpu is not None:
            self.cpu.cpus_to_reuse.pop(pod_uid, None)
        if self.memory is not None:
            self.memory.reusable.pop(pod_uid, None)
        self.devices.devices_to_reuse.pop(pod_uid, None)

    def _remove_container(self, pod_uid: str, container: str) -> None:
        if self.cpu is not None:
            self.cpu.remove_container(self.cpu_state, pod_uid, container)
        if self.memory is not None:
            self.memory.remove_container(pod_uid, container)
        if container in self.devices.pod_devices.get(pod_uid, {}):
            self.devices.remove_container(pod_uid, container)

    def release(self, pod_uid: str) -> None:
        """The pod is no longer active (Succeeded, Failed, deleted): give back all it holds."""
        self._pods.pop(pod_uid, None)
        self._forget(pod_uid)

    def remove_container(self, pod_uid: str, container: str) -> None:
        """``RemoveContainer`` on every manager (CPUs still used by a sibling container stay)."""
        self._remove_container(pod_uid, container)

    def reconcile(self, active_pod_uids: Iterable[str]) -> None:
        """``removeStaleState``: release every pod, admitted or restored, that is not active."""
        active = set(active_pod_uids)
        known = set(self._pods) | set(self.cpu_state.entries) | set(self.devices.pod_devices)
        if self.memory is not None:
            known |= set(self.memory.assignments)
        for pod_uid in sorted(known - active):
            self.release(pod_uid)

    # -- read views ------------------------------------------------------------------------

    def _container_devices(self, pod_uid: str, container: str) -> tuple[DeviceAllocation, ...]:
        per_resource = self.devices.pod_devices.get(pod_uid, {}).get(container, {})
        return tuple(
            DeviceAllocation(resource, device_id, None if node == NODE_WITHOUT_TOPOLOGY else node)
            for resource, entry in sorted(per_resource.items())
            for node, ids in sorted(entry.per_numa.items())
            for device_id in ids
        )

    def _container_memory(self, pod_uid: str, container: str) -> tuple[MemoryAllocation, ...]:
        blocks = self.memory.memory_blocks(pod_uid, container) if self.memory is not None else None
        return tuple(MemoryAllocation(b.type, b.size, tuple(b.numa_affinity)) for b in blocks or ())

    def _allocation(self, pod: _Pod) -> PodAllocation:
        return PodAllocation(
            pod.uid,
            pod.name,
            pod.namespace,
            tuple(
                ContainerAllocation(
                    name,
                    kind,
                    self.cpu_state.get(pod.uid, name) or CPUSet(),
                    self._container_memory(pod.uid, name),
                    self._container_devices(pod.uid, name),
                )
                for name, kind in pod.kinds.items()
            ),
        )

    def allocations(self) -> dict[str, PodAllocation]:
        """Per admitted pod (by UID): every container's exclusive CPUs, memory blocks and devices."""
        return {uid: self._allocation(pod) for uid, pod in self._pods.items()}

    def allocatable(self) -> Allocatable:
        """``GetAllocatableResources``: CPUs minus reserved (static), memory blocks (Static), healthy devices."""
        cpus = self.cpu.allocatable_cpus() if self.cpu is not None else CPUSet()
        memory = tuple(
            MemoryAllocation(b.type, b.size, tuple(b.numa_affinity))
            for b in (self.memory.allocatable_memory() if self.memory is not None else ())
        )
        devices = tuple(
            DeviceAllocation(resource, device.id, node)
            for resource in sorted(self.devices.healthy)
            for device in sorted(self.devices.all_devices.get(resource, {}).values(), key=lambda d: d.id)
            if device.id in self.devices.healthy[resource]
            for node in (device.numa_nodes or (None,))
        )
        return Allocatable(cpus, memory, devices)

    def shared_cpus(self) -> CPUSet:
        """The shared pool: the static policy's default set (reserved CPUs included unless strict)."""
        if self.cpu is None:
            return self.spec.machine.topology.all_cpus()
        return self.cpu_state.default_cpuset

    def container_cpus(self, pod_uid: str, container: str) -> CPUSet:
        """``cpuset.cpus`` of a container: its exclusive CPUs, else the current shared pool."""
        exclusive = self.cpu_state.get(pod_uid, container)
        return exclusive if exclusive is not None else self.shared_cpus()

    def container_mems(self, pod_uid: str, container: str) -> frozenset[int]:
        """``cpuset.mems`` of a container: its memory blocks' NUMA nodes, else every node."""
        nodes = self.memory.container_numa_nodes(pod_uid, container) if self.memory is not None else None
        return nodes if nodes is not None else frozenset(self.numa_nodes)

    def numa_summary(self) -> list[ZoneSummary]:
        details = self.spec.machine.topology.details
        usable = self.cpu.allocatable_cpus() if self.cpu is not None else details.cpus()
        exclusive = CPUSet().union(*(c for per in self.cpu_state.entries.values() for c in per.values()))
        summaries = []
        for node in self.spec.machine.numa_nodes:
            cpus = details.cpus_in_numa_nodes(node.id)
            if self.memory is not None:
                tables = self.memory.machine_state[node.id].memory_map
                allocatable = {name: t.allocatable for name, t in tables.items()}
                allocated = {name: t.reserved for name, t in tables.items()}
            else:
                allocatable = {
                    mm.hugepage_resource_name(size): size * n for size, n in node.hugepages.items()
                }
                allocatable[mm.MEMORY] = node.memory_bytes - sum(allocatable.values())
                allocated = dict.fromkeys(allocatable, 0)
            devices_allocatable: dict[str, int] = {}
            devices_allocated: dict[str, int] = {}
            for resource, healthy in sorted(self.devices.healthy.items()):
                inventory = self.devices.all_devices.get(resource, {})
                here = {d for d in healthy if node.id in inventory[d].nodes()}
                devices_allocatable[resource] = len(here)
                devices_allocated[resource] = len(here & self.devices.allocated.get(resource, set()))
            summaries.append(
                ZoneSummary(
                    numa=node.id,
                    cpus_allocatable=usable.intersection(cpus).size(),
                    cpus_allocated=exclusive.intersection(cpus).size(),
                    memory_allocatable=allocatable.pop(mm.MEMORY),
                    memory_allocated=allocated.pop(mm.MEMORY),
                    hugepages_allocatable=allocatable,
                    hugepages_allocated=allocated,
                    devices_allocatable=devices_allocatable,
                    devices_allocated=devices_allocated,
                )
            )
        return summaries

    # -- checkpoints -------------------------------------------------------------------------

    def cpu_manager_checkpoint(self) -> bytes:
        """``cpu_manager_state``; policy none writes an empty default set."""
        if self.cpu is None:
            return encode_checkpoint(CPUManagerState(), "none")
        return encode_checkpoint(self.cpu_state, self.cpu.name)

    def memory_manager_checkpoint(self) -> bytes:
        if self.memory is None:
            return MemoryManagerCheckpoint(mm.MemoryPolicy.NONE.value).to_json().encode()
        return self.memory.checkpoint().to_json().encode()

    def device_manager_checkpoint(self) -> bytes:
        return self.devices.checkpoint().to_json().encode()

    def restore(
        self,
        *,
        cpu_manager: bytes | None = None,
        memory_manager: bytes | None = None,
        device_manager: bytes | None = None,
    ) -> None:
        """Adopt checkpoints at (emulated) kubelet start, before any admission.

        Raises the managers' errors (policy mismatch, corrupted file, state not matching the
        machine) -- the conditions under which a kubelet refuses to start.  Then re-admit the
        running pods: their allocations are found again, and :meth:`reconcile` drops the rest.
        """
        if cpu_manager is not None:
            state = decode_checkpoint(cpu_manager, self.cpu.name if self.cpu is not None else "none")
            if self.cpu is not None:
                self.cpu.start(state)
                self.cpu_state = state
        if memory_manager is not None:
            checkpoint = MemoryManagerCheckpoint.from_json(memory_manager)
            if self.memory is not None:
                self.memory.restore(checkpoint)
            elif checkpoint.policy_name != mm.MemoryPolicy.NONE:
                raise mm.MemoryManagerConfigError(
                    "could not restore state from checkpoint: [memorymanager] configured policy "
                    f'"{mm.MemoryPolicy.NONE.value}" differs from state checkpoint policy "{checkpoint.policy_name}"'
                )
        if device_manager is not None:
            self.devices.restore(DeviceCheckpoint.from_json(device_manager))
            for group in self.spec.machine.devices:
                self.devices.set_devices(group.resource, machine_devices(group))
