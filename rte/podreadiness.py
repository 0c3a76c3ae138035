"""The exporter's own pod conditions (``--podreadiness``): ``PodresourcesFetched`` and ``NodeTopologyUpdated``.

This module owns upstream ``pkg/podreadiness``. The exporter's DaemonSet lists both
condition types as ``readinessGates``, so its pods only turn Ready once the exporter
has scanned and written successfully, and turn unready when it cannot:

* after every scan, ``PodresourcesFetched`` is ``True``, or ``False`` with reason
  ``ScanFailed`` and message ``failed to scan pod resources``;
* after every write (or ``--no-publish`` print), ``NodeTopologyUpdated`` is ``True``, or
  ``False`` with reason ``UpdateFailed`` and message
  ``failed to update noderesourcetopology object``;
* the pod is the one named by the environment variables ``REFERENCE_NAMESPACE`` and
  ``REFERENCE_POD_NAME`` (the downward API fills them in the DaemonSet): without them
  the exporter does not start (:func:`pod_from_env`);
* a condition is written by ``GET`` of the pod then ``UPDATE`` of ``pods/status`` with
  the condition replaced in place or appended, and only when its type, status, reason
  or message differ from the last one *this process* wrote successfully, so a steady
  state costs no API call. A failed write is logged and not remembered, so the next
  cycle tries again.

The decisions (:func:`make_condition`, :func:`with_condition`, :func:`same_condition`)
are plain functions over plain dicts; :class:`ConditionInjector` is the I/O around them.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from nrop.api.metatime import rfc3339
from nrop.api.restapi import PODS, ApiError
from nrop.api.restclient import RestClient

__all__ = [
    "ENV_NAMESPACE",
    "ENV_POD_NAME",
    "ConditionInjector",
    "ConditionType",
    "PodRef",
    "make_condition",
    "pod_from_env",
    "same_condition",
    "with_condition",
]

log = logging.getLogger(__name__)

ENV_NAMESPACE: Final = "REFERENCE_NAMESPACE"
ENV_POD_NAME: Final = "REFERENCE_POD_NAME"
_REQUEST_TIMEOUT: Final = 10.0


class ConditionType(enum.StrEnum):
    PODRESOURCES_FETCHED = "PodresourcesFetched"
    NODE_TOPOLOGY_UPDATED = "NodeTopologyUpdated"


#: Reason and message of each condition type when its status is False.
_FAILURES: Final = {
    ConditionType.PODRESOURCES_FETCHED: ("ScanFailed", "failed to scan pod resources"),
    ConditionType.NODE_TOPOLOGY_UPDATED: ("UpdateFailed", "failed to update noderesourcetopology object"),
}


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def pod_from_env(environ: Mapping[str, str]) -> PodRef:
    """The exporter's own pod; ``ValueError`` naming what is missing.

    Upstream only checks that the variables exist; an empty one is refused here too,
    since no pod has an empty name or namespace.
    """
    missing = [name for name in (ENV_NAMESPACE, ENV_POD_NAME) if not environ.get(name)]
    if missing:
        raise ValueError(
            f"needs the environment variable{'s' if len(missing) > 1 else ''} {' and '.join(missing)} "
            "(namespace and name of the exporter's own pod, whose conditions it sets); "
            "set them, or pass --podreadiness=false"
        )
    return PodRef(environ[ENV_NAMESPACE], environ[ENV_POD_NAME])


def make_condition(kind: ConditionType, ok: bool, now: datetime) -> dict[str, Any]:
    """A ``PodCondition`` as the Go type serialises it (``lastProbeTime`` null, empty strings omitted)."""
    condition: dict[str, Any] = {
        "type": kind.value,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now),
    }
    if not ok:
        condition["reason"], condition["message"] = _FAILURES[kind]
    return condition


def same_condition(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> bool:
    """Equal for the dedup rule: type, status, reason and message (times are ignored)."""
    if a is None:
        return False
    return all(a.get(key) == b.get(key) for key in ("type", "status", "reason", "message"))


def with_condition(
    conditions: Sequence[Mapping[str, Any]], condition: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``conditions`` with ``condition`` replacing the ones of its type in place, else appended."""
    out = [dict(c) for c in conditions]
    replaced = False
    for index, existing in enumerate(out):
        if existing.get("type") == condition["type"]:
            out[index] = dict(condition)
            replaced = True
    if not replaced:
        out.append(dict(condition))
    return out


class ConditionInjector:
    """Sets the exporter pod's conditions through ``pods/status``; never raises for API errors."""

    def __init__(
        self,
        api: RestClient,
        pod: PodRef,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.pod = pod
        self._api = api
        self._clock = clock
        self._last: dict[str, dict[str, Any]] = {}

    def set(self, kind: ConditionType, ok: bool) -> bool:
        """Write the condition unless it is what this process last wrote; False when the write failed."""
        condition = make_condition(kind, ok, self._clock())
        if same_condition(self._last.get(kind.value), condition):
            return True
        try:
            pod = self._api.request(
                "GET", PODS.path(self.pod.namespace, self.pod.name), timeout=_REQUEST_TIMEOUT
            )
            status = pod.setdefault("status", {})
            status["conditions"] = with_condition(status.get("conditions") or [], condition)
            self._api.request(
                "PUT",
                PODS.path(self.pod.namespace, self.pod.name, "status"),
                body=pod,
                timeout=_REQUEST_TIMEOUT,
            )
        except ApiError as exc:
            log.error(
                "failed to update pod %s status with condition %s=%s: %s",
                self.pod,
                kind.value,
                condition["status"],
                exc,
            )
            return False
        log.info("pod %s: condition %s=%s", self.pod, kind.value, condition["status"])
        self._last[kind.value] = condition
        return True
