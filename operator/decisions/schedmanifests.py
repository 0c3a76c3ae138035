"""The secondary scheduler objects of a NUMAResourcesScheduler, rendered from its (normalized) spec.

ServiceAccount ``secondary-scheduler``, ClusterRole/Binding ``topology-aware-scheduler``,
a Role/RoleBinding for the leader-election Lease, the ConfigMap
``topo-aware-scheduler-config`` holding a ``KubeSchedulerConfiguration`` (one profile with
``NodeResourceTopologyMatch`` and its args, as upstream scheduler-plugins reads them) and
the Deployment ``secondary-scheduler``: ``nrop-scheduler`` from the project's image (any
other image runs ``/bin/kube-scheduler``), spread by hostname, preferring control-plane
nodes, leader election when it has more than one replica.

Spec to configuration:

======================== =================================================================
``schedulerName``        ``profiles[0].schedulerName``
``cacheResyncPeriod``    ``cacheResyncPeriodSeconds`` (0: Reserve disabled, no cache)
``cacheResyncDetection`` ``cache.foreignPodsDetect``: Relaxed OnlyExclusiveResources,
                         Aggressive All (``resyncMethod`` Autodetect)
``schedulerInformer``    ``cache.informerMode``
``scoringStrategy``      ``scoringStrategy`` (type and resources)
``preemptionMode``       ``preemptionMode: Enabled`` only when enabled
``logLevel``             ``-v`` of the container
``replicas``             Deployment replicas; > 1 enables leader election
======================== =================================================================

Pure: plain dicts out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import yaml

from nrop.api.images import is_own_image
from nrop.operator.decisions import naming
from nrop.operator.decisions.nrsspec import resync_seconds
from nrop.operator.decisions.rtemanifests import LOG_LEVELS
from nrop.operator.placement import control_plane_placement

__all__ = ["CONFIG_HASH_ANNOTATION", "render", "scheduler_config"]

Manifest = dict[str, Any]

CONFIG_HASH_ANNOTATION: Final = "nodetopology.openshift.io/scheduler-config-hash"
_CONFIG_DIR: Final = "/etc/kubernetes"
_PLUGIN: Final = "NodeResourceTopologyMatch"


def scheduler_config(spec: Mapping[str, Any], namespace: str, replicas: int) -> dict[str, Any]:
    """The ``KubeSchedulerConfiguration`` of a normalized spec."""
    period = resync_seconds(spec)
    strategy: dict[str, Any] = {"type": spec["scoringStrategy"]["type"]}
    resources = [
        {"name": r["name"], "weight": int(r.get("weight") or 1)}
        for r in spec["scoringStrategy"].get("resources") or []
    ]
    if resources:
        strategy["resources"] = resources
    args: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "NodeResourceTopologyMatchArgs",
        "scoringStrategy": strategy,
        "cache": {
            "foreignPodsDetect": "OnlyExclusiveResources"
            if spec["cacheResyncDetection"] == "Relaxed"
            else "All",
            "resyncMethod": "Autodetect",
            "informerMode": spec["schedulerInformer"],
        },
    }
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": _PLUGIN}]}}
    if period > 0:
        args["cacheResyncPeriodSeconds"] = period
    else:
        plugins["reserve"] = {"disabled": [{"name": _PLUGIN}]}
    if spec.get("preemptionMode") == "Enabled":
        args["preemptionMode"] = "Enabled"
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": replicas > 1,
            "resourceLock": "leases",
            "resourceName": naming.SCHEDULER_LEASE,
            "resourceNamespace": namespace,
        },
        "profiles": [
            {
                "schedulerName": spec["schedulerName"],
                "plugins": plugins,
                "pluginConfig": [{"name": _PLUGIN, "args": args}],
            }
        ],
    }


def _owner(nrs: Mapping[str, Any]) -> list[Manifest]:
    meta = nrs["metadata"]
    return [
        {
            "apiVersion": naming.API_VERSION,
            "kind": naming.NRS_KIND,
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _meta(nrs: Mapping[str, Any], name: str, namespace: str | None) -> Manifest:
    meta: Manifest = {
        "name": name,
        "labels": {
            naming.OWNER_KIND_LABEL: naming.NRS_KIND,
            naming.OWNER_NAME_LABEL: nrs["metadata"]["name"],
        },
        "ownerReferences": _owner(nrs),
    }
    if namespace:
        meta["namespace"] = namespace
    return meta


def _deployment(
    nrs: Mapping[str, Any], spec: Mapping[str, Any], namespace: str, replicas: int, config_text: str
) -> Manifest:
    image = spec["imageSpec"]
    command = ["nrop-scheduler"] if is_own_image(image) else ["/bin/kube-scheduler"]
    labels = dict(naming.SCHEDULER_POD_LABELS)
    container = {
        "name": naming.SCHEDULER_CONTAINER,
        "image": image,
        "command": command,
        "args": [
            f"--config={_CONFIG_DIR}/{naming.SCHEDULER_CONFIG_KEY}",
            f"-v={LOG_LEVELS.get(spec['logLevel'], 2)}",
        ],
        "resources": {"requests": {"cpu": "150m", "memory": "500Mi"}},
        "volumeMounts": [
            {"name": "etckubernetes", "mountPath": _CONFIG_DIR},
            {"name": "runpfpstatus", "mountPath": "/run/pfpstatus"},
        ],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod_spec = {
        "serviceAccountName": naming.SCHEDULER_DEPLOYMENT,
        "containers": [container],
        "volumes": [
            {"name": "etckubernetes", "configMap": {"name": naming.SCHEDULER_CONFIGMAP}},
            {"name": "runpfpstatus", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        ],
        **control_plane_placement(),
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": dict(labels)},
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
    }
    digest = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            **_meta(nrs, naming.SCHEDULER_DEPLOYMENT, namespace),
            "labels": {**_meta(nrs, "", None)["labels"], **labels},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": {CONFIG_HASH_ANNOTATION: digest}},
                "spec": pod_spec,
            },
        },
    }


def render(nrs: Mapping[str, Any], spec: Mapping[str, Any], namespace: str, replicas: int) -> list[Manifest]:
    """Every scheduler object of ``nrs`` (``spec`` normalized)."""
    rbac = "rbac.authorization.k8s.io/v1"
    sa = naming.SCHEDULER_DEPLOYMENT
    role = naming.SCHEDULER_ROLE_NAME
    subjects = [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]
    read = ["get", "list", "watch"]
    config_text = yaml.safe_dump(scheduler_config(spec, namespace, replicas), sort_keys=False)
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(nrs, sa, namespace)},
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": _meta(nrs, role, None),
            "rules": [
                {
                    "apiGroups": ["topology.node.k8s.io"],
                    "resources": ["noderesourcetopologies"],
                    "verbs": read,
                },
                {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": read},
                {"apiGroups": [""], "resources": ["pods"], "verbs": [*read, "update", "patch", "delete"]},
                {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update", "patch"]},
                {"apiGroups": [""], "resources": ["pods/binding", "bindings"], "verbs": ["create"]},
                {
                    "apiGroups": ["", "events.k8s.io"],
                    "resources": ["events"],
                    "verbs": ["create", "patch", "update"],
                },
                {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": read},
                {"apiGroups": [""], "resources": ["services", "replicationcontrollers"], "verbs": read},
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(nrs, role, None),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects,
        },
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": _meta(nrs, role, namespace),
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch"],
                }
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": _meta(nrs, role, namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": subjects,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(nrs, naming.SCHEDULER_CONFIGMAP, namespace),
            "data": {naming.SCHEDULER_CONFIG_KEY: config_text},
        },
        _deployment(nrs, spec, namespace, replicas, config_text),
    ]
