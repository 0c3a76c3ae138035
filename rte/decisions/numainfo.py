"""Per-NUMA capacity and exclusive allocation, as the numainfo exporter reports them.

This module owns the decisions of ``numainfo-exporter`` (the I/O shell is
:mod:`nrop.rte.numainfoexporter`): what the kubelet's checkpoint bytes mean per NUMA
node, and which Prometheus samples follow from them and from the machine read out of
sysfs (:class:`~nrop.rte.sysinfo.MachineInfo`). It reads nothing itself.

* **CPUs** (upstream ``ffromani/numainfo_exporter``): capacity is the number of online
  CPUs of each NUMA node; allocation counts the CPUs of the ``cpu_manager_state``
  entries per NUMA node, i.e. exclusive CPUs only (the default pool is not counted).
  Unlike upstream, which adds every container's set, a CPU is counted once even when
  several containers of a pod list it (an init container's CPUs reused by an app
  container), and a CPU on no known NUMA node is reported rather than counted on node 0.
* **Memory and hugepages** (this project's addition): from ``memory_manager_state``,
  capacity is each NUMA node's ``total`` per resource and allocation its ``reserved``
  (the memory manager's own split of multi-NUMA blocks).
* As upstream, ``type="allocation"`` samples are emitted only when at least one
  allocation exists: reporting 0 would be indistinguishable from "no data".

A checkpoint that cannot be used (truncated or invalid JSON, a checksum mismatch, an
unknown policy, a malformed cpuset) raises :class:`NUMAInfoError`, whose text names the
problem; the shell logs it and reports no figures from that file for the cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from nrop.api import checkpoints
from nrop.rte.sysinfo import MAX_CPU_ID, MachineInfo, parse_cpulist

__all__ = [
    "ALLOCATION",
    "CAPACITY",
    "CHECKPOINT_VALID",
    "CORE_COUNT",
    "MAX_CPU_ID",
    "MEMORY_BYTES",
    "METRICS",
    "NODE_COUNT",
    "MemoryFigures",
    "NUMAInfoError",
    "Sample",
    "Snapshot",
    "exclusive_cpus",
    "memory_figures",
    "numa_label",
    "samples",
    "unmapped_cpus",
]

NODE_COUNT: Final = "numainfo_node_count"
CORE_COUNT: Final = "numainfo_core_count"
MEMORY_BYTES: Final = "numainfo_memory_bytes"
CHECKPOINT_VALID: Final = "numainfo_checkpoint_valid"
CAPACITY: Final = "capacity"
ALLOCATION: Final = "allocation"

#: Every per-scrape gauge: name → (help, label names).
METRICS: Final[Mapping[str, tuple[str, tuple[str, ...]]]] = MappingProxyType(
    {
        NODE_COUNT: ("NUMA nodes per node, count.", ("node",)),
        CORE_COUNT: ("CPU cores per NUMA node, count.", ("node", "numanode", "type")),
        MEMORY_BYTES: (
            "Memory and hugepages per NUMA node from the kubelet memory manager, bytes.",
            ("node", "numanode", "resource", "type"),
        ),
        CHECKPOINT_VALID: (
            "1 if the kubelet checkpoint was read and verified in this scrape, else 0.",
            ("node", "checkpoint"),
        ),
    }
)


class NUMAInfoError(ValueError):
    """A checkpoint cannot be used this cycle; the text says why."""


# ----------------------------------------------------------------------------- checkpoints


def exclusive_cpus(data: bytes) -> frozenset[int]:
    """The CPUs assigned exclusively in ``cpu_manager_state`` (union over all pods and containers)."""
    try:
        checkpoint = checkpoints.decode_cpu_manager_checkpoint(data)
    except checkpoints.CheckpointError as exc:
        raise NUMAInfoError(str(exc)) from None
    if checkpoint.policy_name not in checkpoints.CPU_MANAGER_POLICIES:
        raise NUMAInfoError(
            f"unknown CPU manager policy {checkpoint.policy_name!r} "
            f"(expected one of {', '.join(checkpoints.CPU_MANAGER_POLICIES)})"
        )
    cpus: set[int] = set()
    for pod, containers in checkpoint.entries.items():
        for container, text in containers.items():
            # parse_cpulist refuses ids above MAX_CPU_ID instead of expanding the range: a checkpoint
            # with ``checksum: 0`` is accepted unverified, so its cpusets may be anything.
            try:
                cpus.update(parse_cpulist(text))
            except ValueError as exc:
                shown = text if len(text) <= 64 else f"{text[:60]}..."
                raise NUMAInfoError(
                    f"could not parse cpuset {shown!r} for container {container!r} in pod {pod!r}: {exc}"
                ) from None
    return frozenset(cpus)


@dataclass(frozen=True)
class MemoryFigures:
    """``memory_manager_state`` per (NUMA node, resource): ``total`` and ``reserved`` bytes."""

    capacity: Mapping[tuple[int, str], int] = field(default_factory=dict)
    allocation: Mapping[tuple[int, str], int] = field(default_factory=dict)
    #: Whether any container holds a memory block (upstream's "at least one allocation").
    has_assignments: bool = False


def memory_figures(data: bytes) -> MemoryFigures:
    """Capacity and allocation per NUMA node and resource from ``memory_manager_state``."""
    try:
        checkpoint = checkpoints.MemoryManagerCheckpoint.from_json(data)
    except checkpoints.CheckpointError as exc:
        raise NUMAInfoError(str(exc)) from None
    if checkpoint.policy_name not in checkpoints.MEMORY_MANAGER_POLICIES:
        raise NUMAInfoError(
            f"unknown memory manager policy {checkpoint.policy_name!r} "
            f"(expected one of {', '.join(checkpoints.MEMORY_MANAGER_POLICIES)})"
        )
    capacity: dict[tuple[int, str], int] = {}
    allocation: dict[tuple[int, str], int] = {}
    for numa_id, state in checkpoint.machine_state.items():
        for resource, table in state.memory_map.items():
            capacity[numa_id, resource] = table.total
            allocation[numa_id, resource] = table.reserved
    has_assignments = any(blocks for per_pod in checkpoint.entries.values() for blocks in per_pod.values())
    return MemoryFigures(capacity, allocation, has_assignments)


def unmapped_cpus(cpus: Iterable[int], machine: MachineInfo) -> tuple[int, ...]:
    """CPUs of a checkpoint that are on no NUMA node of the machine (a stale or foreign checkpoint)."""
    known = machine.cpu_to_numa()
    return tuple(sorted(cpu for cpu in cpus if cpu not in known))


# ----------------------------------------------------------------------------- samples


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Snapshot:
    """What one scrape could read; ``None`` means that source was unusable this cycle."""

    node: str
    machine: MachineInfo | None = None
    exclusive_cpus: frozenset[int] | None = None
    memory: MemoryFigures | None = None


def numa_label(numa_id: int) -> str:
    """Upstream's ``numanode`` label value: ``node%02d``."""
    return f"node{numa_id:02d}"


def _cpu_samples(node: str, machine: MachineInfo, cpus: frozenset[int] | None) -> list[Sample]:
    out = [Sample(NODE_COUNT, (("node", node),), len(machine.nodes))]
    cpu_to_numa = machine.cpu_to_numa()
    allocated: dict[int, int] = {}
    for cpu in cpus or ():
        if cpu in cpu_to_numa:
            allocated[cpu_to_numa[cpu]] = allocated.get(cpu_to_numa[cpu], 0) + 1
    for numa in machine.nodes:
        labels = (("node", node), ("numanode", numa_label(numa.id)))
        out.append(Sample(CORE_COUNT, (*labels, ("type", CAPACITY)), len(numa.cpus)))
        if allocated:
            out.append(Sample(CORE_COUNT, (*labels, ("type", ALLOCATION)), allocated.get(numa.id, 0)))
    return out


def _memory_samples(node: str, memory: MemoryFigures) -> list[Sample]:
    out = []
    for numa_id, resource in sorted(memory.capacity):
        labels = (("node", node), ("numanode", numa_label(numa_id)), ("resource", resource))
        out.append(Sample(MEMORY_BYTES, (*labels, ("type", CAPACITY)), memory.capacity[numa_id, resource]))
        if memory.has_assignments:
            allocated = memory.allocation.get((numa_id, resource), 0)
            out.append(Sample(MEMORY_BYTES, (*labels, ("type", ALLOCATION)), allocated))
    return out


def samples(snapshot: Snapshot) -> list[Sample]:
    """Every gauge sample of one scrape (``numainfo_version`` aside, which is constant)."""
    node = snapshot.node
    out: list[Sample] = []
    if snapshot.machine is not None:
        out += _cpu_samples(node, snapshot.machine, snapshot.exclusive_cpus)
    if snapshot.memory is not None:
        out += _memory_samples(node, snapshot.memory)
    for name, usable in (
        (checkpoints.CPU_MANAGER_STATE_FILE, snapshot.exclusive_cpus is not None),
        (checkpoints.MEMORY_MANAGER_STATE_FILE, snapshot.memory is not None),
    ):
        out.append(Sample(CHECKPOINT_VALID, (("node", node), ("checkpoint", name)), 1 if usable else 0))
    return out
