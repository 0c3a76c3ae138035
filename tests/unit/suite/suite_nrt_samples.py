"""NRT manifests for the suite library's table tests (not a test module)."""

from __future__ import annotations

from typing import Any


def res(
    name: str, capacity: str, allocatable: str | None = None, available: str | None = None
) -> dict[str, str]:
    allocatable = allocatable or capacity
    return {
        "name": name,
        "capacity": capacity,
        "allocatable": allocatable,
        "available": available or allocatable,
    }


def zone(name: str, *resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "type": "Node", "resources": list(resources)}


def nrt(
    name: str,
    *zones: dict[str, Any],
    policy: str | None = "single-numa-node",
    scope: str | None = "pod",
    pfp: str | None = "pfp0v001a",
    rv: str = "1",
) -> dict[str, Any]:
    attributes = []
    if policy is not None:
        attributes.append({"name": "topologyManagerPolicy", "value": policy})
    if scope is not None:
        attributes.append({"name": "topologyManagerScope", "value": scope})
    if pfp is not None:
        attributes.append({"name": "nodeTopologyPodsFingerprint", "value": pfp})
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "resourceVersion": rv},
        "zones": list(zones),
        "attributes": attributes,
    }


def two_zone_nrt(
    name: str, cpu0: str = "18", cpu1: str = "20", mem0: str = "20Gi", mem1: str = "21Gi", **kw: Any
):
    return nrt(
        name,
        zone("node-0", res("cpu", "20", "18", cpu0), res("memory", "24Gi", "20Gi", mem0)),
        zone("node-1", res("cpu", "20", "20", cpu1), res("memory", "24Gi", "21Gi", mem1)),
        **kw,
    )
