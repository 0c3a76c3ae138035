"""The Deployment controller: rolls ReplicaSets forward (RollingUpdate or Recreate) and reports the rollout.

The I/O shell of :mod:`.rollout`, after ``DeploymentController.syncDeployment``:

1. claim the namespace's ReplicaSets (adopt matching orphans, release the rest);
2. a Deployment being deleted only gets its status refreshed; pausing and resuming set
   ``Progressing=Unknown`` (``DeploymentPaused``/``DeploymentResumed``);
3. paused Deployments and scaling events (``spec.replicas`` differs from the
   ``desired-replicas`` annotation of an active ReplicaSet) are scaled proportionally;
4. otherwise a rollout step: find or create the new ReplicaSet ``<name>-<pod-template-hash>``
   (revision = the old ones' highest + 1, recorded on the Deployment too), then scale the
   new one up or the old ones down (RollingUpdate), or all old ones to zero and, once their
   pods are gone, the new one up (Recreate); ``ScalingReplicaSet`` events;
5. old ReplicaSets beyond ``revisionHistoryLimit`` are deleted once the rollout completes;
6. the status (:func:`.rolloutstatus.rollout_status`) is written through ``deployments/status``,
   together with the ``deployment.kubernetes.io/revision`` annotation, as upstream does.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from nrop.api.workloads import deployment_complete
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.store import WatchEvent
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import rollout, rolloutstatus
from nrop.localcluster.controllers.decisions.workloads import (
    controller_of,
    get_condition,
    is_terminal,
    set_condition,
)
from nrop.localcluster.controllers.reconciling import Controller, key_of, kind_of, split_key
from nrop.localcluster.controllers.replicasets import claim_objects, owner_subscriptions, selector_of

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["DeploymentController"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_DEPLOYMENTS = ("apps", "deployments")
_REPLICASETS = ("apps", "replicasets")
_PODS = ("", "pods")


class DeploymentController(Controller):
    name = "deployment-controller"

    def __init__(self, server: InProcessAPI, clock: Clock) -> None:
        super().__init__(server, clock)
        self.d_kind = kind_of(server, "apps", "deployments")
        self.rs_kind = kind_of(server, "apps", "replicasets")

    # -- events in ------------------------------------------------------------------------------

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return (
            *owner_subscriptions(self.store, _DEPLOYMENTS, "Deployment", _REPLICASETS),
            (_PODS, self._pod_keys),
        )

    def initial_keys(self) -> Iterable[str]:
        return [key_of(d) for d in self.store.list(_DEPLOYMENTS)]

    def _pod_keys(self, event: WatchEvent) -> list[str]:
        """Recreate waits for the old pods to go: a pod change wakes its Recreate Deployment."""
        ref = controller_of(event.obj)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return []
        namespace = event.obj["metadata"].get("namespace", "")
        rs = self.store.get(_REPLICASETS, namespace, ref["name"])
        owner = controller_of(rs) if rs is not None else None
        if owner is None or owner.get("kind") != "Deployment":
            return []
        d = self.store.get(_DEPLOYMENTS, namespace, owner["name"])
        if d is None or ((d.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate":
            return []
        return [key_of(d)]

    # -- sync ------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        d = self.store.get(_DEPLOYMENTS, namespace, name)
        if d is None:
            return
        selector = selector_of(d)
        if selector is None:
            return
        if selector.empty:
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            generation = d["metadata"].get("generation")
            if (d.get("status") or {}).get("observedGeneration") != generation:
                self._write_status(d, {**(d.get("status") or {}), "observedGeneration": generation})
            return
        candidates = self.store.list(_REPLICASETS, namespace)
        rs_list = claim_objects(self, d, candidates, selector, self.rs_kind)
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rs = self._new_and_old(d, rs_list, create=False)
            self._sync_status(d, new_rs, old_rs)
            return
        d = self._check_paused(d)
        if (d.get("spec") or {}).get("paused"):
            self._scale_and_report(d, rs_list)
            return
        new_rs, old_rs = self._new_and_old(d, rs_list, create=False)
        if rollout.is_scaling_event(d, [*old_rs, new_rs]):
            self._scale_and_report(d, rs_list)
            return
        d = self._current(d)
        if ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            self._recreate(d, rs_list)
        else:
            self._rolling(d, rs_list)

    def _current(self, d: Obj) -> Obj:
        meta = d["metadata"]
        return self.store.get(_DEPLOYMENTS, meta["namespace"], meta["name"]) or d

    def _fresh_rs(self, rs: Obj) -> Obj:
        meta = rs["metadata"]
        return self.store.get(_REPLICASETS, meta["namespace"], meta["name"]) or rs

    # -- the new ReplicaSet ---------------------------------------------------------------------

    def _new_and_old(self, d: Obj, rs_list: list[Obj], *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (synced annotations) and the old ones."""
        rs_list = [self._fresh_rs(rs) for rs in rs_list]
        new_rs = rollout.find_new_replica_set(d, rs_list)
        old_rs = [rs for rs in rs_list if rs is not new_rs]
        revision = rollout.max_revision(old_rs) + 1
        if new_rs is not None:
            return self._sync_existing(d, new_rs, revision), old_rs
        if not create:
            return None, old_rs
        return self._create_new(d, old_rs, revision), old_rs

    def _sync_existing(self, d: Obj, new_rs: Obj, revision: int) -> Obj:
        annotations = rollout.replica_set_annotations(d, new_rs, revision, exists=True)
        min_ready = int((d.get("spec") or {}).get("minReadySeconds") or 0)
        if annotations != (new_rs["metadata"].get("annotations") or {}) or min_ready != int(
            (new_rs.get("spec") or {}).get("minReadySeconds") or 0
        ):
            updated = copy.deepcopy(new_rs)
            updated["metadata"]["annotations"] = annotations
            updated["spec"]["minReadySeconds"] = min_ready
            return self.update(self.rs_kind, updated)
        d = self._current(d)
        updated_d = copy.deepcopy(d)
        changed = self._set_revision(updated_d, new_rs)
        conditions = list((updated_d.get("status") or {}).get("conditions") or ())
        if (
            rolloutstatus.progress_deadline(d) is not None
            and get_condition(conditions, "Progressing") is None
        ):
            message = f'Found new replica set "{new_rs["metadata"]["name"]}"'
            found = rolloutstatus.condition(
                "Progressing", "True", rolloutstatus.FOUND_NEW_RS, message, self.clock.now()
            )
            updated_d.setdefault("status", {})["conditions"] = set_condition(conditions, found)
            changed = True
        if changed:
            self.update(self.d_kind, updated_d, status=True)
        return new_rs

    @staticmethod
    def _set_revision(d: Obj, rs: Obj) -> bool:
        revision = (rs["metadata"].get("annotations") or {}).get(rollout.REVISION)
        annotations = d["metadata"].setdefault("annotations", {})
        if revision is None or annotations.get(rollout.REVISION) == revision:
            if not annotations:
                del d["metadata"]["annotations"]
            return False
        annotations[rollout.REVISION] = revision
        return True

    def _create_new(self, d: Obj, old_rs: list[Obj], revision: int) -> Obj | None:
        collision = (d.get("status") or {}).get("collisionCount")
        probe = rollout.new_replica_set_body(d, 0, revision, collision)
        replicas = rollout.new_rs_new_replicas(d, [*old_rs, probe], probe)
        body = rollout.new_replica_set_body(d, replicas, revision, collision)
        namespace, name = d["metadata"]["namespace"], body["metadata"]["name"]
        now = self.clock.now()
        try:
            created = self.rest.create(self.rs_kind, namespace, body, self.opts)
        except errors.AlreadyExists:
            existing = self.store.get(_REPLICASETS, namespace, name)
            owned = (
                existing is not None and (controller_of(existing) or {}).get("uid") == d["metadata"]["uid"]
            )
            if owned and rollout.equal_ignore_hash(
                (existing.get("spec") or {}).get("template") or {},
                (d.get("spec") or {}).get("template") or {},
            ):
                return existing
            # A hash collision with someone else's ReplicaSet: the next name comes from a bumped count.
            status = dict(self._current(d).get("status") or {})
            status["collisionCount"] = int(collision or 0) + 1
            self._write_status(self._current(d), status)
            raise
        except errors.StatusError as err:
            message = f'Failed to create new replica set "{name}": {err.message}'
            if rolloutstatus.progress_deadline(d) is not None:
                current = self._current(d)
                status = dict(current.get("status") or {})
                failed = rolloutstatus.condition(
                    "Progressing", "False", rolloutstatus.FAILED_RS_CREATE, message, now
                )
                status["conditions"] = set_condition(list(status.get("conditions") or ()), failed)
                self._write_status(current, status)
            self.recorder.event(d, "Warning", rolloutstatus.FAILED_RS_CREATE, message)
            raise
        if replicas > 0:
            self.recorder.event(
                d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {replicas}"
            )
        updated_d = copy.deepcopy(self._current(d))
        self._set_revision(updated_d, created)
        if rolloutstatus.progress_deadline(d) is not None:
            cond = rolloutstatus.condition(
                "Progressing", "True", rolloutstatus.NEW_RS_CREATED, f'Created new replica set "{name}"', now
            )
            status = updated_d.setdefault("status", {})
            status["conditions"] = set_condition(list(status.get("conditions") or ()), cond)
        self.update(self.d_kind, updated_d, status=True)
        return created

    # -- scaling ----------------------------------------------------------------------------------

    def _scale(
        self, rs: Obj, size: int, d: Obj, *, annotate_only_if_resized: bool, operation: str = ""
    ) -> bool:
        """Resize ``rs`` (and refresh its replicas annotations); True when the size changed."""
        rs = self._fresh_rs(rs)
        old_size = rollout.replicas_of(rs)
        resized = old_size != size
        if not resized and annotate_only_if_resized:
            return False
        wanted = rollout.replicas_annotations(d)
        annotations = dict(rs["metadata"].get("annotations") or {})
        if not resized and all(annotations.get(k) == v for k, v in wanted.items()):
            return False
        updated = copy.deepcopy(rs)
        updated["spec"]["replicas"] = size
        updated["metadata"]["annotations"] = {**annotations, **wanted}
        self.update(self.rs_kind, updated)
        if resized:
            direction = operation or ("up" if size > old_size else "down")
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {rs['metadata']['name']} from {old_size} to {size}",
            )
        return resized

    def _scale_and_report(self, d: Obj, rs_list: list[Obj]) -> None:
        """``sync``: proportional scaling, history cleanup when paused, then the plain status."""
        new_rs, old_rs = self._new_and_old(d, rs_list, create=False)
        d = self._current(d)
        plan = rollout.proportional_scale(d, new_rs, old_rs)
        growing = sum(s for _, s in plan) > sum(rollout.replicas_of(rs) for rs, _ in plan)
        for rs, size in plan:
            self._scale(rs, size, d, annotate_only_if_resized=False, operation="up" if growing else "down")
        if (d.get("spec") or {}).get("paused"):
            self._cleanup(d, old_rs)
        new_rs, old_rs = self._refresh(new_rs, old_rs)
        all_rs = [*old_rs, *([new_rs] if new_rs is not None else [])]
        d = self._current(d)
        status = rolloutstatus.calculate_status(d, all_rs, new_rs, self.clock.now())
        if status != (d.get("status") or {}):
            self._write_status(d, status)

    def _refresh(self, new_rs: Obj | None, old_rs: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        fresh_old = [
            r
            for r in (
                self.store.get(_REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"])
                for rs in old_rs
            )
            if r
        ]
        return (self._fresh_rs(new_rs) if new_rs is not None else None), fresh_old

    def _rolling(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rs = self._new_and_old(d, rs_list, create=True)
        d = self._current(d)
        if new_rs is None:
            return
        new_rs = self._fresh_rs(new_rs)
        wanted = rollout.replicas_of(d)
        if rollout.replicas_of(new_rs) != wanted:
            if rollout.replicas_of(new_rs) > wanted:
                target = wanted
            else:
                target = rollout.new_rs_new_replicas(d, [*old_rs, new_rs], new_rs)
            if self._scale(new_rs, target, d, annotate_only_if_resized=True):
                self._sync_status(d, *self._refresh(new_rs, old_rs))
                return
        plan = rollout.old_replica_set_scale_down(d, new_rs, old_rs)
        if plan:
            for rs in old_rs:
                if rs["metadata"]["name"] in plan:
                    self._scale(rs, plan[rs["metadata"]["name"]], d, annotate_only_if_resized=True)
            self._sync_status(d, *self._refresh(new_rs, old_rs))
            return
        if deployment_complete(d):
            self._cleanup(d, old_rs)
        self._sync_status(d, *self._refresh(new_rs, old_rs))

    def _recreate(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rs = self._new_and_old(d, rs_list, create=False)
        d = self._current(d)
        scaled_down = False
        for rs in old_rs:
            if rollout.replicas_of(rs) > 0 and self._scale(rs, 0, d, annotate_only_if_resized=True):
                scaled_down = True
        if scaled_down or self._old_pods_running(d["metadata"]["namespace"], old_rs):
            self._sync_status(d, *self._refresh(new_rs, old_rs))
            return
        if new_rs is None:
            new_rs, old_rs = self._new_and_old(d, rs_list, create=True)
            d = self._current(d)
            if new_rs is None:
                return
        self._scale(new_rs, rollout.replicas_of(d), d, annotate_only_if_resized=True)
        if deployment_complete(d):
            self._cleanup(d, old_rs)
        self._sync_status(d, *self._refresh(new_rs, old_rs))

    def _old_pods_running(self, namespace: str, old_rs: list[Obj]) -> bool:
        """``oldPodsRunning``: an old ReplicaSet still counts pods, or has a pod that is not terminal."""
        if any(int((rs.get("status") or {}).get("replicas") or 0) > 0 for rs in old_rs):
            return True
        old_uids = {rs["metadata"]["uid"] for rs in old_rs}
        return any(
            (controller_of(pod) or {}).get("uid") in old_uids and not is_terminal(pod)
            for pod in self.store.list(_PODS, namespace)
        )

    def _cleanup(self, d: Obj, old_rs: list[Obj]) -> None:
        for rs in rollout.history_to_delete(d, [self._fresh_rs(rs) for rs in old_rs]):
            log.info("deployment %s: deleting old replica set %s", key_of(d), rs["metadata"]["name"])
            self.delete(self.rs_kind, rs)

    # -- status --------------------------------------------------------------------------------------

    def _check_paused(self, d: Obj) -> Obj:
        conditions = rolloutstatus.paused_condition(d, self.clock.now())
        if conditions is None:
            return d
        return self._write_status(d, {**(d.get("status") or {}), "conditions": conditions})

    def _sync_status(self, d: Obj, new_rs: Obj | None, old_rs: list[Obj]) -> None:
        d = self._current(d)
        all_rs = [*old_rs, *([new_rs] if new_rs is not None else [])]
        now = self.clock.now()
        status = rolloutstatus.rollout_status(d, all_rs, new_rs, now)
        if status != (d.get("status") or {}):
            self._write_status(d, status)
        after = rolloutstatus.requeue_after(d, status, now)
        if after is not None:
            self.enqueue_after(key_of(d), after)

    def _write_status(self, d: Obj, status: Obj) -> Obj:
        updated = copy.deepcopy(self._current(d))
        updated["status"] = status
        return self.update(self.d_kind, updated, status=True)
