"""Building an NRT's zones and attributes from the machine and the kubelet's podresources data.

This module owns the decision the exporter exists for, as upstream's
``pkg/resourcemonitor`` makes it, over the plain records of :mod:`nrop.api.podresources`
(no I/O):

* :func:`normalize` / :func:`to_counters`: podresources devices, memory blocks and CPU
  ids become per-NUMA counters. CPUs count one each on the node that owns them; memory
  blocks add their size on *every* node of their topology (a block spanning two nodes
  counts in full on both, as upstream); other devices count their ids on every node of
  their topology. Entries without topology count nowhere, so devices without NUMA
  affinity are neither counted nor published.
* :func:`node_resources` (upstream ``updateNodeResources``): capacity per NUMA node is
  the online CPU count, ``MemTotal`` and the 2Mi / 1Gi hugepages from sysfs; allocatable
  is :func:`to_counters` of ``GetAllocatableResources`` (the kubelet already removed the
  reserved CPUs); a device's capacity is its allocatable (there is no other source).
* :func:`scan` (upstream ``Scan``): one ``node-<n>`` zone of type ``Node`` per NUMA node
  with costs from its distances, and per resource the kubelet reports allocatable on
  that node: ``capacity`` (falls back to allocatable when unknown, and never below it),
  ``allocatable``, ``available = max(0, allocatable - exclusive allocations)``. A node
  with nothing allocatable gets ``cpu`` with allocatable 0. Shared-pool (burstable,
  best-effort, non-integral) requests never appear in the List response, so they never
  reduce ``available``.
* the pod fingerprint attributes, over every listed pod (method ``all``) or over pods
  with a container holding exclusive CPUs, NUMA-bound memory or NUMA-bound devices
  (``with-exclusive-resources``, upstream's ``numalocality.Verify``);
* with the fingerprint on and the ``single-numa-node`` policy, the numaplacement
  attributes (:mod:`nrop.api.numaplacement`, upstream RTE v0.25): the NUMA node of every
  container of those pods that holds an exclusive CPU (the node of its first CPU), else
  a NUMA-bound device, else a NUMA-bound memory block, goes into the top-level metadata
  attribute and the per-zone vector attributes; a container with none is left out, and a
  container that cannot be placed on one node voids the whole encoding (nothing
  published, a warning);
* the three List middlewares, applied in upstream's order: ``sharedcpuspool`` (remove
  the reference container's CPUs from every container), ``podexclude`` (drop pods
  matching namespace/name globs) and ``terminalpods`` (drop pods known to have ended;
  which ones is :mod:`nrop.rte.terminalpods`' business).

Zones are the machine's NUMA nodes in id order (upstream walks indexes ``0..n-1`` and
looks each id up, which is the same on every machine without holes in its node ids, and
panics on the others). A zone's resources come in the order upstream's ``range`` over the
zone's allocatable counters (a Go map) visits them (:class:`nrop.api.gomaps.GoMap`, random
source injected): a rotation of the order the kubelet reported them in (devices, then
``cpu``, then memory blocks), from a random start on every scan (beyond eight resources
Go's hash layout cannot be known: a fresh random one per scan). So, as upstream, a scan
of an unchanged node usually yields an object whose resource lists are in another order,
and a periodic refresh then writes a new ``resourceVersion`` (what the tests' ``GetUpdated``
waits for); with one resource per zone it never does.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from nrop.api import fingerprint, numaplacement
from nrop.api.gomaps import GoMap
from nrop.api.nrt import AttributeInfo, CostInfo, ResourceInfo, Zone, zone_name_from_numa_id
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.rte.sysinfo import MachineInfo, hugepage_resource_name

__all__ = [
    "RESOURCE_CPU",
    "RESOURCE_MEMORY",
    "ContainerRef",
    "Counters",
    "NodeResources",
    "PodExclude",
    "ScanOptions",
    "ScanResult",
    "container_numa_node",
    "exclude_pods",
    "exclude_terminal_pods",
    "exclusive_reason",
    "fingerprint_pods",
    "is_native_resource",
    "node_resources",
    "normalize",
    "numa_placement",
    "remove_shared_pool",
    "scan",
    "to_counters",
]

SINGLE_NUMA_NODE: Final = "single-numa-node"
RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
_HUGEPAGES_PREFIX: Final = "hugepages-"
#: The only hugepage sizes whose capacity upstream reads from sysfs.
_CAPACITY_HUGEPAGES: Final = (hugepage_resource_name(2 * 1024**2), hugepage_resource_name(1024**3))

#: NUMA node id → resource name → amount (CPUs, bytes, or device count).
Counters = dict[int, dict[str, int]]


# ----------------------------------------------------------------------------- middleware options


@dataclass(frozen=True)
class ContainerRef:
    """``namespace/pod/container`` of the reference (shared-pool) container."""

    namespace: str
    pod: str
    container: str

    @classmethod
    def parse(cls, text: str) -> ContainerRef | None:
        """``ns/pod/container`` (surrounding spaces trimmed); ``""`` is no reference."""
        if text == "":
            return None
        parts = text.split("/")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(f"malformed reference container {text!r}: expected namespace/pod/container")
        return cls(*(p.strip() for p in parts))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pod}/{self.container}"


@dataclass(frozen=True)
class PodExclude:
    """One ``podExclude`` item: a pod is dropped when both globs match."""

    namespace_pattern: str = "*"
    name_pattern: str = "*"

    def matches(self, pod: PodResources) -> bool:
        return fnmatch.fnmatchcase(pod.namespace, self.namespace_pattern) and fnmatch.fnmatchcase(
            pod.name, self.name_pattern
        )


# ----------------------------------------------------------------------------- counters


def is_native_resource(name: str) -> bool:
    return name in (RESOURCE_CPU, RESOURCE_MEMORY) or name.startswith(_HUGEPAGES_PREFIX)


def _is_memory_like(name: str) -> bool:
    return name == RESOURCE_MEMORY or name.startswith(_HUGEPAGES_PREFIX)


def normalize(
    devices: Iterable[ContainerDevices],
    memory: Iterable[ContainerMemory],
    cpu_ids: Iterable[int],
    cpu_to_numa: Mapping[int, int],
) -> tuple[list[ContainerDevices], list[int]]:
    """Devices, CPUs and memory blocks as one list of per-NUMA ``ContainerDevices``, plus unknown CPUs.

    CPUs are grouped per NUMA node (one ``cpu`` entry per node); a memory block of size
    zero is skipped, any other becomes one entry per node of its topology carrying its
    size as the single id. CPUs missing from ``cpu_to_numa`` are returned, not counted.
    """
    entries = list(devices)
    unknown: list[int] = []
    per_numa: dict[int, list[str]] = {}
    for cpu in cpu_ids:
        numa = cpu_to_numa.get(cpu)
        if numa is None:
            unknown.append(cpu)
            continue
        per_numa.setdefault(numa, []).append(str(cpu))
    for numa, cpus in per_numa.items():
        entries.append(ContainerDevices(RESOURCE_CPU, tuple(cpus), (numa,)))
    for block in memory:
        if block.size == 0:
            continue
        for numa in block.numa_nodes or ():
            entries.append(ContainerDevices(block.type, (str(block.size),), (numa,)))
    return entries, unknown


def to_counters(entries: Iterable[ContainerDevices]) -> Counters:
    """Per-NUMA totals: memory-like entries add their sizes, others their id count."""
    counters: Counters = {}
    for entry in entries:
        for numa in entry.numa_nodes or ():
            node = counters.setdefault(numa, {})
            if _is_memory_like(entry.resource):
                amount = sum(int(size) for size in entry.ids)
            else:
                amount = len(entry.ids)
            node[entry.resource] = node.get(entry.resource, 0) + amount
    return counters


@dataclass(frozen=True)
class NodeResources:
    """Per-NUMA capacity and allocatable, computed at start-up (and on refresh)."""

    capacity: Counters
    allocatable: Counters
    warnings: tuple[str, ...] = ()


def node_resources(machine: MachineInfo, allocatable: AllocatableResources) -> NodeResources:
    """Upstream ``updateNodeResources``: capacity from sysfs, allocatable from the kubelet."""
    warnings: list[str] = []
    capacity: Counters = {}
    for node in machine.nodes:
        counters = {RESOURCE_CPU: len(node.cpus), RESOURCE_MEMORY: node.memory_bytes}
        for name in _CAPACITY_HUGEPAGES:
            counters[name] = node.hugepages.get(name, 0)
        capacity[node.id] = counters
    entries, unknown = normalize(
        allocatable.devices, allocatable.memory, allocatable.cpu_ids, machine.cpu_to_numa()
    )
    if unknown:
        warnings.append(f"allocatable CPUs {sorted(unknown)} are on no known NUMA node")
    reserved = sorted(set(allocatable.cpu_ids) & set(machine.reserved_cpus))
    if reserved:
        warnings.append(f"the kubelet reports reserved CPUs {reserved} as allocatable")
    alloc = to_counters(entries)
    # There is no way to learn a device's capacity: take what the kubelet can allocate.
    for numa, counters in alloc.items():
        for name, amount in counters.items():
            if not is_native_resource(name) and numa in capacity:
                capacity[numa][name] = amount
    return NodeResources(capacity=capacity, allocatable=alloc, warnings=tuple(warnings))


# ----------------------------------------------------------------------------- middlewares


def remove_shared_pool(pods: Sequence[PodResources], reference: ContainerRef | None) -> list[PodResources]:
    """``sharedcpuspool``: drop the reference container's CPUs from every container's list."""
    if reference is None:
        return list(pods)
    shared: frozenset[int] = frozenset()
    for pod in pods:
        if (pod.namespace, pod.name) != (reference.namespace, reference.pod):
            continue
        for container in pod.containers:
            if container.name == reference.container:
                shared = frozenset(container.cpu_ids)
                break
        break
    if not shared:
        return list(pods)
    result = []
    for pod in pods:
        containers = tuple(replace(c, cpu_ids=tuple(sorted(set(c.cpu_ids) - shared))) for c in pod.containers)
        result.append(replace(pod, containers=containers))
    return result


def exclude_pods(pods: Sequence[PodResources], patterns: Sequence[PodExclude]) -> list[PodResources]:
    """``podexclude``: drop every pod that one of ``patterns`` matches.

    Globs follow :func:`fnmatch.fnmatchcase` (``*``, ``?``, ``[...]``, negation ``[!...]``);
    upstream uses Go's ``filepath.Match``, which spells negation ``[^...]``.
    """
    if not patterns:
        return list(pods)
    return [pod for pod in pods if not any(p.matches(pod) for p in patterns)]


def exclude_terminal_pods(
    pods: Sequence[PodResources], terminal: Collection[tuple[str, str]]
) -> list[PodResources]:
    """``terminalpods``: drop every pod whose ``(namespace, name)`` is in ``terminal``."""
    if not terminal:
        return list(pods)
    return [pod for pod in pods if (pod.namespace, pod.name) not in terminal]


# ----------------------------------------------------------------------------- fingerprint


def _has_numa(nodes: tuple[int, ...] | None) -> bool:
    return any(node >= 0 for node in nodes or ())


def exclusive_reason(pod: PodResources) -> str | None:
    """Why ``pod`` holds exclusive resources (``cpu``, ``memory``, ``device``), or None."""
    for container in pod.containers:
        if container.cpu_ids:
            return "cpu"
        if any(_has_numa(block.numa_nodes) for block in container.memory):
            return "memory"
        if any(dev.ids and _has_numa(dev.numa_nodes) for dev in container.devices):
            return "device"
    return None


def fingerprint_pods(
    pods: Iterable[PodResources], method: fingerprint.Method, node_name: str = ""
) -> tuple[str, fingerprint.Status]:
    """The pods fingerprint of the listed pods under ``method``, and what went into it."""
    status = fingerprint.Status(node_name=node_name)
    fp = fingerprint.Fingerprint(tracer=status)
    for pod in pods:
        if method == fingerprint.Method.ALL or exclusive_reason(pod) is not None:
            fp.add(pod.namespace, pod.name)
    return fp.sign(), status


# ----------------------------------------------------------------------------- numaplacement


def _numa_ids(nodes: tuple[int, ...] | None) -> set[int]:
    return {node for node in nodes or () if node >= 0}


def container_numa_node(container: ContainerResources, cpu_to_numa: Mapping[int, int]) -> int:
    """The one NUMA node of a container's exclusive resources, or -1 when it holds none.

    Under ``single-numa-node`` the kubelet put everything on one node, so the first
    exclusive resource found tells (upstream ``getContainerSingleNUMAPlacement``).
    ``ValueError`` when the data contradicts that.
    """
    if container.cpu_ids:
        numa = cpu_to_numa.get(container.cpu_ids[0])
        if numa is None:
            raise ValueError(f"CPU ID {container.cpu_ids[0]} not found in the CPU to NUMA map")
        return numa
    candidates = [_numa_ids(dev.numa_nodes) for dev in container.devices if dev.ids]
    candidates += [_numa_ids(block.numa_nodes) for block in container.memory]
    for ids in candidates:
        if len(ids) > 1:
            raise ValueError(f"multiple NUMA nodes found for container {container.name}")
        if ids:
            return ids.pop()
    return numaplacement.UNKNOWN


def numa_placement(
    pods: Iterable[PodResources], numa_nodes: int, cpu_to_numa: Mapping[int, int]
) -> numaplacement.Payload:
    """The numaplacement payload of the containers of ``pods`` that hold exclusive resources.

    Only pods with exclusive resources take part (the ones the ``with-exclusive-resources``
    fingerprint counts); ``ValueError`` (or :class:`~nrop.api.numaplacement.NumaPlacementError`)
    when a container cannot be placed.
    """
    affinities = []
    for pod in pods:
        if exclusive_reason(pod) is None:
            continue
        for container in pod.containers:
            ident = numaplacement.ContainerID(pod.namespace, pod.name, container.name)
            try:
                numa = container_numa_node(container, cpu_to_numa)
            except ValueError as exc:
                raise ValueError(
                    f"while getting container NUMA placement: containerID={ident}: {exc}"
                ) from None
            if numa != numaplacement.UNKNOWN:
                affinities.append(numaplacement.ContainerAffinity(ident, numa))
    return numaplacement.encode(numa_nodes, affinities)


# ----------------------------------------------------------------------------- scan


@dataclass(frozen=True)
class ScanOptions:
    node_name: str = ""
    #: ``--watch-namespace``: only pods of this namespace count (the fingerprint sees all).
    namespace: str = ""
    pods_fingerprint: bool = True
    fingerprint_method: fingerprint.Method = fingerprint.DEFAULT_METHOD
    #: ``resourceExclude``: node name (or ``*``) → resource names not to publish.
    resource_exclude: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: The kubelet's topology manager policy: numaplacement is published only for ``single-numa-node``.
    topology_manager_policy: str = ""


@dataclass
class ScanResult:
    zones: list[Zone]
    attributes: list[AttributeInfo]
    annotations: dict[str, str]
    fingerprint: str = ""
    fingerprint_status: fingerprint.Status | None = None
    warnings: list[str] = field(default_factory=list)


def _excluded(options: ScanOptions, resource: str) -> bool:
    return any(resource in options.resource_exclude.get(key, ()) for key in ("*", options.node_name))


def _costs(machine: MachineInfo, numa_id: int) -> list[CostInfo] | None:
    node = machine.node(numa_id)
    if node is None:
        return None
    return [CostInfo(zone_name_from_numa_id(dst), dist) for dst, dist in enumerate(node.distances)]


def scan(
    machine: MachineInfo,
    resources: NodeResources,
    pods: Sequence[PodResources],
    options: ScanOptions | None = None,
    rng: random.Random | None = None,
) -> ScanResult:
    """Zones, attributes and annotations of the NRT for ``pods`` (the List response, filtered).

    ``rng`` draws each zone's Go map iteration start (see the module docstring).
    """
    options = options or ScanOptions()
    rng = rng if rng is not None else random.Random()
    result = ScanResult(zones=[], attributes=[], annotations={})
    if options.pods_fingerprint:
        sign, status = fingerprint_pods(pods, options.fingerprint_method, options.node_name)
        result.attributes.append(AttributeInfo(fingerprint.ATTRIBUTE, sign))
        result.attributes.append(
            AttributeInfo(fingerprint.ATTRIBUTE_METHOD, options.fingerprint_method.value)
        )
        result.annotations[fingerprint.ANNOTATION] = sign
        result.fingerprint, result.fingerprint_status = sign, status
    placement: numaplacement.Payload | None = None
    if options.pods_fingerprint and options.topology_manager_policy == SINGLE_NUMA_NODE:
        try:
            placement = numa_placement(pods, len(machine.nodes), machine.cpu_to_numa())
        except ValueError as exc:
            result.warnings.append(f"containers NUMA-placement detection: {exc}")
        else:
            result.attributes.append(
                AttributeInfo(numaplacement.ATTRIBUTE_METADATA, placement.pack_metadata())
            )

    counted = [p for p in pods if not options.namespace or p.namespace == options.namespace]
    cpu_to_numa = machine.cpu_to_numa()
    entries: list[ContainerDevices] = []
    for pod in counted:
        for container in pod.containers:
            more, unknown = normalize(container.devices, container.memory, container.cpu_ids, cpu_to_numa)
            entries.extend(more)
            if unknown:
                result.warnings.append(
                    f"{pod.namespace}/{pod.name}/{container.name}: CPUs {sorted(unknown)} are on no known NUMA node"
                )
    used = to_counters(entries)

    for node in machine.nodes:
        zone = Zone(name=zone_name_from_numa_id(node.id), type="Node")
        if placement is not None and node.id in placement.vectors:
            zone.attributes.append(AttributeInfo(numaplacement.ATTRIBUTE_VECTOR, placement.vectors[node.id]))
        costs = _costs(machine, node.id)
        if costs is not None:
            zone.costs = costs
        capacity = resources.capacity.get(node.id, {})
        # Nothing allocatable on this node: all of its CPUs are reserved.
        allocatable = resources.allocatable.get(node.id) or {RESOURCE_CPU: 0}
        for name in GoMap(allocatable, rng).iterate(rng):
            if _excluded(options, name):
                continue
            alloc = allocatable[name]
            cap = capacity.get(name, 0)
            if cap == 0:
                cap = alloc
                if is_native_resource(name):
                    result.warnings.append(
                        f"zero capacity for native resource {name!r} on NUMA node {node.id}"
                    )
            if alloc > cap:
                result.warnings.append(f"allocatable above capacity for {name!r} on zone {zone.name}")
                cap = alloc
            avail = alloc - used.get(node.id, {}).get(name, 0)
            if avail < 0:
                result.warnings.append(f"negative availability for {name!r} on zone {zone.name}")
                avail = 0
            zone.resources.append(ResourceInfo.of(name, cap, alloc, avail))
        result.zones.append(zone)
    return result
