"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside the active queue (upstream PreEnqueue).

The queue calls :meth:`SchedulingGates.pre_enqueue` before activating a pod; a gated pod
stays in the queue's gated set until an update removes its gates.
"""

from __future__ import annotations

from typing import Any

from nrop.sched.framework.interface import ActionType, ClusterEvent, Handle, Obj, Status

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def pre_enqueue(self, pod: Obj) -> Status:
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        if not gates:
            return Status.success()
        # Go prints a []string as "[a b]".
        names = " ".join(str(g.get("name", "")) for g in gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ActionType.UPDATE)]
