"""NodeResourceTopologyMatch's Score decision: how well a Guaranteed pod fits a node's NUMA zones.

This module owns the scoring strategies of upstream's Score
(``pkg/noderesourcetopology/score.go``), with Go's arithmetic reproduced where it shows in
the result:

* MostAllocated / LeastAllocated: per NUMA node, a weighted mean of per-resource scores
  in int64 arithmetic (truncating division), quantities rounded up by ``Value()``;
* BalancedAllocation: ``int64((1 - variance) * 100)`` with gonum's *sample* variance
  (corrected two-pass), 0 when any request exceeds what the zone has;
* a node's score is the smallest non-zero NUMA score (container scope: the truncated
  mean over init + app containers, each scored against the untouched zones);
* LeastNUMANodes: the fewest NUMA nodes that can hold the request, and whether they are
  the closest such set, averaging distances in float32 as upstream does.

The flow around it (QoS gate, cache lookup) is the plugin's, in :mod:`nrop.sched.framework.plugins.noderesourcetopology.plugin`.
"""

from __future__ import annotations

import itertools
import logging
import math
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from nrop.api.nrt import NodeResourceTopology
from nrop.api.quantity import Quantity
from nrop.sched.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from nrop.sched.framework.plugins.noderesourcetopology.args import ResourceSpec, ScoringStrategyType
from nrop.sched.framework.plugins.noderesourcetopology.filter import (
    SINGLE_NUMA_NODE,
    NUMANode,
    ParsedTopology,
    PodDemand,
    is_resource_set_suitable,
    parse_topology,
    pod_demand,
)

__all__ = [
    "GO_INT64_OF_NAN",
    "MAX_DISTANCE",
    "StrategyFn",
    "Weights",
    "avg_distance",
    "balanced_allocation_score",
    "container_scope_score",
    "least_allocated_score",
    "least_numa_container_scope_score",
    "least_numa_pod_scope_score",
    "most_allocated_score",
    "normalize_least_numa_score",
    "numa_nodes_required",
    "pod_scope_score",
    "resource_weights",
    "sample_variance",
    "score_for_each_numa_node",
    "score_with_parsed",
    "score_with_topology",
    "subtract_from_numas",
]

log = logging.getLogger(__name__)

Weights = Mapping[str, int]
StrategyFn = Callable[[Mapping[str, Quantity], Mapping[str, Quantity], Weights], int]

#: What Go's ``int64(NaN)`` gives on amd64; the framework rejects it as an invalid score.
GO_INT64_OF_NAN: Final = -(2**63)
#: ACPI SLIT's "unknown distance"; also the start value of the minimum search.
MAX_DISTANCE: Final = 255
_DEFAULT_WEIGHT: Final = 1
_ZERO: Final = Quantity(0)


def _go_div(numerator: int, denominator: int) -> int:
    """int64 division, truncating toward zero."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def _float_sum(values: Iterable[float]) -> float:
    """Left-to-right float64 sum (``sum()`` compensates rounding on newer Pythons; Go does not)."""
    total = 0.0
    for value in values:
        total += value
    return total


def _f32(value: float) -> float:
    """Round to the nearest float32 (operands here are exact, so one rounding is Go's result)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


# ----------------------------------------------------------------------------- weights


def resource_weights(resources: Iterable[ResourceSpec]) -> dict[str, int]:
    return {spec.name: spec.weight for spec in resources}


def _weight(weights: Weights, name: str) -> int:
    value = weights.get(name)
    return _DEFAULT_WEIGHT if value is None or value < 1 else value


# ------------------------------------------------------------- per-NUMA strategies


def _most_allocated(requested: Quantity, available: Quantity) -> int:
    if available.is_zero() or requested > available:
        return 0
    return _go_div(requested.value() * MAX_NODE_SCORE, available.value())


def _least_allocated(requested: Quantity, available: Quantity) -> int:
    if available.is_zero() or requested > available:
        return 0
    return _go_div((available.value() - requested.value()) * MAX_NODE_SCORE, available.value())


def _weighted_mean(
    per_resource: Callable[[Quantity, Quantity], int],
    requested: Mapping[str, Quantity],
    available: Mapping[str, Quantity],
    weights: Weights,
) -> int:
    # Every requested resource counts, even zero or absent from the zone (then it scores 0).
    # An empty request would divide by zero (a Go panic); Guaranteed pods always request cpu+memory.
    total = weight_sum = 0
    for name, amount in requested.items():
        weight = _weight(weights, name)
        total += per_resource(amount, available.get(name, _ZERO)) * weight
        weight_sum += weight
    return _go_div(total, weight_sum)


def most_allocated_score(
    requested: Mapping[str, Quantity], available: Mapping[str, Quantity], weights: Weights
) -> int:
    return _weighted_mean(_most_allocated, requested, available, weights)


def least_allocated_score(
    requested: Mapping[str, Quantity], available: Mapping[str, Quantity], weights: Weights
) -> int:
    return _weighted_mean(_least_allocated, requested, available, weights)


def sample_variance(values: Sequence[float]) -> float:
    """gonum ``stat.Variance(x, nil)``: corrected two-pass sample variance; NaN below two values.

    gonum sums with SIMD code whose addition order may differ from left to right; with
    two values (cpu and memory, the usual Guaranteed request) the result is identical.
    """
    n = len(values)
    if n < 2:
        return float("nan")
    mean = _float_sum(values) / n
    squares = compensation = 0.0
    for value in values:
        deviation = value - mean
        squares += deviation * deviation
        compensation += deviation
    squares -= compensation * compensation / n
    return squares / (n - 1)


def balanced_allocation_score(
    requested: Mapping[str, Quantity], available: Mapping[str, Quantity], weights: Weights
) -> int:
    """``int64((1 - variance(fractions)) * 100)``; weights are not used."""
    fractions = []
    for name, amount in requested.items():
        capacity = available.get(name, _ZERO).value()
        fraction = 1.0 if capacity == 0 else amount.value() / capacity
        if fraction > 1:
            return 0
        fractions.append(fraction)
    score = (1 - sample_variance(fractions)) * MAX_NODE_SCORE
    return GO_INT64_OF_NAN if math.isnan(score) else int(score)


STRATEGIES: Final[Mapping[ScoringStrategyType, StrategyFn]] = {
    ScoringStrategyType.MOST_ALLOCATED: most_allocated_score,
    ScoringStrategyType.LEAST_ALLOCATED: least_allocated_score,
    ScoringStrategyType.BALANCED_ALLOCATION: balanced_allocation_score,
}


def score_for_each_numa_node(
    requested: Mapping[str, Quantity], numa_nodes: Iterable[NUMANode], strategy: StrategyFn, weights: Weights
) -> int:
    """The smallest non-zero NUMA score (a zone scoring 0 cannot take the pod), 0 if all are 0."""
    lowest = 0
    for node in numa_nodes:
        score = strategy(requested, node.resources, weights)
        if lowest == 0 or (score != 0 and score < lowest):
            lowest = score
    return lowest


def pod_scope_score(
    pod: Mapping[str, Any] | PodDemand, numa_nodes: list[NUMANode], strategy: StrategyFn, weights: Weights
) -> int:
    return score_for_each_numa_node(pod_demand(pod).effective, numa_nodes, strategy, weights)


def container_scope_score(
    pod: Mapping[str, Any] | PodDemand, numa_nodes: list[NUMANode], strategy: StrategyFn, weights: Weights
) -> int:
    """Truncated mean over init + app containers; nothing is subtracted between containers."""
    demand = pod_demand(pod)
    scores = [
        float(score_for_each_numa_node(requests, numa_nodes, strategy, weights))
        for _, requests in [*demand.init, *demand.app]
    ]
    return int(_float_sum(scores) / len(scores))


# ------------------------------------------------------------------ LeastNUMANodes


def normalize_least_numa_score(count: int, is_min_avg_distance: bool, max_numa_nodes: int) -> int:
    """``100 - count * (100 // maxNUMANodes)``, plus half a step when the set is the closest one."""
    unit = MAX_NODE_SCORE // max_numa_nodes
    score = MAX_NODE_SCORE - count * unit
    return score + unit // 2 if is_min_avg_distance else score


def avg_distance(numa_nodes: Sequence[NUMANode], combination: Sequence[int]) -> float:
    """Mean distance over all ordered pairs of a set of list indices (self-distance included), float32."""
    if not combination:
        return float(MAX_DISTANCE)
    total = 0
    for i in combination:
        for j in combination:
            cost = numa_nodes[i].costs.get(numa_nodes[j].numa_id)
            if cost is None:
                log.warning(
                    "no distance from NUMA node %d to %d", numa_nodes[i].numa_id, numa_nodes[j].numa_id
                )
                cost = MAX_DISTANCE
            total += cost
    return _f32(_f32(total) / _f32(len(combination) ** 2))


def _fits(qos: str, requested: Mapping[str, Quantity], combined: Mapping[str, Quantity]) -> bool:
    return all(
        amount.is_zero() or is_resource_set_suitable(qos, name, amount, combined.get(name, _ZERO))
        for name, amount in requested.items()
    )


def _combined(numa_nodes: Sequence[NUMANode], combination: Sequence[int]) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for index in combination:
        for name, amount in numa_nodes[index].resources.items():
            total[name] = total[name] + amount if name in total else amount
    return total


def numa_nodes_required(
    qos: str, numa_nodes: Sequence[NUMANode], requested: Mapping[str, Quantity]
) -> tuple[frozenset[int] | None, bool]:
    """The fewest NUMA ids that can hold ``requested``, and whether they have the minimum avg distance.

    Sets of k = 1, 2, ... list indices are tried in lexicographic order; a set qualifies
    only if every member reports every requested resource (even zero ones) and the sum
    fits. The first qualifying set at the smallest distance of all k-sets wins at once;
    otherwise the closest qualifying set, flagged not-minimal. None when nothing fits.
    """
    for size in range(1, len(numa_nodes) + 1):
        combinations = list(itertools.combinations(range(len(numa_nodes)), size))
        min_avg = float(MAX_DISTANCE)
        for combination in combinations:
            min_avg = min(min_avg, avg_distance(numa_nodes, combination))
        best: tuple[int, ...] | None = None
        best_distance = float(MAX_DISTANCE + 1)
        for combination in combinations:
            if any(name not in numa_nodes[i].resources for i in combination for name in requested):
                continue
            if not _fits(qos, requested, _combined(numa_nodes, combination)):
                continue
            distance = avg_distance(numa_nodes, combination)
            if distance == min_avg:
                return frozenset(numa_nodes[i].numa_id for i in combination), True
            if distance < best_distance:
                best_distance, best = distance, combination
        if best is not None:
            return frozenset(numa_nodes[i].numa_id for i in best), False
    return None, False


def _only_non_numa_resources(numa_nodes: Iterable[NUMANode], requested: Mapping[str, Quantity]) -> bool:
    nodes = list(numa_nodes)
    return not any(name in node.resources for name in requested for node in nodes)


def subtract_from_numas(
    requested: Mapping[str, Quantity], numa_nodes: list[NUMANode], ids: Iterable[int]
) -> None:
    """Greedy take-down in ascending id order; the list is indexed *by NUMA id*, as upstream does.

    Upstream assumes zone ids equal list positions; where they differ it touches the wrong
    zone, and an id past the end panics there. Such ids are skipped here (logged).
    """
    ordered = sorted(ids)
    for name, amount in requested.items():
        remaining = amount
        for numa_id in ordered:
            if remaining.is_zero():
                break
            if numa_id >= len(numa_nodes):
                log.warning(
                    "NUMA id %d is past the NUMA node list (%d): not subtracted", numa_id, len(numa_nodes)
                )
                continue
            resources = numa_nodes[numa_id].resources
            if name not in resources:
                continue
            available = resources[name]
            if remaining >= available:
                remaining = remaining - available
                resources[name] = Quantity(0)
            else:
                resources[name] = available - remaining
                remaining = Quantity(0)


def least_numa_pod_scope_score(
    pod: Mapping[str, Any] | PodDemand, qos: str, numa_nodes: list[NUMANode], max_numa_nodes: int
) -> int:
    requested = pod_demand(pod).effective
    if _only_non_numa_resources(numa_nodes, requested):
        return MAX_NODE_SCORE
    ids, is_min = numa_nodes_required(qos, numa_nodes, requested)
    if ids is None:
        log.warning("cannot tell how many NUMA nodes the pod needs")
        return MIN_NODE_SCORE
    return normalize_least_numa_score(len(ids), is_min, max_numa_nodes)


def least_numa_container_scope_score(
    pod: Mapping[str, Any] | PodDemand, qos: str, numa_nodes: list[NUMANode], max_numa_nodes: int
) -> int:
    """Containers in topology-manager order (init, then app), each taking its share off the zones."""
    max_count = 0
    all_min = True
    demand = pod_demand(pod)
    for container, requested in [*demand.init, *demand.app]:
        if _only_non_numa_resources(numa_nodes, requested):
            continue
        ids, is_min = numa_nodes_required(qos, numa_nodes, requested)
        if ids is None:
            log.warning("cannot tell how many NUMA nodes container %r needs", container.get("name"))
            return MIN_NODE_SCORE
        all_min = all_min and is_min
        max_count = max(max_count, len(ids))
        subtract_from_numas(requested, numa_nodes, ids)
    if max_count == 0:
        return MAX_NODE_SCORE
    return normalize_least_numa_score(max_count, all_min, max_numa_nodes)


# ----------------------------------------------------------------------- the decision


def score_with_topology(
    pod: Mapping[str, Any],
    qos: str,
    nrt: NodeResourceTopology,
    strategy: ScoringStrategyType,
    weights: Weights,
) -> int:
    """The score of a Guaranteed pod on a node whose NRT is known.

    LeastNUMANodes scores under any topology-manager policy; the other strategies score
    ``single-numa-node`` nodes only (0 otherwise).
    """
    return score_with_parsed(pod, qos, parse_topology(nrt), strategy, weights)


def score_with_parsed(
    pod: Mapping[str, Any] | PodDemand,
    qos: str,
    topology: ParsedTopology,
    strategy: ScoringStrategyType,
    weights: Weights,
) -> int:
    """:func:`score_with_topology` over an already parsed NRT."""
    conf = topology.conf
    numa_nodes = list(topology.numa_nodes)  # read only, except by the container-scope LeastNUMANodes
    if strategy is ScoringStrategyType.LEAST_NUMA_NODES:
        if conf.scope == "pod":
            return least_numa_pod_scope_score(pod, qos, numa_nodes, conf.max_numa_nodes)
        return least_numa_container_scope_score(pod, qos, topology.fresh_numa_nodes(), conf.max_numa_nodes)
    if conf.policy != SINGLE_NUMA_NODE:
        return MIN_NODE_SCORE
    handler = pod_scope_score if conf.scope == "pod" else container_scope_score
    return handler(pod, numa_nodes, STRATEGIES[strategy], weights)
