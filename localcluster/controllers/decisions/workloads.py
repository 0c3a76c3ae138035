"""What every workload controller agrees on: ownership, pod templates, pod health, conditions, hashes.

Pure helpers shared by the ReplicaSet, Deployment, DaemonSet and Job controllers, each
named after the upstream helper it mirrors:

* controller references (``metav1.NewControllerRef``) and the adopt/release decision of
  ``ControllerRefManager``;
* a pod from a template (``GetPodFromTemplate``): labels, annotations, finalizers,
  ``generateName`` ``<owner>-`` and the controller reference;
* pod predicates (``FilterActivePods``, ``IsPodReady``, ``IsPodAvailable``);
* the template hash (``controller.ComputeHash``): FNV-32a over the template, then the
  decimal digits mapped through ``rand.SafeEncodeString``'s alphabet, so names look like
  upstream's (``web-5d4f8c9b76``).  Upstream hashes Go's in-memory struct dump, which no
  other process can reproduce, so the digest here is of the canonical JSON instead;
* int-or-percent scaling (``GetScaledValueFromIntOrPercent``).
"""

from __future__ import annotations

import copy
import enum
import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from nrop.api.metatime import parse_time

__all__ = [
    "Claim",
    "available_at",
    "claim",
    "compute_hash",
    "controller_of",
    "controller_ref",
    "get_condition",
    "is_active",
    "is_available",
    "is_ready",
    "is_terminal",
    "pod_from_template",
    "ready_since",
    "scaled_value",
    "set_condition",
]

Obj = dict[str, Any]

#: ``rand.SafeEncodeString``'s alphabet: no vowels, no confusable digits.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TERMINAL = ("Succeeded", "Failed")


# -- ownership ------------------------------------------------------------------------------------


def controller_ref(owner: Mapping[str, Any]) -> Obj:
    """The ownerReference a controller puts on what it creates (``controller`` and ``blockOwnerDeletion``)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> Obj | None:
    """The ownerReference with ``controller: true``, if any (``metav1.GetControllerOf``)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


class Claim(enum.StrEnum):
    """What a controller does with an object its selector may or may not match."""

    KEEP = "keep"
    ADOPT = "adopt"
    RELEASE = "release"
    IGNORE = "ignore"


def claim(owner: Mapping[str, Any], obj: Mapping[str, Any], selector_matches: bool) -> Claim:
    """``ControllerRefManager.ClaimObject``: keep owned matches, adopt matching orphans, release the rest.

    An owner being deleted neither adopts nor releases; an object being deleted is not adopted.
    """
    ref = controller_of(obj)
    owner_meta = owner["metadata"]
    if ref is not None:
        if ref.get("uid") != owner_meta["uid"]:
            return Claim.IGNORE
        if selector_matches:
            return Claim.KEEP
        if owner_meta.get("deletionTimestamp"):
            return Claim.IGNORE
        return Claim.RELEASE
    if not selector_matches or owner_meta.get("deletionTimestamp"):
        return Claim.IGNORE
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return Claim.IGNORE
    return Claim.ADOPT


# -- templates ------------------------------------------------------------------------------------


def pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any], *, prefix: str = "") -> Obj:
    """A pod body for ``template`` owned by ``owner``, named by the server from ``<owner name>-``."""
    meta = template.get("metadata") or {}
    pod_meta: Obj = {
        "generateName": prefix or f"{owner['metadata']['name']}-",
        "labels": dict(meta.get("labels") or {}),
        "ownerReferences": [controller_ref(owner)],
    }
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """``controller.ComputeHash``: a short, name-safe, deterministic digest of a pod template."""
    digest = 0x811C9DC5
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little", signed=False)
    for byte in data:
        digest ^= byte
        digest = (digest * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(digest))


# -- pods -----------------------------------------------------------------------------------------


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in _TERMINAL


def is_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: neither terminal nor being deleted."""
    return not is_terminal(pod) and not pod.get("metadata", {}).get("deletionTimestamp")


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod last became Ready (None when it is not Ready)."""
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True" or not condition.get("lastTransitionTime"):
        return None
    return parse_time(condition["lastTransitionTime"])


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """``podutil.IsPodAvailable``: Ready, and for longer than ``minReadySeconds`` when that is set."""
    if not is_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    since = ready_since(pod)
    return since is not None and since + timedelta(seconds=min_ready_seconds) < now


def available_at(pod: Mapping[str, Any], min_ready_seconds: int) -> datetime | None:
    """When a Ready pod becomes available (to requeue at that moment); None when not Ready."""
    since = ready_since(pod)
    if since is None:
        return None
    return since + timedelta(seconds=min_ready_seconds)


# -- arithmetic and conditions ----------------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, *, round_up: bool, field: str) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``; a malformed value raises ValueError naming ``field``."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"{field}: invalid value {value!r}: must be an integer or a percentage")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ValueError(f"{field}: invalid value {text!r}: must be an integer or a percentage")
    try:
        percent = int(text[:-1])
    except ValueError:
        raise ValueError(f"{field}: invalid value {text!r}: must be an integer or a percentage") from None
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def set_condition(conditions: list[Obj], condition: Obj, *, keep_same_reason: bool = True) -> list[Obj]:
    """Upstream ``Set*Condition``: same status and reason is a no-op; same status keeps the transition time.

    A changed condition moves to the end of the list, as upstream filters it out and appends it.
    """
    current = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if (
        keep_same_reason
        and current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition.get("reason")
    ):
        return conditions
    updated = dict(condition)
    if current is not None and current.get("status") == condition["status"]:
        updated["lastTransitionTime"] = current.get("lastTransitionTime")
    return [c for c in conditions if c.get("type") != condition["type"]] + [updated]


def get_condition(conditions: list[Obj], kind: str) -> Obj | None:
    return next((c for c in conditions if c.get("type") == kind), None)
