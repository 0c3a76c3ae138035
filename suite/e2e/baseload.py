"""The load already on a node (upstream ``internal/baseload``), to leave room for it when padding.

:func:`from_pods` sums the **requests** of the app containers of the pods given (init
containers are ignored: a steady state is assumed), then rounds CPUs up to whole cores
and to an even count, and memory up to a multiple of 1G (10^9 bytes, as upstream does).
:func:`for_node` does it for every pod bound to a node. :meth:`Load.apply` adds the load
to a resource list, typically the "leave" amount of zone 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from nrop.api.quantity import Quantity
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.resourcelist import (
    ResourceList,
    add,
    from_container_requests,
    round_up_core_resources,
    sub,
    to_string,
)

__all__ = ["Load", "for_node", "from_pods"]


@dataclass(frozen=True)
class Load:
    name: str
    resources: ResourceList = field(default_factory=dict)

    def rounded(self) -> Load:
        """CPU up to an even number of whole cores, memory up to a multiple of 1G."""
        cpu, memory = round_up_core_resources(
            self.resources.get("cpu", Quantity(0)), self.resources.get("memory", Quantity(0))
        )
        return Load(self.name, {**self.resources, "cpu": cpu, "memory": memory})

    def apply(self, resources: MutableMapping[str, Quantity]) -> MutableMapping[str, Quantity]:
        """Add the load to ``resources`` in place (upstream ``AddTo``) and return it."""
        resources.update(add(resources, self.resources))
        return resources

    def subtract_from(self, resources: MutableMapping[str, Quantity]) -> MutableMapping[str, Quantity]:
        """Subtract the load from ``resources`` in place; ``ValueError`` if it does not fit."""
        resources.update(sub(resources, self.resources))
        return resources

    @property
    def cpu(self) -> Quantity:
        return self.resources.get("cpu", Quantity(0))

    @property
    def memory(self) -> Quantity:
        return self.resources.get("memory", Quantity(0))

    def __str__(self) -> str:
        return f"load for node {self.name!r}: {to_string(self.resources)}"


def from_pods(node_name: str, pods: Iterable[Mapping[str, Any]]) -> Load:
    """The rounded sum of the app containers' requests of ``pods``."""
    total: ResourceList = {}
    for pod in pods:
        total = add(total, from_container_requests((pod.get("spec") or {}).get("containers") or ()))
    return Load(node_name, total).rounded()


def for_node(kube: k.Kube, node_name: str) -> Load:
    """The load of every pod bound to ``node_name`` (any namespace, any phase, as upstream)."""
    return from_pods(node_name, kube.list(k.POD, field_selector=f"spec.nodeName={node_name}"))
