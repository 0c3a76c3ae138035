"""The KubeletConfig controller: a pool's exporter ConfigMap follows the pool's KubeletConfig.

Upstream's ``kubeletconfig_controller.go`` (OpenShift path), active when the cluster serves
``machineconfiguration.openshift.io/v1`` KubeletConfigs (checked when the operator starts).
For a KubeletConfig whose ``machineConfigPoolSelector`` matches a MachineConfigPool selected
by the node groups of the NUMAResourcesOperator ``numaresourcesoperator`` (by ``poolName`` or
``machineConfigPoolSelector``), the ConfigMap ``<nrop>-<pool>`` in the operator's namespace
holds ``config.yaml`` rendered from the KubeletConfig's topology manager policy and scope (and
the NROP's pod excludes), carries upstream's soft-reference labels (operator name, pool) and
is controlled by the KubeletConfig (``ownerReferences`` ``controller: true``): deleting the
KubeletConfig garbage-collects it, and the NUMAResourcesOperator controller then writes its
own again. While a KubeletConfig controls it the NROP controller leaves that ConfigMap alone
and only hashes its ``config.yaml`` into the exporter DaemonSet's pod template, so the
exporters restart on every change, as upstream's ``DaemonSetHashAnnotation``.

Ignored, with a log line, as upstream: a KubeletConfig that selects no pool of the NROP, one
with an empty payload (``spec.kubeletConfig`` unset), and every KubeletConfig while the NROP
does not exist (all are looked at again on every event of the NROP). Deleting a KubeletConfig does nothing here.

:func:`find_pool` and :func:`desired_configmap` are pure; :func:`reconcile` does the I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from nrop.api.selectors import matches
from nrop.operator.decisions import naming, rtemanifests
from nrop.operator.kubeapi import Api, ApiException, kind
from nrop.operator.reconciling import Context, retrying

__all__ = [
    "GROUP_VERSION",
    "KUBELETCONFIG",
    "controlling_kubeletconfig",
    "desired_configmap",
    "find_pool",
    "nrop_pools",
    "reconcile",
    "register",
]

log = logging.getLogger(__name__)

GROUP_VERSION = "machineconfiguration.openshift.io/v1"
KUBELETCONFIG = kind(GROUP_VERSION, "KubeletConfig")
MCP = kind(GROUP_VERSION, "MachineConfigPool")
NROP = kind(naming.API_VERSION, naming.NROP_KIND)
CONFIGMAP = kind("v1", "ConfigMap")
_NROP_OWNER_LABELS = (naming.OWNER_KIND_LABEL, naming.OWNER_NAME_LABEL)


def nrop_pools(nrop: Mapping[str, Any], mcps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``GetListByNodeGroupsV1``: the MachineConfigPools the node groups select (by name or selector)."""
    selected: dict[str, Mapping[str, Any]] = {}
    for group in (nrop.get("spec") or {}).get("nodeGroups") or ():
        for mcp in mcps:
            name = mcp["metadata"]["name"]
            if group.get("poolName") is not None:
                if group["poolName"] == name:
                    selected[name] = mcp
            elif matches(group.get("machineConfigPoolSelector"), mcp["metadata"].get("labels") or {}):
                selected[name] = mcp
    return list(selected.values())


def find_pool(kc: Mapping[str, Any], mcps: Sequence[Mapping[str, Any]]) -> str | None:
    """``machineconfigpools.FindBySelector``: the first pool the KubeletConfig's selector matches."""
    selector = (kc.get("spec") or {}).get("machineConfigPoolSelector")
    for mcp in mcps:
        if matches(selector, mcp["metadata"].get("labels") or {}):
            return str(mcp["metadata"]["name"])
    return None


def desired_configmap(
    nrop: Mapping[str, Any], kc: Mapping[str, Any], pool: str, namespace: str
) -> dict[str, Any]:
    """The exporters' ConfigMap of ``pool`` as the KubeletConfig ``kc`` makes it."""
    payload = (kc.get("spec") or {}).get("kubeletConfig") or {}
    settings = rtemanifests.KubeletSettings(
        topology_manager_policy=str(payload.get("topologyManagerPolicy") or ""),
        topology_manager_scope=str(payload.get("topologyManagerScope") or ""),
    )
    excludes = (nrop.get("spec") or {}).get("podExcludes") or []
    kc_meta = kc["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{nrop['metadata']['name']}-{pool}",
            "namespace": namespace,
            "labels": {
                naming.RTE_OPERATOR_NAME_LABEL: nrop["metadata"]["name"],
                naming.RTE_POOL_LABEL: pool,
            },
            "ownerReferences": [
                {
                    "apiVersion": GROUP_VERSION,
                    "kind": "KubeletConfig",
                    "name": kc_meta["name"],
                    "uid": kc_meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {naming.RTE_CONFIG_KEY: rtemanifests.rte_config(settings, excludes)},
    }


def controlling_kubeletconfig(obj: Mapping[str, Any]) -> str | None:
    """The name of the KubeletConfig that controls ``obj``, if one does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if (
            ref.get("controller")
            and ref.get("kind") == "KubeletConfig"
            and ref.get("apiVersion") == GROUP_VERSION
        ):
            return str(ref.get("name"))
    return None


def _apply(api: Api, desired: dict[str, Any]) -> None:
    """Create the ConfigMap, or take it over: the desired labels, owner and data, minus the
    NROP's ownership labels (the NROP controller no longer manages it)."""
    meta = desired["metadata"]
    live = api.get(CONFIGMAP, meta["name"], meta["namespace"])
    if live is None:
        api.create(desired)
        return
    live_meta = live["metadata"]
    labels = {k: v for k, v in (live_meta.get("labels") or {}).items() if k not in _NROP_OWNER_LABELS}
    labels.update(meta["labels"])
    if (
        live_meta.get("labels") == labels
        and live_meta.get("ownerReferences") == meta["ownerReferences"]
        and live.get("data") == desired["data"]
    ):
        return
    updated = {**live, "data": desired["data"]}
    updated["metadata"] = {**live_meta, "labels": labels, "ownerReferences": meta["ownerReferences"]}
    api.replace(updated)


def _sync(ctx: Context, name: str) -> bool:
    """One pass; False when the NROP is missing (every KubeletConfig is looked at again when it comes)."""
    api = ctx.api
    nrop = api.get(NROP, naming.NROP_NAME)
    if nrop is None:
        return False
    kc = api.get(KUBELETCONFIG, name)
    if kc is None:
        return True
    pool = find_pool(kc, nrop_pools(nrop, api.list(MCP)))
    if pool is None:
        log.info("ignored kubelet config %s: cannot find a MCP related to its selector", name)
        return True
    if (kc.get("spec") or {}).get("kubeletConfig") is None:
        log.info("detected KubeletConfig with empty payload, ignoring %s", name)
        return True
    desired = desired_configmap(nrop, kc, pool, ctx.namespace)
    _apply(api, desired)
    log.info(
        "updated RTE config from kubelet config %s: configmap %s/%s",
        name,
        ctx.namespace,
        desired["metadata"]["name"],
    )
    return True


def reconcile(ctx: Context, name: str) -> bool:
    """Reconcile the KubeletConfig ``name``; False when it should be looked at again later."""
    with ctx.lock("KubeletConfig", name):
        try:
            return retrying(lambda: _sync(ctx, name))
        except ApiException as exc:
            log.warning("reconciling KubeletConfig %s: %s %s", name, exc.status, exc.reason)
            return False


def register(registry: kopf.OperatorRegistry, ctx: Context) -> None:
    """The kopf handlers of this controller (call only when the cluster serves KubeletConfigs)."""
    group, version = GROUP_VERSION.split("/")

    @kopf.on.event(group, version, "kubeletconfigs", registry=registry)
    def kubeletconfig_event(name: str, type: str | None, **_: Any) -> None:
        if type == "DELETED":
            log.info("KubeletConfig object got deleted: %s", name)
            return
        reconcile(ctx, name)

    @kopf.on.event(
        naming.GROUP, naming.VERSION, naming.NROP_PLURAL, id="kubeletconfigs-of-nrop", registry=registry
    )
    def nrop_event(type: str | None, **_: Any) -> None:
        if type == "DELETED":
            return
        for kc in ctx.api.list(KUBELETCONFIG):
            reconcile(ctx, kc["metadata"]["name"])

    @kopf.on.event(
        "", "v1", "configmaps", id="kubeletconfig-owned-configmaps",
        labels={naming.RTE_OPERATOR_NAME_LABEL: kopf.PRESENT}, registry=registry,
    )  # fmt: skip
    def configmap_event(body: Mapping[str, Any], **_: Any) -> None:
        # Its KubeletConfig's, or one the NROP controller (re)wrote: any KubeletConfig may claim it.
        owner = controlling_kubeletconfig(body)
        names = (
            [owner] if owner is not None else [kc["metadata"]["name"] for kc in ctx.api.list(KUBELETCONFIG)]
        )
        for name in names:
            reconcile(ctx, name)
