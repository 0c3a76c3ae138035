"""What a pod asks for, as NodeResourceTopologyMatch reads it: exact quantities and resource kinds.

This module owns the request arithmetic and the resource-name predicates that the NRT
filter, score and cache share (upstream ``pkg/util`` and
``pkg/noderesourcetopology/resourcerequests``):

* container requests as exact :class:`~nrop.api.quantity.Quantity` values. A limit
  without a request counts as the request, which is what API defaulting stores, so
  pods read straight from an API server and hand-written pods agree;
* ``GetPodEffectiveRequest``: per resource name, the larger of the biggest init
  container request and the sum over app containers, plus ``spec.overhead``.
  Restartable init containers (sidecars) get no special treatment here, as upstream;
* the predicates the plugin sorts resources by: native, NUMA-affine, host-level,
  scalar (what the node's allocatable exposes to the scheduler);
* ``AreExclusiveForPod``: whether a pod holds resources a kubelet pins (exclusive CPUs,
  memory, hugepages, devices the node's NRT reports), used to decide which pods a
  pods fingerprint covers and which foreign pods matter.

Requests are plain dicts in the order the pod spec lists them. Upstream iterates Go maps
(random order); every result here is order independent except log text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from nrop.api import qos as qos_api
from nrop.api.podrequests import defaulted_requests
from nrop.api.quantity import Quantity, coerce
from nrop.api.resources import is_extended_resource, is_hugepages, is_native_resource

__all__ = [
    "BEST_EFFORT",
    "BURSTABLE",
    "GUARANTEED",
    "ResourceList",
    "app_containers",
    "are_exclusive_for_pod",
    "container_requests",
    "include_non_native",
    "init_containers",
    "is_exclusive",
    "is_extended_resource",
    "is_host_level_resource",
    "is_hugepages",
    "is_native_resource",
    "is_numa_affine_resource",
    "is_scalar_resource",
    "is_sidecar",
    "pod_effective_request",
    "pod_qos",
]

ResourceList = dict[str, Quantity]
"""Resource name -> exact quantity (upstream ``v1.ResourceList``)."""

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
STORAGE: Final = "storage"

_NATIVE_PREFIX: Final = "kubernetes.io/"
_ATTACHABLE_VOLUMES_PREFIX: Final = "attachable-volumes-"


# ------------------------------------------------------------------------ containers


def init_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("initContainers") or ())


def app_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("spec") or {}).get("containers") or ())


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """An init container that keeps running next to the app containers (``restartPolicy: Always``)."""
    return container.get("restartPolicy") == "Always"


def container_requests(container: Mapping[str, Any]) -> ResourceList:
    """The container's requests as exact quantities, a limit standing in for a missing request."""
    return {name: coerce(value) for name, value in defaulted_requests(container).items()}


def _add_into(total: ResourceList, name: str, amount: Quantity) -> None:
    total[name] = total[name] + amount if name in total else amount


def pod_effective_request(pod: Mapping[str, Any]) -> ResourceList:
    """Upstream ``GetPodEffectiveRequest``: ``max(max(init), sum(app)) + overhead`` per resource."""
    init_peak: ResourceList = {}
    for container in init_containers(pod):
        for name, amount in container_requests(container).items():
            if name not in init_peak or amount > init_peak[name]:
                init_peak[name] = amount
    total: ResourceList = {}
    for container in app_containers(pod):
        for name, amount in container_requests(container).items():
            _add_into(total, name, amount)
    for name, amount in init_peak.items():
        if name not in total or amount > total[name]:
            total[name] = amount
    overhead = (pod.get("spec") or {}).get("overhead") or {}
    for name, value in overhead.items():
        _add_into(total, name, coerce(value))
    return total


def pod_qos(pod: Mapping[str, Any]) -> str:
    """``GetPodQOS``: ``status.qosClass`` when the API server set it, else computed from the spec."""
    reported = (pod.get("status") or {}).get("qosClass")
    if reported:
        return str(reported)
    return qos_api.pod_qos_class(pod.get("spec") or {})


# --------------------------------------------------------------------- resource kinds


def is_numa_affine_resource(name: str) -> bool:
    """Resources a kubelet must bind to NUMA nodes: cpu, memory and hugepages."""
    return name in (CPU, MEMORY) or is_hugepages(name)


def is_host_level_resource(name: str) -> bool:
    """Resources that may have no NUMA affinity: storage and anything non-native (devices...)."""
    return name in (EPHEMERAL_STORAGE, STORAGE) or not is_native_resource(name)


def is_scalar_resource(name: str) -> bool:
    """Resources the scheduler's ``NodeInfo`` keeps besides cpu, memory, pods and ephemeral storage."""
    return (
        is_extended_resource(name)
        or is_hugepages(name)
        or _NATIVE_PREFIX in name
        or name.startswith(_ATTACHABLE_VOLUMES_PREFIX)
    )


def include_non_native(pod: Mapping[str, Any]) -> bool:
    """Whether any init or app container requests a non-native (extended, device) resource."""
    for container in [*init_containers(pod), *app_containers(pod)]:
        if any(not is_native_resource(name) for name in container_requests(container)):
            return True
    return False


# -------------------------------------------------------------------------- exclusivity


def is_exclusive(qos: str, name: str, amount: Quantity, nrt_resources: Collection[str] | None) -> bool:
    """Whether a request gets pinned resources: a device the NRT reports, or Guaranteed cpu/memory.

    A non-native resource is exclusive only if the node's NRT lists it (then its topology
    is known); cpu is exclusive when integral and positive; memory and hugepages when
    positive.
    """
    if not is_native_resource(name):
        return nrt_resources is not None and name in nrt_resources
    if qos != GUARANTEED:
        return False
    if name == CPU and amount.value() * 1000 == amount.milli_value() and amount.value() > 0:
        return True
    return (name == MEMORY or is_hugepages(name)) and amount.value() > 0


def _steady_state_containers(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    # Ordinary init containers finish before the pod runs: they hold nothing in steady state.
    yield from (c for c in init_containers(pod) if is_sidecar(c))
    yield from app_containers(pod)


def are_exclusive_for_pod(pod: Mapping[str, Any], nrt_resources: Collection[str] | None) -> bool:
    """Upstream ``AreExclusiveForPod``: any sidecar or app container requests an exclusive resource."""
    qos = pod_qos(pod)
    return any(
        is_exclusive(qos, name, amount, nrt_resources)
        for container in _steady_state_containers(pod)
        for name, amount in container_requests(container).items()
    )
