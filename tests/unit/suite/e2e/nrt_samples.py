"""NRT manifests, and a fake cluster whose NRTs follow a script, for the suite library's tests
(not a test module)."""

from __future__ import annotations

from typing import Any

from nrop.suite.e2e import kube as k


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


class ScriptedNRTs:
    """A fake cluster whose NRTs follow a script, for the NRT waits.

    ``scripts[node]`` lists the node's NRT at each successive look (the last one then stays;
    ``None`` = no NRT); listing the NRTs is one look at every node. ``nrops`` are the
    NUMAResourcesOperators (``None``: the cluster does not serve the kind).
    """

    def __init__(
        self, scripts: dict[str, list[dict[str, Any] | None]], nrops: list[dict] | None = None
    ) -> None:
        self.scripts = scripts
        self.nrops = nrops
        self.looks: dict[str, int] = {}

    def _look(self, node: str) -> dict[str, Any] | None:
        script = self.scripts[node]
        step = self.looks.get(node, 0)
        self.looks[node] = step + 1
        return script[min(step, len(script) - 1)]

    def get_or_none(self, kind: k.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        assert kind is k.NRT
        return self._look(name)

    def list(self, kind: k.Kind, namespace: str | None = None, **_: Any) -> list[dict[str, Any]]:
        if kind is k.NROP:
            if self.nrops is None:
                raise k.UnknownKindError("not served")
            return self.nrops
        assert kind is k.NRT
        return [nrt for nrt in (self._look(node) for node in self.scripts) if nrt is not None]
