"""Waiting for cluster objects to reach a state (upstream ``internal/wait``), on :func:`wait_for`.

Every waiter takes the :class:`~nrop.suite.e2e.kube.Kube` and plain values, polls with
``interval`` (default 1s) up to ``timeout`` (default 3m) like upstream's ``Waiter``, and
returns the last object seen. When the state does not come it raises
:class:`~nrop.suite.e2e.wait.polling.WaitTimeout` (an ``AssertionError``) saying what was expected
and what was seen — for pods including their events (``log_events_for_pod`` logs them the
same way). The completion rules (``is_deployment_complete``, ``are_daemonset_pods_ready``…)
are pure functions. The serial specs call these waiters (with the timeout and interval of
each upstream call) rather than keep copies of them. The waits on NodeResourceTopology
objects live in :mod:`nrop.suite.e2e.nrt.waiters`. :func:`pods_of_workload` is upstream's
``podlist`` (what the pod-count waits count).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from nrop.api.selectors import label_selector_from_dict
from nrop.api.workloads import deployment_complete
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.scheduling import pod_events_text
from nrop.suite.e2e.wait.polling import WaitTimeout, consistently, wait_for

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_TIMEOUT",
    "are_daemonset_pods_ready",
    "for_daemonset_deleted",
    "for_daemonset_pods",
    "for_daemonset_ready",
    "for_deployment_complete",
    "for_deployment_replicas_creation",
    "for_deployment_replicas_readiness",
    "for_job_completed",
    "for_mcp_condition",
    "for_namespace_deleted",
    "for_nrop_deleted",
    "for_nrosched_deleted",
    "for_object_deleted",
    "for_pod_deleted",
    "for_pod_phase",
    "for_pods_all_deleted",
    "for_pods_all_running",
    "for_replicaset_complete",
    "is_deployment_complete",
    "is_job_completed",
    "is_job_failed",
    "is_replicaset_complete",
    "log_events_for_pod",
    "mcp_condition_reached",
    "pod_summary",
    "pods_of_daemonset",
    "pods_of_workload",
    "while_in_pod_phase",
]

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 1.0
DEFAULT_TIMEOUT = 180.0

Manifest = dict[str, Any]
_GONE: Manifest = {"deleted": True}


# ------------------------------------------------------------------------------- pods


def pod_summary(pod: Mapping[str, Any] | None) -> str:
    """``ns/name phase=... node=... reason=...`` plus not-ready container states."""
    if not pod:
        return "<not found>"
    meta, status = pod.get("metadata", {}), pod.get("status") or {}
    parts = [
        f"{meta.get('namespace')}/{meta.get('name')}",
        f"phase={status.get('phase')}",
        f"node={(pod.get('spec') or {}).get('nodeName')}",
    ]
    if status.get("reason"):
        parts.append(f"reason={status['reason']}: {status.get('message', '')}")
    for cond in status.get("conditions") or ():
        if cond.get("status") != "True" and cond.get("message"):
            parts.append(f"{cond.get('type')}={cond.get('reason')}: {cond['message']}")
    return " ".join(parts)


def _events_text(kube: k.Kube, namespace: str, name: str) -> str:
    try:
        return pod_events_text(kube, namespace, name)
    except k.ApiError as err:
        return f"(cannot list events of {namespace}/{name}: {err})"


def log_events_for_pod(kube: k.Kube, namespace: str, name: str) -> None:
    """Log the pod's events (``objects.LogEventsForPod``), as a failed pod wait shows them."""
    log.info("%s", _events_text(kube, namespace, name))


@dataclass
class _PodView:
    """What a pod wait looks at; ``to_dict`` keeps failure messages short."""

    pod: Manifest | None

    @property
    def phase(self) -> str | None:
        return None if self.pod is None else (self.pod.get("status") or {}).get("phase")

    def to_dict(self) -> str:
        return pod_summary(self.pod)


def for_pod_phase(
    kube: k.Kube,
    namespace: str,
    name: str,
    phase: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the pod's phase is ``phase`` (``ForPodPhase``); the failure shows the pod's events.

    A pod that ended (``Failed``/``Succeeded``) while another phase is awaited stops the wait.
    """
    ended = {"Failed", "Succeeded"} - {phase}
    try:
        view = wait_for(
            lambda: _PodView(kube.get_or_none(k.POD, name, namespace)),
            lambda v: v.phase == phase,
            f"pod {namespace}/{name} to be {phase}",
            timeout,
            interval=interval,
            fixed_rate=True,
            terminal=lambda v: v.phase in ended,
        )
    except WaitTimeout as err:
        raise WaitTimeout(f"{err}\nevents:\n{_events_text(kube, namespace, name)}") from None
    assert view.pod is not None
    return view.pod


_ENDED_PHASES = frozenset({"Failed", "Succeeded"})


@dataclass
class _PodsView:
    """The pods a ``for_pods_all_running`` poll has seen neither Running nor ended."""

    pending: list[Manifest]

    def to_dict(self) -> list[str]:
        return [pod_summary(pod) for pod in self.pending]


def for_pods_all_running(
    kube: k.Kube,
    pods: Iterable[Mapping[str, Any]],
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[list[Manifest], list[Manifest]]:
    """``(failed, running)`` in the order of ``pods`` (``ForPodsAllRunning``).

    Each pod counts as running once seen Running before the shared deadline (as upstream's
    one ``ForPodPhase`` per pod), with the object seen then; a pod seen ended (``Failed``/
    ``Succeeded``) is failed at once. A failed entry is the pod as last seen (its manifest if
    never seen). One list per namespace per poll instead of a GET per pod: the same
    observation, cheaper for bursts of tens of pods.
    """
    pods = list(pods)
    keys = [_key(pod) for pod in pods]
    latest: dict[tuple[str, str], Manifest] = {key: dict(pod) for key, pod in zip(keys, pods, strict=True)}
    running: dict[tuple[str, str], Manifest] = {}
    ended: set[tuple[str, str]] = set()
    namespaces = sorted({namespace for namespace, _ in keys})

    def look() -> _PodsView:
        for namespace in namespaces:
            for item in kube.list(k.POD, namespace):
                key = _key(item)
                if key not in latest or key in running or key in ended:
                    continue
                latest[key] = item
                phase = (item.get("status") or {}).get("phase")
                if phase == "Running":
                    running[key] = item
                elif phase in _ENDED_PHASES:
                    ended.add(key)
        return _PodsView([latest[key] for key in keys if key not in running and key not in ended])

    try:
        wait_for(
            look,
            lambda view: not view.pending,
            "every pod Running or ended",
            timeout,
            interval=interval,
            fixed_rate=True,
        )
    except WaitTimeout:
        pass  # the pods not seen Running are the failed ones, as upstream's
    failed = [latest[key] for key in keys if key not in running]
    for pod in failed:
        log.warning("pod not running within %gs: %s", timeout, pod_summary(pod))
    return failed, [running[key] for key in keys if key in running]


def while_in_pod_phase(
    kube: k.Kube,
    namespace: str,
    name: str,
    phase: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    steps: int = 3,
) -> Manifest:
    """``steps`` times: sleep ``interval``, then check the pod is still in ``phase`` (``WhileInPodPhase``).

    Returns the pod last seen; ``WaitTimeout`` (with the pod's events) as soon as it is seen
    in another phase, e.g. a pod expected to stay Pending got scheduled.
    """
    if steps == 0:  # nothing to check: the pod as it is
        return kube.get(k.POD, name, namespace)
    polls = itertools.count(1)

    def look() -> _PodView:
        log.info(
            "ensuring the pod %s/%s keep being in phase %s %d/%d", namespace, name, phase, next(polls), steps
        )
        return _PodView(kube.get_or_none(k.POD, name, namespace))

    def failure(view: _PodView) -> str:
        log.warning("pod %s/%s unexpected phase %r expected %r", namespace, name, view.phase, phase)
        return (
            f"pod {namespace}/{name} unexpected phase {view.phase!r} expected {phase!r}: {pod_summary(view.pod)}\n"
            f"events:\n{_events_text(kube, namespace, name)}"
        )

    view = consistently(
        look,
        lambda v: v.phase == phase,
        f"pod {namespace}/{name} to keep being {phase}",
        interval=interval,
        steps=steps,
        failure=failure,
    )
    assert view.pod is not None
    return view.pod


def _deleted(
    kube: k.Kube,
    kind: k.Kind,
    name: str,
    namespace: str | None,
    interval: float,
    timeout: float,
    *,
    immediate: bool = True,
) -> None:
    wait_for(
        lambda: kube.get_or_none(kind, name, namespace) or _GONE,
        lambda obj: obj is _GONE,
        f"{kind.kind} {namespace + '/' if namespace else ''}{name} to be deleted",
        timeout,
        interval=interval,
        fixed_rate=True,
        immediate=immediate,
    )


def for_object_deleted(
    kube: k.Kube,
    kind: k.Kind,
    name: str,
    namespace: str | None = None,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Until the object is gone (upstream's ``For<Kind>Deleted``; first look at once)."""
    _deleted(kube, kind, name, namespace, interval, timeout)


def for_pod_deleted(
    kube: k.Kube,
    namespace: str,
    name: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    for_object_deleted(kube, k.POD, name, namespace, interval=interval, timeout=timeout)


def for_pods_all_deleted(
    kube: k.Kube,
    pods: Iterable[Mapping[str, Any]],
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    deadline = time.monotonic() + timeout
    for pod in pods:
        meta = pod["metadata"]
        left = max(0.0, deadline - time.monotonic())
        for_pod_deleted(kube, meta["namespace"], meta["name"], interval=interval, timeout=left)


# ------------------------------------------------------------------------------- workloads


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def is_deployment_complete(generation: int, status: Mapping[str, Any], replicas: int) -> bool:
    """Upstream's ``IsDeploymentComplete(oldGeneration, newStatus, expectedReplicas)``: Kubernetes'
    ``DeploymentComplete`` (:func:`nrop.api.workloads.deployment_complete`) against the generation
    and replica count the caller expects."""
    return deployment_complete(
        {"metadata": {"generation": generation}, "spec": {"replicas": replicas}}, status
    )


def are_daemonset_pods_ready(status: Mapping[str, Any]) -> bool:
    """desired > 0, current == available == desired, none unavailable (``AreDaemonSetPodsReady``)."""
    desired = int(status.get("desiredNumberScheduled", 0))
    return (
        desired > 0
        and int(status.get("currentNumberScheduled", 0)) == desired
        and int(status.get("numberAvailable", 0)) == desired
        and int(status.get("numberUnavailable", 0)) == 0
    )


def is_replicaset_complete(generation: int, replicas: int, status: Mapping[str, Any]) -> bool:
    return (
        all(int(status.get(key, 0)) == replicas for key in ("readyReplicas", "replicas", "availableReplicas"))
        and int(status.get("observedGeneration", 0)) >= generation
    )


def _condition_true(obj: Mapping[str, Any], cond_type: str) -> bool:
    """The first condition of ``cond_type`` is ``True``."""
    for cond in _status(obj).get("conditions") or ():
        if cond.get("type") == cond_type:
            return cond.get("status") == "True"
    return False


def is_job_completed(job: Mapping[str, Any]) -> bool:
    """The ``Complete`` condition is ``True`` (the first of that type counts)."""
    return _condition_true(job, "Complete")


def is_job_failed(job: Mapping[str, Any]) -> bool:
    """The ``Failed`` condition is ``True``: the job can no longer complete."""
    return _condition_true(job, "Failed")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta["namespace"], meta["name"]


def _until(
    kube: k.Kube,
    kind: k.Kind,
    key: tuple[str, str],
    done: Callable[[Manifest], bool],
    what: str,
    interval: float,
    timeout: float,
    *,
    may_be_missing: bool = False,
    terminal: Callable[[Manifest], bool] | None = None,
) -> Manifest:
    """Until ``done`` holds for the object ``key`` (namespace, name); the failure says
    ``<kind> <namespace>/<name> <what>``. A missing object is an error at once, unless
    ``may_be_missing``: then it counts as not yet."""
    namespace, name = key

    def get() -> Manifest:
        if may_be_missing:
            return kube.get_or_none(kind, name, namespace) or {}
        return kube.get(kind, name, namespace)

    return wait_for(
        get,
        lambda obj: bool(obj) and done(obj),
        f"{kind.kind.lower()} {namespace}/{name} {what}",
        timeout,
        interval=interval,
        fixed_rate=True,
        terminal=terminal,
    )


def _on_status(rule: Callable[[Mapping[str, Any]], bool]) -> Callable[[Manifest], bool]:
    """``rule`` applied to the object's status."""
    return lambda obj: rule(_status(obj))


def _count_is(key: str, expected: int, status: Mapping[str, Any]) -> bool:
    """``status.<key>`` is ``expected`` (absent counts as 0)."""
    return int(status.get(key, 0)) == expected


def for_deployment_complete(
    kube: k.Kube,
    dp: Mapping[str, Any],
    *,
    replicas: int | None = None,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the Deployment is complete with ``replicas`` (default: its spec's) (``ForDeploymentComplete``)."""
    want = int(dp["spec"].get("replicas", 1)) if replicas is None else replicas
    generation = int(dp["metadata"].get("generation", 0))
    done = _on_status(partial(is_deployment_complete, generation, replicas=want))
    return _until(
        kube, k.DEPLOYMENT, _key(dp), done, f"to be complete with {want} replicas", interval, timeout
    )


def for_deployment_replicas_creation(
    kube: k.Kube,
    dp: Mapping[str, Any],
    expected: int,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the Deployment has ``expected`` replicas (``ForDeploymentReplicasCreation``)."""
    done = _on_status(partial(_count_is, "replicas", expected))
    return _until(kube, k.DEPLOYMENT, _key(dp), done, f"to have {expected} replicas", interval, timeout)


def for_deployment_replicas_readiness(
    kube: k.Kube,
    dp: Mapping[str, Any],
    expected: int,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until ``expected`` replicas of the Deployment are ready."""
    done = _on_status(partial(_count_is, "readyReplicas", expected))
    return _until(kube, k.DEPLOYMENT, _key(dp), done, f"to have {expected} ready replicas", interval, timeout)


def for_daemonset_ready(
    kube: k.Kube,
    namespace: str,
    name: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the DaemonSet exists and all its pods are available (``ForDaemonSetReadyByKey``)."""
    done = _on_status(are_daemonset_pods_ready)
    return _until(
        kube, k.DAEMONSET, (namespace, name), done, "to be ready", interval, timeout, may_be_missing=True
    )


def for_daemonset_pods(
    kube: k.Kube,
    namespace: str,
    name: str,
    expected: int,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the DaemonSet wants ``expected`` pods (``ForDaemonsetPodsCreation``)."""
    done = _on_status(partial(_count_is, "desiredNumberScheduled", expected))
    what = f"to have {expected} pods"
    return _until(kube, k.DAEMONSET, (namespace, name), done, what, interval, timeout, may_be_missing=True)


def for_daemonset_deleted(
    kube: k.Kube,
    namespace: str,
    name: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    _deleted(kube, k.DAEMONSET, name, namespace, interval, timeout)


def for_replicaset_complete(
    kube: k.Kube,
    rs: Mapping[str, Any],
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the ReplicaSet is complete with its spec's replicas (``ForReplicaSetComplete``)."""
    replicas = int(rs["spec"].get("replicas", 1))
    generation = int(rs["metadata"].get("generation", 0))
    done = _on_status(partial(is_replicaset_complete, generation, replicas))
    return _until(
        kube, k.REPLICASET, _key(rs), done, f"to be complete with {replicas} replicas", interval, timeout
    )


def for_job_completed(
    kube: k.Kube,
    namespace: str,
    name: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> Manifest:
    """Until the Job's ``Complete`` condition is True (``ForJobCompleted``); a failed Job ends the wait."""
    job = (namespace, name)
    return _until(
        kube, k.JOB, job, is_job_completed, "to complete", interval, timeout, terminal=is_job_failed
    )


def for_namespace_deleted(
    kube: k.Kube, name: str, *, interval: float = DEFAULT_INTERVAL, timeout: float = DEFAULT_TIMEOUT
) -> None:
    for_object_deleted(kube, k.NAMESPACE, name, interval=interval, timeout=timeout)


def for_nrop_deleted(
    kube: k.Kube,
    name: str = "numaresourcesoperator",
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Until the NUMAResourcesOperator is gone (first look after one ``interval``)."""
    _deleted(kube, k.NROP, name, None, interval, timeout, immediate=False)


def for_nrosched_deleted(
    kube: k.Kube,
    name: str = "numaresourcesscheduler",
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Until the NUMAResourcesScheduler is gone (first look after one ``interval``)."""
    _deleted(kube, k.NROSCHED, name, None, interval, timeout, immediate=False)


def pods_of_workload(kube: k.Kube, workload: Mapping[str, Any]) -> list[Manifest]:
    """``podlist.ByDeployment`` / ``ByReplicaSet`` / ``ByDaemonset``: every pod the workload's
    selector matches, terminating ones included (upstream counts them); in the workload's
    namespace, except for a DaemonSet (:func:`pods_of_daemonset`)."""
    if workload.get("kind") == k.DAEMONSET.kind:
        return pods_of_daemonset(kube, workload)
    selector = str(label_selector_from_dict((workload.get("spec") or {}).get("selector")))
    return kube.list(k.POD, workload["metadata"]["namespace"], label_selector=selector)


def pods_of_daemonset(kube: k.Kube, ds: Mapping[str, Any]) -> list[Manifest]:
    """``podlist.ByDaemonset``: every pod the DaemonSet's selector matches, in all namespaces
    and whoever owns it (upstream checks neither), terminating ones included. For a DaemonSet
    read from a list, whose items carry no ``kind``."""
    selector = str(label_selector_from_dict((ds.get("spec") or {}).get("selector")))
    return kube.list(k.POD, label_selector=selector)


# ------------------------------------------------------------------------------- MachineConfigPools


def mcp_condition_reached(reference_version: str, mcp: Mapping[str, Any], ctype: str) -> tuple[bool, str]:
    """One look of ``ForMachineConfigPoolCondition``: ``(done, why not)``.

    A pool whose ``resourceVersion`` is still the reference's was not touched since the
    snapshot (its ``Updated=True`` may be from before the change): not done. Else done when
    condition ``ctype`` is True.
    """
    name, version = mcp["metadata"]["name"], str(mcp["metadata"].get("resourceVersion") or "")
    if version == reference_version:
        return False, f"mcp: {name!r} resourceversion {version!r} not changed yet"
    for cond in _status(mcp).get("conditions") or ():
        if cond.get("type") == ctype:
            if cond.get("status") == "True":
                return True, ""
            return False, (
                f"mcp: {name!r} conditionType: {ctype!r} status is: {cond.get('status')!r} "
                f"resourceversion: updated {version!r} reference {reference_version!r}"
            )
    return False, f"mcp: {name!r} condition type: {ctype!r} was not found"


def for_mcp_condition(
    kube: k.Kube,
    mcp: Mapping[str, Any] | str,
    ctype: str,
    *,
    interval: float,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Manifest:
    """Until the pool changed since ``mcp`` and its condition ``ctype`` is True
    (``ForMachineConfigPoolCondition``); returns the pool then.

    ``mcp`` is the pool as read *before* the change (a name: read now, as upstream does where
    it gets the pool right before waiting). The first look comes after one ``interval``;
    the pool counts only once its ``resourceVersion`` differs from the snapshot's
    (:func:`mcp_condition_reached`). A pool that cannot be read ends the wait at once.
    """
    snapshot = kube.get(k.MCP, mcp) if isinstance(mcp, str) else mcp
    name = snapshot["metadata"]["name"]
    reference = str(snapshot["metadata"].get("resourceVersion") or "")
    seen: dict[str, Any] = {}

    def look() -> tuple[bool, str]:
        current = kube.get(k.MCP, name)
        seen["mcp"] = current
        done, why = mcp_condition_reached(reference, current, ctype)
        if why:
            log.info("%s", why)
        return done, why

    try:
        wait_for(
            look,
            lambda result: result[0],
            f"MCP {name} condition {ctype}",
            timeout,
            interval=interval,
            fixed_rate=True,
            immediate=False,
            sleep=sleep,
            clock=clock,
        )
    except (WaitTimeout, k.ApiError):
        log.info("mcp: %r final status: %s", name, _status(seen.get("mcp") or {}))
        raise
    return seen["mcp"]
