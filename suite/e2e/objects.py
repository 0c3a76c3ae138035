"""Builders of the suite's test objects (upstream ``test/internal/objects``), as plain manifests.

Test pods run the pause image with command ``/pause`` and
``terminationGracePeriodSeconds: 0``; Deployments, DaemonSets, ReplicaSets and Jobs wrap
such a pod spec. :func:`pin_pod_to` pins a pod to one NUMA zone of one node the way
upstream does: ``nodeSelector kubernetes.io/hostname=<node>`` plus
``limits[kni.node/numacellNN] = 1`` (the numacell device plugin exposes that resource on
zone NN only). Resource lists and their arithmetic are in :mod:`nrop.suite.e2e.resourcelist`,
re-exported here.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from nrop.api import qos
from nrop.api.images import PAUSE_IMAGE
from nrop.api.quantity import Quantity
from nrop.suite.e2e.resourcelist import (
    ResourceList,
    accumulate,
    add,
    drop_host_level,
    from_container_limits,
    from_container_requests,
    from_guaranteed_pod,
    from_replicaset,
    highest,
    of,
    sub,
    to_manifest,
    to_string,
)

__all__ = [
    "HOSTNAME_LABEL",
    "NAMESPACE_LABELS",
    "NROP_NAME",
    "NROSCHED_NAME",
    "NUMACELL_RESOURCE_NAMESPACE",
    "PAUSE_COMMAND",
    "Manifest",
    "ResourceList",
    "accumulate",
    "add",
    "drop_host_level",
    "dump_pod_resource_requirements",
    "from_container_limits",
    "from_container_requests",
    "from_guaranteed_pod",
    "from_replicaset",
    "highest",
    "new_namespace",
    "new_test_daemonset",
    "new_test_daemonset_with_pod_spec",
    "new_test_deployment",
    "new_test_deployment_with_pod_spec",
    "new_test_job",
    "new_test_pod_pause",
    "new_test_replicaset_with_pod_spec",
    "numacell_resource_name",
    "of",
    "pause_pod_spec",
    "pin_pod_to",
    "pin_pod_to_node",
    "pod_qos",
    "randomize_name",
    "set_resources",
    "sub",
    "to_manifest",
    "to_string",
    "zone_id_from_name",
]

#: The NUMAResourcesOperator and NUMAResourcesScheduler the suite works with (upstream's
#: ``objects.NROName()`` and ``NROSchedObjectKey``): both are singletons by these names.
NROP_NAME = "numaresourcesoperator"
NROSCHED_NAME = "numaresourcesscheduler"

Manifest = dict[str, Any]

PAUSE_COMMAND = "/pause"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NUMACELL_RESOURCE_NAMESPACE = "kni.node"
#: Labels of every test namespace (upstream ``NamespaceLabels``).
NAMESPACE_LABELS: Mapping[str, str] = {
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
    "security.openshift.io/scc.podSecurityLabelSync": "false",
}


def randomize_name(base_name: str, rng: random.Random | None = None) -> str:
    """``<base>-<0..9999>`` (upstream ``RandomizeName``; deliberately not ``generateName``)."""
    return f"{base_name}-{(rng or random).randrange(10000)}"


def numacell_resource_name(zone_id: int) -> str:
    """``kni.node/numacellNN``: NN is the zone id on two digits."""
    return f"{NUMACELL_RESOURCE_NAMESPACE}/numacell{zone_id:02d}"


def zone_id_from_name(zone_name: str) -> int:
    """``node-1`` -> 1; a bare number is accepted too (upstream ``GetZoneIDFromName``)."""
    text = zone_name.removeprefix("node-")
    return int(text, 10)


def new_namespace(name: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(NAMESPACE_LABELS)},
    }


def _pause_container(name: str, image: str | None) -> Manifest:
    return {"name": name, "image": image or PAUSE_IMAGE, "command": [PAUSE_COMMAND]}


def pause_pod_spec(name: str, containers: int = 1, *, image: str | None = None) -> Manifest:
    """A pod spec of ``containers`` pause containers named ``<name>-cnt-<i>``."""
    return {
        "terminationGracePeriodSeconds": 0,
        "containers": [_pause_container(f"{name}-cnt-{idx}", image) for idx in range(containers)],
    }


def new_test_pod_pause(
    namespace: str, name: str, *, containers: int = 1, image: str | None = None
) -> Manifest:
    """Upstream ``NewTestPodPause``/``NewTestPodPauseMultiContainer``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": pause_pod_spec(name, containers, image=image),
    }


def set_resources(
    pod: Manifest,
    *,
    requests: Mapping[str, Quantity | str | int] | None = None,
    limits: Mapping[str, Quantity | str | int] | None = None,
    container: int = 0,
) -> Manifest:
    """Set a container's requests and/or limits (values of any quantity form); returns ``pod``."""
    spec = pod["spec"] if "containers" in pod.get("spec", {}) else pod["spec"]["template"]["spec"]
    resources = spec["containers"][container].setdefault("resources", {})
    if requests is not None:
        resources["requests"] = to_manifest(of(requests))
    if limits is not None:
        resources["limits"] = to_manifest(of(limits))
    return pod


def _workload(
    kind: str,
    api_version: str,
    namespace: str,
    name: str,
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    pod_spec: Mapping[str, Any],
    replicas: int | None = None,
) -> Manifest:
    """A workload of ``kind`` whose pods carry ``pod_labels`` (its selector); ``replicas`` if it has any."""
    spec = copy.deepcopy(dict(pod_spec))
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    workload_spec: Manifest = {
        "selector": {"matchLabels": dict(pod_labels)},
        "template": {"metadata": {"labels": dict(pod_labels)}, "spec": spec},
    }
    if replicas is not None:
        workload_spec["replicas"] = replicas
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": workload_spec,
    }


def _single_container_spec(name: str, image: str, command: Sequence[str], args: Sequence[str]) -> Manifest:
    container: Manifest = {"name": f"{name}-cnt", "image": image, "command": list(command)}
    if args:
        container["args"] = list(args)
    return {"terminationGracePeriodSeconds": 0, "containers": [container], "restartPolicy": "Always"}


def new_test_deployment_with_pod_spec(
    replicas: int,
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    namespace: str,
    name: str,
    pod_spec: Mapping[str, Any],
) -> Manifest:
    return _workload("Deployment", "apps/v1", namespace, name, pod_labels, node_selector, pod_spec, replicas)


def new_test_deployment(
    replicas: int,
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    namespace: str,
    name: str,
    image: str = PAUSE_IMAGE,
    command: Sequence[str] = (PAUSE_COMMAND,),
    args: Sequence[str] = (),
) -> Manifest:
    spec = _single_container_spec(name, image, command, args)
    return new_test_deployment_with_pod_spec(replicas, pod_labels, node_selector, namespace, name, spec)


def new_test_daemonset_with_pod_spec(
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    namespace: str,
    name: str,
    pod_spec: Mapping[str, Any],
) -> Manifest:
    return _workload("DaemonSet", "apps/v1", namespace, name, pod_labels, node_selector, pod_spec)


def new_test_daemonset(
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    namespace: str,
    name: str,
    image: str = PAUSE_IMAGE,
    command: Sequence[str] = (PAUSE_COMMAND,),
    args: Sequence[str] = (),
) -> Manifest:
    spec = _single_container_spec(name, image, command, args)
    return new_test_daemonset_with_pod_spec(pod_labels, node_selector, namespace, name, spec)


def new_test_replicaset_with_pod_spec(
    replicas: int,
    pod_labels: Mapping[str, str],
    node_selector: Mapping[str, str] | None,
    namespace: str,
    name: str,
    pod_spec: Mapping[str, Any],
) -> Manifest:
    return _workload("ReplicaSet", "apps/v1", namespace, name, pod_labels, node_selector, pod_spec, replicas)


def new_test_job(
    namespace: str,
    name: str,
    pod_spec: Mapping[str, Any],
    *,
    parallelism: int = 1,
    completions: int = 1,
    pod_labels: Mapping[str, str] | None = None,
) -> Manifest:
    """A Job of ``pod_spec`` (``restartPolicy`` defaults to ``Never``)."""
    spec = copy.deepcopy(dict(pod_spec))
    spec.setdefault("restartPolicy", "Never")
    template: Manifest = {"spec": spec}
    if pod_labels:
        template["metadata"] = {"labels": dict(pod_labels)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"parallelism": parallelism, "completions": completions, "template": template},
    }


def pin_pod_to_node(pod: Manifest, node_name: str) -> Manifest:
    """Replace the node selector with ``kubernetes.io/hostname=<node>``; returns ``pod``."""
    pod["spec"]["nodeSelector"] = {HOSTNAME_LABEL: node_name}
    return pod


def pin_pod_to(pod: Manifest, node_name: str, zone_id: int | str) -> Manifest:
    """Pin to zone ``zone_id`` (an id or a ``node-N`` name) of ``node_name``; returns ``pod``.

    The first container gets ``limits[kni.node/numacellNN] = 1`` (upstream ``pinPodTo``).
    """
    zid = zone_id if isinstance(zone_id, int) else zone_id_from_name(zone_id)
    resources = pod["spec"]["containers"][0].setdefault("resources", {})
    resources.setdefault("limits", {})[numacell_resource_name(zid)] = "1"
    return pin_pod_to_node(pod, node_name)


def pod_qos(pod: Mapping[str, Any]) -> str:
    """The pod's QoS class: ``status.qosClass`` once the API server set it, else computed from its spec."""
    return str((pod.get("status") or {}).get("qosClass") or qos.pod_qos_class(pod["spec"]))


def dump_pod_resource_requirements(pod: Mapping[str, Any]) -> str:
    """One line per container with its limits (upstream ``DumpPODResourceRequirements``)."""
    meta = pod.get("metadata", {})
    lines = [f"resource requirements for pod {meta.get('namespace')}/{meta.get('name')}:"]
    spec = pod.get("spec", {})
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        limits: ResourceList = of((container.get("resources") or {}).get("limits") or {})
        lines.append(f"+- container {container.get('name')!r}: {to_string(limits)}")
    lines.append("---")
    return "\n".join(lines)
