"""The kubelet configuration of each node group, read where the kubelets publish it.

On Kubernetes every kubelet serves its configuration at ``/configz``, reachable through
the API server as ``nodes/<name>/proxy/configz``: the operator reads the topology manager
policy and scope of a group's first node (by name) and puts them in the group's exporter
ConfigMap. A change of the kubelets' configuration reaches the exporters at the next
reconciliation (their pods restart on the new ConfigMap).

:func:`settings_from_configz` is pure; :func:`group_settings` does the reads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nrop.operator.decisions.nropspec import NodeGroup
from nrop.operator.decisions.rtemanifests import KubeletSettings
from nrop.operator.kubeapi import Api, ApiException

__all__ = ["group_nodes", "group_settings", "settings_from_configz"]

log = logging.getLogger(__name__)


def settings_from_configz(body: Mapping[str, Any]) -> KubeletSettings:
    """The exporter's kubelet settings from a ``/configz`` answer (kubelet defaults when unset)."""
    kubelet = body.get("kubeletconfig") or {}
    return KubeletSettings(
        topology_manager_policy=str(kubelet.get("topologyManagerPolicy") or "none"),
        topology_manager_scope=str(kubelet.get("topologyManagerScope") or "container"),
    )


def group_nodes(group: NodeGroup, nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the nodes the group's DaemonSet runs on, sorted."""
    return sorted(
        n["metadata"]["name"]
        for n in nodes
        if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in group.node_selector.items())
    )


def group_settings(
    api: Api, groups: Sequence[NodeGroup], nodes: Sequence[Mapping[str, Any]]
) -> dict[str, KubeletSettings]:
    """Pool name -> the settings of its first readable node (defaults when none answers)."""
    result: dict[str, KubeletSettings] = {}
    for group in groups:
        for name in group_nodes(group, nodes):
            try:
                result[group.pool_name] = settings_from_configz(
                    api.raw_get(f"/api/v1/nodes/{name}/proxy/configz")
                )
                break
            except ApiException as exc:
                log.warning("cannot read the kubelet configuration of node %s: %s", name, exc.reason)
    return result
