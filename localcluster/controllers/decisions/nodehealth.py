"""Node health from heartbeats: when a node is Unknown, and which taints its conditions call for.

Pure, after ``pkg/controller/nodelifecycle``:

* :func:`observe` keeps the controller's own clock of the last heartbeat it saw
  (``nodeHealthData.probeTimestamp``): the time *this controller* noticed a newer Lease
  ``renewTime`` or Ready ``lastHeartbeatTime``, so skewed kubelet clocks do not matter;
* :func:`stale_conditions`: past the grace period (``--node-monitor-grace-period``, or
  ``--node-startup-grace-period`` for a node that never posted Ready), Ready, MemoryPressure,
  DiskPressure and PIDPressure become ``Unknown`` (``NodeStatusUnknown``, "Kubelet stopped
  posting node status."; ``NodeStatusNeverUpdated`` for a missing condition);
* :func:`wanted_taints`: the ``NoSchedule`` taints of the conditions (Ready False/Unknown:
  ``not-ready``/``unreachable``; pressure and network conditions; ``unschedulable``) and the
  ``NoExecute`` ``not-ready``/``unreachable`` taint of the Ready condition, each with
  ``timeAdded``; taints nobody manages here are kept untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nrop.api.metatime import parse_time, rfc3339
from nrop.localcluster.controllers.decisions.workloads import get_condition

__all__ = [
    "NOT_READY_TAINT",
    "UNREACHABLE_TAINT",
    "Probe",
    "observe",
    "stale_conditions",
    "wanted_taints",
]

Obj = dict[str, Any]
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_CONDITION_TAINTS = {
    ("Ready", "False"): NOT_READY_TAINT,
    ("Ready", "Unknown"): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
_NO_SCHEDULE_KEYS = frozenset({*_CONDITION_TAINTS.values(), UNSCHEDULABLE_TAINT})
_NO_EXECUTE_KEYS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT})
_KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass(frozen=True)
class Probe:
    """What the controller last saw of a node's heartbeats, and when it saw a new one."""

    probe_time: datetime
    heartbeat: str | None
    renew_time: str | None


def _conditions(node: Mapping[str, Any]) -> list[Obj]:
    return [dict(c) for c in (node.get("status") or {}).get("conditions") or ()]


def observe(
    previous: Probe | None, node: Mapping[str, Any], lease: Mapping[str, Any] | None, now: datetime
) -> Probe:
    """The probe after looking at ``node`` and its ``lease`` at ``now``."""
    ready = get_condition(_conditions(node), "Ready")
    heartbeat = ready.get("lastHeartbeatTime") if ready else None
    renew = ((lease or {}).get("spec") or {}).get("renewTime")
    if previous is None:
        return Probe(now, heartbeat, renew)
    probe_time = previous.probe_time
    if heartbeat != previous.heartbeat:
        probe_time = now
    if renew and (previous.renew_time is None or parse_time(renew) > parse_time(previous.renew_time)):
        probe_time = now
    return Probe(probe_time, heartbeat, renew or previous.renew_time)


def stale_conditions(
    node: Mapping[str, Any], probe: Probe, now: datetime, grace: float, startup_grace: float
) -> list[Obj] | None:
    """The node's conditions marked Unknown once its heartbeat is older than the grace period; None if fresh."""
    conditions = _conditions(node)
    ready = get_condition(conditions, "Ready")
    period = startup_grace if ready is None else grace
    if now <= probe.probe_time + timedelta(seconds=period):
        return None
    stamp = rfc3339(now)
    changed = False
    for kind in _KUBELET_CONDITIONS:
        current = get_condition(conditions, kind)
        if current is None:
            conditions.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                    "lastTransitionTime": stamp,
                }
            )
            changed = True
        elif current.get("status") != "Unknown":
            current.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=stamp,
            )
            changed = True
    return conditions if changed else None


def wanted_taints(node: Mapping[str, Any], now: datetime) -> list[Obj]:
    """The node's taints with the condition taints brought in line (kept ones keep their ``timeAdded``)."""
    conditions = _conditions(node)
    no_schedule = [
        key
        for (kind, status), key in _CONDITION_TAINTS.items()
        if (c := get_condition(conditions, kind)) is not None and c.get("status") == status
    ]
    if (node.get("spec") or {}).get("unschedulable"):
        no_schedule.append(UNSCHEDULABLE_TAINT)
    ready = get_condition(conditions, "Ready")
    no_execute = []
    if ready is not None and ready.get("status") == "False":
        no_execute.append(NOT_READY_TAINT)
    elif ready is not None and ready.get("status") == "Unknown":
        no_execute.append(UNREACHABLE_TAINT)
    wanted = {(k, "NoSchedule") for k in no_schedule} | {(k, "NoExecute") for k in no_execute}
    stamp = rfc3339(now)
    out: list[Obj] = []
    present: set[tuple[str, str]] = set()
    for taint in (node.get("spec") or {}).get("taints") or ():
        ident = (taint.get("key", ""), taint.get("effect", ""))
        managed = (ident[1] == "NoSchedule" and ident[0] in _NO_SCHEDULE_KEYS) or (
            ident[1] == "NoExecute" and ident[0] in _NO_EXECUTE_KEYS
        )
        if managed and ident not in wanted:
            continue
        present.add(ident)
        out.append(copy.deepcopy(dict(taint)))
    for key in no_schedule:
        if (key, "NoSchedule") not in present:
            out.append({"key": key, "effect": "NoSchedule", "timeAdded": stamp})
    for key in no_execute:
        if (key, "NoExecute") not in present:
            out.append({"key": key, "effect": "NoExecute", "timeAdded": stamp})
    return out
