"""Table tests of nrop.suite.e2e.scheduling: event matching, leader identity, log windows."""

from __future__ import annotations

import datetime as dt

import pytest

from nrop.suite.e2e import scheduling as s

SCHED = "topo-aware-scheduler"


def ev(
    reason: str, controller: str = "", message: str = "", component: str = "", legacy_key: bool = False
) -> dict:
    event = {"reason": reason, "message": message, "type": "Normal"}
    event["reportingController" if legacy_key else "reportingComponent"] = controller
    if component:
        event["source"] = {"component": component, "host": "worker-0"}
    return event


@pytest.mark.parametrize(
    ("event", "scheduled", "failed", "aligned_pod", "aligned_cnt", "tae"),
    [
        (ev("Scheduled", SCHED), True, False, False, False, False),
        (ev("Scheduled", SCHED, legacy_key=True), True, False, False, False, False),
        (ev("Scheduled", "default-scheduler"), False, False, False, False, False),
        (ev("FailedScheduling", SCHED, "0/3 nodes are available: 2 cannot align pod: x"), False, True, True, False, False),
        (ev("FailedScheduling", SCHED, "2 cannot align container: c"), False, True, False, True, False),
        (ev("FailedScheduling", "default-scheduler", "cannot align pod"), False, False, False, False, False),
        (
            ev("TopologyAffinityError", "kubelet", "Resources cannot be allocated with Topology locality", "kubelet"),
            False, False, False, False, True,
        ),
        (ev("TopologyAffinityError", "kubelet", "Resources cannot be allocated with Topology locality"), False, False, False, False, False),
        (ev("TopologyAffinityError", "", "something else", "kubelet"), False, False, False, False, False),
    ],
)  # fmt: skip
def test_matchers(event, scheduled, failed, aligned_pod, aligned_cnt, tae) -> None:
    assert s.is_scheduled_with(event, SCHED) is scheduled
    assert s.is_failed_scheduling(event, SCHED) is failed
    assert s.is_failed_scheduling(event, SCHED, s.alignment_error("pod")) is aligned_pod
    assert s.is_failed_scheduling(event, SCHED, s.alignment_error("container")) is aligned_cnt
    assert s.is_kubelet_topology_affinity_error(event) is tae


def test_match_events_requires_events_and_lists_them() -> None:
    with pytest.raises(s.NoEventsError, match="no event received for ns/p"):
        s.match_events([], "ns/p", "x", lambda e: True)
    events = [ev("Scheduled", "default-scheduler", "Successfully assigned ns/p to worker-0")]
    result = s.match_events(events, "ns/p", f"Scheduled by {SCHED}", lambda e: s.is_scheduled_with(e, SCHED))
    assert not result
    text = str(result)
    assert text.startswith(f"no event Scheduled by {SCHED} for pod ns/p; its events:")
    assert "reportedBy={default-scheduler/}" in text
    assert s.match_events(events, "ns/p", "any", lambda e: True)


def test_event_to_string() -> None:
    event = ev("TopologyAffinityError", "kubelet", "nope", "kubelet")
    assert s.event_to_string(event) == (
        'type="Normal" action="" message="nope" reason="TopologyAffinityError" '
        "reportedBy={kubelet/} from={worker-0/kubelet}"
    )


@pytest.mark.parametrize(
    ("holder", "pod"),
    [("secondary-scheduler-abc-123_8d1f-uuid", "secondary-scheduler-abc-123"), ("a_b_c", "a_b")],
)
def test_leader_pod_name(holder: str, pod: str) -> None:
    assert s.leader_pod_name(holder) == pod


@pytest.mark.parametrize("holder", [None, "", "no-separator"])
def test_leader_pod_name_errors(holder) -> None:
    with pytest.raises(ValueError):
        s.leader_pod_name(holder)


@pytest.mark.parametrize(
    ("stamps", "seconds"),
    [
        ([], 30),
        (["2026-01-01T11:59:00Z"], 65),
        (["2026-01-01T11:59:50Z", "2026-01-01T11:58:00Z"], 125),
        (["2026-01-01T12:00:10Z"], 1),
    ],
)
def test_log_window_seconds(stamps, seconds) -> None:
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    assert s.log_window_seconds(stamps, now) == seconds


@pytest.mark.parametrize(
    ("nrs", "available"),
    [
        (None, False),
        ({"status": {"conditions": [{"type": "Available", "status": "True"}]}}, False),
        (
            {
                "status": {
                    "conditions": [{"type": "Available", "status": "True"}],
                    "deployment": {"namespace": "numaresources", "name": "secondary-scheduler"},
                }
            },
            True,
        ),
        (
            {
                "status": {
                    "conditions": [{"type": "Available", "status": "False"}],
                    "deployment": {"namespace": "numaresources", "name": "secondary-scheduler"},
                }
            },
            False,
        ),
    ],
)
def test_nrosched_available(nrs, available) -> None:
    assert s.nrosched_available(nrs) is available


class _NoEventsYet:
    """A cluster where the pod's first event would come later: upstream does not wait for it."""

    def __init__(self) -> None:
        self.calls = 0

    def events_for(self, namespace, name, kind=None):
        self.calls += 1
        return []


@pytest.mark.parametrize(
    "check",
    [
        lambda kube: s.check_pod_was_scheduled_with(kube, "ns", "p", SCHED),
        lambda kube: s.check_pod_scheduling_failed(kube, "ns", "p", SCHED),
        lambda kube: s.check_pod_scheduling_failed_with_msg(kube, "ns", "p", SCHED, "x"),
        lambda kube: s.check_pod_scheduling_failed_for_alignment(kube, "ns", "p", SCHED, "pod"),
        lambda kube: s.check_pod_kubelet_reject_with_topology_affinity_error(kube, "ns", "p"),
    ],
)
def test_event_checks_fail_at_once_without_events(check) -> None:
    kube = _NoEventsYet()
    with pytest.raises(s.NoEventsError, match="no event received for ns/p"):
        check(kube)
    assert kube.calls == 1
