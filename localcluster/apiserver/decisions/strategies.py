"""Per-kind write strategies: what create resets and defaults, and which updates bump generation.

These mirror the upstream registry strategies (``PrepareForCreate``,
``PrepareForUpdate``) for the kinds the embedded cluster serves.  Kinds without
an entry here get the generic behaviour of their ``Kind`` (status dropped on
create when there is a status subresource, generation by the kind's rule).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from nrop.api.qos import pod_qos_class
from nrop.localcluster.apiserver.registry import Kind

Obj = dict[str, Any]


def _default(mapping: Obj, key: str, value: Any) -> None:
    if mapping.get(key) is None:
        mapping[key] = value


def _default_container(container: Obj) -> None:
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    image = container.get("image", "")
    if not isinstance(image, str):
        return  # mistyped (YAML's `image: y` is a boolean): validation reports it, defaulting must not crash
    tag = image.rsplit("/", 1)[-1]
    pull = "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
    if "@" in image:
        pull = "IfNotPresent"
    _default(container, "imagePullPolicy", pull)
    resources = container.setdefault("resources", {})
    limits = resources.get("limits") or {}
    requests = resources.get("requests")
    # Upstream defaults requests from limits when requests are absent.
    if limits:
        merged = dict(limits)
        merged.update(requests or {})
        resources["requests"] = merged
    for port in container.get("ports") or ():
        _default(port, "protocol", "TCP")


def default_pod_spec(spec: Obj) -> None:
    _default(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "securityContext", {})
    _default(spec, "schedulerName", "default-scheduler")
    _default(spec, "enableServiceLinks", True)
    _default(spec, "preemptionPolicy", "PreemptLowerPriority")
    for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        _default_container(container)
    if spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for toleration in spec.get("tolerations") or ():
        if toleration.get("operator") is None and toleration.get("key"):
            toleration["operator"] = "Equal"


def _prepare_pod(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    if old is None:
        default_pod_spec(spec)  # spec.priority is the Priority admission plugin's, which runs next
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(spec)}


def _prepare_template(obj: Obj) -> None:
    template = obj.get("spec", {}).get("template")
    if isinstance(template, dict):
        default_pod_spec(template.setdefault("spec", {}))


def _prepare_deployment(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        _default(rolling, "maxUnavailable", "25%")
        _default(rolling, "maxSurge", "25%")
    _prepare_template(obj)
    if old is None:
        obj["status"] = {}


def _prepare_replicaset(obj: Obj, old: Obj | None) -> None:
    _default(obj.setdefault("spec", {}), "replicas", 1)
    _prepare_template(obj)
    if old is None:
        obj["status"] = {"replicas": 0}


def _prepare_daemonset(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    _default(spec, "revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        _default(rolling, "maxUnavailable", 1)
        _default(rolling, "maxSurge", 0)
    _prepare_template(obj)
    if old is None:
        obj["status"] = {
            "currentNumberScheduled": 0,
            "desiredNumberScheduled": 0,
            "numberMisscheduled": 0,
            "numberReady": 0,
        }


def _prepare_job(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    _default(spec, "parallelism", 1)
    _default(spec, "completions", 1)
    _default(spec, "backoffLimit", 6)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    template = spec.setdefault("template", {})
    template_spec = template.setdefault("spec", {})
    _default(template_spec, "restartPolicy", "Never")
    default_pod_spec(template_spec)
    if old is None:
        uid = obj["metadata"]["uid"]
        # The Job controller's selector/labels, as the apiserver defaults them (manualSelector unset).
        if not spec.get("manualSelector"):
            labels = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid}
            labels.update({"batch.kubernetes.io/job-name": obj["metadata"]["name"]})
            labels["job-name"] = obj["metadata"]["name"]
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
            meta = template.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **labels}
        obj["status"] = {}


def _prepare_namespace(obj: Obj, old: Obj | None) -> None:
    meta = obj["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
    if old is None:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}


def _prepare_service(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    _default(spec, "type", "ClusterIP")
    _default(spec, "sessionAffinity", "None")
    _default(spec, "internalTrafficPolicy", "Cluster")
    _default(spec, "ipFamilies", ["IPv4"])
    _default(spec, "ipFamilyPolicy", "SingleStack")
    for port in spec.get("ports") or ():
        _default(port, "protocol", "TCP")
        _default(port, "targetPort", port.get("port"))
    if old is None:
        obj["status"] = {"loadBalancer": {}}


def _prepare_node(obj: Obj, old: Obj | None) -> None:
    obj.setdefault("spec", {})


def _prepare_pdb(obj: Obj, old: Obj | None) -> None:
    if old is None:
        obj["status"] = {
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "disruptionsAllowed": 0,
            "expectedPods": 0,
        }


def _prepare_priorityclass(obj: Obj, old: Obj | None) -> None:
    _default(obj, "preemptionPolicy", "PreemptLowerPriority")


def _prepare_secret(obj: Obj, old: Obj | None) -> None:
    _default(obj, "type", "Opaque")


def _prepare_crd(obj: Obj, old: Obj | None) -> None:
    if old is None:
        obj["status"] = {}


PrepareFn = Callable[[Obj, "Obj | None"], None]

_PREPARE: dict[tuple[str, str], PrepareFn] = {
    ("", "pods"): _prepare_pod,
    ("", "namespaces"): _prepare_namespace,
    ("", "services"): _prepare_service,
    ("", "nodes"): _prepare_node,
    ("", "secrets"): _prepare_secret,
    ("apps", "deployments"): _prepare_deployment,
    ("apps", "replicasets"): _prepare_replicaset,
    ("apps", "daemonsets"): _prepare_daemonset,
    ("batch", "jobs"): _prepare_job,
    ("policy", "poddisruptionbudgets"): _prepare_pdb,
    ("scheduling.k8s.io", "priorityclasses"): _prepare_priorityclass,
    ("apiextensions.k8s.io", "customresourcedefinitions"): _prepare_crd,
}

# Kinds whose create keeps a client-provided status (the kubelet registers a Node with its status).
_KEEP_STATUS_ON_CREATE = {("", "nodes")}


def prepare_create(kind: Kind, obj: Obj) -> None:
    """Reset what a create may not set, and apply the kind's defaults (in place)."""
    if kind.has("status") and kind.storage not in _KEEP_STATUS_ON_CREATE:
        obj.pop("status", None)
    prepare = _PREPARE.get(kind.storage)
    if prepare is not None:
        prepare(obj, None)
    if kind.generation != "none":
        obj["metadata"]["generation"] = 1


def prepare_update(kind: Kind, obj: Obj, old: Obj, *, subresource: str = "") -> None:
    """Defaults on update and the generation rule of the kind (in place)."""
    if subresource == "status":
        return
    prepare = _PREPARE.get(kind.storage)
    if prepare is not None:
        prepare(obj, old)
    generation = old["metadata"].get("generation")
    if generation is None:
        return
    if _bumps_generation(kind, obj, old):
        obj["metadata"]["generation"] = generation + 1


def _bumps_generation(kind: Kind, obj: Obj, old: Obj) -> bool:
    if kind.generation == "custom":
        # Anything but metadata counts (status is already reset when /status exists).
        strip = {"metadata", "apiVersion", "kind"}
        return {k: v for k, v in obj.items() if k not in strip} != {
            k: v for k, v in old.items() if k not in strip
        }
    if kind.generation == "spec":
        if obj.get("spec") != old.get("spec"):
            return True
        return (obj["metadata"].get("annotations") or {}) != (old["metadata"].get("annotations") or {})
    return False


def status_only(new: Obj, old: Obj) -> Obj:
    """A /status write: the old object with only its status replaced."""
    out = copy.deepcopy(old)
    if "status" in new:
        out["status"] = copy.deepcopy(new["status"])
    else:
        out.pop("status", None)
    if (old.get("apiVersion"), old.get("kind")) == ("apps/v1", "Deployment"):
        # deploymentStatusStrategy resets only spec and labels: the controller records the
        # revision annotation with the status, without a generation bump.
        annotations = (new.get("metadata") or {}).get("annotations")
        if annotations:
            out["metadata"]["annotations"] = copy.deepcopy(annotations)
        else:
            out["metadata"].pop("annotations", None)
    return out
