"""The DaemonSet controller's decisions: which nodes run a daemon pod, what it looks like, how it updates.

Pure, after ``pkg/controller/daemon``:

* eligibility (:func:`should_run`, ``NodeShouldRunDaemonPod``): the template's node name,
  ``nodeSelector`` and required node affinity must match the node; a taint the pod does
  not tolerate (``NoSchedule``/``NoExecute``) stops new pods, and only an untolerated
  ``NoExecute`` taint evicts a running one.  The check uses the pod as it will be created,
  with the default daemon tolerations (:data:`DAEMON_TOLERATIONS`: ``not-ready`` and
  ``unreachable`` ``NoExecute``; disk/memory/PID pressure and ``unschedulable``
  ``NoSchedule``; ``network-unavailable`` for host-network pods);
* the pod (:func:`daemon_pod_template`, :func:`pod_for_node`): the template with the
  default tolerations, the ``controller-revision-hash`` and ``pod-template-generation``
  labels, and a required node affinity ``metadata.name In [node]`` replacing any required
  terms, so the default scheduler binds it to its node (``spec.nodeName`` stays empty);
* :func:`manage` (``podsShouldBeOnNode``): nodes needing a pod, surplus and misplaced pods
  to delete, failed pods to replace;
* :func:`rolling_update`: ``maxUnavailable`` and ``maxSurge`` over the nodes;
* :func:`daemon_set_status`: ``desiredNumberScheduled``, ``currentNumberScheduled``,
  ``numberMisscheduled``, ``numberReady``, ``numberAvailable``, ``numberUnavailable``,
  ``updatedNumberScheduled``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nrop.api.metatime import parse_time
from nrop.api.nodeaffinity import OBJECT_NAME_FIELD, RequiredNodeAffinity
from nrop.api.tolerations import NO_EXECUTE, NO_SCHEDULE, find_untolerated_taint, same_toleration
from nrop.localcluster.controllers.decisions.workloads import (
    is_available,
    is_ready,
    is_terminal,
    scaled_value,
)

__all__ = [
    "DAEMON_TOLERATIONS",
    "REVISION_HASH_LABEL",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "Manage",
    "add_daemon_tolerations",
    "daemon_pod_template",
    "daemon_set_status",
    "is_pod_updated",
    "manage",
    "pod_for_node",
    "rolling_update",
    "should_run",
    "target_node",
]

Obj = dict[str, Any]

REVISION_HASH_LABEL = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
DAEMON_TOLERATIONS: tuple[Obj, ...] = (
    {"key": _NOT_READY, "operator": "Exists", "effect": "NoExecute"},
    {"key": _UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
_NETWORK_UNAVAILABLE = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


# -- tolerations and taints ------------------------------------------------------------------------


def add_daemon_tolerations(spec: Mapping[str, Any]) -> list[Obj]:
    """``AddOrUpdateDaemonPodTolerations``: the pod's tolerations with the defaults added or replacing equals."""
    tolerations = [dict(t) for t in spec.get("tolerations") or ()]
    defaults = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        defaults.append(_NETWORK_UNAVAILABLE)
    for wanted in defaults:
        replaced = False
        for index, existing in enumerate(tolerations):
            if same_toleration(existing, wanted):
                tolerations[index] = dict(wanted)
                replaced = True
        if not replaced:
            tolerations.append(dict(wanted))
    return tolerations


def should_run(ds: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (a pod should be created here, an existing one may keep running)."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = node["metadata"]["name"]
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    if not RequiredNodeAffinity.of_spec(spec).matches(node):
        return False, False
    tolerations = add_daemon_tolerations(spec)
    taints = (node.get("spec") or {}).get("taints") or ()
    if find_untolerated_taint(taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)) is None:
        return True, True
    return False, find_untolerated_taint(taints, tolerations, (NO_EXECUTE,)) is None


# -- the pods ---------------------------------------------------------------------------------------------


def template_generation(ds: Mapping[str, Any]) -> str | None:
    return (ds.get("metadata", {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)


def daemon_pod_template(ds: Mapping[str, Any], revision_hash: str) -> Obj:
    """``CreatePodTemplate``: default tolerations, generation and revision-hash labels."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    spec = template.setdefault("spec", {})
    spec["tolerations"] = add_daemon_tolerations(spec)
    meta = template.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    labels[REVISION_HASH_LABEL] = revision_hash
    meta["labels"] = labels
    return template


def pod_for_node(template: Mapping[str, Any], node_name: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node affinity becomes ``metadata.name In [node]``."""
    out = copy.deepcopy(dict(template))
    spec = out.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In", "values": [node_name]}]}
        ]
    }
    return out


def target_node(pod: Mapping[str, Any]) -> str:
    """``GetTargetNodeName``: ``spec.nodeName``, else the node the affinity pins the pod to ("" if none)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for expr in term.get("matchFields") or ():
            values = expr.get("values") or ()
            if expr.get("key") == OBJECT_NAME_FIELD and expr.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def is_pod_updated(pod: Mapping[str, Any], revision_hash: str, generation: str | None) -> bool:
    labels = pod.get("metadata", {}).get("labels") or {}
    by_generation = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation
    by_hash = bool(revision_hash) and labels.get(REVISION_HASH_LABEL) == revision_hash
    return by_hash or by_generation


def _by_age(pods: Iterable[Obj]) -> list[Obj]:
    """``podByCreationTimestampAndPhase``: oldest first; among equals, running (phase set) first."""

    def key(pod: Obj) -> tuple[float, int, str]:
        stamp = pod["metadata"].get("creationTimestamp")
        phase = (pod.get("status") or {}).get("phase")
        return (
            parse_time(stamp).timestamp() if stamp else 0.0,
            0 if phase == "Running" else 1,
            pod["metadata"]["name"],
        )

    return sorted(pods, key=key)


# -- manage -----------------------------------------------------------------------------------------------


@dataclass
class Manage:
    """What one ``manage`` pass wants: nodes to get a pod, pods to delete, failed pods (deleted after a back-off)."""

    create_on: list[str] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)
    failed: list[Obj] = field(default_factory=list)


def _allows_surge(ds: Mapping[str, Any]) -> bool:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return False
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge")
    return surge not in (None, 0, "0", "0%")


def manage(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    pods_by_node: Mapping[str, Sequence[Obj]],
    revision_hash: str,
    now: datetime,
) -> Manage:
    """``podsShouldBeOnNode`` over every node, plus pods pinned to nodes that no longer exist."""
    out = Manage()
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    surge = _allows_surge(ds)
    known = {n["metadata"]["name"] for n in nodes}
    for node in nodes:
        name = node["metadata"]["name"]
        pods = list(pods_by_node.get(name, ()))
        run, keep = should_run(ds, node)
        if run and not pods:
            out.create_on.append(name)
        elif keep:
            running = []
            for pod in pods:
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                if (pod.get("status") or {}).get("phase") == "Failed":
                    out.failed.append(pod)
                elif (pod.get("status") or {}).get("phase") == "Succeeded":
                    out.delete.append(pod)
                else:
                    running.append(pod)
            if not surge:
                out.delete.extend(_by_age(running)[1:])
                continue
            if len(running) <= 1:
                if not running and run:
                    out.create_on.append(name)
                continue
            newest: Obj | None = None
            oldest_old: Obj | None = None
            for pod in _by_age(running):
                if (pod["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) == revision_hash:
                    if newest is None:
                        newest = pod
                        continue
                elif oldest_old is None:
                    oldest_old = pod
                    continue
                out.delete.append(pod)
            if (
                newest is not None
                and oldest_old is not None
                and (not is_ready(oldest_old) or is_available(newest, min_ready, now))
            ):
                out.delete.append(oldest_old)
        elif pods:
            out.delete.extend(p for p in pods if not p["metadata"].get("deletionTimestamp"))
    for name, pods in sorted(pods_by_node.items()):
        if name not in known:
            out.delete.extend(p for p in pods if not p["metadata"].get("deletionTimestamp"))
    return out


# -- rolling update ------------------------------------------------------------------------------------------


def _updated_and_old(
    pods: Sequence[Obj], revision_hash: str, generation: str | None
) -> tuple[Obj | None, Obj | None, bool]:
    """``findUpdatedPodsOnNode``: the node's (new, old) pods; False when it has more than one of either."""
    new: Obj | None = None
    old: Obj | None = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, revision_hash, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def surge_and_unavailable(ds: Mapping[str, Any], desired: int) -> tuple[int, int]:
    """``updatedDesiredNodeCounts``: absolute maxSurge and maxUnavailable (both rounded up; 0/0 means 0/1)."""
    rolling = (((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")) or {}
    surge = scaled_value(
        rolling.get("maxSurge", 0), desired, round_up=True, field="spec.updateStrategy.rollingUpdate.maxSurge"
    )
    unavailable = scaled_value(
        rolling.get("maxUnavailable", 1),
        desired,
        round_up=True,
        field="spec.updateStrategy.rollingUpdate.maxUnavailable",
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def rolling_update(
    ds: Mapping[str, Any],
    pods_by_node: Mapping[str, Sequence[Obj]],
    revision_hash: str,
    desired: int,
    now: datetime,
) -> tuple[list[Obj], list[str]]:
    """``rollingUpdate``: (old pods to delete, nodes that get a new pod next to the old one)."""
    surge, max_unavailable = surge_and_unavailable(ds, desired)
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = template_generation(ds)
    if surge == 0:
        unavailable = 0
        replace_now: list[Obj] = []
        candidates: list[Obj] = []
        for _, pods in sorted(pods_by_node.items()):
            new, old, ok = _updated_and_old(pods, revision_hash, generation)
            if not ok or (new is None) == (old is None):
                unavailable += 1
            elif new is not None:
                if not is_available(new, min_ready, now):
                    unavailable += 1
            else:
                assert old is not None
                if not is_available(old, min_ready, now):
                    replace_now.append(old)
                elif unavailable < max_unavailable:
                    candidates.append(old)
        budget = min(max(0, max_unavailable - unavailable), len(candidates))
        return replace_now + candidates[:budget], []
    to_delete: list[Obj] = []
    wanting: list[str] = []
    surging = 0
    for node, pods in sorted(pods_by_node.items()):
        new, old, ok = _updated_and_old(pods, revision_hash, generation)
        if not ok or old is None:
            continue
        if new is None:
            if not is_available(old, min_ready, now):
                wanting.append(node)
            elif surging < surge:
                surging += 1
                wanting.append(node)
        elif not is_available(new, min_ready, now):
            surging += 1
        else:
            to_delete.append(old)
    return to_delete, wanting


# -- status ------------------------------------------------------------------------------------------------------


def daemon_set_status(
    ds: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    pods_by_node: Mapping[str, Sequence[Obj]],
    revision_hash: str,
    now: datetime,
) -> Obj:
    """``updateDaemonSetStatus``'s counts (the four counters are always present; the others are omitted at 0)."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = template_generation(ds)
    desired = current = misscheduled = ready = available = updated = 0
    for node in nodes:
        name = node["metadata"]["name"]
        pods = [
            p
            for p in pods_by_node.get(name, ())
            if not (is_terminal(p) and p["metadata"].get("deletionTimestamp"))
        ]
        run, _ = should_run(ds, node)
        if not run:
            if pods:
                misscheduled += 1
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = _by_age(pods)[0]
        if is_ready(pod):
            ready += 1
            if is_available(pod, min_ready, now):
                available += 1
        if is_pod_updated(pod, revision_hash, generation):
            updated += 1
    status: Obj = {
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
    }
    optional = {
        "observedGeneration": int(ds["metadata"].get("generation") or 0),
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
        "numberUnavailable": desired - available,
    }
    status.update({k: v for k, v in optional.items() if v})
    previous = ds.get("status") or {}
    for kept in ("collisionCount", "conditions"):
        if previous.get(kept) is not None:
            status[kept] = previous[kept]
    return status
