"""What a pod requests, as Kubernetes counts it: the one copy of upstream ``resourcehelper.PodRequests``.

The default scheduler's fit and scoring, the kubelet's admission and the suite's padding and baseload
all ask "how much does this pod take from a node". The answer, per resource name:

* a container's requests, a limit without a request counting as the request (API defaulting);
* app containers summed; restartable init containers (sidecars, ``restartPolicy: Always``) run beside
  everything started after them, so they add to the app sum and to each later init container;
* the peak over init containers (each plus the sidecars started before it) wins where it is larger;
* pod-level ``spec.resources`` (PodLevelResources, on by default since 1.34): its cpu and memory
  requests (or limits, defaulted) replace the aggregated container values;
* ``spec.overhead`` (RuntimeClass) is added last.

Amounts are integers as the scheduler framework counts them: ``cpu`` in millicores, everything else in
base units rounded up. The NRT plugin's ``GetPodEffectiveRequest`` (scheduler-plugins, no sidecar or
pod-level handling) is a different upstream function and stays in ``nrop.sched.framework.podrequests``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrop.api import quantity

__all__ = [
    "POD_LEVEL_RESOURCES",
    "Amounts",
    "amount",
    "amounts",
    "container_requests",
    "defaulted_requests",
    "pod_requests",
]

Amounts = dict[str, int]
"""Resource name -> amount (``cpu`` in millicores, the rest in base units)."""

#: The resources pod-level ``resources`` may set (upstream ``supportedPodLevelResources``).
POD_LEVEL_RESOURCES: tuple[str, ...] = ("cpu", "memory")


def amount(name: str, value: Any) -> int:
    """A quantity as the scheduler framework counts it: millicores for cpu, rounded-up base units otherwise."""
    parsed = quantity.coerce(value)
    return parsed.milli_value() if name == "cpu" else parsed.value()


def amounts(values: Mapping[str, Any] | None) -> Amounts:
    return {name: amount(name, value) for name, value in (values or {}).items()}


def defaulted_requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container's (or a pod-level ``resources``') requests as written, a limit without a request
    standing in for it (what API defaulting stores)."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return merged


def container_requests(container: Mapping[str, Any]) -> Amounts:
    """A container's (or a pod-level ``resources``') requests, defaulted from its limits."""
    return amounts(defaulted_requests(container))


def _add(into: Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max(into: Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = max(into.get(name, 0), value)


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    """``resourcehelper.PodRequests`` of a pod spec (see the module docstring for the rule)."""
    total: Amounts = {}
    for container in spec.get("containers") or ():
        _add(total, container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        requests = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            effective = dict(requests)
            _add(effective, sidecars)
            _max(init_peak, effective)
    _max(total, init_peak)
    pod_level = container_requests({"resources": spec.get("resources") or {}})
    for name in POD_LEVEL_RESOURCES:
        if name in pod_level:
            total[name] = pod_level[name]
    _add(total, amounts(spec.get("overhead")))
    return total
