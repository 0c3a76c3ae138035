"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Upstream's ``resourceAllocationScorer``: per configured resource, the node's allocatable
and what would be requested with the pod on it; resources the node does not offer, and
extended resources the pod does not ask for, are left out.  ``use_requested=False`` (the
fit strategies) counts cpu and memory with upstream's non-zero defaults, 100m and 200Mi
for each container that asks for none; BalancedAllocation uses the plain requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import NodeInfo, Obj, non_missing_pod_requests, pod_requests
from nrop.sched.framework.podrequests import is_scalar_resource

from .helper import args_mapping, integer, invalid


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def pod_request_list(pod: Obj, resources: Sequence[ResourceSpec], use_requested: bool) -> list[int]:
    requests = pod_requests(pod) if use_requested else non_missing_pod_requests(pod)
    return [requests.get(r.name, 0) for r in resources]


def allocatable_and_requested(
    node_info: NodeInfo, name: str, pod_request: int, use_requested: bool
) -> tuple[int, int]:
    """Upstream ``calculateResourceAllocatableRequest``; (0, 0) leaves the resource out."""
    if pod_request == 0 and is_scalar_resource(name):
        return 0, 0
    if name in ("cpu", "memory"):
        used = node_info.requested if use_requested else node_info.non_zero_requested
        return node_info.allocatable.get(name, 0), used.get(name, 0) + pod_request
    if name == "ephemeral-storage" or (is_scalar_resource(name) and name in node_info.allocatable):
        return node_info.allocatable.get(name, 0), node_info.requested.get(name, 0) + pod_request
    return 0, 0


Scorer = Callable[[list[int], list[int]], int]
"""``scorer(requested, allocatable)`` over the configured resources, in their order."""


@dataclass(frozen=True, slots=True)
class ResourceAllocationScorer:
    resources: tuple[ResourceSpec, ...]
    scorer: Scorer
    use_requested: bool

    def requests(self, pod: Obj) -> list[int]:
        return pod_request_list(pod, self.resources, self.use_requested)

    def score(self, node_info: NodeInfo, pod_requests_list: Sequence[int]) -> int:
        requested = [0] * len(self.resources)
        allocatable = [0] * len(self.resources)
        for i, spec in enumerate(self.resources):
            alloc, req = allocatable_and_requested(
                node_info, spec.name, pod_requests_list[i], self.use_requested
            )
            if alloc:
                allocatable[i] = alloc
                requested[i] = req
        return self.scorer(requested, allocatable)


def parse_resources(value: Any, path: str, *, weight_must_be_one: bool = False) -> tuple[ResourceSpec, ...]:
    """A ``resources`` list of args with upstream defaults (cpu and memory, weight 1) and checks."""
    if value is None or value == []:
        return DEFAULT_RESOURCES
    if not isinstance(value, list):
        raise ConfigError(path, "must be a list")
    specs: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        body = args_mapping(item, f"{path}[{i}]", ("name", "weight"))
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}[{i}].name", "Required value")
        weight = integer(body.get("weight") or 1, f"{path}[{i}].weight")
        if weight_must_be_one:
            if name in seen:
                raise ConfigError(f"{path}[{i}].name", f'Duplicate value: "{name}"')
            if weight != 1:
                raise ConfigError(f"{path}[{i}].weight", invalid(weight, "must be 1"))
        elif not 0 < weight <= 100:
            raise ConfigError(
                f"{path}[{i}].weight",
                invalid(weight, f"resource weight of {name} should be in the range of 1-100"),
            )
        seen.add(name)
        specs.append(ResourceSpec(name, weight))
    return tuple(specs)
