"""Table tests of nrop.suite.e2e.wait.waiters: the completion rules and the
pod/Job/deletion waits on a fake cluster whose objects follow a script."""

from __future__ import annotations

import pytest

from nrop.suite.e2e import kube as k
from nrop.suite.e2e.wait import waiters as w
from nrop.suite.e2e.wait.polling import WaitTimeout


@pytest.mark.parametrize(
    ("generation", "status", "replicas", "complete"),
    [
        (2, {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}, 3, True),
        (3, {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}, 3, False),
        (2, {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2, "availableReplicas": 3}, 3, False),
        (2, {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2}, 3, False),
        (1, {"observedGeneration": 1}, 0, True),
        (1, {}, 1, False),
    ],
)
def test_is_deployment_complete(generation, status, replicas, complete) -> None:
    assert w.is_deployment_complete(generation, status, replicas) is complete


@pytest.mark.parametrize(
    ("status", "ready"),
    [
        ({"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberAvailable": 2}, True),
        ({"desiredNumberScheduled": 0, "currentNumberScheduled": 0, "numberAvailable": 0}, False),
        ({"desiredNumberScheduled": 2, "currentNumberScheduled": 1, "numberAvailable": 1}, False),
        (
            {
                "desiredNumberScheduled": 2,
                "currentNumberScheduled": 2,
                "numberAvailable": 2,
                "numberUnavailable": 1,
            },
            False,
        ),
    ],
)
def test_are_daemonset_pods_ready(status, ready) -> None:
    assert w.are_daemonset_pods_ready(status) is ready


@pytest.mark.parametrize(
    ("generation", "replicas", "status", "complete"),
    [
        (1, 2, {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2}, True),
        (2, 2, {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2}, False),
        (1, 2, {"observedGeneration": 1, "replicas": 2, "readyReplicas": 1, "availableReplicas": 2}, False),
    ],
)
def test_is_replicaset_complete(generation, replicas, status, complete) -> None:
    assert w.is_replicaset_complete(generation, replicas, status) is complete


@pytest.mark.parametrize(
    ("conditions", "done"),
    [
        ([{"type": "Complete", "status": "True"}], True),
        ([{"type": "Complete", "status": "False"}], False),
        ([{"type": "Failed", "status": "True"}], False),
        ([], False),
    ],
)
def test_is_job_completed(conditions, done) -> None:
    assert w.is_job_completed({"status": {"conditions": conditions}}) is done


def test_pod_summary() -> None:
    pod = {
        "metadata": {"namespace": "ns", "name": "p"},
        "spec": {"nodeName": None},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}
            ],
        },
    }
    assert w.pod_summary(pod) == "ns/p phase=Pending node=None PodScheduled=Unschedulable: no"
    assert w.pod_summary(None) == "<not found>"


# ------------------------------------------------------------------ waits on a fake cluster


class FakeKube:
    """Pods, Jobs and other objects whose state follows a script, one step per look.

    ``phases[(namespace, name)]`` lists the pod's phase at each successive look (the last
    one then stays; ``None`` = the pod does not exist). ``list`` counts as one look for
    every pod of the namespace, ``get``/``get_or_none`` for the one object.
    """

    def __init__(self, phases=None, objects=None, events=None) -> None:
        self.phases = dict(phases or {})
        self.objects = dict(objects or {})
        self.events = dict(events or {})
        self.looks: dict[tuple[str, str], int] = {}
        self.calls: list[tuple[str, str | None]] = []

    def _pod(self, namespace: str, name: str) -> dict | None:
        script = self.phases[(namespace, name)]
        step = self.looks.get((namespace, name), 0)
        self.looks[(namespace, name)] = step + 1
        phase = script[min(step, len(script) - 1)]
        if phase is None:
            return None
        return {"metadata": {"namespace": namespace, "name": name}, "status": {"phase": phase}}

    def _object(self, name: str) -> dict | None:
        script = self.objects[name]
        step = self.looks.get(("", name), 0)
        self.looks[("", name)] = step + 1
        return script[min(step, len(script) - 1)]

    def get_or_none(self, kind, name, namespace=None):
        self.calls.append(("get", namespace))
        if kind is k.POD:
            return self._pod(namespace, name)
        return self._object(name)

    def get(self, kind, name, namespace=None):
        obj = self.get_or_none(kind, name, namespace)
        assert obj is not None, f"{kind.kind} {name} not found"
        return obj

    def list(self, kind, namespace=None, **_):
        assert kind is k.POD
        self.calls.append(("list", namespace))
        pods = [self._pod(ns, name) for ns, name in self.phases if ns == namespace]
        return [pod for pod in pods if pod is not None]

    def events_for(self, namespace, name, kind=None):
        return self.events.get((namespace, name), [])


def _pod(namespace: str, name: str) -> dict:
    return {"metadata": {"namespace": namespace, "name": name}}


def _names(pods) -> list[tuple[str, str | None]]:
    return [(p["metadata"]["name"], (p.get("status") or {}).get("phase")) for p in pods]


@pytest.mark.parametrize(
    ("phases", "timeout", "failed", "running", "lists"),
    [
        # everything Running at some look: one list per namespace per poll until the last one
        (
            {
                ("a", "p1"): ["Pending", "Running"],
                ("a", "p2"): ["Running"],
                ("b", "p3"): ["Pending"] * 2 + ["Running"],
            },
            5.0,
            [],
            [("p1", "Running"), ("p2", "Running"), ("p3", "Running")],
            6,
        ),
        # a pod seen Running counts even if it is no longer Running later
        (
            {("a", "p1"): ["Running", "Failed"], ("a", "p2"): ["Pending", "Running"]},
            5.0,
            [],
            [("p1", "Running"), ("p2", "Running")],
            2,
        ),
        # an ended pod fails at once: no waiting for the deadline
        (
            {("a", "p1"): ["Pending", "Failed"], ("a", "p2"): ["Running"]},
            5.0,
            [("p1", "Failed")],
            [("p2", "Running")],
            2,
        ),
        ({("a", "p1"): ["Succeeded"]}, 5.0, [("p1", "Succeeded")], [], 1),
        # never Running: failed with the pod as last seen, or its manifest when never seen
        ({("a", "p1"): ["Pending"], ("a", "p2"): [None]}, 0.0, [("p1", "Pending"), ("p2", None)], [], 1),
    ],
)
def test_for_pods_all_running(phases, timeout, failed, running, lists) -> None:
    kube = FakeKube(phases)
    pods = [_pod(ns, name) for ns, name in phases]
    got_failed, got_running = w.for_pods_all_running(kube, pods, interval=0, timeout=timeout)
    assert _names(got_failed) == failed
    assert _names(got_running) == running
    assert all(call == "list" for call, _ in kube.calls)
    assert len(kube.calls) == lists


def test_for_pods_all_running_keeps_the_order_of_the_input() -> None:
    phases = {("a", "p1"): ["Pending", "Running"], ("a", "p2"): ["Running"]}
    _, running = w.for_pods_all_running(
        FakeKube(phases), [_pod("a", "p2"), _pod("a", "p1")], interval=0, timeout=5
    )
    assert [p["metadata"]["name"] for p in running] == ["p2", "p1"]


@pytest.mark.parametrize(
    ("script", "steps", "error"),
    [
        (["Pending"], 3, None),
        (["Pending", "Running"], 3, "pod ns/p unexpected phase 'Running' expected 'Pending'"),
        ([None], 2, "pod ns/p unexpected phase None expected 'Pending'"),
    ],
)
def test_while_in_pod_phase(script, steps, error) -> None:
    events = {("ns", "p"): [{"type": "Normal", "reason": "Scheduled", "message": "assigned"}]}
    kube = FakeKube({("ns", "p"): script}, events=events)
    if error is None:
        pod = w.while_in_pod_phase(kube, "ns", "p", "Pending", interval=0, steps=steps)
        assert pod["status"]["phase"] == "Pending"
        assert kube.looks[("ns", "p")] == steps  # a look after each sleep, none before
        return
    with pytest.raises(WaitTimeout) as err:
        w.while_in_pod_phase(kube, "ns", "p", "Pending", interval=0, steps=steps)
    assert str(err.value).startswith(error)
    assert "begin events for ns/p" in str(err.value) and 'reason="Scheduled"' in str(err.value)


def test_for_pod_phase_stops_on_an_ended_pod() -> None:
    kube = FakeKube({("ns", "p"): ["Pending", "Failed", "Running"]})
    with pytest.raises(WaitTimeout, match="can no longer happen"):
        w.for_pod_phase(kube, "ns", "p", "Running", interval=0, timeout=5)
    assert kube.looks[("ns", "p")] == 2


def _job(*conditions: tuple[str, str]) -> dict:
    return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}


@pytest.mark.parametrize(
    ("script", "outcome"),
    [
        ([_job(), _job(("Complete", "True"))], "complete"),
        ([_job(), _job(("Failed", "True")), _job(("Complete", "True"))], "can no longer happen"),
        ([_job(("Complete", "False"))], "within"),
    ],
)
def test_for_job_completed(script, outcome) -> None:
    kube = FakeKube(objects={"job": script})
    if outcome == "complete":
        assert w.is_job_completed(w.for_job_completed(kube, "ns", "job", interval=0, timeout=5))
        return
    # a failed Job ends the wait long before the timeout
    timeout = 5 if outcome == "can no longer happen" else 0
    with pytest.raises(WaitTimeout, match=outcome):
        w.for_job_completed(kube, "ns", "job", interval=0, timeout=timeout)


@pytest.mark.parametrize(
    ("conditions", "failed"), [([("Failed", "True")], True), ([("Failed", "False")], False), ([], False)]
)
def test_is_job_failed(conditions, failed) -> None:
    assert w.is_job_failed(_job(*conditions)) is failed


def test_for_object_deleted() -> None:
    kube = FakeKube(objects={"kc": [{"metadata": {"name": "kc"}}] * 2 + [None]})
    w.for_object_deleted(
        kube, k.Kind("machineconfiguration.openshift.io/v1", "KubeletConfig"), "kc", interval=0
    )
    assert kube.looks[("", "kc")] == 3
    with pytest.raises(WaitTimeout, match="KubeletConfig kc to be deleted within"):
        w.for_object_deleted(
            FakeKube(objects={"kc": [{"metadata": {"name": "kc"}}]}),
            k.Kind("machineconfiguration.openshift.io/v1", "KubeletConfig"),
            "kc",
            interval=0,
            timeout=0,
        )


def test_log_events_for_pod(caplog: pytest.LogCaptureFixture) -> None:
    events = {("ns", "p"): [{"type": "Warning", "reason": "FailedScheduling", "message": "0/2 nodes"}]}
    with caplog.at_level("INFO", logger=w.__name__):
        w.log_events_for_pod(FakeKube(events=events), "ns", "p")
    assert "begin events for ns/p" in caplog.text
    assert 'message="0/2 nodes" reason="FailedScheduling"' in caplog.text
    assert "end events for ns/p" in caplog.text


def _obj(generation: int = 1, **status: int) -> dict:
    return {
        "metadata": {"namespace": "ns", "name": "x", "generation": generation},
        "spec": {"replicas": 2},
        "status": status,
    }


_DP_DONE = _obj(observedGeneration=1, replicas=2, updatedReplicas=2, availableReplicas=2, readyReplicas=2)
_DS_READY = _obj(desiredNumberScheduled=2, currentNumberScheduled=2, numberAvailable=2)
_RS_DONE = _obj(observedGeneration=1, replicas=2, readyReplicas=2, availableReplicas=2)


@pytest.mark.parametrize(
    ("wait", "pending", "done", "message"),
    [
        (
            lambda kube, **kw: w.for_deployment_complete(kube, _obj(), **kw),
            _obj(observedGeneration=1, replicas=2, updatedReplicas=1, availableReplicas=2),
            _DP_DONE,
            "deployment ns/x to be complete with 2 replicas",
        ),
        (
            lambda kube, **kw: w.for_deployment_complete(kube, _obj(), replicas=3, **kw),
            _DP_DONE,
            _obj(observedGeneration=1, replicas=3, updatedReplicas=3, availableReplicas=3),
            "deployment ns/x to be complete with 3 replicas",
        ),
        (
            lambda kube, **kw: w.for_deployment_replicas_creation(kube, _obj(), 2, **kw),
            _obj(replicas=1),
            _obj(replicas=2),
            "deployment ns/x to have 2 replicas",
        ),
        (
            lambda kube, **kw: w.for_deployment_replicas_readiness(kube, _obj(), 2, **kw),
            _obj(replicas=2, readyReplicas=1),
            _obj(replicas=2, readyReplicas=2),
            "deployment ns/x to have 2 ready replicas",
        ),
        (
            lambda kube, **kw: w.for_daemonset_ready(kube, "ns", "x", **kw),
            None,
            _DS_READY,
            "daemonset ns/x to be ready",
        ),
        (
            lambda kube, **kw: w.for_daemonset_pods(kube, "ns", "x", 2, **kw),
            None,
            _obj(desiredNumberScheduled=2),
            "daemonset ns/x to have 2 pods",
        ),
        (
            lambda kube, **kw: w.for_replicaset_complete(kube, _obj(2), **kw),
            _obj(2, observedGeneration=1, replicas=2, readyReplicas=2, availableReplicas=2),
            _obj(2, observedGeneration=2, replicas=2, readyReplicas=2, availableReplicas=2),
            "replicaset ns/x to be complete with 2 replicas",
        ),
    ],
)
def test_workload_waiters(wait, pending, done, message) -> None:
    kube = FakeKube(objects={"x": [pending, done]})
    assert wait(kube, interval=0, timeout=5) is done
    assert kube.looks[("", "x")] == 2
    with pytest.raises(WaitTimeout, match=rf"^expected {message} within 0s, got instead"):
        wait(FakeKube(objects={"x": [pending]}), interval=0, timeout=0)


def test_deployment_waiters_need_the_deployment() -> None:
    with pytest.raises(AssertionError, match="Deployment x not found"):
        w.for_deployment_replicas_creation(FakeKube(objects={"x": [None]}), _obj(), 2, interval=0, timeout=5)


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        (w.for_nrop_deleted, "NUMAResourcesOperator numaresourcesoperator to be deleted"),
        (w.for_nrosched_deleted, "NUMAResourcesScheduler numaresourcesscheduler to be deleted"),
    ],
)
def test_operator_objects_deleted(wait, message) -> None:
    kube = FakeKube(objects={"numaresourcesoperator": [None], "numaresourcesscheduler": [None]})
    wait(kube, interval=0)
    present = {"metadata": {"name": "n"}}
    kube = FakeKube(objects={"numaresourcesoperator": [present], "numaresourcesscheduler": [present]})
    with pytest.raises(WaitTimeout, match=rf"^expected {message} within 0s"):
        wait(kube, interval=0, timeout=0)


# ------------------------------------------------------------------ MachineConfigPools


def _mcp(rv: str, *conditions: tuple[str, str]) -> dict:
    return {
        "metadata": {"name": "worker", "resourceVersion": rv},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


@pytest.mark.parametrize(
    ("current", "ctype", "done", "why"),
    [
        pytest.param(
            _mcp("1", ("Updated", "True")), "Updated", False, "not changed yet", id="untouched-still-updated"
        ),
        pytest.param(_mcp("2", ("Updated", "True")), "Updated", True, "", id="changed-and-updated"),
        pytest.param(
            _mcp("2", ("Updated", "False")), "Updated", False, "status is: 'False'", id="changed-updating"
        ),
        pytest.param(
            _mcp("2", ("Updating", "True")), "Updated", False, "was not found", id="condition-missing"
        ),
        pytest.param(_mcp("2", ("Updating", "True")), "Updating", True, "", id="updating-awaited"),
    ],
)
def test_mcp_condition_reached(current, ctype, done, why) -> None:
    got_done, got_why = w.mcp_condition_reached("1", current, ctype)
    assert got_done is done and why in got_why


class _Clock:
    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_for_mcp_condition_ignores_a_pool_that_stays_updated() -> None:
    """The pool is Updated before the change and never touched: upstream times out."""
    snapshot = _mcp("1", ("Updated", "True"))
    kube, clock = FakeKube(objects={"worker": [snapshot]}), _Clock()
    with pytest.raises(WaitTimeout, match="MCP worker condition Updated within 90s"):
        w.for_mcp_condition(
            kube, snapshot, "Updated", interval=30, timeout=90, sleep=clock.sleep, clock=lambda: clock.now
        )
    assert kube.looks[("", "worker")] == 3  # first look after one interval, then every 30s


def test_for_mcp_condition_waits_for_the_update_after_the_change() -> None:
    snapshot = _mcp("1", ("Updated", "True"))
    script = [snapshot, _mcp("2", ("Updated", "False"), ("Updating", "True")), _mcp("3", ("Updated", "True"))]
    kube, clock = FakeKube(objects={"worker": script}), _Clock()
    pool = w.for_mcp_condition(
        kube, snapshot, "Updated", interval=30, timeout=3600, sleep=clock.sleep, clock=lambda: clock.now
    )
    assert pool["metadata"]["resourceVersion"] == "3"
    assert clock.sleeps == [30, 30, 30]  # no look before the first interval


def test_for_mcp_condition_by_name_takes_the_snapshot_now() -> None:
    kube, clock = FakeKube(objects={"worker": [_mcp("1"), _mcp("2", ("Updated", "True"))]}), _Clock()
    pool = w.for_mcp_condition(
        kube, "worker", "Updated", interval=30, timeout=3600, sleep=clock.sleep, clock=lambda: clock.now
    )
    assert pool["metadata"]["resourceVersion"] == "2"


# ------------------------------------------------------------------ podlist


class _PodLister:
    def __init__(self, pods: list[dict]) -> None:
        self.pods, self.calls = pods, []

    def list(self, kind, namespace=None, label_selector=None, **_):
        assert kind is k.POD
        self.calls.append((namespace, label_selector))
        return [p for p in self.pods if namespace is None or p["metadata"]["namespace"] == namespace]


_TERMINATING = {"metadata": {"namespace": "ns", "name": "old", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
_LIVE = {"metadata": {"namespace": "ns", "name": "new"}}
_ELSEWHERE = {"metadata": {"namespace": "other", "name": "x"}}


@pytest.mark.parametrize(
    ("workload", "call", "names"),
    [
        pytest.param(
            {
                "kind": "Deployment",
                "metadata": {"namespace": "ns"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}},
            },
            ("ns", "a=b"),
            ["old", "new"],
            id="deployment-counts-terminating-pods",
        ),
        pytest.param(
            {
                "kind": "ReplicaSet",
                "metadata": {"namespace": "ns"},
                "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
            },
            ("ns", "a"),
            ["old", "new"],
            id="replicaset-full-selector",
        ),
        pytest.param(
            {
                "kind": "DaemonSet",
                "metadata": {"namespace": "ns"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}},
            },
            (None, "a=b"),
            ["old", "new", "x"],
            id="daemonset-all-namespaces",
        ),
    ],
)
def test_pods_of_workload_is_upstreams_podlist(workload, call, names) -> None:
    kube = _PodLister([_TERMINATING, _LIVE, _ELSEWHERE])
    assert [p["metadata"]["name"] for p in w.pods_of_workload(kube, workload)] == names
    assert kube.calls == [call]


def test_the_pod_waiters_poll_at_upstreams_fixed_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """ForPodPhase and ForPodsAllRunning run on PollUntilContextTimeout, whose ticker keeps
    the looks one interval apart; WhileInPodPhase is a PollSteps loop, not a poll to a deadline."""
    seen: list[bool] = []
    real = w.wait_for

    def spy(*args: object, fixed_rate: bool = False, **kwargs: object) -> object:
        seen.append(fixed_rate)
        return real(*args, fixed_rate=fixed_rate, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(w, "wait_for", spy)
    kube = FakeKube({("ns", "p"): ["Running"]})
    w.for_pod_phase(kube, "ns", "p", "Running", interval=0)
    w.for_pods_all_running(kube, [_pod("ns", "p")], interval=0, timeout=1)
    assert seen == [True, True]
    w.while_in_pod_phase(kube, "ns", "p", "Running", interval=0, steps=1)
