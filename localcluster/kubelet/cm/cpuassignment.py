"""Which CPUs to hand out: the static policy's allocation algorithms (upstream ``cpu_assignment.go``).

Owns ``take_by_topology_numa_packed`` (the default best-fit "packed" algorithm, with
the ``spread`` CPU order of ``distribute-cpus-across-cores``) and
``take_by_topology_numa_distributed`` (KEP-2902, ``distribute-cpus-across-numa``).
Both are pure functions of a ``CPUTopology``, the free CPUs and a count; they follow
upstream's ordering and tie-breaks exactly:

* every level (NUMA nodes, sockets, cores) is sorted by ascending number of *free*
  CPUs, then ascending id, nested through the hierarchy: NUMA nodes outside sockets
  when ``num_sockets >= num_numa_nodes`` ("NUMA first"), sockets outside otherwise;
* steps: whole first-level units, whole second-level units, whole cores (packed only),
  then single CPUs; partially used units are therefore filled before empty ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from itertools import combinations
from typing import Literal

from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.cm.cputopology import CPUTopology

__all__ = [
    "CPUAssignmentError",
    "SortingStrategy",
    "take_by_topology_numa_distributed",
    "take_by_topology_numa_packed",
]

SortingStrategy = Literal["packed", "spread"]


class CPUAssignmentError(Exception):
    """The request cannot be served from the given CPUs; ``str()`` is upstream's error text."""


def _not_enough(requested: int, available: CPUSet) -> CPUAssignmentError:
    return CPUAssignmentError(
        f"not enough cpus available to satisfy request: requested={requested}, available={available.size()}"
    )


class _Accumulator:
    """Upstream ``cpuAccumulator``: the free CPUs left (``details``), the result, and the count still needed."""

    def __init__(self, topo: CPUTopology, available: CPUSet, num_cpus: int) -> None:
        self.topo = topo
        self.details = topo.details.keep_only(available)
        self.needed = num_cpus
        self.result = CPUSet()
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes

    # -- bookkeeping -------------------------------------------------------------------

    def take(self, cpus: CPUSet) -> None:
        self.result = self.result.union(cpus)
        self.details = self.details.keep_only(self.details.cpus().difference(self.result))
        self.needed -= cpus.size()

    def satisfied(self) -> bool:
        return self.needed < 1

    def failed(self) -> bool:
        return self.needed > self.details.cpus().size()

    # -- ordering ------------------------------------------------------------------------

    @staticmethod
    def _sorted(ids: CPUSet, free_cpus: Callable[[int], CPUSet]) -> list[int]:
        return sorted(ids, key=lambda i: (free_cpus(i).size(), i))

    def sorted_numa_nodes(self) -> list[int]:
        d = self.details
        if self.numa_first:
            return self._sorted(d.numa_nodes(), d.cpus_in_numa_nodes)
        result: list[int] = []
        for socket in self.sorted_sockets():
            result += self._sorted(d.numa_nodes_in_sockets(socket), d.cpus_in_numa_nodes)
        return result

    def sorted_sockets(self) -> list[int]:
        d = self.details
        if not self.numa_first:
            return self._sorted(d.sockets(), d.cpus_in_sockets)
        result: list[int] = []
        for numa in self.sorted_numa_nodes():
            result += self._sorted(d.sockets_in_numa_nodes(numa), d.cpus_in_sockets)
        return result

    def sorted_cores(self) -> list[int]:
        d = self.details
        result: list[int] = []
        if self.numa_first:
            for socket in self.sorted_sockets():
                result += self._sorted(d.cores_in_sockets(socket), d.cpus_in_cores)
        else:
            for numa in self.sorted_numa_nodes():
                result += self._sorted(d.cores_in_numa_nodes(numa), d.cpus_in_cores)
        return result

    def sorted_cpus(self, strategy: SortingStrategy) -> list[int]:
        result: list[int] = []
        if strategy == "spread":
            # One socket after the other, ascending ids: with the usual c / c+N sibling
            # numbering this takes one thread of every core before any sibling.
            for socket in self.sorted_sockets():
                result += self.details.cpus_in_sockets(socket).to_list()
        else:
            for core in self.sorted_cores():
                result += self.details.cpus_in_cores(core).to_list()
        return result

    # -- taking whole units ----------------------------------------------------------------

    def _take_whole(
        self,
        units: Iterable[int],
        free_now: Callable[[int], CPUSet],
        total: Callable[[int], CPUSet],
        size: Callable[[int], int],
    ) -> None:
        # The list of fully free units is computed once, before any is taken (as upstream).
        free_units = [u for u in units if free_now(u).size() == size(u)]
        for unit in free_units:
            cpus = total(unit)
            if self.needed >= cpus.size():
                self.take(cpus)

    def take_full_numa_nodes(self) -> None:
        topo = self.topo.details
        self._take_whole(
            self.sorted_numa_nodes(),
            self.details.cpus_in_numa_nodes,
            topo.cpus_in_numa_nodes,
            lambda n: topo.cpus_in_numa_nodes(n).size(),
        )

    def take_full_sockets(self) -> None:
        self._take_whole(
            self.sorted_sockets(),
            self.details.cpus_in_sockets,
            self.topo.details.cpus_in_sockets,
            lambda _s: self.topo.cpus_per_socket(),
        )

    def take_full_cores(self) -> None:
        self._take_whole(
            self.sorted_cores(),
            self.details.cpus_in_cores,
            self.topo.details.cpus_in_cores,
            lambda _c: self.topo.cpus_per_core(),
        )

    def take_remaining_cpus(self, strategy: SortingStrategy) -> None:
        for cpu in self.sorted_cpus(strategy):
            self.take(CPUSet.of(cpu))
            if self.satisfied():
                return

    def numa_range_to_satisfy(self, group_size: int) -> tuple[int, int]:
        """Upstream ``rangeNUMANodesNeededToSatisfy``: (min, max) NUMA nodes worth trying."""
        num_numa = self.topo.details.numa_nodes().size()
        num_numa_available = self.details.numa_nodes().size()
        num_groups = _ceil_div(self.topo.details.cpus().size(), group_size)
        groups_per_numa = _ceil_div(num_groups, num_numa)
        groups_needed = _ceil_div(self.needed, group_size)
        return _ceil_div(groups_needed, groups_per_numa), min(groups_needed, num_numa_available)


def _ceil_div(a: int, b: int) -> int:
    # Go's (a-1)/b + 1 for positive a.
    return (a - 1) // b + 1


def take_by_topology_numa_packed(
    topo: CPUTopology, available: CPUSet, num_cpus: int, strategy: SortingStrategy = "packed"
) -> CPUSet:
    """Best-fit: whole NUMA nodes/sockets, then whole cores (packed only), then single CPUs."""
    acc = _Accumulator(topo, available, num_cpus)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(num_cpus, available)
    steps: list[Callable[[], None]] = (
        [acc.take_full_numa_nodes, acc.take_full_sockets]
        if acc.numa_first
        else [acc.take_full_sockets, acc.take_full_numa_nodes]
    )
    if strategy != "spread":
        steps.append(acc.take_full_cores)
    steps.append(lambda: acc.take_remaining_cpus(strategy))
    for step in steps:
        step()
        if acc.satisfied():
            return acc.result
    raise CPUAssignmentError("failed to allocate cpus")


def _go_round3(x: float) -> float:
    """``math.Round(x*1000)/1000`` (half away from zero), not Python's banker's rounding."""
    v = x * 1000
    t = math.trunc(v)
    if abs(v - t) >= 0.5:
        t += 1 if v > 0 else -1
    return t / 1000


def _stdev(values: list[int]) -> float:
    """Population standard deviation with upstream's rounding of the mean and the result."""
    mean = _go_round3(sum(float(v) for v in values) / len(values))
    var = sum((float(v) - mean) * (float(v) - mean) for v in values) / len(values)
    return _go_round3(math.sqrt(var))


def _hand_out(after: dict[int, int], subset: Iterable[int], remainder: int, group: int) -> bool:
    """Round-robin ``group`` CPUs per NUMA node of ``subset`` until ``remainder`` is gone (mutates ``after``).

    Returns False when a full pass makes no progress; upstream would loop forever there.
    """
    members = list(subset)
    while remainder > 0:
        progressed = False
        for numa in members:
            if remainder == 0:
                break
            if after[numa] < group:
                continue
            after[numa] -= group
            remainder -= group
            progressed = True
        if not progressed:
            return False
    return True


def take_by_topology_numa_distributed(
    topo: CPUTopology,
    available: CPUSet,
    num_cpus: int,
    group_size: int = 1,
    strategy: SortingStrategy = "packed",
) -> CPUSet:
    """Spread ``num_cpus`` evenly over the fewest NUMA nodes that can hold them (KEP-2902).

    CPUs are handed out in groups of ``group_size`` (CPUs per core with full-pcpus-only);
    when the count is not a multiple of the group size, or no NUMA combination balances,
    this falls back to the packed algorithm. Balance = population standard deviation of
    the free CPUs per NUMA node after the allocation (lower wins, ties keep the earlier
    combination in sorted-NUMA order).
    """
    if num_cpus % group_size != 0:
        return take_by_topology_numa_packed(topo, available, num_cpus, strategy)
    acc = _Accumulator(topo, available, num_cpus)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(num_cpus, available)

    numas = acc.sorted_numa_nodes()
    free = {n: acc.details.cpus_in_numa_nodes(n).size() for n in numas}
    min_numas, max_numas = acc.numa_range_to_satisfy(group_size)

    for k in range(min_numas, max_numas + 1):
        best_balance = math.inf
        best_combo: tuple[int, ...] | None = None
        best_remainder: tuple[int, ...] = ()
        for combo in combinations(numas, k):
            if best_balance == 0:
                break
            if sum(free[n] for n in combo) < num_cpus:
                continue
            if sum(free[n] // group_size for n in combo) * group_size < num_cpus:
                continue
            distribution = (num_cpus // k // group_size) * group_size
            if any(free[n] < distribution for n in combo):
                continue
            after = dict(free)
            for n in combo:
                after[n] -= distribution
            remainder = num_cpus - distribution * k
            local_best = math.inf
            local_remainder: tuple[int, ...] = ()
            if remainder == 0:
                local_best = _stdev([after[n] for n in sorted(after)])
            candidates = [n for n in combo if after[n] >= group_size]
            for size in range(len(candidates), 0, -1):
                if remainder <= 0:
                    break
                for subset in combinations(candidates, size):
                    trial = dict(after)
                    if sum(trial[n] for n in subset) < remainder:
                        continue
                    if not _hand_out(trial, subset, remainder, group_size):
                        continue
                    balance = _stdev([trial[n] for n in sorted(trial)])
                    if balance < local_best:
                        local_best = balance
                        local_remainder = subset
            if local_best < best_balance:
                best_balance = local_best
                best_combo = combo
                best_remainder = local_remainder
        if best_combo is None:
            continue

        distribution = (num_cpus // len(best_combo) // group_size) * group_size
        for n in best_combo:
            acc.take(_packed_or_empty(topo, acc.details.cpus_in_numa_nodes(n), distribution, strategy))
        remainder = num_cpus - distribution * len(best_combo)
        while remainder > 0:
            progressed = False
            for n in best_remainder:
                if remainder == 0:
                    break
                if acc.details.cpus_in_numa_nodes(n).size() < group_size:
                    continue
                acc.take(_packed_or_empty(topo, acc.details.cpus_in_numa_nodes(n), group_size, strategy))
                remainder -= group_size
                progressed = True
            if not progressed:
                break
        if acc.needed > 0:
            raise CPUAssignmentError(f"accounting error, not enough CPUs allocated, remaining: {acc.needed}")
        if acc.needed < 0:
            raise CPUAssignmentError(f"accounting error, too many CPUs allocated, remaining: {acc.needed}")
        return acc.result

    return take_by_topology_numa_packed(topo, available, num_cpus, strategy)


def _packed_or_empty(
    topo: CPUTopology, available: CPUSet, num_cpus: int, strategy: SortingStrategy
) -> CPUSet:
    # Upstream ignores the error of these inner calls and takes an empty set.
    try:
        return take_by_topology_numa_packed(topo, available, num_cpus, strategy)
    except CPUAssignmentError:
        return CPUSet()
