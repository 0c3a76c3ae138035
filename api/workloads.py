"""When a Deployment or a DaemonSet is done rolling out, read from its status.

:func:`deployment_complete` is Kubernetes' ``deploymentutil.DeploymentComplete`` (the rule the
deployment controller writes ``NewReplicaSetAvailable`` by, and the end of ``kubectl rollout
status``): the current generation observed and every one of ``spec.replicas`` updated, existing
and available. The embedded cluster's deployment controller reads it here (the operator's
NUMAResourcesScheduler status keeps its own, looser rule: the ``Available`` condition and the new
replicas available, old ones may still be terminating). :func:`daemonset_ready` is the operator's rule
for its exporter DaemonSets: rolled out at the current generation and every scheduled pod
updated, available and ready. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["daemonset_ready", "deployment_complete"]


def _int(status: Mapping[str, Any], key: str) -> int:
    return int(status.get(key) or 0)


def _generation_observed(obj: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    return _int(status, "observedGeneration") >= int((obj.get("metadata") or {}).get("generation") or 0)


def deployment_complete(deployment: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> bool:
    """``DeploymentComplete(deployment, newStatus)``; ``status`` defaults to the Deployment's own.

    ``spec.replicas`` unset counts as 1 (the API server's default).
    """
    if status is None:
        status = deployment.get("status") or {}
    value = (deployment.get("spec") or {}).get("replicas")
    replicas = 1 if value is None else int(value)
    return (
        _int(status, "updatedReplicas") == replicas
        and _int(status, "replicas") == replicas
        and _int(status, "availableReplicas") == replicas
        and _generation_observed(deployment, status)
    )


def daemonset_ready(daemonset: Mapping[str, Any]) -> bool:
    """The current generation observed, and every desired pod updated, available and ready."""
    status = daemonset.get("status") or {}
    desired = _int(status, "desiredNumberScheduled")
    return (
        _generation_observed(daemonset, status)
        and _int(status, "updatedNumberScheduled") >= desired
        and _int(status, "numberAvailable") >= desired
        and _int(status, "numberReady") >= desired
    )
