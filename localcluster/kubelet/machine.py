"""The description of one emulated node: its machine (CPUs, NUMA memory, hugepages, devices) and kubelet config.

Profiles (YAML) are parsed into these dataclasses; the kubelet's managers, the
sysfs writer and the node status computation all read them.  Sizes are in
bytes, CPU reservations in millicores, quantities already parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nrop.localcluster.kubelet.cm import CPUTopology


@dataclass(frozen=True)
class NUMANode:
    id: int
    memory_bytes: int
    # page size in bytes -> number of pages reserved as hugepages on this node
    hugepages: dict[int, int] = field(default_factory=dict)
    # distance to every NUMA node, indexed by node id (sysfs ``distance``)
    distances: tuple[int, ...] = ()


@dataclass(frozen=True)
class DeviceGroup:
    """Devices of one extended resource: how many per NUMA node (``None``: no topology)."""

    resource: str
    per_numa: dict[int | None, int]
    unhealthy: int = 0


@dataclass(frozen=True)
class Machine:
    topology: CPUTopology
    numa_nodes: tuple[NUMANode, ...]
    devices: tuple[DeviceGroup, ...] = ()
    ephemeral_storage_bytes: int = 100 * 1024**3


@dataclass(frozen=True)
class MemoryReservation:
    numa_node: int
    # resource name (memory, hugepages-2Mi, hugepages-1Gi) -> bytes
    limits: dict[str, int]


@dataclass(frozen=True)
class KubeletConfig:
    cpu_manager_policy: str = "none"
    cpu_manager_policy_options: dict[str, str] = field(default_factory=dict)
    reserved_system_cpus: str = ""
    # resource name -> quantity text, as in KubeletConfiguration
    system_reserved: dict[str, str] = field(default_factory=dict)
    kube_reserved: dict[str, str] = field(default_factory=dict)
    eviction_hard: dict[str, str] = field(default_factory=lambda: {"memory.available": "100Mi"})
    memory_manager_policy: str = "None"
    reserved_memory: tuple[MemoryReservation, ...] = ()
    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    topology_manager_policy_options: dict[str, str] = field(default_factory=dict)
    max_pods: int = 110
    # feature gate name -> enabled, as in KubeletConfiguration.featureGates (only the
    # CPU manager option maturity gates are consulted)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # the kubelet server's TLS (tlsMinVersion, tlsCipherSuites: Go's names), as MachineConfig
    # operators render them from the cluster's TLS profile; empty: Go's defaults
    tls_min_version: str = ""
    tls_cipher_suites: tuple[str, ...] = ()


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    machine: Machine
    kubelet: KubeletConfig
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    control_plane: bool = False


#: Hugepage sizes (bytes) the emulated x86_64 machines support: sysfs lists a
#: ``hugepages-<kB>kB`` directory for each and node capacity reports each, 0 when none are reserved.
HUGEPAGE_SIZES: tuple[int, ...] = (2 * 1024**2, 1024**3)
