"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node (upstream ``nodename``)."""

from __future__ import annotations

from typing import Any

from nrop.sched.framework.interface import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        wanted = (pod.get("spec") or {}).get("nodeName") or ""
        if not wanted or wanted == node_info.name:
            return Status.success()
        return Status.unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.ADD)]
