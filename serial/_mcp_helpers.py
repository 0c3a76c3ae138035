"""MachineConfigPools: which nodes a pool covers, and waiting for their roll-outs.

``nodegroups.NodeSelectorFromPoolName`` (the HyperShift NodePool label, the MCP's node selector,
or on Kubernetes the pool's RTE DaemonSet node selector), the pools an NROP's node groups
select (``nropmcp.GetListByNodeGroupsV1``), and the roll-out waits of upstream's tolerations
and configuration specs (``wait.ForMachineConfigPoolCondition``, ``buildMCPsInfo``,
``waitForMcpUpdate``) over the pool snapshots taken before a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from _node_helpers import nodes_by_selector
from _nropcr_helpers import pool_of_status
from _openshift_helpers import MCP, ClusterPlatform, Platform, serves
from _polling_helpers import poll

from nrop.api.selectors import matches as selector_matches
from nrop.suite import Kube, waiters
from nrop.suite.e2e.kube import DAEMONSET, NODE, NROP, Manifest

NODEPOOL_LABEL = "hypershift.openshift.io/nodePool"


def pool_node_selector(
    kube: Kube, platform: ClusterPlatform, nrop: Mapping[str, Any], pool: str
) -> dict[str, str]:
    """``nodegroups.NodeSelectorFromPoolName``: the NodePool label on HyperShift, the MCP node
    selector on OpenShift; on Kubernetes (no MCPs) the node selector the operator gave the
    pool's RTE DaemonSet, which is the operator's own statement of the pool's nodes."""
    if platform.platform is Platform.HYPERSHIFT:
        return {NODEPOOL_LABEL: pool}
    if serves(kube, MCP):
        mcp = kube.get(MCP, pool)
        return dict(((mcp.get("spec") or {}).get("nodeSelector") or {}).get("matchLabels") or {})
    group = pool_of_status(nrop, pool)
    if group is None:
        raise AssertionError(
            f"no node group status for pool {pool!r} in {(nrop.get('status') or {}).get('nodeGroups')}"
        )
    ds_ref = group.get("daemonsets") or group.get("daemonset") or {}
    ds = kube.get(DAEMONSET, ds_ref["name"], ds_ref["namespace"])
    return dict(ds["spec"]["template"]["spec"].get("nodeSelector") or {})


def for_mcp_condition(
    kube: Kube, mcp: Mapping[str, Any] | str, ctype: str, timeout: float, interval: float
) -> Manifest:
    """``wait.ForMachineConfigPoolCondition`` (:func:`nrop.suite.e2e.wait.waiters.for_mcp_condition`):
    ``mcp`` is the pool as read before the change, or a name (read now)."""
    return waiters.for_mcp_condition(kube, mcp, ctype, interval=interval, timeout=timeout)


def wait_mcp_condition(kube: Kube, suite_config: Any, mcp: Mapping[str, Any] | str, ctype: str) -> Manifest:
    """:func:`for_mcp_condition` with ``MachineConfigPoolUpdateTimeout`` / ``...Interval``."""
    t = suite_config.timeouts
    return for_mcp_condition(
        kube, mcp, ctype, t.mcp_update_timeout, poll(suite_config.target, t.mcp_update_interval)
    )


CURRENT_CONFIG_ANNOTATION = "machineconfiguration.openshift.io/currentConfig"
DESIRED_CONFIG_ANNOTATION = "machineconfiguration.openshift.io/desiredConfig"


def nrop_mcps(kube: Kube, nrop: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``nropmcp.GetListByNodeGroupsV1``: MCPs selected by the node groups (selector or name)."""
    mcps = kube.list(MCP)
    selected: dict[str, dict[str, Any]] = {}
    for group in (nrop.get("spec") or {}).get("nodeGroups") or ():
        for mcp in mcps:
            name = mcp["metadata"]["name"]
            if group.get("poolName") == name or selector_matches(
                group.get("machineConfigPoolSelector"), mcp["metadata"].get("labels") or {}
            ):
                selected[name] = mcp
    return list(selected.values())


@dataclass(frozen=True)
class McpInfo:
    """``mcpInfo``: the pool as read before the change, its rendered config then, a node of it."""

    mcp: Mapping[str, Any]
    initial_config: str
    sample_node: str

    @property
    def name(self) -> str:
        return str(self.mcp["metadata"]["name"])


def mcps_info(kube: Kube, nrop: Mapping[str, Any]) -> list[McpInfo]:
    """``buildMCPsInfo``: per NROP MCP, the pool itself (its resourceVersion is the reference
    of :func:`wait_for_mcp_update`), its initial rendered config and a sample node."""
    info = []
    for mcp in nrop_mcps(kube, kube.get(NROP, nrop["metadata"]["name"])):
        labels = ((mcp.get("spec") or {}).get("nodeSelector") or {}).get("matchLabels") or {}
        nodes = nodes_by_selector(kube, labels)
        if not nodes:
            raise AssertionError(f"empty node list for mcp {mcp['metadata']['name']}")
        config = ((mcp.get("status") or {}).get("configuration") or {}).get("name", "")
        info.append(McpInfo(mcp, config, nodes[0]["metadata"]["name"]))
    return info


def wait_for_mcp_update(kube: Kube, suite_config: Any, infos: list[McpInfo], config_update: bool) -> None:
    """``waitForMcpUpdate``: every MCP Updated since its snapshot in ``infos``
    (:func:`wait_mcp_condition`), its rendered config changed (MachineConfig update) and the
    sample node's desired and current config equal to it."""
    for info in infos:
        wait_mcp_condition(kube, suite_config, info.mcp, "Updated")
    for info in infos:
        name, initial, sample = info.name, info.initial_config, info.sample_node
        mcp = kube.get(MCP, name)
        updated = ((mcp.get("status") or {}).get("configuration") or {}).get("name", "")
        if config_update:
            assert updated != initial, f"config of MCP {name} was not updated"
        annotations = kube.get(NODE, sample)["metadata"].get("annotations") or {}
        assert annotations.get(DESIRED_CONFIG_ANNOTATION) == updated, (
            f"desired mc mismatch for node {sample!r}"
        )
        assert annotations.get(CURRENT_CONFIG_ANNOTATION) == updated, (
            f"current mc mismatch for node {sample!r}"
        )
