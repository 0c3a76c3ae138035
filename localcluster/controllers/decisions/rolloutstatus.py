"""The Deployment controller's status arithmetic: counts, conditions and the progress deadline.

Pure, over Deployment and ReplicaSet bodies, after ``pkg/controller/deployment`` and its
``util`` package (the rollout steps themselves are in :mod:`.rollout`).  The names follow
upstream so the two can be read side by side:

* :func:`calculate_status` (counts and ``Available``) and :func:`rollout_status`
  (``Progressing`` with ``NewReplicaSetAvailable``/``ReplicaSetUpdated``/
  ``ProgressDeadlineExceeded``, ``ReplicaFailure``);
* :func:`progress_deadline` and :func:`requeue_after` for deadlines (whether a rollout is
  complete is :func:`nrop.api.workloads.deployment_complete`, shared with the operator);
* :func:`paused_condition` (``DeploymentPaused``/``DeploymentResumed``);
* :func:`condition` and the reasons of the ``Progressing`` and ``Available`` conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nrop.api.metatime import parse_time, rfc3339
from nrop.api.workloads import deployment_complete
from nrop.localcluster.controllers.decisions.rollout import (
    Obj,
    max_unavailable,
    replicas_of,
    spec_of,
    status_of,
)
from nrop.localcluster.controllers.decisions.workloads import get_condition, set_condition

__all__ = [
    "calculate_status",
    "paused_condition",
    "progress_deadline",
    "requeue_after",
    "rollout_status",
]

# Reasons of the Progressing and Available conditions (``deploymentutil``).
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
RS_UPDATED = "ReplicaSetUpdated"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
FAILED_RS_CREATE = "ReplicaSetCreateError"
MINIMUM_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_UNAVAILABLE = "MinimumReplicasUnavailable"


def condition(kind: str, status: str, reason: str, message: str, now: datetime) -> Obj:
    stamp = rfc3339(now)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def calculate_status(d: Mapping[str, Any], all_rs: Sequence[Obj], new_rs: Obj | None, now: datetime) -> Obj:
    """``calculateStatus``: counts over the ReplicaSets and the ``Available`` condition (zeros omitted)."""
    available = sum(int(status_of(rs).get("availableReplicas") or 0) for rs in all_rs)
    total = sum(replicas_of(rs) for rs in all_rs)
    counts = {
        "observedGeneration": int(d["metadata"].get("generation") or 0),
        "replicas": sum(int(status_of(rs).get("replicas") or 0) for rs in all_rs),
        "updatedReplicas": int(status_of(new_rs).get("replicas") or 0) if new_rs is not None else 0,
        "readyReplicas": sum(int(status_of(rs).get("readyReplicas") or 0) for rs in all_rs),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
    }
    status: Obj = {k: v for k, v in counts.items() if v}
    if status_of(d).get("collisionCount") is not None:
        status["collisionCount"] = status_of(d)["collisionCount"]
    conditions = [dict(c) for c in status_of(d).get("conditions") or ()]
    if available >= replicas_of(d) - max_unavailable(d):
        wanted = condition(
            "Available", "True", MINIMUM_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        wanted = condition(
            "Available", "False", MINIMUM_UNAVAILABLE, "Deployment does not have minimum availability.", now
        )
    conditions = set_condition(conditions, wanted)
    status["conditions"] = conditions
    return status


def _progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = status_of(d)

    def n(s: Mapping[str, Any], k: str) -> int:
        return int(s.get(k) or 0)

    return (
        n(new, "updatedReplicas") > n(old, "updatedReplicas")
        or n(new, "replicas") - n(new, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
        or n(new, "readyReplicas") > n(old, "readyReplicas")
        or n(new, "availableReplicas") > n(old, "availableReplicas")
    )


def progress_deadline(d: Mapping[str, Any]) -> int | None:
    value = spec_of(d).get("progressDeadlineSeconds")
    # MaxInt32 means "no deadline" for the apps/v1 default of older clients.
    return None if value is None or int(value) >= 2**31 - 1 else int(value)


def _timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> bool:
    deadline = progress_deadline(d)
    if deadline is None:
        return False
    current = get_condition(list(status.get("conditions") or ()), "Progressing")
    if current is None or current.get("reason") == NEW_RS_AVAILABLE:
        return False
    if current.get("reason") == TIMED_OUT:
        return True
    return parse_time(current["lastUpdateTime"]) + timedelta(seconds=deadline) < now


def rollout_status(
    d: Mapping[str, Any],
    all_rs: Sequence[Obj],
    new_rs: Obj | None,
    now: datetime,
) -> Obj:
    """``syncRolloutStatus``'s new status: counts, ``Available``, ``Progressing``, ``ReplicaFailure``."""
    status = calculate_status(d, all_rs, new_rs, now)
    conditions: list[Obj] = status["conditions"]
    if progress_deadline(d) is None:
        conditions = [c for c in conditions if c.get("type") != "Progressing"]
    current = get_condition(list(status_of(d).get("conditions") or ()), "Progressing")
    complete_already = (
        int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE
    )
    if progress_deadline(d) is not None and not complete_already:
        rs_name = new_rs["metadata"]["name"] if new_rs is not None else None
        if deployment_complete(d, status):
            message = (
                f'ReplicaSet "{rs_name}" has successfully progressed.'
                if rs_name
                else "Deployment has successfully progressed."
            )
            conditions = set_condition(
                conditions, condition("Progressing", "True", NEW_RS_AVAILABLE, message, now)
            )
        elif _progressing(d, status):
            message = f'ReplicaSet "{rs_name}" is progressing.' if rs_name else "Deployment is progressing."
            update = condition("Progressing", "True", RS_UPDATED, message, now)
            if current is not None and current.get("status") == "True":
                update["lastTransitionTime"] = current.get("lastTransitionTime")
            # Progress refreshes lastUpdateTime even with an unchanged reason.
            conditions = [c for c in conditions if c.get("type") != "Progressing"] + [update]
        elif _timed_out(d, {"conditions": conditions}, now):
            message = (
                f'ReplicaSet "{rs_name}" has timed out progressing.'
                if rs_name
                else f'Deployment "{d["metadata"]["name"]}" has timed out progressing.'
            )
            conditions = set_condition(conditions, condition("Progressing", "False", TIMED_OUT, message, now))
    failure = _replica_failure(all_rs, new_rs, now)
    if failure is not None:
        conditions = set_condition(conditions, failure)
    else:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    status["conditions"] = conditions
    if not conditions:
        del status["conditions"]
    return status


def _replica_failure(all_rs: Sequence[Obj], new_rs: Obj | None, now: datetime) -> Obj | None:
    """``getReplicaFailures``: the new ReplicaSet's ``ReplicaFailure`` first, else any other's."""
    ordered = [new_rs, *[rs for rs in all_rs if rs is not new_rs]] if new_rs is not None else list(all_rs)
    for rs in ordered:
        for cond in status_of(rs).get("conditions") or ():
            if cond.get("type") == "ReplicaFailure":
                return condition(
                    "ReplicaFailure", cond["status"], cond.get("reason", ""), cond.get("message", ""), now
                )
    return None


def requeue_after(d: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> float | None:
    """``requeueStuckDeployment``: seconds until the progress deadline would pass, if a rollout is under way."""
    deadline = progress_deadline(d)
    current = get_condition(list(status.get("conditions") or ()), "Progressing")
    if deadline is None or current is None or current.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT):
        return None
    due = parse_time(current["lastUpdateTime"]) + timedelta(seconds=deadline)
    return max(0.0, (due - now).total_seconds()) + 1.0


def paused_condition(d: Mapping[str, Any], now: datetime) -> list[Obj] | None:
    """``checkPausedConditions``: the conditions with ``DeploymentPaused``/``DeploymentResumed``, or None."""
    if progress_deadline(d) is None:
        return None
    conditions = [dict(c) for c in status_of(d).get("conditions") or ()]
    current = get_condition(conditions, "Progressing")
    if current is not None and current.get("reason") == TIMED_OUT:
        return None
    paused_now = current is not None and current.get("reason") == PAUSED
    if spec_of(d).get("paused") and not paused_now:
        return set_condition(
            conditions, condition("Progressing", "Unknown", PAUSED, "Deployment is paused", now)
        )
    if not spec_of(d).get("paused") and paused_now:
        return set_condition(
            conditions, condition("Progressing", "Unknown", RESUMED, "Deployment is resumed", now)
        )
    return None
