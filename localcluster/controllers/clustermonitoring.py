"""The in-cluster monitoring an OpenShift cluster comes with, as far as upstream's specs use it:
the ``openshift-monitoring`` namespace and its Prometheus pod.

OpenShift's cluster-monitoring-operator runs Prometheus as the StatefulSet ``prometheus-k8s``
(two replicas) whose pods carry ``app.kubernetes.io/name=prometheus``; upstream's network-policy
specs find one by that label and use it as the peer that scrapes the operator's and the
exporters' metrics. Profiles of the OpenShift flavour get it from :func:`install`: one replica,
a Deployment (the embedded cluster has no StatefulSet controller), running the project's image
with ``nrop-prometheus`` (:mod:`nrop.localcluster.prometheus`), which serves Prometheus'
readiness and health endpoints on the pod's address. Its resource requests are those of the
real ``prometheus`` container, so the node accounts for it as on OpenShift.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nrop.api.images import DEFAULT_IMAGE
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["LABELS", "NAMESPACE", "PORT", "install", "namespace", "prometheus"]

Obj = dict[str, Any]
NAMESPACE = "openshift-monitoring"
#: The labels of OpenShift's ``prometheus-k8s`` pods.
LABELS = {
    "app.kubernetes.io/component": "prometheus",
    "app.kubernetes.io/instance": "k8s",
    "app.kubernetes.io/managed-by": "prometheus-operator",
    "app.kubernetes.io/name": "prometheus",
    "app.kubernetes.io/part-of": "openshift-monitoring",
    "prometheus": "k8s",
}
PORT = 9090
_FIELD_MANAGER = "cluster-monitoring-operator"


def namespace() -> Obj:
    """``openshift-monitoring``, labelled as the cluster monitoring operator's namespace is."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": NAMESPACE,
            "labels": {
                "openshift.io/cluster-monitoring": "true",
                "network.openshift.io/policy-group": "monitoring",
            },
        },
    }


def prometheus(image: str = DEFAULT_IMAGE) -> Obj:
    """The ``prometheus-k8s`` workload: one pod of ``nrop-prometheus`` listening on the pod's address."""
    probe = {"httpGet": {"path": "/-/ready", "port": PORT}, "periodSeconds": 5, "failureThreshold": 3}
    container = {
        "name": "prometheus",
        "image": image,
        "command": ["nrop-prometheus"],
        "args": [f"--web.listen-address=$(POD_IP):{PORT}"],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "web", "containerPort": PORT, "protocol": "TCP"}],
        "readinessProbe": probe,
        "resources": {"requests": {"cpu": "70m", "memory": "1Gi"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "prometheus-k8s", "namespace": NAMESPACE, "labels": dict(LABELS)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {"containers": [container], "terminationGracePeriodSeconds": 1},
            },
        },
    }


def install(server: InProcessAPI, image: str = DEFAULT_IMAGE) -> None:
    """Create the namespace and the Prometheus workload (the controllers and kubelets run it)."""
    opts = WriteOptions(field_manager=_FIELD_MANAGER)
    namespaces = server.registry.lookup("", "v1", "namespaces")
    deployments = server.registry.lookup("apps", "v1", "deployments")
    assert namespaces is not None and deployments is not None
    server.rest.create(namespaces, "", namespace(), opts)
    server.rest.create(deployments, NAMESPACE, prometheus(image), opts)
