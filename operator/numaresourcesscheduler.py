"""The NUMAResourcesScheduler controller: the secondary scheduler Deployment and its status.

Thin I/O around pure decisions: :mod:`nrsspec` validates, normalizes and computes the
replicas, :mod:`schedmanifests` renders, :mod:`conditions` computes the conditions.
Manual edits of an object it owns trigger a reconciliation that puts it back; so does a node
added or removed (the replicas follow the nodes), a step in progress or failed
(:mod:`.requeueing`) and the periodic resync. Deletion removes every object the CR owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from nrop.operator.decisions import conditions, naming, nrsspec, schedmanifests
from nrop.operator.decisions.conditions import Reason, Step, Type
from nrop.operator.kubeapi import kind
from nrop.operator.reconciling import (
    Context,
    CustomResource,
    delete_owned,
    now,
    reconcile_cr,
    register_cr_controller,
)

__all__ = ["cleanup", "deployment_step", "reconcile", "register"]

CONTROLLER = "numaresourcesscheduler"
NRS = kind(naming.API_VERSION, naming.NRS_KIND)
NODE = kind("v1", "Node")
DEPLOYMENT = kind("apps/v1", "Deployment")
OWNED = (
    DEPLOYMENT,
    kind("v1", "ConfigMap"),
    kind("rbac.authorization.k8s.io/v1", "RoleBinding"),
    kind("rbac.authorization.k8s.io/v1", "Role"),
    kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    kind("rbac.authorization.k8s.io/v1", "ClusterRole"),
    kind("v1", "ServiceAccount"),
)
#: The owned kinds whose events reconcile the owner: upstream's ``Owns``.
WATCHED = tuple(k for k in OWNED if k.kind not in ("RoleBinding", "Role"))
RESOURCE = CustomResource(NRS, CONTROLLER, (Type.DEDICATED_INFORMER,))


def _owner_labels(name: str) -> dict[str, str]:
    return {naming.OWNER_KIND_LABEL: naming.NRS_KIND, naming.OWNER_NAME_LABEL: name}


def deployment_step(deployment: Mapping[str, Any]) -> Step:
    """Available when the Deployment's ``Available`` condition is True, as upstream's
    ``isDeploymentRunning``: during a rollout the old replica keeps the condition True, so the
    object turns Available at its new generation before the new scheduler runs."""
    status = deployment.get("status") or {}
    available = any(
        c.get("type") == "Available" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return Step.available() if available else Step.progressing()


def _count_roles(nodes: list[dict[str, Any]]) -> tuple[int, int]:
    control_plane = workers = 0
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        if f"{naming.NODE_ROLE_PREFIX}control-plane" in labels:
            control_plane += 1
        elif f"{naming.NODE_ROLE_PREFIX}worker" in labels:
            workers += 1
    return control_plane, workers


def _sync(ctx: Context, obj: Mapping[str, Any], status: dict[str, Any]) -> Step:
    step = nrsspec.validate(obj, nrsspec.ImageValidation(ctx.environ))
    if step is not None:
        return step
    spec = nrsspec.normalize(obj.get("spec") or {})
    try:
        replicas = nrsspec.compute_replicas(spec.get("replicas"), *_count_roles(ctx.api.list(NODE)))
    except nrsspec.ReplicasError as exc:
        return Step.degraded(Reason.INTERNAL_ERROR, str(exc))
    deployment: dict[str, Any] = {}
    for manifest in schedmanifests.render(obj, spec, ctx.namespace, replicas):
        live, _ = ctx.api.apply(manifest)
        if manifest["kind"] == "Deployment":
            deployment = live
    status["schedulerName"] = spec["schedulerName"]
    status["deployment"] = {"name": naming.SCHEDULER_DEPLOYMENT, "namespace": ctx.namespace}
    status["cacheResyncPeriod"] = nrsspec.status_period(spec)
    status["relatedObjects"] = [
        {"group": "", "resource": "namespaces", "name": ctx.namespace},
        {
            "group": "apps",
            "resource": "deployments",
            "namespace": ctx.namespace,
            "name": naming.SCHEDULER_DEPLOYMENT,
        },
    ]
    status["_dedicated"] = spec["schedulerInformer"] == "Dedicated"
    return deployment_step(deployment)


def _finish_status(status: dict[str, Any], generation: int) -> None:
    """The DedicatedInformer condition from what ``_sync`` found; no ``cacheResyncPeriod`` unless set."""
    dedicated = status.pop("_dedicated", None)
    if dedicated is not None:
        status["conditions"] = conditions.set_extra(
            status["conditions"], Type.DEDICATED_INFORMER, dedicated, generation, now()
        )
    if status.get("cacheResyncPeriod") is None:
        status.pop("cacheResyncPeriod", None)


def reconcile(ctx: Context, name: str) -> Step | None:
    """One reconciliation of the NUMAResourcesScheduler ``name``; its resulting step (None: skipped)."""
    return reconcile_cr(ctx, RESOURCE, name, lambda obj, status: _sync(ctx, obj, status), _finish_status)


def cleanup(ctx: Context, name: str) -> None:
    """Delete every object the NUMAResourcesScheduler ``name`` owns."""
    with ctx.lock(naming.NRS_KIND, name):
        delete_owned(ctx, OWNED, _owner_labels(name))


def register(registry: kopf.OperatorRegistry, ctx: Context) -> None:
    """The kopf handlers of this controller."""
    register_cr_controller(
        registry, prefix="nrs", plural=naming.NRS_PLURAL, kind_name=naming.NRS_KIND,
        reconcile=lambda name: reconcile(ctx, name), cleanup=lambda name: cleanup(ctx, name),
        owned=WATCHED,
    )  # fmt: skip

    # upstream's nodeToNUMAResourcesScheduler: a node added or removed changes the replicas
    # (updates are filtered out, as its predicate does); the first list counts as additions
    @kopf.on.event("", "v1", "nodes", id="nrs-nodes", registry=registry)
    def node_event(type: str | None, **_: Any) -> None:
        if type in (None, "ADDED", "DELETED"):
            for nrs in ctx.api.list(NRS):
                reconcile(ctx, nrs["metadata"]["name"])
