"""The CPU topology the kubelet's CPU manager sees (``cpumanager/topology``), and builders for it.

Owns ``CPUTopology`` / ``CPUDetails`` with the same counts and derived views the
kubelet computes from cadvisor's machine info (``topology.Discover``):

* ``num_cpus`` logical CPUs, ``num_cores`` physical cores (cores are counted per NUMA
  node, as cadvisor lists them), ``num_sockets``, ``num_numa_nodes``;
* ``cpus_per_core() = num_cpus // num_cores`` and ``cpus_per_socket() = num_cpus // num_sockets``
  (integer division, as in Go);
* per-CPU ``CPUInfo(numa_node, socket, core)``.

Core ids: sysfs ``core_id`` is unique only within a socket, so the kubelet re-numbers
every core as the **lowest logical CPU id among its threads** (``getUniqueCoreID``).
The builders here do the same, so core ids are globally unique and sort the way the
upstream allocator sorts them. ``CPUTopology.from_details`` keeps whatever (globally
unique) core ids it is given, to reproduce upstream unit-test topologies verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from nrop.localcluster.kubelet.cm.cpuset import CPUSet

__all__ = ["CPUDetails", "CPUInfo", "CPUTopology", "NumberingScheme", "TopologyError"]

NumberingScheme = Literal["linux-interleaved", "linux-contiguous"]


class TopologyError(ValueError):
    """A machine description cannot be turned into a CPU topology."""


@dataclass(frozen=True, slots=True)
class CPUInfo:
    numa_node: int
    socket: int
    core: int


class CPUDetails(Mapping[int, CPUInfo]):
    """Immutable map cpu id → ``CPUInfo`` with the lookups of upstream ``topology.CPUDetails``.

    Every ``*_in_*`` lookup returns a ``CPUSet`` of ids (CPUs, cores, sockets or NUMA
    nodes), as upstream does, so callers can sort and count them uniformly.
    """

    __slots__ = ("_by_core", "_by_numa", "_by_socket", "_info")

    def __init__(self, info: Mapping[int, CPUInfo]) -> None:
        self._info: dict[int, CPUInfo] = dict(info)
        by_core: dict[int, set[int]] = {}
        by_socket: dict[int, set[int]] = {}
        by_numa: dict[int, set[int]] = {}
        for cpu, ci in self._info.items():
            by_core.setdefault(ci.core, set()).add(cpu)
            by_socket.setdefault(ci.socket, set()).add(cpu)
            by_numa.setdefault(ci.numa_node, set()).add(cpu)
        self._by_core = {k: frozenset(v) for k, v in by_core.items()}
        self._by_socket = {k: frozenset(v) for k, v in by_socket.items()}
        self._by_numa = {k: frozenset(v) for k, v in by_numa.items()}

    def __getitem__(self, cpu: int) -> CPUInfo:
        return self._info[cpu]

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._info))

    def __len__(self) -> int:
        return len(self._info)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CPUDetails):
            return self._info == other._info
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._info.items()))

    def __repr__(self) -> str:
        return f"CPUDetails({len(self._info)} cpus)"

    def keep_only(self, cpus: CPUSet) -> CPUDetails:
        return CPUDetails({c: i for c, i in self._info.items() if c in cpus})

    # -- id sets -------------------------------------------------------------------------

    def cpus(self) -> CPUSet:
        return CPUSet(self._info)

    def cores(self) -> CPUSet:
        return CPUSet(self._by_core)

    def sockets(self) -> CPUSet:
        return CPUSet(self._by_socket)

    def numa_nodes(self) -> CPUSet:
        return CPUSet(self._by_numa)

    # -- cross lookups -------------------------------------------------------------------

    def _cpus_of(self, index: dict[int, frozenset[int]], ids: tuple[int, ...]) -> CPUSet:
        result: set[int] = set()
        for i in ids:
            result.update(index.get(i, ()))
        return CPUSet(result)

    def cpus_in_cores(self, *cores: int) -> CPUSet:
        return self._cpus_of(self._by_core, cores)

    def cpus_in_sockets(self, *sockets: int) -> CPUSet:
        return self._cpus_of(self._by_socket, sockets)

    def cpus_in_numa_nodes(self, *numa_nodes: int) -> CPUSet:
        return self._cpus_of(self._by_numa, numa_nodes)

    def cores_in_sockets(self, *sockets: int) -> CPUSet:
        return CPUSet(self._info[c].core for c in self.cpus_in_sockets(*sockets))

    def cores_in_numa_nodes(self, *numa_nodes: int) -> CPUSet:
        return CPUSet(self._info[c].core for c in self.cpus_in_numa_nodes(*numa_nodes))

    def sockets_in_numa_nodes(self, *numa_nodes: int) -> CPUSet:
        return CPUSet(self._info[c].socket for c in self.cpus_in_numa_nodes(*numa_nodes))

    def numa_nodes_in_sockets(self, *sockets: int) -> CPUSet:
        return CPUSet(self._info[c].numa_node for c in self.cpus_in_sockets(*sockets))

    def are_numa_nodes_in_same_socket(self, numa_nodes: Iterable[int]) -> bool:
        wanted = list(numa_nodes)
        if any(n not in self._by_numa for n in wanted):
            return False
        return self.sockets_in_numa_nodes(*wanted).size() <= 1


@dataclass(frozen=True)
class CPUTopology:
    """Counts plus per-CPU details, like upstream ``topology.CPUTopology``."""

    num_cpus: int
    num_cores: int
    num_sockets: int
    num_numa_nodes: int
    details: CPUDetails = field(repr=False)

    # -- derived views (same integer arithmetic as the kubelet) --------------------------

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_numa_node(self) -> int:
        return self.num_cpus // self.num_numa_nodes if self.num_numa_nodes else 0

    def numa_nodes_per_socket(self) -> int:
        """``NumNUMANodes / NumSockets`` (0 when sockets outnumber NUMA nodes), as align-by-socket uses it."""
        return self.num_numa_nodes // self.num_sockets if self.num_sockets else 0

    def all_cpus(self) -> CPUSet:
        return self.details.cpus()

    def core_of(self, cpu: int) -> int:
        try:
            return self.details[cpu].core
        except KeyError:
            raise TopologyError(f"unknown CPU ID: {cpu}") from None

    def siblings(self, cpu: int) -> CPUSet:
        """All threads of the core that ``cpu`` belongs to (including ``cpu``)."""
        return self.details.cpus_in_cores(self.core_of(cpu))

    def physical_cpus_of(self, cpus: CPUSet) -> CPUSet:
        """``cpus`` widened to whole cores (upstream ``reservedPhysicalCPUs``)."""
        return CPUSet().union(*(self.siblings(c) for c in cpus))

    # -- builders ------------------------------------------------------------------------

    @classmethod
    def from_details(cls, details: Mapping[int, CPUInfo]) -> CPUTopology:
        """Counts derived from per-CPU details whose core ids are already globally unique."""
        d = details if isinstance(details, CPUDetails) else CPUDetails(details)
        if len(d) == 0:
            raise TopologyError("could not detect number of cpus")
        # cadvisor lists cores per NUMA node, so a core is a (numa node, core id) pair.
        num_cores = len({(i.numa_node, i.core) for i in d.values()})
        return cls(
            num_cpus=len(d),
            num_cores=num_cores,
            num_sockets=d.sockets().size(),
            num_numa_nodes=d.numa_nodes().size(),
            details=d,
        )

    @classmethod
    def from_table(cls, table: Mapping[int, tuple[int, int, int]]) -> CPUTopology:
        """Build from ``cpu id → (core, socket, numa node)`` where ``core`` is the sysfs ``core_id``.

        The threads of a core are the CPUs sharing (socket, numa node, core); each such
        core gets the kubelet's unique id: its lowest CPU id.
        """
        groups: dict[tuple[int, int, int], list[int]] = {}
        for cpu, (core, socket, numa) in table.items():
            if cpu < 0 or core < 0 or socket < 0 or numa < 0:
                raise TopologyError(f"negative id in CPU table entry {cpu}: {(core, socket, numa)}")
            groups.setdefault((socket, numa, core), []).append(cpu)
        info: dict[int, CPUInfo] = {}
        for (socket, numa, _core), threads in groups.items():
            unique_core = min(threads)
            for cpu in threads:
                info[cpu] = CPUInfo(numa_node=numa, socket=socket, core=unique_core)
        return cls.from_details(info)

    @classmethod
    def from_scheme(
        cls,
        scheme: NumberingScheme,
        *,
        sockets: int,
        numa_nodes_per_socket: int = 1,
        cores_per_numa_node: int,
        threads_per_core: int = 2,
    ) -> CPUTopology:
        """Build a regular machine with a Linux CPU numbering scheme.

        Physical cores are numbered ``0..C-1`` socket by socket and NUMA node by NUMA node
        (NUMA node ``n`` belongs to socket ``n // numa_nodes_per_socket``). Thread ``t``
        of core ``c`` is CPU:

        * ``linux-interleaved``: ``c + t * C`` (typical Intel: siblings are ``c`` and ``c + C``);
        * ``linux-contiguous``: ``c * threads_per_core + t`` (siblings adjacent, typical AMD/ARM).
        """
        if min(sockets, numa_nodes_per_socket, cores_per_numa_node, threads_per_core) < 1:
            raise TopologyError(
                "sockets, NUMA nodes per socket, cores per NUMA node and threads must be >= 1"
            )
        total_cores = sockets * numa_nodes_per_socket * cores_per_numa_node
        table: dict[int, tuple[int, int, int]] = {}
        for core in range(total_cores):
            numa = core // cores_per_numa_node
            socket = numa // numa_nodes_per_socket
            for thread in range(threads_per_core):
                if scheme == "linux-interleaved":
                    cpu = core + thread * total_cores
                elif scheme == "linux-contiguous":
                    cpu = core * threads_per_core + thread
                else:
                    raise TopologyError(f"unknown CPU numbering scheme {scheme!r}")
                # sysfs core_id restarts in every socket; from_table re-numbers it.
                table[cpu] = (core % (numa_nodes_per_socket * cores_per_numa_node), socket, numa)
        return cls.from_table(table)
