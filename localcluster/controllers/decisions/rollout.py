"""The Deployment controller's rollout arithmetic: surge and unavailability, scaling, revisions.

Pure, over Deployment and ReplicaSet bodies, after ``pkg/controller/deployment`` and its
``util`` package.  The names follow upstream so the two can be read side by side:

* :func:`resolve_fenceposts`, :func:`max_surge`, :func:`max_unavailable`;
* rolling update: :func:`new_rs_new_replicas` (scale the new ReplicaSet up within
  ``replicas + maxSurge``) and :func:`old_replica_set_scale_down` (first the old sets'
  unavailable pods, then available ones while ``replicas - maxUnavailable`` stay available);
* :func:`proportional_scale` for scaling events in the middle of a rollout;
* the new ReplicaSet: :func:`find_new_replica_set`, :func:`new_replica_set_body`,
  :func:`replica_set_annotations` (``deployment.kubernetes.io/revision``,
  ``desired-replicas``, ``max-replicas``, ``revision-history``);
* :func:`history_to_delete` (``revisionHistoryLimit``).

The status (counts, conditions, the progress deadline) is :mod:`.rolloutstatus`, built on
this module's accessors.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nrop.api.metatime import parse_time
from nrop.localcluster.controllers.decisions.workloads import compute_hash, controller_ref, scaled_value

__all__ = [
    "DESIRED_REPLICAS",
    "MAX_REPLICAS",
    "POD_TEMPLATE_HASH",
    "REVISION",
    "REVISION_HISTORY",
    "find_active_or_latest",
    "find_new_replica_set",
    "history_to_delete",
    "is_scaling_event",
    "max_revision",
    "max_surge",
    "max_unavailable",
    "new_replica_set_body",
    "new_rs_new_replicas",
    "old_replica_set_scale_down",
    "proportional_scale",
    "replica_set_annotations",
    "replicas_annotations",
    "resolve_fenceposts",
]

Obj = dict[str, Any]

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_SKIP_COPY = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
_MAX_REVISION_HISTORY_CHARS = 2000

# -- small accessors ---------------------------------------------------------------------------


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def replicas_of(obj: Mapping[str, Any]) -> int:
    value = spec_of(obj).get("replicas")
    return 1 if value is None else int(value)


def _annotation_int(obj: Mapping[str, Any], key: str) -> int | None:
    text = (obj.get("metadata", {}).get("annotations") or {}).get(key)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _created(obj: Mapping[str, Any]) -> tuple[float, str]:
    meta = obj["metadata"]
    stamp = meta.get("creationTimestamp")
    return (parse_time(stamp).timestamp() if stamp else 0.0, meta["name"])


def by_creation(rs_list: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    return sorted(rs_list, key=_created)


def _active(rs_list: Iterable[Obj | None]) -> list[Obj]:
    return [rs for rs in rs_list if rs is not None and replicas_of(rs) > 0]


def _is_rolling(d: Mapping[str, Any]) -> bool:
    return (spec_of(d).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


# -- surge and unavailability ----------------------------------------------------------------------


def resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """Absolute (maxSurge, maxUnavailable); both zero becomes an unavailability of one."""
    s = scaled_value(surge, desired, round_up=True, field="spec.strategy.rollingUpdate.maxSurge")
    u = scaled_value(unavailable, desired, round_up=False, field="spec.strategy.rollingUpdate.maxUnavailable")
    if s == 0 and u == 0:
        u = 1
    return s, u


def _rolling_params(d: Mapping[str, Any]) -> tuple[int | str | None, int | str | None]:
    rolling = (spec_of(d).get("strategy") or {}).get("rollingUpdate") or {}
    return rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%")


def max_surge(d: Mapping[str, Any]) -> int:
    if not _is_rolling(d):
        return 0
    surge, unavailable = _rolling_params(d)
    return resolve_fenceposts(surge, unavailable, replicas_of(d))[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    replicas = replicas_of(d)
    if not _is_rolling(d) or replicas == 0:
        return 0
    surge, unavailable = _rolling_params(d)
    return min(resolve_fenceposts(surge, unavailable, replicas)[1], replicas)


# -- the new ReplicaSet ------------------------------------------------------------------------------


def _template_without_hash(template: Mapping[str, Any]) -> Obj:
    out = copy.deepcopy(dict(template))
    meta = out.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    for key in [k for k, v in meta.items() if v in ({}, [], None)]:
        del meta[key]
    if not meta:
        out.pop("metadata")
    return out


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``: templates equal but for the ``pod-template-hash`` label."""
    return _template_without_hash(a) == _template_without_hash(b)


def find_new_replica_set(d: Mapping[str, Any], rs_list: Sequence[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template is the Deployment's."""
    template = spec_of(d).get("template") or {}
    for rs in by_creation(rs_list):
        if equal_ignore_hash(spec_of(rs).get("template") or {}, template):
            return rs
    return None


def max_revision(rs_list: Iterable[Obj]) -> int:
    return max((_annotation_int(rs, REVISION) or 0 for rs in rs_list), default=0)


def replicas_annotations(d: Mapping[str, Any]) -> dict[str, str]:
    replicas = replicas_of(d)
    return {DESIRED_REPLICAS: str(replicas), MAX_REPLICAS: str(replicas + max_surge(d))}


def replica_set_annotations(
    d: Mapping[str, Any], rs: Mapping[str, Any], new_revision: int, *, exists: bool
) -> dict[str, str]:
    """``SetNewReplicaSetAnnotations``: the new ReplicaSet's annotations (equal to the old when unchanged)."""
    annotations = dict(rs.get("metadata", {}).get("annotations") or {})
    for key, value in (d.get("metadata", {}).get("annotations") or {}).items():
        if key not in _SKIP_COPY:
            annotations[key] = value
    old_text = annotations.get(REVISION)
    try:
        old_revision = int(old_text) if old_text is not None else 0
    except ValueError:
        return dict(rs.get("metadata", {}).get("annotations") or {})
    if old_revision < new_revision:
        annotations[REVISION] = str(new_revision)
        if old_text is not None:
            # Rolling back to this ReplicaSet: keep the revisions it had.
            history = [h for h in annotations.get(REVISION_HISTORY, "").split(",") if h]
            history.append(old_text)
            text = ",".join(history)
            while len(text) > _MAX_REVISION_HISTORY_CHARS and "," in text:
                text = text.split(",", 1)[1]
            annotations[REVISION_HISTORY] = text
    if not exists:
        annotations.update(replicas_annotations(d))
    return annotations


def new_replica_set_body(d: Obj, replicas: int, revision: int, collision_count: int | None) -> Obj:
    """The ReplicaSet ``getNewReplicaSet`` creates: ``<deployment>-<hash>`` with the hash label and selector."""
    spec = spec_of(d)
    template_hash = compute_hash(spec.get("template") or {}, collision_count)
    template = copy.deepcopy(spec.get("template") or {})
    template_meta = template.setdefault("metadata", {})
    template_meta["labels"] = {**(template_meta.get("labels") or {}), POD_TEMPLATE_HASH: template_hash}
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: template_hash}
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{d['metadata']['name']}-{template_hash}",
            "namespace": d["metadata"]["namespace"],
            "labels": dict(template_meta["labels"]),
            "ownerReferences": [controller_ref(d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(spec.get("minReadySeconds") or 0),
            "selector": selector,
            "template": template,
        },
    }
    body["metadata"]["annotations"] = replica_set_annotations(d, body, revision, exists=False)
    return body


# -- rolling update -------------------------------------------------------------------------------------


def new_rs_new_replicas(d: Mapping[str, Any], all_rs: Sequence[Obj], new_rs: Mapping[str, Any]) -> int:
    """``NewRSNewReplicas``: the new ReplicaSet's size for this step."""
    if not _is_rolling(d):
        return replicas_of(d)
    current = sum(replicas_of(rs) for rs in all_rs)
    max_total = replicas_of(d) + max_surge(d)
    if current >= max_total:
        return replicas_of(new_rs)
    scale_up = min(max_total - current, replicas_of(d) - replicas_of(new_rs))
    return replicas_of(new_rs) + scale_up


def old_replica_set_scale_down(
    d: Mapping[str, Any], new_rs: Mapping[str, Any], old_rs: Sequence[Obj]
) -> dict[str, int]:
    """``reconcileOldReplicaSets``: new sizes of the old ReplicaSets this step scales down (name -> size)."""
    active_old = _active(old_rs)
    if not sum(replicas_of(rs) for rs in active_old):
        return {}
    all_count = sum(replicas_of(rs) for rs in active_old) + replicas_of(new_rs)
    min_available = replicas_of(d) - max_unavailable(d)
    new_unavailable = replicas_of(new_rs) - int(status_of(new_rs).get("availableReplicas") or 0)
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return {}
    sizes = {rs["metadata"]["name"]: replicas_of(rs) for rs in active_old}
    ordered = by_creation(active_old)
    # Unhealthy replicas first, or they would block the rollout until it times out.
    cleaned = 0
    for rs in ordered:
        if cleaned >= max_scaled_down:
            break
        name = rs["metadata"]["name"]
        unhealthy = sizes[name] - int(status_of(rs).get("availableReplicas") or 0)
        if sizes[name] == 0 or unhealthy <= 0:
            continue
        step = min(max_scaled_down - cleaned, unhealthy)
        sizes[name] -= step
        cleaned += step
    # Then available ones, as long as the minimum availability holds.
    available = int(status_of(new_rs).get("availableReplicas") or 0) + sum(
        int(status_of(rs).get("availableReplicas") or 0) for rs in active_old
    )
    total_scale_down = available - min_available
    scaled = 0
    if total_scale_down > 0:
        for rs in ordered:
            if scaled >= total_scale_down:
                break
            name = rs["metadata"]["name"]
            if sizes[name] == 0:
                continue
            step = min(sizes[name], total_scale_down - scaled)
            sizes[name] -= step
            scaled += step
    return {name: size for name, size in sizes.items() if size != replicas_of(_by_name(active_old, name))}


def _by_name(rs_list: Iterable[Obj], name: str) -> Obj:
    return next(rs for rs in rs_list if rs["metadata"]["name"] == name)


# -- scaling events ---------------------------------------------------------------------------------------


def is_scaling_event(d: Mapping[str, Any], all_rs: Iterable[Obj | None]) -> bool:
    """An active ReplicaSet annotated with another desired size than ``spec.replicas``."""
    for rs in _active(all_rs):
        desired = _annotation_int(rs, DESIRED_REPLICAS)
        if desired is not None and desired != replicas_of(d):
            return True
    return False


def find_active_or_latest(new_rs: Obj | None, old_rs: Sequence[Obj]) -> Obj | None:
    """The only active ReplicaSet; with none active, the new (or newest) one; None when several are active."""
    if new_rs is None and not old_rs:
        return None
    newest_first = sorted(old_rs, key=_created, reverse=True)
    active = _active([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    return active[0] if len(active) == 1 else None


def _is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    if rs is None:
        return False
    desired = _annotation_int(rs, DESIRED_REPLICAS)
    replicas = replicas_of(d)
    return (
        desired == replicas
        and replicas_of(rs) == replicas
        and int(status_of(rs).get("availableReplicas") or 0) == replicas
    )


def _round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    if replicas_of(d) == 0:
        return -replicas_of(rs)
    deployment_replicas = replicas_of(d) + max_surge(d)
    annotated = _annotation_int(rs, MAX_REPLICAS)
    if annotated is None:
        annotated = int(status_of(d).get("replicas") or 0)
    if annotated == 0:
        return 0
    return _round_half_away(replicas_of(rs) * deployment_replicas / annotated) - replicas_of(rs)


def _proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    if replicas_of(rs) == 0 or to_add in (0, added):
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def proportional_scale(
    d: Mapping[str, Any], new_rs: Obj | None, old_rs: Sequence[Obj]
) -> list[tuple[Obj, int]]:
    """``DeploymentController.scale``: (ReplicaSet, new size) for each ReplicaSet to resize or re-annotate."""
    only = find_active_or_latest(new_rs, old_rs)
    if only is not None:
        return [] if replicas_of(only) == replicas_of(d) else [(only, replicas_of(d))]
    if _is_saturated(d, new_rs):
        return [(rs, 0) for rs in _active(old_rs)]
    if not _is_rolling(d):
        return []
    active = _active([*old_rs, new_rs])
    current = sum(replicas_of(rs) for rs in active)
    allowed = replicas_of(d) + max_surge(d) if replicas_of(d) > 0 else 0
    to_add = allowed - current
    # Bigger first; among equals, newer first when growing and older first when shrinking.
    active = sorted(active, key=_created, reverse=to_add > 0)
    active.sort(key=lambda rs: -replicas_of(rs))
    sizes: dict[str, int] = {}
    added = 0
    for rs in active:
        if to_add != 0:
            share = _proportion(rs, d, to_add, added)
            sizes[rs["metadata"]["name"]] = replicas_of(rs) + share
            added += share
        else:
            sizes[rs["metadata"]["name"]] = replicas_of(rs)
    if active and to_add != 0:
        first = active[0]["metadata"]["name"]
        sizes[first] = max(0, sizes[first] + to_add - added)
    return [(rs, sizes[rs["metadata"]["name"]]) for rs in active]


# -- revision history -----------------------------------------------------------------------------------------


def history_to_delete(d: Mapping[str, Any], old_rs: Sequence[Obj]) -> list[Obj]:
    """``cleanupDeployment``: the oldest empty, settled old ReplicaSets beyond ``revisionHistoryLimit``."""
    limit = spec_of(d).get("revisionHistoryLimit")
    if limit is None:
        return []
    alive = [rs for rs in old_rs if not rs["metadata"].get("deletionTimestamp")]
    surplus = len(alive) - int(limit)
    if surplus <= 0:
        return []
    ordered = sorted(alive, key=lambda rs: (_annotation_int(rs, REVISION) or 0, _created(rs)))
    victims = []
    for rs in ordered[:surplus]:
        settled = int(status_of(rs).get("observedGeneration") or 0) >= int(
            rs["metadata"].get("generation") or 0
        )
        if int(status_of(rs).get("replicas") or 0) == 0 and replicas_of(rs) == 0 and settled:
            victims.append(rs)
    return victims
