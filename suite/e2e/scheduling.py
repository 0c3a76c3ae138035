"""Checks of how a pod was (not) scheduled or admitted, from its events (upstream ``test/internal/nrosched``).

Each check lists the core/v1 Events whose ``involvedObject`` is the pod and looks for one
matching event:

* scheduled: ``reason=Scheduled`` and the reporting controller is the scheduler;
* scheduling failed: ``reason=FailedScheduling`` from the scheduler, optionally with a
  message containing ``cannot align container`` / ``cannot align pod`` (by TM scope) or
  any given text;
* kubelet rejection: ``reason=TopologyAffinityError``, ``source.component=kubelet``,
  message containing ``Resources cannot be allocated with Topology locality``.

A pod with no events at all is an error (:class:`NoEventsError`), as upstream. The checks
return an :class:`EventCheck`, true when a matching event was found, whose text lists
the pod's events so that ``assert check_...(...)`` shows them on failure.
:func:`dump_scheduler_logs` fetches the scheduler leader's recent logs.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nrop.api.fielderrors import go_quote
from nrop.api.metatime import parse_time
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.wait.polling import wait_for

__all__ = [
    "ERROR_CANNOT_ALIGN_CONTAINER",
    "ERROR_CANNOT_ALIGN_POD",
    "ERROR_TOPOLOGY_AFFINITY",
    "LEADER_LEASE",
    "REASON_FAILED_SCHEDULING",
    "REASON_SCHEDULED",
    "REASON_TOPOLOGY_AFFINITY_ERROR",
    "SCHEDULER_CONTAINER",
    "EventCheck",
    "NoEventsError",
    "alignment_error",
    "check_nro_scheduler_available",
    "check_pod_kubelet_reject_with_topology_affinity_error",
    "check_pod_scheduling_failed",
    "check_pod_scheduling_failed_for_alignment",
    "check_pod_scheduling_failed_with_msg",
    "check_pod_was_scheduled_with",
    "dump_scheduler_logs",
    "event_to_string",
    "is_failed_scheduling",
    "is_kubelet_topology_affinity_error",
    "is_scheduled_with",
    "leader_pod_name",
    "log_window_seconds",
    "match_events",
    "nrosched_available",
    "pod_events_text",
]

log = logging.getLogger(__name__)

REASON_SCHEDULED = "Scheduled"
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
ERROR_CANNOT_ALIGN_POD = "cannot align pod"
ERROR_CANNOT_ALIGN_CONTAINER = "cannot align container"
ERROR_TOPOLOGY_AFFINITY = "Resources cannot be allocated with Topology locality"
KUBELET = "kubelet"
LEADER_LEASE = "numa-scheduler-leader"
SCHEDULER_CONTAINER = "secondary-scheduler"
SCHEDULER_POD_LABEL = "secondary-scheduler"
#: Logs before the earliest target pod's creation, for clock skew (upstream 5s).
LOG_SAFETY_MARGIN = 5.0
#: Without target pods: the last 30s.
LOG_WINDOW = 30.0

Event = Mapping[str, Any]


class NoEventsError(AssertionError):
    """The pod has no events at all (upstream: ``no event received for ns/name``)."""


# ------------------------------------------------------------------------------- pure part


def _reporting_controller(event: Event) -> str:
    # core/v1 calls events.k8s.io's reportingController "reportingComponent".
    return str(event.get("reportingComponent") or event.get("reportingController") or "")


def is_scheduled_with(event: Event, scheduler: str) -> bool:
    return event.get("reason") == REASON_SCHEDULED and _reporting_controller(event) == scheduler


def is_failed_scheduling(event: Event, scheduler: str, message: str = "") -> bool:
    return (
        event.get("reason") == REASON_FAILED_SCHEDULING
        and _reporting_controller(event) == scheduler
        and message in str(event.get("message") or "")
    )


def is_kubelet_topology_affinity_error(event: Event) -> bool:
    return (
        event.get("reason") == REASON_TOPOLOGY_AFFINITY_ERROR
        and (event.get("source") or {}).get("component") == KUBELET
        and ERROR_TOPOLOGY_AFFINITY in str(event.get("message") or "")
    )


def alignment_error(scope: str) -> str:
    """``cannot align container`` for scope ``container``, ``cannot align pod`` otherwise."""
    return ERROR_CANNOT_ALIGN_CONTAINER if scope == "container" else ERROR_CANNOT_ALIGN_POD


def _q(value: object) -> str:
    """Go's ``%q`` of a string field (absent: ``""``)."""
    return go_quote("" if value is None else str(value))


def event_to_string(event: Event) -> str:
    """``type="..." action="..." message="..." reason="..." reportedBy={controller/instance}
    from={host/component}`` (upstream ``eventToString``)."""
    source = event.get("source") or {}
    src = "/".join(part for part in (source.get("host"), source.get("component")) if part)
    text = (
        f"type={_q(event.get('type'))} action={_q(event.get('action'))} message={_q(event.get('message'))} "
        f"reason={_q(event.get('reason'))} "
        f"reportedBy={{{_reporting_controller(event)}/{event.get('reportingInstance') or ''}}}"
    )
    return f"{text} from={{{src}}}" if src else text


@dataclass
class EventCheck:
    """The outcome of an event check: truthy when a matching event was found."""

    found: bool
    pod: str
    expected: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.found

    def __str__(self) -> str:
        verdict = "found" if self.found else "no"
        lines = [f"{verdict} event {self.expected} for pod {self.pod}; its events:"]
        lines.extend(f"  {event_to_string(e)}" for e in self.events)
        return "\n".join(lines)

    __repr__ = __str__


def match_events(
    events: Sequence[dict[str, Any]], pod: str, expected: str, matches: Callable[[Event], bool]
) -> EventCheck:
    """:class:`EventCheck` over ``events``; ``NoEventsError`` when there are none."""
    if not events:
        raise NoEventsError(f"no event received for {pod}")
    return EventCheck(any(matches(e) for e in events), pod, expected, list(events))


def leader_pod_name(holder_identity: str | None) -> str:
    """The pod name in a Lease holder identity ``<pod-name>_<uuid>``; ``ValueError`` otherwise."""
    if not holder_identity:
        raise ValueError("lease has no holder")
    pod, sep, _ = holder_identity.rpartition("_")
    if not sep:
        raise ValueError(f"unexpected holder identity format: {holder_identity!r}")
    return pod


def log_window_seconds(creation_timestamps: Iterable[str], now: dt.datetime) -> int:
    """Seconds of logs to fetch: since the earliest creation minus 5s, else the last 30s."""
    stamps = [parse_time(ts) for ts in creation_timestamps if ts]
    if not stamps:
        return int(LOG_WINDOW)
    since = min(stamps) - dt.timedelta(seconds=LOG_SAFETY_MARGIN)
    return max(1, math.ceil((now - since).total_seconds()))


# ------------------------------------------------------------------------------- checks


def _check(
    kube: k.Kube, namespace: str, name: str, expected: str, matches: Callable[[Event], bool]
) -> EventCheck:
    """Upstream ``checkPODEvents``: the pod's events as listed now (none at all: an error at once)."""
    log.info("checking events for pod %s/%s", namespace, name)
    events = kube.events_for(namespace, name)
    result = match_events(events, f"{namespace}/{name}", expected, matches)
    if result:
        log.info("-> found relevant scheduling event for pod %s/%s (%s)", namespace, name, expected)
    else:
        log.warning("Failed to find relevant scheduling event for pod %s/%s\n%s", namespace, name, result)
    return result


def check_pod_was_scheduled_with(kube: k.Kube, namespace: str, name: str, scheduler: str) -> EventCheck:
    return _check(
        kube, namespace, name, f"{REASON_SCHEDULED} by {scheduler}", lambda e: is_scheduled_with(e, scheduler)
    )


def check_pod_scheduling_failed(kube: k.Kube, namespace: str, name: str, scheduler: str) -> EventCheck:
    return _check(
        kube,
        namespace,
        name,
        f"{REASON_FAILED_SCHEDULING} by {scheduler}",
        lambda e: is_failed_scheduling(e, scheduler),
    )


def check_pod_scheduling_failed_with_msg(
    kube: k.Kube, namespace: str, name: str, scheduler: str, message: str
) -> EventCheck:
    return _check(
        kube,
        namespace,
        name,
        f"{REASON_FAILED_SCHEDULING} by {scheduler} with {message!r}",
        lambda e: is_failed_scheduling(e, scheduler, message),
    )


def check_pod_scheduling_failed_for_alignment(
    kube: k.Kube, namespace: str, name: str, scheduler: str, scope: str
) -> EventCheck:
    """FailedScheduling whose message says the pod/containers cannot be aligned (assumes SNN)."""
    return check_pod_scheduling_failed_with_msg(kube, namespace, name, scheduler, alignment_error(scope))


def check_pod_kubelet_reject_with_topology_affinity_error(
    kube: k.Kube, namespace: str, name: str
) -> EventCheck:
    return _check(
        kube,
        namespace,
        name,
        f"{REASON_TOPOLOGY_AFFINITY_ERROR} from {KUBELET} with {ERROR_TOPOLOGY_AFFINITY!r}",
        is_kubelet_topology_affinity_error,
    )


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond
    return None


def nrosched_available(nrosched: Mapping[str, Any] | None) -> bool:
    """``Available=True`` and ``status.deployment`` names a namespace and a name."""
    if not nrosched:
        return False
    cond = _condition(nrosched, "Available")
    deployment = (nrosched.get("status") or {}).get("deployment") or {}
    return bool(
        cond and cond.get("status") == "True" and deployment.get("namespace") and deployment.get("name")
    )


def check_nro_scheduler_available(
    kube: k.Kube, name: str = "numaresourcesscheduler", *, timeout: float = 300.0, interval: float = 10.0
) -> dict[str, Any]:
    """The NRS once ``Available=True`` with its deployment reported (``CheckNROSchedulerAvailable``)."""
    nrs = wait_for(
        lambda: kube.get_or_none(k.NROSCHED, name) or {},
        nrosched_available,
        f"NUMAResourcesScheduler {name} to be Available with status.deployment set",
        timeout,
        interval=interval,
    )
    return dict(nrs)


def pod_events_text(kube: k.Kube, namespace: str, name: str) -> str:
    """The pod's events, one per line (for failure messages and reports)."""
    events = kube.events_for(namespace, name)
    lines = [f"begin events for {namespace}/{name}"]
    lines.extend(f"+- event: {event_to_string(e)}" for e in events)
    lines.append(f"end events for {namespace}/{name}")
    return "\n".join(lines)


def _scheduler_pod(kube: k.Kube, namespace: str) -> str:
    """The leader from the Lease; without a Lease (one replica runs without leader election)
    the one running scheduler pod (``app=secondary-scheduler``)."""
    lease = kube.get_or_none(k.LEASE, LEADER_LEASE, namespace)
    if lease is not None:
        return leader_pod_name((lease.get("spec") or {}).get("holderIdentity"))
    pods = kube.list(k.POD, namespace, label_selector={"app": SCHEDULER_POD_LABEL})
    running = [p["metadata"]["name"] for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if len(running) != 1:
        raise ValueError(f"no lease {namespace}/{LEADER_LEASE} and {len(running)} running scheduler pods")
    return running[0]


def dump_scheduler_logs(
    kube: k.Kube, scheduler_namespace: str, target_pods: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The scheduler leader's logs since the earliest target pod's creation (-5s), else the last 30s.

    The leader comes from Lease ``numa-scheduler-leader`` (a single replica without leader
    election: the one scheduler pod); errors are logged and returned as text (a diagnostic
    never fails a test).
    """
    try:
        pod = _scheduler_pod(kube, scheduler_namespace)
        seconds = log_window_seconds(
            (p.get("metadata", {}).get("creationTimestamp") or "" for p in target_pods),
            dt.datetime.now(dt.UTC),
        )
        logs = kube.pod_logs(scheduler_namespace, pod, SCHEDULER_CONTAINER, since_seconds=seconds)
    except (k.ApiError, ValueError) as err:
        text = f"cannot fetch the scheduler leader's logs in {scheduler_namespace}: {err}"
        log.error("%s", text)
        return text
    text = (
        f"begin scheduler logs for {scheduler_namespace}/{pod} (last {seconds}s)\n{logs}"
        f"end scheduler logs for {scheduler_namespace}/{pod}"
    )
    log.info("%s", text)
    return text
