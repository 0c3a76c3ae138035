"""The ReplicaSet controller's decisions: how many pods to create, which to delete, and the status.

Pure, after ``pkg/controller/replicaset``:

* :func:`replica_diff` compares the active pods with ``spec.replicas``;
* :func:`slow_start_batches` splits creations into batches of 1, 2, 4, ... (a failed
  batch stops the rest, so a quota or admission error costs one request, not hundreds);
  at most :data:`BURST_REPLICAS` per sync;
* :func:`deletion_order` ranks pods as ``ActivePodsWithRanks`` does: unscheduled before
  scheduled, Pending before Unknown before Running, not ready before ready, lower
  ``controller.kubernetes.io/pod-deletion-cost`` first, pods doubled up on a node with
  related pods first, ready for less time first, more container restarts first, newer first
  (upstream buckets the two times logarithmically; plain times keep the same order here
  except inside one bucket);
* :func:`replica_set_status` counts ``replicas``, ``fullyLabeledReplicas``,
  ``readyReplicas`` and ``availableReplicas`` (zero counts are omitted, as Go's
  ``omitempty`` does) and keeps or clears the ``ReplicaFailure`` condition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nrop.api.metatime import parse_time, rfc3339
from nrop.localcluster.apiserver.decisions.selectors import label_selector_from_dict
from nrop.localcluster.controllers.decisions.workloads import is_active, is_available, is_ready, ready_since

__all__ = [
    "BURST_REPLICAS",
    "DELETION_COST_ANNOTATION",
    "deletion_order",
    "replica_diff",
    "replica_set_status",
    "slow_start_batches",
]

Obj = dict[str, Any]

#: ``--concurrent-...``'s companion: at most this many creations or deletions per sync.
BURST_REPLICAS = 500
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def replica_diff(replicas: int, active: int) -> int:
    """Positive: pods to delete; negative: pods to create; capped at :data:`BURST_REPLICAS`."""
    diff = active - replicas
    return max(-BURST_REPLICAS, min(BURST_REPLICAS, diff))


def slow_start_batches(count: int, initial: int = 1) -> list[int]:
    """``slowStartBatch`` sizes: ``initial``, then doubling, summing to ``count``."""
    batches = []
    size = min(count, initial)
    remaining = count
    while remaining > 0:
        batches.append(size)
        remaining -= size
        size = min(2 * size, remaining)
    return batches


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    text = (pod.get("metadata", {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0


def _restarts(pod: Mapping[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _timestamp(text: str | None) -> float:
    return parse_time(text).timestamp() if text else float("inf")


def deletion_order(pods: Sequence[Obj], related: Iterable[Obj] = ()) -> list[Obj]:
    """``pods`` sorted so that the first ones are the best to delete.

    ``related`` are the active pods of the same workload (e.g. the other ReplicaSets of a
    Deployment); a pod sharing its node with more of them goes first.
    """
    unique_related: dict[str, Obj] = {}
    for pod in (*pods, *related):
        unique_related.setdefault(pod["metadata"].get("uid", id(pod)), pod)
    on_node = Counter(
        (p.get("spec") or {}).get("nodeName", "")
        for p in unique_related.values()
        if is_active(p) and (p.get("spec") or {}).get("nodeName")
    )

    def key(pod: Obj) -> tuple[Any, ...]:
        node = (pod.get("spec") or {}).get("nodeName", "")
        since = ready_since(pod)
        return (
            1 if node else 0,
            _PHASE_ORDER.get((pod.get("status") or {}).get("phase", ""), 0),
            1 if is_ready(pod) else 0,
            _deletion_cost(pod),
            -on_node[node] if node else 0,
            -since.timestamp() if since is not None else float("-inf"),
            -_restarts(pod),
            -_timestamp(pod["metadata"].get("creationTimestamp")),
        )

    return sorted(pods, key=key)


def replica_set_status(
    rs: Mapping[str, Any],
    pods: Iterable[Obj],
    now: datetime,
    *,
    failure: tuple[str, str] | None = None,
) -> Obj:
    """The status a ReplicaSet should have for its active pods ``pods``.

    ``failure`` is ``(reason, message)`` of this sync's failed create or delete
    (``FailedCreate``/``FailedDelete``): it sets ``ReplicaFailure`` if none is set yet;
    a clean sync removes it.
    """
    spec = rs.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    template_selector = label_selector_from_dict({"matchLabels": template_labels})
    active = [p for p in pods if is_active(p)]
    labelled = sum(1 for p in active if template_selector.matches(p["metadata"].get("labels") or {}))
    ready = [p for p in active if is_ready(p)]
    available = sum(1 for p in ready if is_available(p, min_ready, now))
    status: Obj = {"replicas": len(active)}
    for field, value in (
        ("fullyLabeledReplicas", labelled),
        ("readyReplicas", len(ready)),
        ("availableReplicas", available),
    ):
        if value:
            status[field] = value
    generation = rs["metadata"].get("generation")
    if generation:
        status["observedGeneration"] = generation
    conditions = [dict(c) for c in (rs.get("status") or {}).get("conditions") or ()]
    has_failure = any(c.get("type") == "ReplicaFailure" for c in conditions)
    if failure is not None and not has_failure:
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": failure[0],
                "message": failure[1],
                "lastTransitionTime": rfc3339(now),
            }
        )
    elif failure is None and has_failure:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    if conditions:
        status["conditions"] = conditions
    return status
