"""Pod QoS class (Guaranteed, Burstable, BestEffort) computed from a pod spec, as upstream does.

Shared by the API server (``status.qosClass`` on create), the kubelet's
resource managers, the scheduler and the exporters, so every component agrees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import quantity

SUPPORTED = ("cpu", "memory")


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from spec.get("initContainers") or ()
    yield from spec.get("containers") or ()


def _nonzero(values: Mapping[str, Any] | None) -> dict[str, quantity.Quantity]:
    out = {}
    for name, text in (values or {}).items():
        if name not in SUPPORTED:
            continue
        parsed = quantity.coerce(text)
        if parsed.nanos != 0:
            out[name] = parsed
    return out


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """``Guaranteed`` iff every container limits cpu and memory with requests equal to limits."""
    requests: dict[str, quantity.Quantity] = {}
    limits: dict[str, quantity.Quantity] = {}
    guaranteed = True
    for container in _containers(spec):
        resources = container.get("resources") or {}
        c_requests = _nonzero(resources.get("requests"))
        c_limits = _nonzero(resources.get("limits"))
        for name, value in c_requests.items():
            requests[name] = requests[name] + value if name in requests else value
        for name, value in c_limits.items():
            limits[name] = limits[name] + value if name in limits else value
        if set(c_limits) != set(SUPPORTED):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and requests.keys() == limits.keys()
        and all(requests[name].nanos == limits[name].nanos for name in requests)
    ):
        return "Guaranteed"
    return "Burstable"
