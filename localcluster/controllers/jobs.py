"""The Job controller: runs a Job's pods to ``completions`` within ``backoffLimit``, and reports it.

The I/O shell of :mod:`.jobstatus`.  Follows Jobs and their pods.  A sync:

1. sets ``startTime``; records finished tracked pods in ``uncountedTerminatedPods``,
   removes their ``batch.kubernetes.io/job-tracking`` finalizer, then folds them into
   ``succeeded``/``failed``;
2. decides whether the Job ends (``BackoffLimitExceeded``, ``DeadlineExceeded``,
   ``CompletionsReached``): then its running pods are deleted, the target condition is set,
   and the final ``Complete``/``Failed`` condition (with ``completionTime`` for success and
   a ``Completed``/warning event) once none is left;
3. otherwise keeps ``min(parallelism, completions left)`` pods running, replacing failed
   ones after the failure back-off; a suspended Job has its pods deleted;
4. writes ``active``, ``ready``, ``terminating``, ``succeeded``, ``failed`` through ``jobs/status``.

Pods of a Job being deleted, or of one that is gone, lose the tracking finalizer so the
garbage collector can remove them.  Indexed Jobs are not supported (they are left alone,
with a warning event).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from nrop.api.metatime import parse_time, rfc3339
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions
from nrop.localcluster.clock import Clock
from nrop.localcluster.controllers.decisions import jobstatus
from nrop.localcluster.controllers.decisions.replicas import deletion_order
from nrop.localcluster.controllers.decisions.workloads import (
    controller_of,
    get_condition,
    pod_from_template,
    set_condition,
)
from nrop.localcluster.controllers.reconciling import Controller, key_of, kind_of, split_key
from nrop.localcluster.controllers.replicasets import claim_objects, owner_subscriptions, selector_of

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = ["JobController"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_JOBS = ("batch", "jobs")
_PODS = ("", "pods")


class JobController(Controller):
    name = "job-controller"

    def __init__(
        self, server: InProcessAPI, clock: Clock, *, backoff_base: float = 10.0, backoff_max: float = 360.0
    ) -> None:
        super().__init__(server, clock)
        self.job_kind = kind_of(server, "batch", "jobs")
        self.pod_kind = kind_of(server, "", "pods")
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max

    def subscriptions(self):  # type: ignore[no-untyped-def]
        return owner_subscriptions(self.store, _JOBS, "Job", _PODS)

    def initial_keys(self) -> Iterable[str]:
        return [key_of(job) for job in self.store.list(_JOBS)]

    # -- sync ------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self.store.get(_JOBS, namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._release_orphans(namespace, name, job)
            return
        if (job.get("spec") or {}).get("completionMode", "NonIndexed") != "NonIndexed":
            self.recorder.event(job, "Warning", "Unsupported", "Indexed Jobs are not run by this cluster")
            return
        selector = selector_of(job)
        if selector is None:
            return
        claim_objects(self, job, self.store.list(_PODS, namespace), selector, self.pod_kind)
        now = self.clock.now()
        job = self._account(job)
        pods = self._pods(job)
        status = dict(job.get("status") or {})
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        suspended = bool((job.get("spec") or {}).get("suspend"))
        if not status.get("startTime") and not suspended:
            status["startTime"] = rfc3339(now)
        finish: jobstatus.Finish | None = None
        if not jobstatus.is_finished(job):
            finish = self._target_finish(job, status) or jobstatus.finish_reason(
                {**job, "status": status}, pods, succeeded, failed, now
            )
            active, _, _ = jobstatus.counts(pods)
            if finish is not None or suspended:
                self._delete_pods(job, active)
            else:
                self._keep_running(job, pods, active, succeeded, now)
        pods = self._pods(job)
        active, ready, terminating = jobstatus.counts(pods)
        for field, value in (("active", len(active)), ("succeeded", succeeded), ("failed", failed)):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        status["ready"], status["terminating"] = ready, terminating
        conditions = list(status.get("conditions") or ())
        if suspended and finish is None and not jobstatus.is_finished(job):
            conditions = set_condition(conditions, _suspended(now))
        if finish is not None:
            settled = not active and not terminating
            had_final = get_condition(conditions, finish.kind) is not None
            conditions = jobstatus.conditions_for(
                {"status": {"conditions": conditions}}, finish, settled, now
            )
            if settled and not had_final:
                if finish.kind == "Complete":
                    status["completionTime"] = rfc3339(now)
                    self.recorder.event(job, "Normal", "Completed", "Job completed")
                else:
                    self.recorder.event(job, "Warning", finish.reason, finish.message)
        if conditions:
            status["conditions"] = conditions
        self._write_status(job, status)
        self._requeue_for_deadline(job, status, now)

    def _pods(self, job: Obj) -> list[Obj]:
        uid = job["metadata"]["uid"]
        return [
            p
            for p in self.store.list(_PODS, job["metadata"]["namespace"])
            if (controller_of(p) or {}).get("uid") == uid
        ]

    def _target_finish(self, job: Obj, status: Obj) -> jobstatus.Finish | None:
        """A Job already past its target condition keeps that outcome while its pods terminate."""
        for finish in (
            jobstatus.BACKOFF_LIMIT_EXCEEDED,
            jobstatus.DEADLINE_EXCEEDED,
            jobstatus.COMPLETIONS_REACHED,
        ):
            cond = get_condition(list(status.get("conditions") or ()), finish.target)
            if cond is not None and cond.get("reason") == finish.reason:
                return finish
        return None

    # -- accounting ---------------------------------------------------------------------------------

    def _account(self, job: Obj) -> Obj:
        """Count finished tracked pods exactly once (uncounted uids, finalizer removal, fold)."""
        uncounted, release = jobstatus.record_finished(job, self._pods(job))
        previous = (job.get("status") or {}).get("uncountedTerminatedPods") or {}
        if {k: v for k, v in uncounted.items() if v} != {k: v for k, v in previous.items() if v}:
            job = self._write_status(job, {**(job.get("status") or {}), "uncountedTerminatedPods": uncounted})
        for pod in release:
            self._drop_finalizer(pod)
        still = {
            p["metadata"]["uid"]
            for p in self._pods(job)
            if jobstatus.TRACKING_FINALIZER in (p["metadata"].get("finalizers") or ())
        }
        succeeded, failed, left = jobstatus.fold_uncounted(job, uncounted, still)
        status = dict(job.get("status") or {})
        status["uncountedTerminatedPods"] = left
        for field, value in (("succeeded", succeeded), ("failed", failed)):
            if value:
                status[field] = value
        return self._write_status(job, status)

    def _drop_finalizer(self, pod: Obj) -> None:
        current = self.store.get(_PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        if current is None or current["metadata"]["uid"] != pod["metadata"]["uid"]:
            return
        finalizers = [
            f for f in current["metadata"].get("finalizers") or () if f != jobstatus.TRACKING_FINALIZER
        ]
        updated = copy.deepcopy(current)
        if finalizers:
            updated["metadata"]["finalizers"] = finalizers
        else:
            updated["metadata"].pop("finalizers", None)
        try:
            self.update(self.pod_kind, updated)
        except (errors.NotFound, errors.Conflict):
            pass

    def _release_orphans(self, namespace: str, name: str, job: Obj | None) -> None:
        """Pods of a Job being deleted, or gone, must not keep the tracking finalizer."""
        alive = (
            job["metadata"]["uid"]
            if job is not None and not job["metadata"].get("deletionTimestamp")
            else None
        )
        for pod in self.store.list(_PODS, namespace):
            ref = controller_of(pod)
            if (
                ref is not None
                and ref.get("kind") == "Job"
                and ref.get("name") == name
                and ref.get("uid") != alive
                and jobstatus.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())
            ):
                self._drop_finalizer(pod)

    # -- pods ------------------------------------------------------------------------------------------

    def _keep_running(self, job: Obj, pods: list[Obj], active: list[Obj], succeeded: int, now: Any) -> None:
        want = jobstatus.want_active(job, succeeded, len(active))
        if len(active) > want:
            self._delete_pods(job, deletion_order(active)[: len(active) - want])
            return
        missing = want - len(active)
        if missing <= 0:
            return
        wait = jobstatus.backoff_remaining(pods, now, self.backoff_base, self.backoff_max)
        if wait > 0:
            self.enqueue_after(key_of(job), wait)
            return
        template = (job.get("spec") or {}).get("template") or {}
        for _ in range(missing):
            body = pod_from_template(template, job)
            body["metadata"]["finalizers"] = [
                *body["metadata"].get("finalizers", []),
                jobstatus.TRACKING_FINALIZER,
            ]
            try:
                pod = self.rest.create(self.pod_kind, job["metadata"]["namespace"], body, self.opts)
            except errors.StatusError as err:
                self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {err.message}")
                raise
            self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")

    def _delete_pods(self, job: Obj, pods: list[Obj]) -> None:
        for pod in pods:
            try:
                self.rest.delete(
                    self.pod_kind,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    DeleteOptions(preconditions={"uid": pod["metadata"]["uid"]}),
                )
            except (errors.NotFound, errors.Conflict):
                continue
            self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    # -- status ------------------------------------------------------------------------------------------

    def _write_status(self, job: Obj, status: Obj) -> Obj:
        current = self.store.get(_JOBS, job["metadata"]["namespace"], job["metadata"]["name"]) or job
        if status == (current.get("status") or {}):
            return current
        updated = copy.deepcopy(current)
        updated["status"] = status
        return self.update(self.job_kind, updated, status=True)

    def _requeue_for_deadline(self, job: Obj, status: Obj, now: Any) -> None:
        deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is None or not status.get("startTime") or jobstatus.is_finished({"status": status}):
            return
        due = parse_time(status["startTime"]) + timedelta(seconds=int(deadline))
        self.enqueue_after(key_of(job), max(0.0, (due - now).total_seconds()) + 0.01)


def _suspended(now: Any) -> Obj:
    stamp = rfc3339(now)
    return {
        "type": "Suspended",
        "status": "True",
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": "JobSuspended",
        "message": "Job suspended",
    }
