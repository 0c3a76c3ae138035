"""What a user applies to install the operator: CRDs, namespace, RBAC and the Deployment.

Pure: :func:`install_manifests` renders plain dicts (``numaresources-operator render``
prints them as a YAML stream for ``kubectl apply -f -``). The operator's ClusterRole
holds every permission it grants its operands (exporters and scheduler), as RBAC's
escalation check requires on a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrop.api import crds
from nrop.api.images import DEFAULT_IMAGE
from nrop.operator.decisions import naming
from nrop.operator.placement import control_plane_placement

__all__ = ["OPERATOR_NAMESPACE_RULES", "OPERATOR_RULES", "install_manifests", "operator_deployment"]

Manifest = dict[str, Any]

_ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
_READ = ["get", "list", "watch"]

#: The operator's ClusterRole rules.
OPERATOR_RULES: list[Manifest] = [
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": _ALL},
    {
        "apiGroups": [naming.GROUP],
        "resources": [
            naming.NROP_PLURAL,
            f"{naming.NROP_PLURAL}/status",
            f"{naming.NROP_PLURAL}/finalizers",
            naming.NRS_PLURAL,
            f"{naming.NRS_PLURAL}/status",
            f"{naming.NRS_PLURAL}/finalizers",
        ],
        "verbs": _ALL,
    },
    {"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"], "verbs": _ALL},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": [*_READ, "patch"]},
    {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": _READ},
    {"apiGroups": [""], "resources": ["pods"], "verbs": [*_READ, "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": [""], "resources": ["pods/binding", "bindings"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts", "services"], "verbs": _ALL},
    # the secondary scheduler's role reads them: whoever grants a permission must hold it
    {"apiGroups": [""], "resources": ["replicationcontrollers"], "verbs": _READ},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": _ALL},
    {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments"], "verbs": _ALL},
    {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": _READ},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _ALL},
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
        "verbs": _ALL,  # no escalate/bind: the operator holds every permission it grants its operands
    },
    {
        "apiGroups": ["machineconfiguration.openshift.io"],
        "resources": ["machineconfigpools", "kubeletconfigs"],
        "verbs": _READ,
    },
    # on OpenShift: the exporters' custom SELinux policy MachineConfigs
    {"apiGroups": ["machineconfiguration.openshift.io"], "resources": ["machineconfigs"], "verbs": _ALL},
    # the cluster's TLS security profile (upstream's SecurityProfileWatcher)
    {"apiGroups": ["config.openshift.io"], "resources": ["apiservers"], "verbs": _READ},
    # the platform detection (ClusterVersions, then the Infrastructure's control plane topology)
    {
        "apiGroups": ["config.openshift.io"],
        "resources": ["clusterversions", "infrastructures"],
        "verbs": _READ,
    },
    # the exporter ConfigMaps a KubeletConfig controls carry a blocking owner reference to it
    {
        "apiGroups": ["machineconfiguration.openshift.io"],
        "resources": ["kubeletconfigs/finalizers"],
        "verbs": ["update"],
    },
]


#: The operator's rights in its own namespace only: the exporters' metrics Secret it creates there.
OPERATOR_NAMESPACE_RULES: list[Manifest] = [{"apiGroups": [""], "resources": ["secrets"], "verbs": _ALL}]


def operator_deployment(namespace: str, image: str, env: Mapping[str, str] | None = None) -> Manifest:
    """The operator's Deployment: one replica of ``numaresources-operator`` from ``image``."""
    variables: list[Manifest] = [
        {"name": naming.ENV_NAMESPACE, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": naming.ENV_POD_IP, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": naming.ENV_POD_NAME, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": naming.ENV_OPERATOR_IMAGE, "value": image},
    ]
    variables += [{"name": k, "value": v} for k, v in sorted((env or {}).items())]
    probe = {
        "httpGet": {"path": "/healthz", "port": naming.PROBES_PORT},
        "periodSeconds": 5,
        "failureThreshold": 6,
    }
    container = {
        "name": naming.OPERATOR_CONTAINER,
        "image": image,
        "command": ["numaresources-operator"],
        "args": [
            "--namespace=$(NAMESPACE)",
            f"--metrics-bind-address=$(POD_IP):{naming.METRICS_PORT}",
            f"--health-probe-bind-address=$(POD_IP):{naming.PROBES_PORT}",
        ],
        "env": variables,
        "ports": [
            {"name": "metrics", "containerPort": naming.METRICS_PORT, "protocol": "TCP"},
            {"name": "probes", "containerPort": naming.PROBES_PORT, "protocol": "TCP"},
        ],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "livenessProbe": {**probe, "initialDelaySeconds": 5},
        "readinessProbe": {**probe, "periodSeconds": 2},
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod_labels = {**naming.OPERATOR_POD_LABELS, **naming.OPERATOR_LABELS}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": naming.OPERATOR_NAME,
            "namespace": namespace,
            "labels": dict(naming.OPERATOR_LABELS),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(naming.OPERATOR_LABELS)},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "serviceAccountName": naming.OPERATOR_NAME,
                    "terminationGracePeriodSeconds": 10,
                    "containers": [container],
                    **control_plane_placement(),
                },
            },
        },
    }


def install_manifests(
    namespace: str = naming.NAMESPACE, image: str = DEFAULT_IMAGE, env: Mapping[str, str] | None = None
) -> list[Manifest]:
    """Everything ``kubectl apply`` needs to install the operator, in apply order.

    ``env`` adds variables to the operator's container (``SCHEDULER_IMAGE_VALIDATION``,
    ``SCHEDULER_IMAGE_DIGESTS``, ``EXPORTER_IMAGE_RESTRICTION``).
    """
    labels = dict(naming.OPERATOR_LABELS)
    return [
        crds.load("numaresourcesoperator"),
        crds.load("numaresourcesscheduler"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": naming.OPERATOR_NAME, "namespace": namespace, "labels": labels},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": naming.OPERATOR_NAME, "labels": labels},
            "rules": OPERATOR_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": naming.OPERATOR_NAME, "labels": labels},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": naming.OPERATOR_NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": naming.OPERATOR_NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": naming.OPERATOR_NAME, "namespace": namespace, "labels": labels},
            "rules": OPERATOR_NAMESPACE_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": naming.OPERATOR_NAME, "namespace": namespace, "labels": labels},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": naming.OPERATOR_NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": naming.OPERATOR_NAME, "namespace": namespace}],
        },
        operator_deployment(namespace, image, env),
    ]
