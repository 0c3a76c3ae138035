"""Where the operator's own pods run (the operator and the secondary scheduler): they tolerate the
control-plane taints and prefer control-plane nodes, as upstream's manifests place them."""

from __future__ import annotations

from typing import Any

from nrop.operator.decisions import naming

__all__ = ["control_plane_placement"]


def control_plane_placement() -> dict[str, Any]:
    """The ``tolerations`` and ``affinity`` of a pod spec that runs on control-plane nodes when it
    can: every control-plane role's ``NoSchedule`` taint tolerated, ``control-plane`` preferred."""
    return {
        "tolerations": [
            {"key": f"{naming.NODE_ROLE_PREFIX}{role}", "operator": "Exists", "effect": "NoSchedule"}
            for role in naming.CONTROL_PLANE_ROLES
        ],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": f"{naming.NODE_ROLE_PREFIX}control-plane", "operator": "Exists"}
                            ]
                        },
                    }
                ]
            }
        },
    }
