"""The NUMAResourcesOperator controller: exporter DaemonSets per node group, NRT CRD, status.

Thin I/O around pure decisions: :mod:`nropspec` validates and resolves node groups,
:mod:`kubeletconfig` reads the groups' kubelet settings, :mod:`rtemanifests` renders the
objects, :mod:`conditions` computes the conditions. An invalid CR only gets its
``Degraded`` condition: the running exporters are left as they are. API errors become
``Degraded`` (``InternalError``) and are retried after the work queue's back-off; nothing
here raises into kopf except on deletion.

Where the cluster serves KubeletConfigs, a pool's exporter ConfigMap may be controlled by a
KubeletConfig (:mod:`kubeletconfigcontroller`): this controller then leaves it alone and
only hashes its ``config.yaml`` into the pool's DaemonSet, so the exporters follow it.

On OpenShift (:mod:`nrop.api.platform`, detected at start) the node groups' pools first get
the exporters' MachineConfigs (:mod:`machineconfigs`: the custom SELinux policy where a group
asks for it), and the exporters wait until every pool runs what it should; MachineConfigs of
pools that left the node groups are deleted.

Triggers: any event of the CR, any event of an object of the kinds upstream ``Owns`` (labelled
with its name: :data:`WATCHED`) or of an exporter ConfigMap (labelled with the operator name,
whoever controls it), on OpenShift any event of a MachineConfigPool, a step in progress or
failed (:mod:`.requeueing`), and the periodic resync. Deletion removes every object the CR
owns, then the finalizer goes.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from nrop.api import crds
from nrop.api.annotations import custom_policy
from nrop.api.platform import Platform
from nrop.api.workloads import daemonset_ready
from nrop.operator import certificates, kubeletconfig, kubeletconfigcontroller
from nrop.operator.decisions import conditions, machineconfigs, naming, nropspec, rtemanifests
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

__all__ = ["cleanup", "daemonset_step", "reconcile", "register"]

log = logging.getLogger(__name__)
CONTROLLER = "numaresourcesoperator"
NROP = kind(naming.API_VERSION, naming.NROP_KIND)
NODE = kind("v1", "Node")
MCP = kind("machineconfiguration.openshift.io/v1", "MachineConfigPool")
MACHINECONFIG = kind("machineconfiguration.openshift.io/v1", "MachineConfig")
DAEMONSET = kind("apps/v1", "DaemonSet")
CONFIGMAP = kind("v1", "ConfigMap")
SECRET = kind("v1", "Secret")
#: What a NUMAResourcesOperator owns, in deletion order.
OWNED = (
    DAEMONSET,
    CONFIGMAP,
    SECRET,
    kind("rbac.authorization.k8s.io/v1", "RoleBinding"),
    kind("rbac.authorization.k8s.io/v1", "Role"),
    kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    kind("rbac.authorization.k8s.io/v1", "ClusterRole"),
    kind("v1", "ServiceAccount"),
)
#: The owned kinds whose events reconcile the owner: upstream's ``Owns`` (the exporter ConfigMaps
#: have their own handler, as upstream's ``Watches``); its RBAC lets it watch these cluster-wide.
WATCHED = (DAEMONSET, *(k for k in OWNED if k.kind in ("RoleBinding", "Role", "ServiceAccount")))
RESOURCE = CustomResource(NROP, CONTROLLER, (Type.MCP_PAUSED,))


def _owner_labels(name: str) -> dict[str, str]:
    return {naming.OWNER_KIND_LABEL: naming.NROP_KIND, naming.OWNER_NAME_LABEL: name}


def daemonset_step(daemonsets: Sequence[Mapping[str, Any]]) -> Step:
    """Available when every DaemonSet is ready, else Progressing naming the first one pending."""
    for ds in daemonsets:
        if not daemonset_ready(ds):
            return Step.progressing(Reason.DAEMONSET_UPDATING, f"{ds['metadata']['name']} is updating")
    return Step.available()


def related_objects(namespace: str, daemonsets: Sequence[str]) -> list[dict[str, str]]:
    objects = [
        {"group": "", "resource": "namespaces", "name": namespace},
        {"group": "machineconfiguration.openshift.io", "resource": "kubeletconfigs", "name": ""},
        {"group": "machineconfiguration.openshift.io", "resource": "machineconfigs", "name": ""},
        {"group": "topology.node.k8s.io", "resource": "noderesourcetopologies", "name": ""},
    ]
    objects += [
        {"group": "apps", "resource": "daemonsets", "namespace": namespace, "name": n} for n in daemonsets
    ]
    return objects


def _environment_restricts_image(environ: Mapping[str, str]) -> bool:
    return environ.get(naming.ENV_EXPORTER_IMAGE_RESTRICTION, "true").strip().lower() != "false"


def _sync(ctx: Context, obj: Mapping[str, Any], status: dict[str, Any]) -> Step:
    """Validate, resolve, apply; fills ``status`` and returns the step."""
    api = ctx.api
    restricted = _environment_restricts_image(ctx.environ)
    has_mcps = api.has_api("machineconfiguration.openshift.io/v1")
    step = nropspec.validate(obj, exporter_image_restricted=restricted, has_mcps=has_mcps)
    if step is not None:
        return step
    nodes = api.list(NODE)
    mcps = api.list(MCP) if has_mcps else []
    groups, errors = nropspec.resolve_groups(obj, mcps, nodes, node_overlap=not has_mcps)
    if errors:
        return Step.degraded(Reason.NODE_GROUPS_ERROR, "\n".join(errors))
    annotations = obj["metadata"].get("annotations") or {}
    if annotations.get(naming.NRT_API_DEFINITION_ANNOTATION) != "cluster":
        api.apply(crds.load("noderesourcetopologies"))
    machine_configs: list[dict[str, Any]] = []
    if ctx.platform is Platform.OPENSHIFT:
        machine_configs = api.list(MACHINECONFIG)
        step = _sync_machine_configs(ctx, obj, groups, mcps, machine_configs, status)
        if step is not None:
            return step
    image = (obj.get("spec") or {}).get("imageSpec") or ctx.image
    kubelets = kubeletconfig.group_settings(api, groups, nodes)
    metrics_mode = ctx.environ.get(naming.ENV_EXPORTER_METRICS_MODE) or rtemanifests.DEFAULT_METRICS_MODE
    if metrics_mode == "httptls" and groups:
        _ensure_metrics_secret(ctx, obj)
    external = _kubeletconfig_configs(ctx, obj["metadata"]["name"])
    desired = rtemanifests.render(
        obj, groups, kubelets, ctx.namespace, image, metrics_mode, external, metrics_tls=ctx.metrics_tls
    )
    live_daemonsets = []
    for manifest in desired:
        live, _ = api.apply(manifest)
        if manifest["kind"] == "DaemonSet":
            live_daemonsets.append(live)
    _delete_stale(ctx, obj["metadata"]["name"], desired)
    if ctx.platform is Platform.OPENSHIFT:
        for name in machineconfigs.unused(machine_configs, obj, [g.pool_name for g in groups]):
            log.info("deleting dangling MachineConfig %s", name)
            api.delete(MACHINECONFIG, name)
    names = [ds["metadata"]["name"] for ds in live_daemonsets]
    status["daemonsets"] = [{"name": n, "namespace": ctx.namespace} for n in names]
    status["nodeGroups"] = [
        {"daemonsets": {"name": n, "namespace": ctx.namespace}, "config": g.config, "selector": g.pool_name}
        for n, g in zip(names, groups, strict=True)
    ]
    # Upstream fills machineconfigpools only on OpenShift (reconcileResourceMachineConfig); this operator
    # fills it on every platform, the pool name standing for the MCP, so the specs that read it run on
    # Kubernetes too (a known difference from upstream's operator, listed in docs/operator.md).
    status["machineconfigpools"] = [{"name": g.pool_name, "config": g.config} for g in groups]
    status["relatedObjects"] = related_objects(ctx.namespace, names)
    return daemonset_step(live_daemonsets)


def _sync_machine_configs(
    ctx: Context,
    obj: Mapping[str, Any],
    groups: Sequence[nropspec.NodeGroup],
    mcps: Sequence[Mapping[str, Any]],
    machine_configs: Sequence[Mapping[str, Any]],
    status: dict[str, Any],
) -> Step | None:
    """The node groups' pools get or lose the custom policy's MachineConfig (``machine_configs``:
    those the cluster has); Progressing while a pool has not caught up (None: every pool runs
    what it should)."""
    name = obj["metadata"]["name"]
    existing = {m["metadata"]["name"] for m in machine_configs}
    by_name = {m["metadata"]["name"]: m for m in mcps}
    paused: list[str] = []
    pending = ""
    for group in groups:
        mcp = by_name.get(group.pool_name)
        if mcp is None:
            continue
        if (mcp.get("spec") or {}).get("paused"):
            paused.append(group.pool_name)
            continue
        if (mcp.get("spec") or {}).get("machineConfigSelector") is None:
            log.warning("the machine config pool %s does not have machine config selector", group.pool_name)
            continue
        custom = custom_policy(group.annotations)
        mc_name = machineconfigs.machine_config_name(name, group.pool_name)
        if custom:
            desired = machineconfigs.desired_machine_config(obj, mcp)
            problem = machineconfigs.labels_problem(mc_name, desired["metadata"]["labels"], mcps)
            if problem:
                return Step.degraded(Reason.INTERNAL_ERROR, f"failed to sync machine configs: {problem}")
            ctx.api.apply(desired)
        elif mc_name in existing:
            log.info("deleting MachineConfig %s: its node group does not ask for the custom policy", mc_name)
            ctx.api.delete(MACHINECONFIG, mc_name)
        if not pending and not machineconfigs.pool_updated(name, mcp, custom):
            pending = group.pool_name
    status["machineconfigpools"] = [{"name": g.pool_name} for g in groups if g.pool_name in by_name]
    generation = obj["metadata"].get("generation", 0)
    status["conditions"] = conditions.set_extra(
        status.get("conditions") or [],
        Type.MCP_PAUSED,
        bool(paused),
        generation,
        now(),
        machineconfigs.paused_message(paused),
    )
    if pending:
        return Step.progressing(Reason.MCP_UPDATING, f"{pending} is updating")
    return None


def _kubeletconfig_configs(ctx: Context, name: str) -> dict[str, str]:
    """Pool -> ``config.yaml`` of the exporter ConfigMaps a KubeletConfig controls (upstream: the
    KubeletConfig controller writes them, this one only hashes them into the DaemonSets)."""
    configs: dict[str, str] = {}
    for cm in ctx.api.list(CONFIGMAP, ctx.namespace, {naming.RTE_OPERATOR_NAME_LABEL: name}):
        if kubeletconfigcontroller.controlling_kubeletconfig(cm) is None:
            continue
        pool = (cm["metadata"].get("labels") or {}).get(naming.RTE_POOL_LABEL)
        if pool:
            configs[pool] = (cm.get("data") or {}).get(naming.RTE_CONFIG_KEY, "")
    return configs


def _ensure_metrics_secret(ctx: Context, obj: Mapping[str, Any]) -> None:
    """The exporters' metrics certificate: made once, kept while it exists."""
    if ctx.api.get(SECRET, naming.RTE_METRICS_SECRET, ctx.namespace) is not None:
        return
    cert, key = certificates.self_signed(f"resource-topology-exporter.{ctx.namespace}.svc")
    meta = rtemanifests.owned_metadata(obj, naming.RTE_METRICS_SECRET, ctx.namespace)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta,
        "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()},
    }
    ctx.api.create(secret)


def _delete_stale(ctx: Context, name: str, desired: Sequence[Mapping[str, Any]]) -> None:
    """Exporter DaemonSets and ConfigMaps of node groups that are gone."""
    wanted = {(m["kind"], m["metadata"]["name"]) for m in desired}
    for k in (DAEMONSET, CONFIGMAP):
        for live in ctx.api.list(k, ctx.namespace, _owner_labels(name)):
            if kubeletconfigcontroller.controlling_kubeletconfig(live) is not None:
                continue  # the KubeletConfig controller's, garbage-collected with its KubeletConfig
            if (k.kind, live["metadata"]["name"]) not in wanted:
                log.info("deleting stale %s %s/%s", k.kind, ctx.namespace, live["metadata"]["name"])
                ctx.api.delete(k, live["metadata"]["name"], ctx.namespace)


def reconcile(ctx: Context, name: str) -> Step | None:
    """One reconciliation of the NUMAResourcesOperator ``name``; its resulting step (None: skipped)."""
    return reconcile_cr(ctx, RESOURCE, name, lambda obj, status: _sync(ctx, obj, status))


def cleanup(ctx: Context, name: str) -> None:
    """Delete every object the NUMAResourcesOperator ``name`` owns."""
    with ctx.lock(naming.NROP_KIND, name):
        delete_owned(ctx, OWNED, _owner_labels(name))


def register(registry: kopf.OperatorRegistry, ctx: Context) -> None:
    """The kopf handlers of this controller."""
    register_cr_controller(
        registry, prefix="nrop", plural=naming.NROP_PLURAL, kind_name=naming.NROP_KIND,
        reconcile=lambda name: reconcile(ctx, name), cleanup=lambda name: cleanup(ctx, name),
        owned=WATCHED,
    )  # fmt: skip

    if ctx.platform is Platform.OPENSHIFT:
        # upstream's mcpToNUMAResourceOperator: a pool's change (its roll-out among them)
        # reconciles the NUMAResourcesOperators at once instead of at the next resync
        @kopf.on.event(
            "machineconfiguration.openshift.io", "v1", "machineconfigpools", id="nrop-mcps", registry=registry
        )
        def mcp_event(**_: Any) -> None:
            for nrop in ctx.api.list(NROP):
                reconcile(ctx, nrop["metadata"]["name"])

    # The exporter ConfigMaps, whoever controls them (this controller or a KubeletConfig): their
    # content is hashed into the DaemonSets (upstream's ``configMapToNUMAResourceOperator``).
    @kopf.on.event(
        "", "v1", "configmaps", id="nrop-rte-configmaps",
        labels={naming.RTE_OPERATOR_NAME_LABEL: kopf.PRESENT}, registry=registry,
    )  # fmt: skip
    def rte_configmap_event(labels: Mapping[str, str], **_: Any) -> None:
        reconcile(ctx, labels[naming.RTE_OPERATOR_NAME_LABEL])
