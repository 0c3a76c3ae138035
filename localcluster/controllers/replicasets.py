"""The ReplicaSet controller: keeps ``spec.replicas`` active pods per ReplicaSet and reports them.

The I/O shell of :mod:`.replicas`.  Follows ReplicaSets, and pods (by controller reference,
and orphans by selector so they are adopted).  A sync claims the namespace's active pods
(adopting matching orphans, releasing owned pods that no longer match), creates missing
pods from the template (``<rs name>-xxxxx``, controller reference with
``blockOwnerDeletion``) or deletes the surplus in :func:`.replicas.deletion_order`, with
``SuccessfulCreate``/``SuccessfulDelete`` events, then writes ``status`` through
``replicasets/status``.  A ReplicaSet being deleted is not scaled, only reported.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.clients import StoreReads
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions
from nrop.localcluster.apiserver.decisions.selectors import LabelSelector, label_selector_from_dict
from nrop.localcluster.apiserver.registry import Kind
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions.replicas import (
    deletion_order,
    replica_diff,
    replica_set_status,
    slow_start_batches,
)
from nrop.localcluster.controllers.decisions.workloads import (
    Claim,
    available_at,
    claim,
    controller_of,
    controller_ref,
    is_active,
    pod_from_template,
)
from nrop.localcluster.controllers.reconciling import Controller, key_of, kind_of, split_key

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["ReplicaSetController", "claim_objects"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_REPLICASETS = ("apps", "replicasets")
_PODS = ("", "pods")


def selector_of(obj: Obj) -> LabelSelector | None:
    """The object's ``spec.selector`` as a matcher; None (with a log line) when it is malformed."""
    try:
        return label_selector_from_dict((obj.get("spec") or {}).get("selector"))
    except errors.StatusError as err:
        log.warning("%s %s: invalid selector: %s", obj.get("kind"), key_of(obj), err.message)
        return None


def claim_objects(
    ctl: Controller, owner: Obj, candidates: Iterable[Obj], selector: LabelSelector, kind: Kind
) -> list[Obj]:
    """Adopt and release like ``ControllerRefManager``; returns the objects ``owner`` now controls."""
    owned = []
    for obj in candidates:
        decision = claim(owner, obj, selector.matches(obj["metadata"].get("labels") or {}))
        if decision is Claim.KEEP:
            owned.append(obj)
        elif decision is Claim.ADOPT:
            updated = copy.deepcopy(obj)
            refs = updated["metadata"].setdefault("ownerReferences", [])
            refs.append(controller_ref(owner))
            try:
                owned.append(ctl.update(kind, updated))
            except (errors.NotFound, errors.Conflict):
                continue
        elif decision is Claim.RELEASE:
            updated = copy.deepcopy(obj)
            refs = [
                r
                for r in updated["metadata"].get("ownerReferences") or ()
                if r.get("uid") != owner["metadata"]["uid"]
            ]
            updated["metadata"]["ownerReferences"] = refs
            try:
                ctl.update(kind, updated)
            except (errors.NotFound, errors.Conflict):
                continue
    return owned


def _owner_keys(event: WatchEvent, owner_kind: str, owners: tuple[str, str], store: StoreReads) -> list[str]:
    """Keys of the controllers to sync for a change of one of their dependents.

    The controller named by the controller reference (before and after the change); for an
    orphan, every controller of ``owners`` in the namespace whose selector matches, so it may adopt.
    """
    keys = []
    for obj in (event.obj, event.old):
        if obj is None:
            continue
        ref = controller_of(obj)
        namespace = obj["metadata"].get("namespace", "")
        if ref is not None:
            if ref.get("kind") == owner_kind:
                keys.append(f"{namespace}/{ref['name']}")
            continue
        if event.type == "DELETED":
            continue
        labels = obj["metadata"].get("labels") or {}
        for owner in store.list(owners, namespace):
            selector = selector_of(owner)
            if selector is not None and not selector.empty and selector.matches(labels):
                keys.append(key_of(owner))
    return keys


def owner_subscriptions(
    store: StoreReads, owners: tuple[str, str], owner_kind: str, dependents: tuple[str, str]
) -> tuple[tuple[tuple[str, str], Callable[[WatchEvent], list[str]]], ...]:
    """A workload controller's subscriptions: its own objects by their key, their ``dependents``
    by the key of the owner that controls them or may adopt them (:func:`_owner_keys`)."""
    return (
        (owners, lambda e: [key_of(e.obj)]),
        (dependents, lambda e: _owner_keys(e, owner_kind, owners, store)),
    )


class ReplicaSetController(Controller):
    name = "replicaset-controller"

    def __init__(self, server: InProcessAPI, clock: Clock) -> None:
        super().__init__(server, clock)
        self.rs_kind = kind_of(server, "apps", "replicasets")
        self.pod_kind = kind_of(server, "", "pods")

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return owner_subscriptions(self.store, _REPLICASETS, "ReplicaSet", _PODS)

    def initial_keys(self) -> Iterable[str]:
        return [key_of(rs) for rs in self.store.list(_REPLICASETS)]

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        rs = self.store.get(_REPLICASETS, namespace, name)
        if rs is None:
            return
        selector = selector_of(rs)
        if selector is None:
            return
        active = [p for p in self.store.list(_PODS, namespace) if is_active(p)]
        owned = claim_objects(self, rs, active, selector, self.pod_kind)
        failure = None
        if not rs["metadata"].get("deletionTimestamp"):
            failure = self._manage(rs, owned)
        rs = self.store.get(_REPLICASETS, namespace, name)
        if rs is None:
            return
        # As upstream's syncReplicaSet, the status counts the pods listed before this sync
        # created or deleted any: those changes show at the next sync, which their own pod
        # events trigger, so status.replicas trails the pods' creation as on a real cluster.
        now = self.clock.now()
        status = replica_set_status(rs, owned, now, failure=failure)
        if status != (rs.get("status") or {}):
            updated = copy.deepcopy(rs)
            updated["status"] = status
            self.update(self.rs_kind, updated, status=True)
        self._requeue_for_availability(key, rs, owned, now)

    @staticmethod
    def _owns(rs: Obj, pod: Obj) -> bool:
        ref = controller_of(pod)
        return ref is not None and ref.get("uid") == rs["metadata"]["uid"]

    def _manage(self, rs: Obj, owned: list[Obj]) -> tuple[str, str] | None:
        diff = replica_diff(int((rs.get("spec") or {}).get("replicas", 1)), len(owned))
        if diff < 0:
            return self._create(rs, -diff)
        if diff > 0:
            return self._delete(rs, owned, diff)
        return None

    def _create(self, rs: Obj, count: int) -> tuple[str, str] | None:
        template = (rs.get("spec") or {}).get("template") or {}
        namespace = rs["metadata"]["namespace"]
        for batch in slow_start_batches(count):
            for _ in range(batch):
                try:
                    pod = self.rest.create(
                        self.pod_kind, namespace, pod_from_template(template, rs), self.opts
                    )
                except errors.StatusError as err:
                    self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {err.message}")
                    return ("FailedCreate", err.message)
                self.recorder.event(
                    rs, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"
                )
        return None

    def _delete(self, rs: Obj, owned: list[Obj], count: int) -> tuple[str, str] | None:
        related = self._related_pods(rs)
        for pod in deletion_order(owned, related)[:count]:
            try:
                self.rest.delete(
                    self.pod_kind,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    DeleteOptions(preconditions={"uid": pod["metadata"]["uid"]}),
                )
            except errors.NotFound:
                continue
            except errors.StatusError as err:
                self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {err.message}")
                return ("FailedDelete", err.message)
            self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        return None

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """Active pods of the ReplicaSets that share this one's controller (a Deployment's other RSs)."""
        ref = controller_of(rs)
        namespace = rs["metadata"]["namespace"]
        if ref is None:
            return []
        siblings = {
            other["metadata"]["uid"]
            for other in self.store.list(_REPLICASETS, namespace)
            if (controller_of(other) or {}).get("uid") == ref.get("uid")
        }
        return [
            p
            for p in self.store.list(_PODS, namespace)
            if is_active(p) and (controller_of(p) or {}).get("uid") in siblings
        ]

    def _requeue_for_availability(self, key: str, rs: Obj, pods: list[Obj], now: datetime) -> None:
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        if not min_ready:
            return
        moments = [available_at(p, min_ready) for p in pods]
        pending = [m for m in moments if m is not None and m >= now]
        if pending:
            self.enqueue_after(key, (min(pending) - now).total_seconds() + 0.01)
