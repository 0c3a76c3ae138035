"""Status conditions of both CRs, computed as upstream's ``pkg/status`` does.

The four base conditions move together: setting one of ``Available``, ``Progressing`` or
``Degraded`` to True resets the others to False (``Available`` also sets ``Upgradeable``).
Extra conditions (``MachineConfigPoolPaused``, ``DedicatedInformerActive``) are set on
their own. ``lastTransitionTime`` changes only when a condition's status changes.

Pure: the time is passed in as an RFC 3339 string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

__all__ = [
    "BASE_TYPES",
    "Condition",
    "Reason",
    "Step",
    "Type",
    "compute",
    "conditions_equal",
    "find",
    "initial",
    "message_from_error",
    "set_extra",
]

Condition = dict[str, Any]


class Type(StrEnum):
    AVAILABLE = "Available"
    UPGRADEABLE = "Upgradeable"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    MCP_PAUSED = "MachineConfigPoolPaused"
    DEDICATED_INFORMER = "DedicatedInformerActive"


class Reason(StrEnum):
    AS_EXPECTED = "AsExpected"
    INTERNAL_ERROR = "InternalError"
    CUSTOM_USER_IMAGE = "CustomUserImage"
    INVALID_SCHEDULER_IMAGE = "InvalidSchedulerImage"
    NODE_GROUPS_ERROR = "ValidationErrorUnderNodeGroups"
    INCORRECT_NROP_NAME = "IncorrectNUMAResourcesOperatorResourceName"
    INCORRECT_NRS_NAME = "IncorrectNUMAResourcesSchedulerResourceName"
    DAEMONSET_UPDATING = "DaemonSetIsUpdating"
    DEPLOYMENT_UPDATING = "DeploymentIsUpdating"
    MCP_UPDATING = "MachineConfigPoolIsUpdating"


BASE_TYPES: Final = (Type.AVAILABLE, Type.UPGRADEABLE, Type.PROGRESSING, Type.DEGRADED)


@dataclass(frozen=True)
class Step:
    """The outcome of one reconciliation: which base condition is True, why, and what it says."""

    type: Type
    reason: str = ""
    message: str = ""

    @classmethod
    def available(cls) -> Step:
        return cls(Type.AVAILABLE, Reason.AS_EXPECTED)

    @classmethod
    def progressing(cls, reason: str = Type.PROGRESSING, message: str = "") -> Step:
        return cls(Type.PROGRESSING, reason, message)

    @classmethod
    def degraded(cls, reason: str, message: str) -> Step:
        return cls(Type.DEGRADED, reason, message)


def _condition(type_: str, status: str, reason: str, message: str, generation: int, now: str) -> Condition:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    }


def initial(extra: Sequence[Type], now: str) -> list[Condition]:
    """Pristine conditions: base ones False (reason = type), extra ones Unknown."""
    conds = [_condition(t, "False", t, "", 0, now) for t in BASE_TYPES]
    conds += [_condition(t, "Unknown", t, "", 0, now) for t in extra]
    return conds


def find(conditions: Sequence[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def _set(conditions: list[Condition], new: Condition) -> None:
    """``meta.SetStatusCondition``: keep lastTransitionTime unless the status changes."""
    old = find(conditions, new["type"])
    if old is None:
        conditions.append(new)
        return
    if old.get("status") == new["status"]:
        new = {**new, "lastTransitionTime": old.get("lastTransitionTime", new["lastTransitionTime"])}
    conditions[conditions.index(old)] = new


def _base(step: Step, generation: int, now: str) -> list[Condition]:
    conds = {t: _condition(t, "False", t, "", generation, now) for t in BASE_TYPES}
    if step.type == Type.AVAILABLE:
        conds[Type.AVAILABLE].update(
            status="True", reason=step.reason or Reason.AS_EXPECTED, message=step.message
        )
        conds[Type.UPGRADEABLE].update(status="True", reason=Reason.AS_EXPECTED)
    else:
        conds[step.type].update(status="True", reason=step.reason or step.type, message=step.message)
    return list(conds.values())


def compute(
    conditions: Sequence[Condition], step: Step, generation: int, now: str, extra: Sequence[Type] = ()
) -> list[Condition]:
    """The conditions after ``step``: base conditions from the step, others kept (extra backfilled)."""
    result = [dict(c) for c in conditions] or initial(extra, now)
    for t in extra:
        if find(result, t) is None:
            result.append(_condition(t, "Unknown", t, "", 0, now))
    for cond in _base(step, generation, now):
        _set(result, cond)
    return result


def set_extra(
    conditions: Sequence[Condition], type_: Type, status: bool, generation: int, now: str, message: str = ""
) -> list[Condition]:
    """Set a non-base condition (reason = its type)."""
    result = [dict(c) for c in conditions]
    _set(result, _condition(type_, "True" if status else "False", type_, message, generation, now))
    return result


def conditions_equal(a: Sequence[Condition], b: Sequence[Condition]) -> bool:
    """Equal but for ``lastTransitionTime`` (upstream's ``EqualConditions``)."""

    def strip(conds: Sequence[Condition]) -> list[Condition]:
        return [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in conds]

    return strip(a) == strip(b)


def message_from_error(messages: Sequence[str]) -> str:
    """Several errors joined as Go's ``errors.Join`` prints them."""
    return "\n".join(messages)
