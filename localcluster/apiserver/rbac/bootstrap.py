"""The bootstrap RBAC policy, loaded once from ``bootstrap.yaml`` beside this module.

This module owns turning the data file into the ClusterRoles and ClusterRoleBindings the
API server creates at start-up (:data:`BOOTSTRAP_CLUSTER_ROLES`,
:data:`BOOTSTRAP_CLUSTER_ROLE_BINDINGS`), with the metadata upstream's bootstrap code
adds and the aggregated roles' rules filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from nrop.api import packageyaml
from nrop.localcluster.apiserver.rbac.aggregation import aggregate_cluster_roles
from nrop.localcluster.apiserver.rbac.identity import RBAC_GROUP

BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE_ANNOTATION = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _metadata(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {**BOOTSTRAP_LABEL, **(labels or {})},
        "annotations": dict(AUTOUPDATE_ANNOTATION),
    }


def _cluster_role(entry: Mapping[str, Any]) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _metadata(entry["name"], entry.get("labels")),
    }
    if "aggregationRule" in entry:
        role["aggregationRule"] = entry["aggregationRule"]
    role["rules"] = list(entry.get("rules") or [])
    return role


def _cluster_role_binding(entry: Mapping[str, Any]) -> dict[str, Any]:
    name = entry["name"]
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in entry["groups"]],
    }


def load(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ClusterRoles (stored as the aggregation controller would leave them) and bindings of ``text``."""
    data = packageyaml.load(text)
    roles = aggregate_cluster_roles(_cluster_role(e) for e in data["clusterRoles"])
    return roles, [_cluster_role_binding(e) for e in data["clusterRoleBindings"]]


BOOTSTRAP_CLUSTER_ROLES, BOOTSTRAP_CLUSTER_ROLE_BINDINGS = load(
    (resources.files(__package__) / "bootstrap.yaml").read_text()
)
