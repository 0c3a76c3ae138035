"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods tolerating the cordon taint.

Upstream ``nodeunschedulable``: a pod that tolerates ``node.kubernetes.io/unschedulable:NoSchedule``
also tolerates ``spec.unschedulable``.
"""

from __future__ import annotations

from typing import Any

from nrop.api.tolerations import NO_SCHEDULE, tolerations_tolerate
from nrop.sched.framework.interface import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

from .helper import pod_tolerations

NAME = "NodeUnschedulable"
ERR_REASON = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_CORDON_TAINT = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": NO_SCHEDULE}


class NodeUnschedulable:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        if not (node_info.node.get("spec") or {}).get("unschedulable"):
            return Status.success()
        if tolerations_tolerate(pod_tolerations(pod), _CORDON_TAINT):
            return Status.success()
        return Status.unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            ClusterEvent("Pod", ActionType.UPDATE),
        ]
