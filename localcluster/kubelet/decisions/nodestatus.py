"""What a kubelet reports about its node and checks before it starts, as pure functions of a ``NodeSpec``.

Owns, as upstream's kubelet (``pkg/kubelet/nodestatus/setters.go`` and its container manager):

* the Node Allocatable reservation: ``systemReserved + kubeReserved + hard eviction`` (with
  ``reservedSystemCPUs`` replacing the cpu reservation, and eviction percentages computed
  with Go's float32 arithmetic so the bytes match upstream);
* ``status.capacity`` / ``status.allocatable`` as canonical quantity strings (memory minus
  hugepages, devices healthy-only);
* the node's well-known labels;
* the kubelet's startup validation of its configuration against the machine (reserved
  resources, eviction thresholds, ``reservedSystemCPUs``, capacity >= reservation, then the
  topology, CPU and memory managers' own checks), raising :class:`KubeletConfigError` with
  upstream's texts and the configuration field at fault.

No I/O: the kubelet shell publishes the result; the profile loader runs the validation so
that a bad profile stops ``nrop-cluster up`` before anything starts.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from nrop.api import tlsprofiles
from nrop.api.quantity import Format, Quantity, QuantityError, parse
from nrop.api.resources import HUGEPAGES_PREFIX
from nrop.localcluster.kubelet.cm import cpumanager, memorymanager, topologymanager
from nrop.localcluster.kubelet.cm.cpuset import CPUSet, CPUSetParseError
from nrop.localcluster.kubelet.machine import HUGEPAGE_SIZES, Machine, NodeSpec

__all__ = [
    "ARCH",
    "OS",
    "RESERVABLE_RESOURCES",
    "KubeletConfigError",
    "NodeResources",
    "capacity_quantities",
    "node_allocatable_reservation",
    "node_labels",
    "node_resources",
    "parse_eviction_hard",
    "reserved_system_cpus",
    "validate_kubelet_config",
]

OS = "linux"
ARCH = "amd64"

#: Resources ``systemReserved`` / ``kubeReserved`` may name (``cannot reserve %q resource`` otherwise).
RESERVABLE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pid"})

#: Eviction signals a Linux kubelet knows (``unsupported eviction signal %v`` otherwise).
_EVICTION_SIGNALS = frozenset(
    {
        "memory.available",
        "allocatableMemory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "pid.available",
    }
)
#: Signals that reserve part of a capacity (``hardEvictionReservation``).
_EVICTION_RESERVES = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}


class KubeletConfigError(ValueError):
    """The kubelet would refuse to start; ``field`` is the KubeletConfiguration field at fault ("" for several)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True)
class NodeResources:
    """``status.capacity`` and ``status.allocatable`` as the kubelet writes them (canonical strings)."""

    capacity: dict[str, str]
    allocatable: dict[str, str]


# -- eviction thresholds ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Threshold:
    signal: str
    quantity: Quantity | None = None
    percentage: float = 0.0  # a float32 value, as upstream stores it


def _f32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def parse_eviction_hard(eviction_hard: Mapping[str, str]) -> list[_Threshold]:
    """``parseThresholdStatements`` for ``evictionHard`` (every operator is ``<``).

    ``0%`` and ``100%`` are ignored, as upstream. Errors carry upstream's texts.
    """
    thresholds: list[_Threshold] = []
    for signal in sorted(eviction_hard):
        value = str(eviction_hard[signal])
        if signal not in _EVICTION_SIGNALS:
            raise KubeletConfigError("evictionHard", f"unsupported eviction signal {signal}")
        if value.endswith("%"):
            if value in ("0%", "100%"):
                continue
            number = value.rstrip("%")
            try:
                percentage = _f32(_f32(float(number)) / 100)
            except (ValueError, OverflowError):
                raise KubeletConfigError(
                    "evictionHard", f'strconv.ParseFloat: parsing "{number}": invalid syntax'
                ) from None
            if percentage < 0:
                raise KubeletConfigError(
                    "evictionHard", f"eviction percentage threshold {signal} must be >= 0%: {value}"
                )
            if percentage > 1:
                raise KubeletConfigError(
                    "evictionHard", f"eviction percentage threshold {signal} must be <= 100%: {value}"
                )
            thresholds.append(_Threshold(signal, percentage=percentage))
            continue
        try:
            quantity = parse(value)
        except QuantityError as exc:
            raise KubeletConfigError("evictionHard", str(exc)) from None
        if quantity.sign() <= 0:
            raise KubeletConfigError("evictionHard", f"eviction threshold {signal} must be positive: {value}")
        thresholds.append(_Threshold(signal, quantity=quantity))
    return thresholds


def _threshold_quantity(threshold: _Threshold, capacity: Quantity) -> Quantity:
    """``GetThresholdQuantity``: the absolute value, or ``int64(float64(capacity) * percentage)``."""
    if threshold.quantity is not None:
        return threshold.quantity
    return Quantity.from_int(int(float(capacity.value()) * threshold.percentage), Format.BINARY_SI)


# -- reservation, capacity, allocatable -------------------------------------------------------


def reserved_system_cpus(spec: NodeSpec) -> CPUSet:
    """``getReservedCPUs``: the parsed ``reservedSystemCPUs``, which must be online CPUs."""
    text = spec.kubelet.reserved_system_cpus
    if not text:
        return CPUSet()
    try:
        cpus = CPUSet.parse(text)
    except CPUSetParseError as exc:
        raise KubeletConfigError("reservedSystemCPUs", f"unable to parse reserved-cpus list: {exc}") from None
    online = spec.machine.topology.all_cpus()
    if not cpus.is_subset_of(online):
        raise KubeletConfigError(
            "reservedSystemCPUs", f"reserved-cpus: {text} is not a subset of online-cpus: {online}"
        )
    return cpus


def _parse_reserved(field: str, values: Mapping[str, str]) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    for name in sorted(values):
        if name not in RESERVABLE_RESOURCES:
            raise KubeletConfigError(field, f'cannot reserve "{name}" resource')
        try:
            quantity = parse(str(values[name]))
        except QuantityError as exc:
            raise KubeletConfigError(field, f"{name}: {exc}") from None
        if quantity.sign() < 0:
            raise KubeletConfigError(field, f'resource "{name}" has a negative reservation {values[name]}')
        out[name] = quantity
    return out


def capacity_quantities(machine: Machine, max_pods: int) -> dict[str, Quantity]:
    """``status.capacity`` before device plugins: cpu, memory, hugepages-*, ephemeral-storage, pods."""
    capacity = {
        "cpu": Quantity.from_milli(machine.topology.num_cpus * 1000, Format.DECIMAL_SI),
        "memory": Quantity.from_int(sum(n.memory_bytes for n in machine.numa_nodes), Format.BINARY_SI),
        "ephemeral-storage": Quantity.from_int(machine.ephemeral_storage_bytes, Format.BINARY_SI),
        "pods": Quantity.from_int(max_pods, Format.DECIMAL_SI),
    }
    for size in HUGEPAGE_SIZES:
        total = sum(n.hugepages.get(size, 0) * size for n in machine.numa_nodes)
        capacity[memorymanager.hugepage_resource_name(size)] = Quantity.from_int(total, Format.BINARY_SI)
    return capacity


def node_allocatable_reservation(spec: NodeSpec) -> dict[str, Quantity]:
    """systemReserved + kubeReserved + hard eviction reservation, per resource.

    With ``reservedSystemCPUs`` the kubelet drops ``kubeReserved.cpu`` and sets
    ``systemReserved.cpu`` to the number of reserved CPUs.
    """
    system = _parse_reserved("systemReserved", spec.kubelet.system_reserved)
    kube = _parse_reserved("kubeReserved", spec.kubelet.kube_reserved)
    reserved_cpus = reserved_system_cpus(spec)
    if reserved_cpus.size() > 0:
        kube.pop("cpu", None)
        system["cpu"] = Quantity.from_int(reserved_cpus.size(), Format.DECIMAL_SI)
    capacity = capacity_quantities(spec.machine, spec.kubelet.max_pods)
    reservation: dict[str, Quantity] = {}
    for part in (system, kube):
        for name, quantity in part.items():
            reservation[name] = reservation[name] + quantity if name in reservation else quantity
    for threshold in parse_eviction_hard(spec.kubelet.eviction_hard):
        resource = _EVICTION_RESERVES.get(threshold.signal)
        if resource is None:
            continue
        value = _threshold_quantity(threshold, capacity[resource])
        reservation[resource] = reservation[resource] + value if resource in reservation else value
    return reservation


def _device_counts(machine: Machine) -> dict[str, tuple[int, int]]:
    """resource -> (all devices, healthy devices)."""
    counts: dict[str, tuple[int, int]] = {}
    for group in machine.devices:
        total = sum(group.per_numa.values())
        before_total, before_healthy = counts.get(group.resource, (0, 0))
        counts[group.resource] = (before_total + total, before_healthy + max(0, total - group.unhealthy))
    return counts


def node_resources(spec: NodeSpec, *, include_devices: bool = True) -> NodeResources:
    """Capacity and allocatable as upstream's ``setters.MachineInfo``.

    ``allocatable[r] = max(0, capacity[r] - reservation[r])``; devices report their healthy
    count; then every hugepage capacity comes off allocatable memory. ``include_devices``
    False gives the status before any device plugin registered.
    """
    capacity = capacity_quantities(spec.machine, spec.kubelet.max_pods)
    reservation = node_allocatable_reservation(spec)
    devices = _device_counts(spec.machine) if include_devices else {}
    for resource, (total, _healthy) in devices.items():
        capacity[resource] = Quantity.from_int(total, Format.DECIMAL_SI)
    allocatable: dict[str, Quantity] = {}
    for name, total in capacity.items():
        value = total - reservation[name] if name in reservation else total
        allocatable[name] = value if value.sign() >= 0 else Quantity(0, value.format)
    for resource, (_total, healthy) in devices.items():
        allocatable[resource] = Quantity.from_int(healthy, Format.DECIMAL_SI)
    for name, value in capacity.items():
        if name.startswith(HUGEPAGES_PREFIX):
            memory = allocatable["memory"] - value
            allocatable["memory"] = memory if memory.sign() >= 0 else Quantity(0, memory.format)
    return NodeResources(
        capacity={k: str(capacity[k]) for k in sorted(capacity)},
        allocatable={k: str(allocatable[k]) for k in sorted(allocatable)},
    )


def node_labels(spec: NodeSpec) -> dict[str, str]:
    """The labels a kubelet (and, for the role, kubeadm) puts on its node; the profile's labels win."""
    labels = {
        "beta.kubernetes.io/arch": ARCH,
        "beta.kubernetes.io/os": OS,
        "kubernetes.io/arch": ARCH,
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": OS,
    }
    if spec.control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
    else:
        labels["node-role.kubernetes.io/worker"] = ""
    labels.update(spec.labels)
    return dict(sorted(labels.items()))


# -- startup validation -----------------------------------------------------------------------


def _validate_capacity(spec: NodeSpec, reservation: Mapping[str, Quantity]) -> None:
    capacity = capacity_quantities(spec.machine, spec.kubelet.max_pods)
    for name in sorted(reservation):
        if name in capacity and reservation[name] > capacity[name]:
            raise KubeletConfigError(
                "",
                f'invalid Node Allocatable configuration. Resource "{name}" has a reservation of '
                f"{reservation[name]} but capacity of {capacity[name]}. Expected capacity >= reservation.",
            )


def _validate_cpu_manager(spec: NodeSpec, reservation: Mapping[str, Quantity]) -> None:
    kubelet = spec.kubelet
    if kubelet.cpu_manager_policy == "none":
        return
    if kubelet.cpu_manager_policy != cpumanager.POLICY_STATIC:
        raise KubeletConfigError("cpuManagerPolicy", f'unknown policy: "{kubelet.cpu_manager_policy}"')
    topology = spec.machine.topology
    try:
        options = cpumanager.parse_static_policy_options(
            kubelet.cpu_manager_policy_options,
            alpha_options_enabled=kubelet.feature_gates.get("CPUManagerPolicyAlphaOptions", False),
            beta_options_enabled=kubelet.feature_gates.get("CPUManagerPolicyBetaOptions", True),
        )
        cpumanager.validate_static_policy_options(options, topology, kubelet.topology_manager_policy)
    except cpumanager.PolicyOptionError as exc:
        raise KubeletConfigError("cpuManagerPolicyOptions", str(exc)) from None
    cpu = reservation.get("cpu")
    try:
        wanted = cpumanager.num_reserved_cpus(None if cpu is None else cpu.milli_value())
    except cpumanager.PolicyOptionError as exc:
        raise KubeletConfigError("kubeReserved", str(exc)) from None
    reserved = reserved_system_cpus(spec)
    if reserved.size() > 0 and reserved.size() != wanted:
        raise KubeletConfigError(
            "reservedSystemCPUs",
            f"[cpumanager] unable to reserve the required amount of CPUs (size of {reserved} did not equal {wanted})",
        )


def _validate_reserved_memory_entries(spec: NodeSpec) -> None:
    seen: set[tuple[int, str]] = set()
    for entry in spec.kubelet.reserved_memory:
        for name in sorted(entry.limits):
            if name != memorymanager.MEMORY and not name.startswith(HUGEPAGES_PREFIX):
                raise KubeletConfigError(
                    "reservedMemory",
                    f'invalid configuration: the limits of NUMA node {entry.numa_node} name a non-memory resource "{name}"',
                )
            if (entry.numa_node, name) in seen:
                raise KubeletConfigError(
                    "reservedMemory",
                    f"invalid configuration: the reserved memory has a duplicate value for NUMA node "
                    f'{entry.numa_node} and resource "{name}"',
                )
            seen.add((entry.numa_node, name))


def _validate_memory_manager(spec: NodeSpec, reservation: Mapping[str, Quantity]) -> None:
    kubelet = spec.kubelet
    _validate_reserved_memory_entries(spec)
    if kubelet.memory_manager_policy == memorymanager.MemoryPolicy.NONE:
        return
    if kubelet.memory_manager_policy != memorymanager.MemoryPolicy.STATIC:
        raise KubeletConfigError("memoryManagerPolicy", f'unknown policy: "{kubelet.memory_manager_policy}"')
    nodes = [
        memorymanager.NUMANodeMemory(id=n.id, memory=n.memory_bytes, hugepages=dict(n.hugepages))
        for n in spec.machine.numa_nodes
    ]
    memory_reservation = {
        name: q.value()
        for name, q in reservation.items()
        if name == memorymanager.MEMORY or name.startswith(HUGEPAGES_PREFIX)
    }
    reserved = [
        memorymanager.MemoryReservation(numa_node=r.numa_node, limits=dict(r.limits))
        for r in kubelet.reserved_memory
    ]
    try:
        memorymanager.new_static_policy(nodes, memory_reservation, reserved)
    except memorymanager.MemoryManagerConfigError as exc:
        raise KubeletConfigError("reservedMemory", str(exc)) from None


def validate_kubelet_config(spec: NodeSpec) -> None:
    """The checks a kubelet makes before it runs, in its order; raises :class:`KubeletConfigError`.

    The server's TLS settings (``tlsCipherSuites``, ``tlsMinVersion``), reserved resources and
    eviction thresholds (configuration validation), the
    ``reservedSystemCPUs`` list, then the container manager: the topology manager, the
    CPU manager, the memory manager, and capacity >= reservation.
    """
    kubelet = spec.kubelet
    # InitializeTLS, before anything else runs: Kubernetes' flag parsing of both settings
    try:
        tlsprofiles.tls_flags("", kubelet.tls_cipher_suites)
    except tlsprofiles.ProfileError as exc:
        raise KubeletConfigError("tlsCipherSuites", str(exc)) from None
    try:
        tlsprofiles.tls_flags(kubelet.tls_min_version, ())
    except tlsprofiles.ProfileError as exc:
        raise KubeletConfigError("tlsMinVersion", str(exc)) from None
    reservation = node_allocatable_reservation(spec)
    if kubelet.max_pods < 0:
        raise KubeletConfigError(
            "maxPods", f"invalid configuration: maxPods ({kubelet.max_pods}) must not be negative"
        )
    numa_ids = [n.id for n in spec.machine.numa_nodes]
    try:
        topologymanager.PolicyOptions.parse(kubelet.topology_manager_policy_options)
    except topologymanager.TopologyManagerConfigError as exc:
        raise KubeletConfigError("topologyManagerPolicyOptions", str(exc)) from None
    try:
        topologymanager.TopologyManager(
            numa_ids,
            kubelet.topology_manager_policy,
            kubelet.topology_manager_scope,
            kubelet.topology_manager_policy_options,
            {n.id: list(n.distances) for n in spec.machine.numa_nodes},
        )
    except topologymanager.TopologyManagerConfigError as exc:
        text = str(exc)
        field = "topologyManagerPolicy"
        if "scope" in text:
            field = "topologyManagerScope"
        elif "distances" in text:
            field = "topologyManagerPolicyOptions"
        raise KubeletConfigError(field, text) from None
    _validate_cpu_manager(spec, reservation)
    _validate_memory_manager(spec, reservation)
    _validate_capacity(spec, reservation)
