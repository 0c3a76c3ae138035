"""The node-group annotations upstream defines (``internal/api/annotations``) that more than one
component reads: the custom SELinux policy switch, read by the operator (it renders the policy's
MachineConfig) and by the suite (it expects the MachineConfigPool roll-outs that follow).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SELINUX_POLICY_ANNOTATION", "SELINUX_POLICY_CUSTOM", "any_custom_policy", "custom_policy"]

SELINUX_POLICY_ANNOTATION: Final = "config.node.openshift-kni.io/selinux-policy"
SELINUX_POLICY_CUSTOM: Final = "custom"


def custom_policy(annotations: Mapping[str, str] | None) -> bool:
    """``IsCustomPolicyEnabled``: a node group's annotations ask for the exporter's own policy."""
    return (annotations or {}).get(SELINUX_POLICY_ANNOTATION) == SELINUX_POLICY_CUSTOM


def any_custom_policy(nrop: Mapping[str, Any]) -> bool:
    """``helper.IsCustomPolicyEnabled``: some node group of the NUMAResourcesOperator asks for it."""
    groups = (nrop.get("spec") or {}).get("nodeGroups") or []
    return any(custom_policy(group.get("annotations")) for group in groups)
