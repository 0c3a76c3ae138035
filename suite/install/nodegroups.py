"""The NROP's node groups as the suite's install uses them: each a pool name and the nodes it selects.

Upstream's ``GetPoolNamesFrom`` and ``NodeSelectorFromPoolName``: a ``poolName`` group selects the
nodes of that role, a ``machineConfigPoolSelector`` group the nodes of each MachineConfigPool it
selects (read through :func:`mcp_finder` when the cluster serves them). BeforeSuite deploys numacell
per pool and checks the nodes' topology per pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.api.selectors import label_selector_from_dict
from nrop.suite.e2e.kube import MCP, Kube, Manifest, UnknownKindError, name_of
from nrop.suite.install.errors import InfraError

__all__ = ["ROLE_LABEL_PREFIX", "NodeGroupPool", "mcp_finder", "node_group_pools", "pool_of_mcp"]

ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"


@dataclass(frozen=True)
class NodeGroupPool:
    """A node group of the NROP as the suite uses it: a pool name and the nodes it selects."""

    name: str
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Mapping[str, Any], ...] = ()

    @property
    def selector(self) -> str:
        """The pool's nodes as a ``labelSelector`` query parameter."""
        return _selector_query(
            {"matchLabels": dict(self.match_labels), "matchExpressions": list(self.match_expressions)}
        )


def _selector_query(selector: Mapping[str, Any]) -> str:
    """A ``metav1.LabelSelector`` as the ``labelSelector`` query parameter (``Selector.String()``)."""
    return str(label_selector_from_dict(selector))


def pool_of_mcp(mcp: Mapping[str, Any]) -> NodeGroupPool:
    """A MachineConfigPool as a pool: its name, and the nodes its ``spec.nodeSelector`` selects."""
    selector = (mcp.get("spec") or {}).get("nodeSelector") or {}
    return NodeGroupPool(
        name_of(mcp), dict(selector.get("matchLabels") or {}), tuple(selector.get("matchExpressions") or ())
    )


def node_group_pools(
    node_groups: Sequence[Mapping[str, Any]],
    find_mcps: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None = None,
) -> list[NodeGroupPool]:
    """Pools of the NROP's ``spec.nodeGroups`` (upstream ``GetPoolNamesFrom`` + ``NodeSelectorFromPoolName``).

    ``poolName: P`` selects the nodes labelled ``node-role.kubernetes.io/P`` (what the
    MachineConfigPool ``P`` selects on OpenShift, and what the operator uses on Kubernetes);
    a ``machineConfigPoolSelector`` group is each MachineConfigPool ``find_mcps(selector)``
    returns (``None``: the cluster has no MachineConfigPool API).
    """
    pools: dict[str, NodeGroupPool] = {}
    for index, group in enumerate(node_groups):
        if group.get("poolName"):
            pool = str(group["poolName"])
            pools.setdefault(pool, NodeGroupPool(pool, {ROLE_LABEL_PREFIX + pool: ""}))
        elif group.get("machineConfigPoolSelector") is not None and find_mcps is not None:
            for mcp in find_mcps(group["machineConfigPoolSelector"]):
                pools.setdefault(name_of(mcp), pool_of_mcp(mcp))
        else:
            raise InfraError(
                f"spec.nodeGroups[{index}]: cannot autodetect the TAS nodes of this node group "
                "(a machineConfigPoolSelector needs the MachineConfigPool API)"
            )
    return list(pools.values())


def mcp_finder(kube: Kube) -> Callable[[Mapping[str, Any]], list[Manifest]] | None:
    """``find_mcps`` for :func:`node_group_pools` when the cluster serves MachineConfigPools."""
    try:
        kube.list(MCP)
    except UnknownKindError:  # not an OpenShift cluster
        return None
    return lambda selector: kube.list(MCP, label_selector=_selector_query(selector) or None)
