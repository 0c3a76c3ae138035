"""DefaultPreemption: when a pod fits nowhere, find a node where evicting lower-priority pods makes room.

Upstream ``defaultpreemption`` (PostFilter), without PodDisruptionBudgets (the handle has
no PDB lister; every candidate counts 0 violations).  Removing and giving back victims
runs the PreFilter extensions (``add_pod``/``remove_pod``) on the cycle state's copy:

1. The pod must be eligible: not ``preemptionPolicy: Never``; and if it already has a
   nominated node that was not rejected as unresolvable, no lower-priority pod there may
   still be terminating because of a preemption.
2. Candidates are the nodes whose status is plain Unschedulable.  On each (from a random
   offset, until ``max(nodes * minCandidateNodesPercentage / 100,
   minCandidateNodesAbsolute)`` candidates are found) all lower-priority pods are
   removed; if the filters then pass, victims are reprieved from the most important
   down while the pod still fits.  A node with no lower-priority pod is "No preemption
   victims found for incoming pod"; a node that does not fit even when empty of them
   keeps the filter's status.
3. Without candidates the status message is upstream's diagnosis, "preemption: 0/N nodes
   are available: …" (nodes that were not candidates count as "Preemption is not helpful
   for scheduling"), and the nominated node is cleared.
4. Otherwise the best candidate (lowest highest-victim priority, then lowest priority
   sum, fewest victims, latest start of the highest-priority victims) becomes the
   nominated node and its victims are left under :data:`nrop.sched.framework.cycle.VICTIMS_KEY`;
   the caller evicts them (upstream's ``prepareCandidate``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nrop.sched.errors import ConfigError
from nrop.sched.framework.cycle import FRAMEWORK_KEY, VICTIMS_KEY, CycleView, FitError
from nrop.sched.framework.interface import (
    Code,
    CycleState,
    Handle,
    NodeInfo,
    Obj,
    PodInfo,
    Status,
    pod_priority,
)

from .helper import args_mapping, integer, invalid

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
_MAX_INT32 = 2**31 - 1
_NO_START_TIME = "~"  # sorts after any RFC 3339 time: a pod not started yet counts as "now"


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[PodInfo, ...]


def _start_time(pod: Obj) -> str:
    return (pod.get("status") or {}).get("startTime") or _NO_START_TIME


def more_important(a: Obj, b: Obj) -> bool:
    """Upstream ``MoreImportantPod``: higher priority, then the earlier start."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    return _start_time(a) < _start_time(b)


def _importance_order(a: PodInfo, b: PodInfo) -> int:
    if more_important(a.pod, b.pod):
        return -1
    return 1 if more_important(b.pod, a.pod) else 0


def terminating_by_preemption(pod: Obj) -> bool:
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


def pick_candidate(candidates: list[Candidate]) -> Candidate:
    """Upstream ``pickOneNodeForPreemption`` (PDB violations are always 0 here)."""

    def highest(c: Candidate) -> int:
        return c.victims[0].priority

    def priority_sum(c: Candidate) -> int:
        # Shifted so that negative priorities still add up to a positive, comparable sum.
        return sum(v.priority + _MAX_INT32 + 1 for v in c.victims)

    def earliest_start_of_highest(c: Candidate) -> str:
        top = highest(c)
        return min(_start_time(v.pod) for v in c.victims if v.priority == top)

    pool = candidates
    for key in (highest, priority_sum, lambda c: len(c.victims)):
        best = min(key(c) for c in pool)
        pool = [c for c in pool if key(c) == best]
        if len(pool) == 1:
            return pool[0]
    latest = max(earliest_start_of_highest(c) for c in pool)
    return next(c for c in pool if earliest_start_of_highest(c) == latest)


class DefaultPreemption:
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self.args = args or DefaultPreemptionArgs()

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> DefaultPreemptionArgs:
        body = args_mapping(args, path, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
        ppath, apath = f"{path}.minCandidateNodesPercentage", f"{path}.minCandidateNodesAbsolute"
        percentage = integer(body.get("minCandidateNodesPercentage", 10), ppath)
        absolute = integer(body.get("minCandidateNodesAbsolute", 100), apath)
        if not 0 <= percentage <= 100:
            raise ConfigError(ppath, invalid(percentage, "not in valid range [0, 100]"))
        if absolute < 0:
            raise ConfigError(apath, invalid(absolute, "not in valid range [0, inf)"))
        if percentage == 0 and absolute == 0:
            raise ConfigError(
                ppath, invalid(0, "cannot be zero at the same time as minCandidateNodesAbsolute")
            )
        return DefaultPreemptionArgs(percentage, absolute)

    def num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        return min(max(n, self.args.min_candidate_nodes_absolute), num_nodes)

    def post_filter(
        self, state: CycleState, pod: Obj, statuses: dict[str, Status]
    ) -> tuple[str | None, Status]:
        view: CycleView = state.read(FRAMEWORK_KEY)
        nodes = {n.name: n for n in view.nodes}
        reason = self._ineligible(pod, statuses, nodes)
        if reason:
            return None, Status.unschedulable(f"preemption: {reason}")
        potential = [n for n in view.nodes if statuses[n.name].code == Code.UNSCHEDULABLE]
        node_statuses: dict[str, Status] = {}
        candidates: list[Candidate] = []
        errors: list[str] = []
        if potential:
            offset = view.rng.randrange(len(potential))
            wanted = self.num_candidates(len(potential))
            for i in range(len(potential)):
                node_info = potential[(offset + i) % len(potential)]
                victims, status = self.select_victims(view, state.clone(), pod, node_info.clone())
                if status.ok:
                    candidates.append(Candidate(node_info.name, victims))
                    if len(candidates) >= wanted:
                        break
                    continue
                if status.code == Code.ERROR:
                    errors.append(status.message)
                node_statuses[node_info.name] = status
        if not candidates:
            if errors:
                return None, Status.error(f"preemption: {errors[0]}")
            fit = FitError(len(view.nodes), node_statuses, absent_status=Status.unresolvable(NOT_HELPFUL))
            return "", Status.unschedulable(f"preemption: {fit.message()}")
        best = pick_candidate(candidates)
        state.write(VICTIMS_KEY, tuple(v.pod for v in best.victims))
        return best.node, Status.success()

    @staticmethod
    def _ineligible(pod: Obj, statuses: dict[str, Status], nodes: dict[str, NodeInfo]) -> str:
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return "not eligible due to preemptionPolicy=Never."
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if not nominated:
            return ""
        status = statuses.get(nominated)
        if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        node_info = nodes.get(nominated)
        if node_info is not None:
            priority = pod_priority(pod)
            for info in node_info.pods:
                if info.priority < priority and terminating_by_preemption(info.pod):
                    return "not eligible due to a terminating pod on the nominated node."
        return ""

    @staticmethod
    def select_victims(
        view: CycleView, state: CycleState, pod: Obj, node_info: NodeInfo
    ) -> tuple[tuple[PodInfo, ...], Status]:
        """Upstream ``SelectVictimsOnNode`` on a copy of the node: the fewest most-reprievable victims."""
        priority = pod_priority(pod)
        potential = [info for info in node_info.pods if info.priority < priority]
        if not potential:
            return (), Status.unresolvable(NO_VICTIMS)
        for info in potential:
            node_info.remove_pod(info.key)
            status = view.remove_pod(state, pod, info, node_info)
            if not status.ok:
                return (), status
        status = view.run_filters(state, pod, node_info)
        if not status.ok:
            return (), status
        victims: list[PodInfo] = []
        for info in sorted(potential, key=functools.cmp_to_key(_importance_order)):
            node_info.add_pod(info)
            status = view.add_pod(state, pod, info, node_info)
            if not status.ok:
                return (), status
            if not view.run_filters(state, pod, node_info).ok:
                node_info.remove_pod(info.key)
                status = view.remove_pod(state, pod, info, node_info)
                if not status.ok:
                    return (), status
                victims.append(info)
        if not victims:
            return (), Status.error(f'expected at least one victim pod on node "{node_info.name}"')
        return tuple(victims), Status.success()
