"""NodeResourcesBalancedAllocation: favour nodes whose resource fractions stay even (upstream).

Score = ``(1 - std) * 100`` truncated, where ``std`` is the standard deviation of the
fractions requested/allocatable (each capped at 1) over the configured resources the
node offers; with two resources it is ``|f1 - f2| / 2``.  Plain requests are used (no
non-zero defaults), and best-effort pods (no request on any configured resource) skip
this plugin, as upstream since v1.33.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nrop.sched.framework.interface import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, Obj, Status

from .helper import args_mapping
from .resourceallocation import DEFAULT_RESOURCES, ResourceAllocationScorer, ResourceSpec, parse_resources

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY = "PreScore" + NAME


def balanced_resource_score(requested: list[int], allocatable: list[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


class NodeResourcesBalancedAllocation:
    name = NAME

    def __init__(
        self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None
    ) -> None:
        self._handle = handle
        resources = (args or NodeResourcesBalancedAllocationArgs()).resources
        self._scorer = ResourceAllocationScorer(resources, balanced_resource_score, use_requested=True)

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> NodeResourcesBalancedAllocationArgs:
        body = args_mapping(args, path, ("resources",))
        return NodeResourcesBalancedAllocationArgs(
            parse_resources(body.get("resources"), f"{path}.resources", weight_must_be_one=True)
        )

    def pre_score(self, state: CycleState, pod: Obj, nodes: list[NodeInfo]) -> Status:
        requests = self._scorer.requests(pod)
        if not any(requests):
            return Status.skip()
        state.write(_PRE_SCORE_KEY, requests)
        return Status.success()

    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        requests = state.read(_PRE_SCORE_KEY)
        if requests is None:
            requests = self._scorer.requests(pod)
        return self._scorer.score(node_info, requests), Status.success()
