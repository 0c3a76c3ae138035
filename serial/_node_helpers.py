"""Nodes as the configuration-family specs select and taint them.

The role labels and ``nodes.GetWorkers``, nodes by label selector (``GetNodesBySelector``),
and the taints upstream's tolerations specs put on nodes and take off again
(``applyTaintToNode``, ``untaintNodes``) with the tolerations that match them
(``testToleration``, ``sriovToleration``). The taint arithmetic itself is
:mod:`nrop.api.tolerations`'; here are the retried node updates around it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from _polling_helpers import eventually, poll

from nrop.api.tolerations import add_or_update_taint, remove_taint
from nrop.suite import Kube
from nrop.suite.e2e.kube import NODE, ApiError, Manifest

log = logging.getLogger(__name__)

LABEL_ROLE = "node-role.kubernetes.io"
ROLE_WORKER = "worker"
ROLE_CONTROL_PLANE = "control-plane"
ROLE_MCP_TEST = "mcp-test"


def role_label(role: str) -> str:
    return f"{LABEL_ROLE}/{role}"


# -- nodes ----------------------------------------------------------------------------------


def worker_nodes(kube: Kube) -> list[Manifest]:
    """``nodes.GetWorkers``: the nodes matching the selector ``node-role.kubernetes.io/worker=``
    (the worker role label with an empty value, as upstream's ``GetByRole`` parses it)."""
    return kube.list(NODE, label_selector=f"{role_label(ROLE_WORKER)}=")


def selector_text(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" if value else key for key, value in sorted(labels.items()))


def nodes_by_selector(kube: Kube, labels: Mapping[str, str]) -> list[Manifest]:
    return kube.list(NODE, label_selector=selector_text(labels)) if labels else kube.list(NODE)


# -- tolerations and taints -----------------------------------------------------------------

TEST_KEY = "testkey"


def toleration(key: str, operator: str, effect: str, value: str | None = None) -> dict[str, Any]:
    tol: dict[str, Any] = {"key": key, "operator": operator, "effect": effect}
    if value is not None:
        tol["value"] = value
    return tol


def test_toleration() -> list[dict[str, Any]]:
    """``testToleration``: tolerate ``testkey`` (Exists) for NoSchedule."""
    return [toleration(TEST_KEY, "Exists", "NoSchedule")]


test_toleration.__test__ = False  # type: ignore[attr-defined]


def sriov_toleration() -> dict[str, Any]:
    return toleration("sriov", "Equal", "NoSchedule", "true")


def _set_node_taints(
    kube: Kube, node_name: str, change: Callable[[list[dict[str, Any]]], tuple[list[dict[str, Any]], bool]]
) -> str | None:
    try:
        node = kube.get(NODE, node_name)
        taints = list((node.get("spec") or {}).get("taints") or [])
        new_taints, updated = change(taints)
        if not updated:
            return None
        node.setdefault("spec", {})["taints"] = new_taints
        kube.replace(node)
    except ApiError as exc:
        return f"updating the taints of node {node_name} failed: {exc}"
    return None


def apply_taint_to_node(kube: Kube, node_name: str, taint: Mapping[str, Any], *, target: str) -> None:
    """``applyTaintToNode`` (1m / 1s)."""
    log.info("adding taint %s to node %s", taint, node_name)
    eventually(
        lambda: _set_node_taints(kube, node_name, lambda taints: add_or_update_taint(taints, taint)),
        f"node {node_name} tainted with {taint}",
        60,
        poll(target, 1),
    )


def untaint_nodes(kube: Kube, node_names: Iterable[str], taint: Mapping[str, Any], *, target: str) -> None:
    """``untaintNodes`` (1m / 5s per node)."""
    for node_name in node_names:
        log.info("removing taint %s from node %s", taint, node_name)
        eventually(
            lambda node_name=node_name: _set_node_taints(  # type: ignore[misc]
                kube, node_name, lambda taints: remove_taint(taints, taint)
            ),
            f"taint {taint} removed from node {node_name}",
            60,
            poll(target, 5),
        )
