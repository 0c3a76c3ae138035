"""NodeResourcesFit: the node must have room for the pod's requests; scoring by a strategy (upstream ``noderesources``).

Filter (in upstream order, keeping every reason): the pod count ("Too many pods"), then
cpu, memory and ephemeral-storage, then every other scalar resource the pod asks for
(hugepages, extended resources …; "Insufficient <name>"), against allocatable minus what
the node's pods request.  The pod's request is :func:`nrop.sched.framework.interface.pod_requests`
(init containers, sidecars and overhead included).  Extended resources named in
``ignoredResources`` or whose domain is in ``ignoredResourceGroups`` are not checked.
A request above the node's whole allocatable makes the status UnschedulableAndUnresolvable
(upstream v1.34 behaviour, adopted ahead of the v1.33 baseline: see ``insufficient_resources``).

Score: ``scoringStrategy`` — LeastAllocated (default, cpu and memory weight 1),
MostAllocated or RequestedToCapacityRatio — over non-zero requests for cpu and memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    CycleState,
    Handle,
    NodeInfo,
    Obj,
    Status,
    pod_requests,
)
from nrop.sched.framework.podrequests import is_extended_resource, is_scalar_resource

from .helper import args_mapping, go_div, integer, invalid, qualified_name_error, string_list
from .resourceallocation import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    ResourceSpec,
    Scorer,
    parse_resources,
)

NAME = "NodeResourcesFit"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


# ------------------------------------------------------------------------------ scorers


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Pods without requests count with the non-zero defaults, which may exceed capacity.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted(resources: Sequence[ResourceSpec], per_resource: Any) -> Scorer:
    def scorer(requested: list[int], allocatable: list[int]) -> int:
        total = weights = 0
        for i, spec in enumerate(resources):
            if allocatable[i]:
                total += per_resource(requested[i], allocatable[i]) * spec.weight
                weights += spec.weight
        return total // weights if weights else 0

    return scorer


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """Upstream ``BuildBrokenLinearFunction`` at ``p`` (Go integer division)."""
    for i, (utilization, score) in enumerate(shape):
        if p <= utilization:
            if i == 0:
                return score
            u0, s0 = shape[i - 1]
            return s0 + go_div((score - s0) * (p - u0), utilization - u0)
    return shape[-1][1]


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]
) -> Scorer:
    scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(scaled, MAX_UTILIZATION)
        return broken_linear(scaled, requested * MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        total = weights = 0
        for i, spec in enumerate(resources):
            if allocatable[i]:
                score = resource_score(requested[i], allocatable[i])
                if score > 0:
                    total += score * spec.weight
                    weights += spec.weight
        # Go's math.Round of the (non-negative) mean: half rounds up.
        return (2 * total + weights) // (2 * weights) if weights else 0

    return scorer


# ------------------------------------------------------------------------------ args


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


def _parse_shape(value: Any, path: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(path, "Required value: at least one point must be specified")
    points: list[tuple[int, int]] = []
    for i, item in enumerate(value):
        body = args_mapping(item, f"{path}[{i}]", ("utilization", "score"))
        utilization = integer(body.get("utilization", 0), f"{path}[{i}].utilization")
        score = integer(body.get("score", 0), f"{path}[{i}].score")
        if not 0 <= utilization <= MAX_UTILIZATION:
            raise ConfigError(f"{path}[{i}].utilization", invalid(utilization, "not in valid range [0, 100]"))
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"{path}[{i}].score", invalid(score, "not in valid range [0, 10]"))
        if points and points[-1][0] >= utilization:
            raise ConfigError(
                f"{path}[{i}].utilization",
                invalid(utilization, "utilization values must be sorted in increasing order"),
            )
        points.append((utilization, score))
    return tuple(points)


def _parse_strategy(value: Any, path: str) -> ScoringStrategy:
    if value is None:
        return ScoringStrategy()
    body = args_mapping(value, path, ("type", "resources", "requestedToCapacityRatio"))
    kind = body.get("type", "")
    if kind not in STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in sorted(STRATEGIES))
        raise ConfigError(f"{path}.type", f'Unsupported value: "{kind}": supported values: {supported}')
    resources = parse_resources(body.get("resources"), f"{path}.resources")
    shape: tuple[tuple[int, int], ...] = ()
    ratio = body.get("requestedToCapacityRatio")
    if ratio is not None or kind == REQUESTED_TO_CAPACITY_RATIO:
        rpath = f"{path}.requestedToCapacityRatio"
        shape = _parse_shape(args_mapping(ratio, rpath, ("shape",)).get("shape"), f"{rpath}.shape")
    return ScoringStrategy(kind, resources, shape)


def _scorer(strategy: ScoringStrategy) -> Scorer:
    if strategy.type == MOST_ALLOCATED:
        return _weighted(strategy.resources, most_requested_score)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        return requested_to_capacity_ratio_scorer(strategy.resources, strategy.shape)
    return _weighted(strategy.resources, least_requested_score)


# ------------------------------------------------------------------------------ filter


@dataclass(frozen=True, slots=True)
class FitRequest:
    """What the filter checks of the pod: first-class amounts and the scalars it must find room for."""

    cpu: int
    memory: int
    ephemeral_storage: int
    scalars: tuple[tuple[str, int], ...]


def fit_request(
    requests: Mapping[str, int], ignored: frozenset[str], ignored_groups: frozenset[str]
) -> FitRequest:
    scalars = tuple(
        sorted(
            (name, amount)
            for name, amount in requests.items()
            if amount
            and is_scalar_resource(name)
            and not (
                is_extended_resource(name) and (name in ignored or name.split("/", 1)[0] in ignored_groups)
            )
        )
    )
    return FitRequest(
        requests.get("cpu", 0), requests.get("memory", 0), requests.get("ephemeral-storage", 0), scalars
    )


def insufficient_resources(request: FitRequest, node_info: NodeInfo) -> list[tuple[str, bool]]:
    """The failure reasons of upstream ``fitsRequest`` in its order, each with "unresolvable".

    A request larger than the node's whole allocatable cannot be helped by preemption:
    upstream marks it ``Unresolvable`` since k/k PR #131345 (v1.34; v1.33 still said
    Unschedulable), which makes the preemption diagnosis count such nodes as "Preemption
    is not helpful for scheduling".
    """
    alloc = node_info.allocatable
    used = node_info.requested
    reasons: list[tuple[str, bool]] = []
    if len(node_info.pods) + 1 > alloc.get("pods", 0):
        reasons.append(("Too many pods", False))
    for name, amount in (
        ("cpu", request.cpu),
        ("memory", request.memory),
        ("ephemeral-storage", request.ephemeral_storage),
        *request.scalars,
    ):
        if amount and amount > alloc.get(name, 0) - used.get(name, 0):
            reasons.append((f"Insufficient {name}", amount > alloc.get(name, 0)))
    return reasons


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self.args = args or NodeResourcesFitArgs()
        strategy = self.args.scoring_strategy
        self._scorer = ResourceAllocationScorer(strategy.resources, _scorer(strategy), use_requested=False)

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> NodeResourcesFitArgs:
        body = args_mapping(args, path, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
        ignored = string_list(body.get("ignoredResources"), f"{path}.ignoredResources")
        for i, name in enumerate(ignored):
            error = qualified_name_error(name)
            if error:
                raise ConfigError(f"{path}.ignoredResources[{i}]", invalid(name, error))
        groups = string_list(body.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups")
        for i, group in enumerate(groups):
            error = "resource group name can't contain '/'" if "/" in group else qualified_name_error(group)
            if error:
                raise ConfigError(f"{path}.ignoredResourceGroups[{i}]", invalid(group, error))
        strategy = _parse_strategy(body.get("scoringStrategy"), f"{path}.scoringStrategy")
        return NodeResourcesFitArgs(frozenset(ignored), frozenset(groups), strategy)

    def pre_filter(self, state: CycleState, pod: Obj) -> Status:
        state.write(_PRE_FILTER_KEY, self._fit_request(pod))
        return Status.success()

    def _fit_request(self, pod: Obj) -> FitRequest:
        return fit_request(pod_requests(pod), self.args.ignored_resources, self.args.ignored_resource_groups)

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        request = state.read(_PRE_FILTER_KEY)
        if request is None:
            request = self._fit_request(pod)
        insufficient = insufficient_resources(request, node_info)
        if not insufficient:
            return Status.success()
        reasons = [reason for reason, _ in insufficient]
        if any(unresolvable for _, unresolvable in insufficient):
            return Status.unresolvable(*reasons)
        return Status.unschedulable(*reasons)

    def pre_score(self, state: CycleState, pod: Obj, nodes: list[NodeInfo]) -> Status:
        state.write(_PRE_SCORE_KEY, self._scorer.requests(pod))
        return Status.success()

    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        requests = state.read(_PRE_SCORE_KEY)
        if requests is None:
            requests = self._scorer.requests(pod)
        return self._scorer.score(node_info, requests), Status.success()

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE),
            ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        ]
