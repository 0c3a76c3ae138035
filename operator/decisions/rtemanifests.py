"""The resource-topology-exporter objects of a NUMAResourcesOperator, rendered from its spec.

Per node group ``<nropName>-<pool>``: a ConfigMap (``config.yaml``: the topology manager
policy and scope of the group's kubelets, the pod excludes) and a DaemonSet running
``resource-topology-exporter`` from the operator's image on the group's nodes, with the
node's ``/sys``, podresources socket and notify directory mounted, at most one exporter pod per
node across the groups (required pod anti-affinity), rolled 25% of the nodes at a time. Shared by all groups:
the ServiceAccount ``rte`` and its least-privilege ClusterRole/Role and bindings.

Every field of a node group's ``config`` maps to exporter flags:

========================== ===============================================================
``infoRefreshMode``        Periodic: ``--sleep-interval=<period>``; Events: ``--sleep-interval=0``
                           and ``--notify-file``; PeriodicAndEvents: both
``infoRefreshPeriod``      the ``--sleep-interval`` of the periodic modes
``infoRefreshPause``       Enabled: ``--no-publish``
``podsFingerprinting``     ``--pods-fingerprint`` and ``--pods-fingerprint-method``
``tolerations``            the DaemonSet pods' tolerations (replacing the default none)
``spec.logLevel``          ``-v``
========================== ===============================================================

With metrics served over TLS (``--metrics-mode=httptls``, the default), the cluster's TLS
security profile, when it has one (``APIServer/cluster``, :mod:`nrop.api.tlsprofiles`), adds
``--metrics-tls-min-version`` and ``--metrics-tls-cipher-suites`` as upstream's
``DaemonSetArgs`` does: each only when its value is not empty, so a TLS 1.3 minimum gives no
cipher flag.

Pure: plain dicts out; the kubelet settings of each group come in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from nrop.api.durations import format_duration, parse_duration
from nrop.api.tlsprofiles import Settings
from nrop.operator.decisions import naming
from nrop.operator.decisions.nropspec import NodeGroup

__all__ = [
    "CONFIG_HASH_ANNOTATION",
    "DEFAULT_METRICS_MODE",
    "LOG_LEVELS",
    "KubeletSettings",
    "exporter_args",
    "owned_metadata",
    "owner_references",
    "render",
    "rte_config",
]

Manifest = dict[str, Any]

#: ``spec.logLevel`` -> klog verbosity (upstream's ``LogLevelToKlog``).
LOG_LEVELS: Final = {"": 2, "Normal": 2, "Debug": 4, "Trace": 6, "TraceAll": 8}
CONFIG_HASH_ANNOTATION: Final = "nodetopology.openshift.io/rte-config-hash"
#: Upstream serves the exporters' metrics over TLS (operator env ``EXPORTER_METRICS_MODE`` overrides).
DEFAULT_METRICS_MODE: Final = "httptls"
POOL_LABEL: Final = "nodetopology.openshift.io/pool"
_CONFIG_DIR: Final = "/etc/resource-topology-exporter"
_SYS: Final = "/host-sys"
_PODRESOURCES: Final = "/host-podresources"
_NOTIFY_DIR: Final = "/run/rte"
_PFP_DIR: Final = "/run/pfpstatus"
_CERTS_DIR: Final = "/etc/secrets/rte"
_HOSTNAME: Final = "kubernetes.io/hostname"


@dataclass(frozen=True)
class KubeletSettings:
    """What the exporters of a group publish about their kubelets."""

    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"


def owner_references(nrop: Mapping[str, Any]) -> list[Manifest]:
    """The controller reference of an object ``nrop`` owns."""
    meta = nrop["metadata"]
    return [
        {
            "apiVersion": naming.API_VERSION,
            "kind": naming.NROP_KIND,
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _labels(nrop: Mapping[str, Any]) -> dict[str, str]:
    return {naming.OWNER_KIND_LABEL: naming.NROP_KIND, naming.OWNER_NAME_LABEL: nrop["metadata"]["name"]}


def owned_metadata(nrop: Mapping[str, Any], name: str, namespace: str) -> Manifest:
    """Metadata of an object ``nrop`` owns: its owner labels and controller reference."""
    return {
        "name": name,
        "namespace": namespace,
        "labels": _labels(nrop),
        "ownerReferences": owner_references(nrop),
    }


def rte_config(kubelet: KubeletSettings, pod_excludes: Sequence[Mapping[str, str]]) -> str:
    """The exporter's ``config.yaml`` (upstream's extra config format)."""
    doc: dict[str, Any] = {
        "kubelet": {
            "topologyManagerPolicy": kubelet.topology_manager_policy,
            "topologyManagerScope": kubelet.topology_manager_scope,
        }
    }
    if pod_excludes:
        doc["podExclude"] = [
            {"namespacePattern": p.get("namespace") or "*", "namePattern": p.get("name") or "*"}
            for p in pod_excludes
        ]
    return yaml.safe_dump(doc, sort_keys=True)


def exporter_args(
    config: Mapping[str, Any],
    log_level: str,
    metrics_mode: str = DEFAULT_METRICS_MODE,
    metrics_tls: Settings | None = None,
) -> list[str]:
    """The exporter's command-line flags for a group's effective config.

    ``metrics_tls``: the settings of the cluster's TLS profile (None: no profile, no TLS flags).
    """
    mode = config["infoRefreshMode"]
    period = format_duration(parse_duration(str(config["infoRefreshPeriod"])))
    args = [
        f"-v={LOG_LEVELS.get(log_level, 2)}",
        f"--sysfs={_SYS}",
        f"--podresources-socket=unix://{_PODRESOURCES}/kubelet.sock",
        f"--config={_CONFIG_DIR}/{naming.RTE_CONFIG_KEY}",
        f"--sleep-interval={period if mode != 'Events' else '0s'}",
    ]
    if mode in ("Events", "PeriodicAndEvents"):
        args.append(f"--notify-file={_NOTIFY_DIR}/notify")
    fingerprinting = config["podsFingerprinting"]
    if fingerprinting == "Disabled":
        args.append("--pods-fingerprint=false")
    else:
        method = "all" if fingerprinting == "Enabled" else "with-exclusive-resources"
        args += [
            "--pods-fingerprint=true",
            f"--pods-fingerprint-method={method}",
            f"--pods-fingerprint-status-file={_PFP_DIR}/dump.json",
        ]
    if config["infoRefreshPause"] == "Enabled":
        args.append("--no-publish")
    # As upstream: re-read the kubelet's allocatable resources on every scan, so device plugins
    # registered after the exporter started (the suite's numacell) show up in the NRT.
    args += [
        "--refresh-node-resources",
        "--add-nrt-owner=false",
        "--podreadiness=true",
        f"--metrics-mode={metrics_mode}",
        f"--metrics-port={naming.RTE_METRICS_PORT}",
    ]
    if metrics_mode == "httptls":
        args.append(f"--metrics-certs-dir={_CERTS_DIR}")
        if metrics_tls is not None and metrics_tls.min_version:
            args.append(f"--metrics-tls-min-version={metrics_tls.min_version}")
        if metrics_tls is not None and metrics_tls.cipher_suites:
            args.append(f"--metrics-tls-cipher-suites={metrics_tls.cipher_suites}")
    return args


def _field_env(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _tolerations(config: Mapping[str, Any]) -> list[Manifest]:
    result = []
    for given in config.get("tolerations") or []:
        tol = {k: v for k, v in given.items() if v not in (None, "")}
        if tol.get("key") and "operator" not in tol:
            tol["operator"] = "Equal"
        result.append(tol)
    return result


def _daemonset(
    nrop: Mapping[str, Any],
    group: NodeGroup,
    namespace: str,
    image: str,
    config_text: str,
    metrics_mode: str,
    metrics_tls: Settings | None,
) -> Manifest:
    name = f"{nrop['metadata']['name']}-{group.pool_name}"
    pod_labels = {**naming.RTE_POD_LABELS, POOL_LABEL: group.pool_name}
    digest = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    container = {
        "name": naming.RTE_CONTAINER,
        "image": image,
        "command": ["resource-topology-exporter"],
        "args": exporter_args(
            group.config, nrop.get("spec", {}).get("logLevel") or "Normal", metrics_mode, metrics_tls
        ),
        "env": [
            _field_env("NODE_NAME", "spec.nodeName"),
            _field_env("REFERENCE_NAMESPACE", "metadata.namespace"),
            _field_env("REFERENCE_POD_NAME", "metadata.name"),
            _field_env("METRICS_ADDRESS", "status.podIP"),
        ],
        "ports": [{"name": "metrics-port", "containerPort": naming.RTE_METRICS_PORT, "protocol": "TCP"}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        "volumeMounts": [
            {"name": "host-sys", "mountPath": _SYS, "readOnly": True},
            {"name": "host-podresources", "mountPath": _PODRESOURCES},
            {"name": "host-run-rte", "mountPath": _NOTIFY_DIR},
            {"name": "rte-config", "mountPath": _CONFIG_DIR},
            {"name": "runpfpstatus", "mountPath": _PFP_DIR},
        ],
    }
    spec: Manifest = {
        "serviceAccountName": naming.RTE_ROLE_NAME,
        "nodeSelector": dict(group.node_selector),
        "containers": [container],
        "volumes": [
            {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
            {
                "name": "host-podresources",
                "hostPath": {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"},
            },
            {"name": "host-run-rte", "hostPath": {"path": "/run/rte", "type": "DirectoryOrCreate"}},
            {"name": "rte-config", "configMap": {"name": name, "optional": True}},
            {"name": "runpfpstatus", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
        ],
    }
    if metrics_mode == "httptls":
        container["volumeMounts"].append({"name": "metrics-certs", "mountPath": _CERTS_DIR, "readOnly": True})
        spec["volumes"].append({"name": "metrics-certs", "secret": {"secretName": naming.RTE_METRICS_SECRET}})
    tolerations = _tolerations(group.config)
    if tolerations:
        spec["tolerations"] = tolerations
    # Upstream's DaemonSetAffinitySettings: one exporter per node whatever the node group, so
    # the second of two groups selecting a node keeps its pod pending there.
    spec["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": dict(naming.RTE_POD_LABELS)}, "topologyKey": _HOSTNAME}
            ]
        }
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**_labels(nrop), **naming.RTE_POD_LABELS},
            "ownerReferences": owner_references(nrop),
        },
        "spec": {
            "selector": {"matchLabels": pod_labels},
            # Upstream's DaemonSetRolloutSettings: exporters are stateless and quick to start.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": pod_labels, "annotations": {CONFIG_HASH_ANNOTATION: digest}},
                "spec": spec,
            },
        },
    }


def _shared(nrop: Mapping[str, Any], namespace: str) -> list[Manifest]:
    labels = _labels(nrop)
    name = naming.RTE_ROLE_NAME
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": owner_references(nrop),
            },
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels, "ownerReferences": owner_references(nrop)},
            "rules": [
                {
                    "apiGroups": ["topology.node.k8s.io"],
                    "resources": ["noderesourcetopologies"],
                    "verbs": ["create", "update", "patch", "get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels, "ownerReferences": owner_references(nrop)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subject,
        },
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": owner_references(nrop),
            },
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "update", "patch"]},
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": owner_references(nrop),
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject,
        },
    ]


def render(
    nrop: Mapping[str, Any],
    groups: Sequence[NodeGroup],
    kubelets: Mapping[str, KubeletSettings],
    namespace: str,
    image: str,
    metrics_mode: str = DEFAULT_METRICS_MODE,
    external: Mapping[str, str] | None = None,
    *,
    metrics_tls: Settings | None = None,
) -> list[Manifest]:
    """Every exporter object of ``nrop`` (``kubelets`` maps a pool name to its kubelets' settings).

    ``metrics_mode`` is the exporters' ``--metrics-mode`` (operator env ``EXPORTER_METRICS_MODE``).
    ``external`` maps a pool to the ``config.yaml`` of a ConfigMap someone else (a KubeletConfig)
    controls: that pool gets no ConfigMap here, and its DaemonSet hashes that text.
    ``metrics_tls``: the exporters' metrics TLS settings from the cluster's TLS profile.
    """
    objects = _shared(nrop, namespace) if groups else []
    excludes = nrop.get("spec", {}).get("podExcludes") or []
    for group in groups:
        name = f"{nrop['metadata']['name']}-{group.pool_name}"
        if external is not None and group.pool_name in external:
            objects.append(
                _daemonset(
                    nrop, group, namespace, image, external[group.pool_name], metrics_mode, metrics_tls
                )
            )
            continue
        text = rte_config(kubelets.get(group.pool_name, KubeletSettings()), excludes)
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {
                        **_labels(nrop),
                        naming.RTE_OPERATOR_NAME_LABEL: nrop["metadata"]["name"],
                        naming.RTE_POOL_LABEL: group.pool_name,
                    },
                    "ownerReferences": owner_references(nrop),
                },
                "data": {naming.RTE_CONFIG_KEY: text},
            }
        )
        objects.append(_daemonset(nrop, group, namespace, image, text, metrics_mode, metrics_tls))
    return objects
