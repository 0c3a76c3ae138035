"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score (upstream ``tainttoleration``).

Filter: the first taint of the node (in node order) with effect NoSchedule or NoExecute
that no toleration of the pod tolerates rejects the node as unresolvable, naming it.
Score: the number of PreferNoSchedule taints not tolerated by the pod's tolerations with
an empty or PreferNoSchedule effect, normalised in reverse (fewest such taints = 100).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nrop.api.tolerations import PREFER_NO_SCHEDULE, find_untolerated_taint, tolerations_tolerate
from nrop.sched.framework.interface import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

from .helper import default_normalize_score, node_taints, pod_tolerations

NAME = "TaintToleration"
_PRE_SCORE_KEY = "PreScore" + NAME


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> int:
    return sum(
        1
        for taint in taints
        if taint.get("effect") == PREFER_NO_SCHEDULE and not tolerations_tolerate(tolerations, taint)
    )


class TaintToleration:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        taints = node_taints(node_info.node)
        if not taints:
            return Status.success()
        taint = find_untolerated_taint(taints, pod_tolerations(pod))
        if taint is None:
            return Status.success()
        return Status.unresolvable(
            f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
        )

    def pre_score(self, state: CycleState, pod: Obj, nodes: list[NodeInfo]) -> Status:
        # An empty effect tolerates every effect, PreferNoSchedule included.
        prefer = [
            t for t in pod_tolerations(pod) if (t.get("effect") or PREFER_NO_SCHEDULE) == PREFER_NO_SCHEDULE
        ]
        state.write(_PRE_SCORE_KEY, prefer)
        return Status.success()

    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        prefer = state.read(_PRE_SCORE_KEY)
        if prefer is None:
            return 0, Status.error(f"reading {_PRE_SCORE_KEY!r} from cycleState: not found")
        return count_intolerable_prefer_no_schedule(node_taints(node_info.node), prefer), Status.success()

    def normalize_score(self, state: CycleState, pod: Obj, scores: dict[str, int]) -> Status:
        return default_normalize_score(100, True, scores)

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            ClusterEvent("Pod", ActionType.UPDATE),
        ]
