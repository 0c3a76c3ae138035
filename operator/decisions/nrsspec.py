"""A NUMAResourcesScheduler's spec: defaults, validation (Degraded reasons) and replicas.

Validation runs in upstream's order: the object's name
(``IncorrectNUMAResourcesSchedulerResourceName``), then the scheduler image when image
validation is on (``InvalidSchedulerImage``: by digest, from the trusted list; the
operator's own image is always trusted, it is the one the operator ships), then the
fields the API schema cannot check (durations, replicas; ``InternalError``).

Replicas are autodetected as upstream: the number of control-plane nodes (workers when
the cluster has none, as on managed clusters), capped at 3, and 1 below 3 (odd sizes).

Pure: nodes, environment and the operator image are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from typing import Any, Final

from nrop.api.durations import format_duration, parse_duration
from nrop.api.images import is_own_image
from nrop.operator.decisions import naming
from nrop.operator.decisions.conditions import Reason, Step

__all__ = [
    "DEFAULTS",
    "MAX_REPLICAS",
    "ImageValidation",
    "ReplicasError",
    "compute_replicas",
    "normalize",
    "resync_seconds",
    "status_period",
    "validate",
]

Obj = Mapping[str, Any]

MAX_REPLICAS: Final = 3
#: Upstream's ``Normalize()`` defaults of the spec.
DEFAULTS: Final[dict[str, Any]] = {
    "schedulerName": naming.SCHEDULER_NAME,
    "logLevel": "Normal",
    "cacheResyncPeriod": "5s",
    "cacheResyncDebug": "DumpJSONFile",
    "schedulerInformer": "Dedicated",
    "cacheResyncDetection": "Relaxed",
    "scoringStrategy": {"type": "LeastAllocated"},
}
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")


class ReplicasError(ValueError):
    """The replicas cannot be computed (no nodes of the role, or more asked than nodes)."""


class ImageValidation:
    """Upstream's scheduler image validation, from the operator's environment."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.enabled = environ.get(naming.ENV_SCHEDULER_IMAGE_VALIDATION, "true").strip().lower() != "false"
        raw = environ.get(naming.ENV_SCHEDULER_IMAGE_DIGESTS, "")
        self.digests: Set[str] = frozenset(d.strip() for d in raw.split(",") if d.strip())

    def error(self, image: str) -> str | None:
        """Why ``image`` is refused, or None."""
        if not self.enabled or is_own_image(image):
            return None
        if "@" not in image:
            return f'image "{image}" must be referenced by digest, not by tag'
        digest = image.split("@", 1)[1]
        if not _DIGEST.fullmatch(digest):
            return f'image "{image}" has malformed digest "{digest}": expected sha256:<64 hex chars>'
        if digest not in self.digests:
            return (
                f'image "{image}" digest "{digest}" is not in the trusted list. To extend the list, update the '
                f'environment variable "{naming.ENV_SCHEDULER_IMAGE_DIGESTS}" with comma separated list of digests'
            )
        return None


def normalize(spec: Obj) -> dict[str, Any]:
    """The spec with upstream's defaults filled in."""
    result = dict(spec)
    for key, value in DEFAULTS.items():
        if result.get(key) in (None, ""):
            result[key] = value
    if isinstance(result.get("replicas"), float) and result["replicas"].is_integer():
        # The schema admits 1.0 as an integer; the Deployment's int32 field does not.
        result["replicas"] = int(result["replicas"])
    if not (result.get("scoringStrategy") or {}).get("type"):
        result["scoringStrategy"] = {**(result.get("scoringStrategy") or {}), "type": "LeastAllocated"}
    return result


def resync_seconds(spec: Obj) -> int:
    """``cacheResyncPeriod`` in whole seconds (0: the reserve cache is off)."""
    return int(parse_duration(str(spec["cacheResyncPeriod"])))


def validate(obj: Obj, images: ImageValidation) -> Step | None:
    """The Degraded step for an invalid NUMAResourcesScheduler, or None when it is valid."""
    name = obj.get("metadata", {}).get("name", "")
    if name != naming.NRS_NAME:
        return Step.degraded(
            Reason.INCORRECT_NRS_NAME, f"incorrect NUMAResourcesScheduler resource name: {name}"
        )
    spec = obj.get("spec") or {}
    if message := images.error(str(spec.get("imageSpec") or "")):
        return Step.degraded(Reason.INVALID_SCHEDULER_IMAGE, message)
    errors = []
    if not spec.get("imageSpec"):
        errors.append("spec.imageSpec: Required value")
    period = spec.get("cacheResyncPeriod")
    if period is not None:
        try:
            if parse_duration(str(period)) < 0:
                raise ValueError("must not be negative")
        except ValueError as exc:
            errors.append(f'spec.cacheResyncPeriod: invalid duration "{period}": {exc}')
    replicas = spec.get("replicas")
    if replicas is not None and int(replicas) < 0:
        errors.append(f"spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0")
    if errors:
        return Step.degraded(Reason.INTERNAL_ERROR, "\n".join(errors))
    return None


def compute_replicas(requested: int | None, control_plane: int, workers: int) -> int:
    """Upstream's ``computeSchedulerReplicas`` (role: control plane, else workers)."""
    role, count = ("control-plane", control_plane) if control_plane else ("worker", workers)
    if requested is not None:
        if requested > count:
            raise ReplicasError(
                "failed to compute scheduler replicas: explicitly set replicas count should not be greater "
                f"than the number of the nodes with role {role}"
            )
        return requested
    if count == 0:
        raise ReplicasError(f"failed to compute scheduler replicas: no {role} nodes found")
    return MAX_REPLICAS if count >= MAX_REPLICAS else 1


def status_period(spec: Obj) -> str | None:
    """``status.cacheResyncPeriod``: the active period, None when the cache is off."""
    seconds = parse_duration(str(spec["cacheResyncPeriod"]))
    return format_duration(seconds) if seconds > 0 else None
