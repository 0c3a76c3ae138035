"""What a run left behind: the cluster as AfterSuite finds it, compared with BeforeSuite's.

A suite used as a CI gate must hand the cluster back as it found it. :func:`take` records,
after BeforeSuite, what the specs may create or change and must undo: namespaces, bare pods
(no owner) in the namespaces that existed, PriorityClasses, RuntimeClasses, the
NUMAResourcesOperator/Scheduler CRs, and each node's labels, taints and ``unschedulable``.
:func:`compare` (pure) lists what differs once AfterSuite has undone its own infrastructure;
the session reports each line and fails the run when there is one.

Exempt: the NRT objects and the pods of controllers (they churn by design), and namespaces
still terminating count as left behind (the per-test teardown waits until they are gone).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nrop.suite.e2e import kube as k

__all__ = ["Snapshot", "compare", "take"]

log = logging.getLogger(__name__)

#: Cluster-scoped kinds whose objects a spec may create and must delete.
_CLUSTER_KINDS: tuple[k.Kind, ...] = (k.PRIORITYCLASS, k.RUNTIMECLASS, k.NROP, k.NROSCHED)


@dataclass(frozen=True)
class Snapshot:
    """What the specs may leave changed; plain data so that :func:`compare` is pure."""

    namespaces: frozenset[str] = frozenset()
    #: "namespace/name" of pods without an owner (a controller recreates its own).
    bare_pods: frozenset[str] = frozenset()
    #: "Kind/name" of cluster-scoped objects of :data:`_CLUSTER_KINDS`.
    objects: frozenset[str] = frozenset()
    #: node -> (labels, taints as "key=value:effect", unschedulable)
    nodes: Mapping[str, tuple[Mapping[str, str], frozenset[str], bool]] = field(default_factory=dict)


def _taint(taint: Mapping[str, Any]) -> str:
    return f"{taint.get('key', '')}={taint.get('value', '')}:{taint.get('effect', '')}"


def _bare_pods(pods: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(
        f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}"
        for p in pods
        if not p["metadata"].get("ownerReferences")
    )


def take(kube: k.Kube) -> Snapshot:
    """The cluster now (kinds the cluster does not serve are left out)."""
    objects: set[str] = set()
    for kind in _CLUSTER_KINDS:
        try:
            objects.update(f"{kind.kind}/{o['metadata']['name']}" for o in kube.list(kind))
        except k.UnknownKindError:
            log.debug("leak check: %s is not served", kind)
    nodes = {
        n["metadata"]["name"]: (
            dict(n["metadata"].get("labels") or {}),
            frozenset(_taint(t) for t in (n.get("spec") or {}).get("taints") or ()),
            bool((n.get("spec") or {}).get("unschedulable")),
        )
        for n in kube.list(k.NODE)
    }
    return Snapshot(
        namespaces=frozenset(ns["metadata"]["name"] for ns in kube.list(k.NAMESPACE)),
        bare_pods=_bare_pods(kube.list(k.POD)),
        objects=frozenset(objects),
        nodes=nodes,
    )


def compare(before: Snapshot, after: Snapshot) -> list[str]:
    """One line per thing the run left behind or took away, sorted; empty when clean."""
    found: list[str] = []
    found += [f"namespace {name} is left" for name in sorted(after.namespaces - before.namespaces)]
    found += [
        f"pod {name} is left"
        for name in sorted(after.bare_pods - before.bare_pods)
        if name.split("/", 1)[0] in before.namespaces
    ]
    found += [f"{obj} is left" for obj in sorted(after.objects - before.objects)]
    found += [f"{obj} is gone" for obj in sorted(before.objects - after.objects)]
    for node in sorted(before.nodes.keys() & after.nodes.keys()):
        labels0, taints0, cordoned0 = before.nodes[node]
        labels1, taints1, cordoned1 = after.nodes[node]
        for key in sorted(labels0.keys() | labels1.keys()):
            if labels0.get(key) != labels1.get(key):
                found.append(f"node {node}: label {key} is {labels1.get(key)!r}, was {labels0.get(key)!r}")
        found += [f"node {node}: taint {t} is left" for t in sorted(taints1 - taints0)]
        found += [f"node {node}: taint {t} is gone" for t in sorted(taints0 - taints1)]
        if cordoned0 != cordoned1:
            found.append(f"node {node}: unschedulable is {cordoned1}, was {cordoned0}")
    return found
