"""The Job controller's arithmetic: finished-pod accounting, how many pods to run, when the Job ends.

Pure, after ``pkg/controller/job`` (NonIndexed Jobs):

* pods carry the ``batch.kubernetes.io/job-tracking`` finalizer while they count: a pod
  that finished is first recorded by uid in ``status.uncountedTerminatedPods``, then loses
  the finalizer, then moves into ``succeeded``/``failed`` (:func:`record_finished`,
  :func:`fold_uncounted`), so a finished pod is counted exactly once even if it is deleted;
* :func:`want_active` (``parallelism`` capped by the completions left) and
  :func:`backoff_remaining` (10 s doubling per failure since the last success, at most 6 min);
* :func:`finish_reason`: ``BackoffLimitExceeded`` (failures above ``backoffLimit``, or
  container restarts reaching it with ``restartPolicy: OnFailure``), ``DeadlineExceeded``
  (``activeDeadlineSeconds``), ``CompletionsReached``;
* :func:`conditions_for`: the 1.33 pairs ``FailureTarget`` then ``Failed``, and
  ``SuccessCriteriaMet`` then ``Complete`` once no pod of the Job is still running or terminating.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nrop.api.metatime import parse_time, rfc3339
from nrop.localcluster.controllers.decisions.workloads import get_condition, is_active, is_ready, is_terminal

__all__ = [
    "BACKOFF_LIMIT_EXCEEDED",
    "COMPLETIONS_REACHED",
    "DEADLINE_EXCEEDED",
    "TRACKING_FINALIZER",
    "Finish",
    "backoff_remaining",
    "conditions_for",
    "counts",
    "finish_reason",
    "fold_uncounted",
    "is_finished",
    "record_finished",
    "want_active",
]

Obj = dict[str, Any]
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"


@dataclass(frozen=True)
class Finish:
    """How a Job ends: ``Complete`` or ``Failed``, with the upstream reason and message."""

    kind: str
    reason: str
    message: str

    @property
    def target(self) -> str:
        return "SuccessCriteriaMet" if self.kind == "Complete" else "FailureTarget"


BACKOFF_LIMIT_EXCEEDED = Finish(
    "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
)
DEADLINE_EXCEEDED = Finish("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
COMPLETIONS_REACHED = Finish("Complete", "CompletionsReached", "Reached expected number of succeeded pods")


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def _status(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("status") or {}


def _tracked(pod: Mapping[str, Any]) -> bool:
    return TRACKING_FINALIZER in (pod.get("metadata", {}).get("finalizers") or ())


def is_finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in _status(job).get("conditions") or ()
    )


# -- accounting -------------------------------------------------------------------------------------


def record_finished(job: Mapping[str, Any], pods: Iterable[Obj]) -> tuple[dict[str, list[str]], list[Obj]]:
    """Step 1: the uncounted uids with the newly finished tracked pods added, and the pods to un-finalize."""
    uncounted = _status(job).get("uncountedTerminatedPods") or {}
    succeeded = list(uncounted.get("succeeded") or ())
    failed = list(uncounted.get("failed") or ())
    release = []
    for pod in pods:
        if not _tracked(pod) or not is_terminal(pod):
            continue
        uid = pod["metadata"]["uid"]
        if uid not in succeeded and uid not in failed:
            (succeeded if pod["status"]["phase"] == "Succeeded" else failed).append(uid)
        release.append(pod)
    return {"succeeded": succeeded, "failed": failed}, release


def fold_uncounted(
    job: Mapping[str, Any], uncounted: Mapping[str, Sequence[str]], still_tracked: set[str]
) -> tuple[int, int, dict[str, list[str]]]:
    """Step 3: (succeeded, failed, uncounted left) once the finalizers of all but ``still_tracked`` are gone."""
    succeeded = int(_status(job).get("succeeded") or 0)
    failed = int(_status(job).get("failed") or 0)
    left: dict[str, list[str]] = {"succeeded": [], "failed": []}
    for uid in uncounted.get("succeeded") or ():
        if uid in still_tracked:
            left["succeeded"].append(uid)
        else:
            succeeded += 1
    for uid in uncounted.get("failed") or ():
        if uid in still_tracked:
            left["failed"].append(uid)
        else:
            failed += 1
    return succeeded, failed, {k: v for k, v in left.items() if v}


# -- decisions -------------------------------------------------------------------------------------------


def want_active(job: Mapping[str, Any], succeeded: int, active: int) -> int:
    """Pods that should run now: ``parallelism``, capped by the completions still needed."""
    parallelism = int(_spec(job).get("parallelism", 1) or 0)
    completions = _spec(job).get("completions")
    if completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(int(completions) - succeeded, parallelism))


def _finished_at(pod: Mapping[str, Any]) -> datetime | None:
    times = [
        parse_time(s["state"]["terminated"]["finishedAt"])
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
        if ((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
    ]
    return max(times) if times else None


def backoff_remaining(pods: Iterable[Obj], now: datetime, base: float, cap: float) -> float:
    """Seconds to wait before replacing failed pods: base * 2^(failures since the last success - 1)."""
    finished = sorted(
        (
            (t, p["status"]["phase"])
            for p in pods
            if is_terminal(p)
            for t in [_finished_at(p)]
            if t is not None
        ),
        key=lambda item: item[0],
    )
    failures = 0
    last_failure: datetime | None = None
    for when, phase in finished:
        if phase == "Succeeded":
            failures, last_failure = 0, None
        else:
            failures += 1
            last_failure = when
    if not failures or last_failure is None:
        return 0.0
    delay = min(base * 2 ** (failures - 1), cap)
    return max(0.0, (last_failure + timedelta(seconds=delay) - now).total_seconds())


def _restarts(pods: Iterable[Obj]) -> int:
    total = 0
    for pod in pods:
        status = pod.get("status") or {}
        for s in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
            total += int(s.get("restartCount") or 0)
    return total


def finish_reason(
    job: Mapping[str, Any], pods: Sequence[Obj], succeeded: int, failed: int, now: datetime
) -> Finish | None:
    """Whether the Job ends now, and why (backoff limit first, then deadline, then completions)."""
    spec = _spec(job)
    limit = int(spec.get("backoffLimit", 6))
    active = [p for p in pods if is_active(p)]
    if failed > limit:
        return BACKOFF_LIMIT_EXCEEDED
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "OnFailure":
        restarts = _restarts(active)
        if (restarts > 0) if limit == 0 else (restarts >= limit):
            return BACKOFF_LIMIT_EXCEEDED
    deadline = spec.get("activeDeadlineSeconds")
    started = _status(job).get("startTime")
    if deadline is not None and started and now - parse_time(started) >= timedelta(seconds=int(deadline)):
        return DEADLINE_EXCEEDED
    completions = spec.get("completions")
    if completions is not None and succeeded >= int(completions):
        return COMPLETIONS_REACHED
    if completions is None and succeeded > 0 and not active:
        return COMPLETIONS_REACHED
    return None


def _condition(kind: str, finish: Finish, now: datetime) -> Obj:
    stamp = rfc3339(now)
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": finish.reason,
        "message": finish.message,
    }


def conditions_for(job: Mapping[str, Any], finish: Finish, settled: bool, now: datetime) -> list[Obj]:
    """The Job's conditions with the target condition, and the final one once ``settled`` (no pod left running)."""
    conditions = [dict(c) for c in _status(job).get("conditions") or ()]
    if get_condition(conditions, finish.target) is None:
        conditions.append(_condition(finish.target, finish, now))
    if settled and get_condition(conditions, finish.kind) is None:
        conditions.append(_condition(finish.kind, finish, now))
    return conditions


def counts(pods: Iterable[Obj]) -> tuple[list[Obj], int, int]:
    """(active pods, ready among them, terminating pods)."""
    pods = list(pods)
    active = [p for p in pods if is_active(p)]
    terminating = sum(1 for p in pods if not is_terminal(p) and p["metadata"].get("deletionTimestamp"))
    return active, sum(1 for p in active if is_ready(p)), terminating
