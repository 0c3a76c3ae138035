"""The scheduling queue with a fake clock: ordering, gating, back-off, requeueing by events, nominations."""

from __future__ import annotations

import pytest

from nrop.sched.framework.interface import ActionType, ClusterEvent
from nrop.sched.framework.plugins.prioritysort import PrioritySort
from nrop.sched.framework.plugins.schedulinggates import SchedulingGates
from nrop.sched.framework.queue import SchedulingQueue

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
NODE_LABEL = ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL)
POD_DELETE = ClusterEvent("Pod", ActionType.DELETE)

EVENTS = {
    "NodeResourcesFit": [
        ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE),
        ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ],
    "NodeAffinity": [ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)],
    "SchedulingGates": [ClusterEvent("Pod", ActionType.UPDATE)],
}


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int = 0, *, gates=(), labels=None, nominated: str = "") -> dict:
    spec = {"containers": [{"name": "c", "image": "pause"}], "priority": priority}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    status = {"nominatedNodeName": nominated} if nominated else {}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}},
        "spec": spec,
        "status": status,
    }


def gates_pre_enqueue(p):
    """What ``Profile.pre_enqueue`` returns with SchedulingGates enabled."""
    return SchedulingGates().pre_enqueue(p).with_plugin("SchedulingGates")


def make_queue(clock: FakeClock, **kwargs) -> SchedulingQueue:
    return SchedulingQueue(
        PrioritySort().less,
        pre_enqueue=gates_pre_enqueue,
        events_to_register={"default-scheduler": EVENTS},
        clock=clock,
        **kwargs,
    )


def fail(q: SchedulingQueue, *plugins: str) -> str:
    """Pop the next pod and put it back as rejected by ``plugins``."""
    info = q.pop()
    assert info is not None
    return q.add_unschedulable(info, plugins)


@pytest.mark.parametrize(
    ("initial", "maximum", "attempts", "expected"),
    [
        pytest.param(1.0, 10.0, 0, 0.0, id="never-tried"),
        pytest.param(1.0, 10.0, 1, 1.0, id="first"),
        pytest.param(1.0, 10.0, 2, 2.0, id="doubles"),
        pytest.param(1.0, 10.0, 4, 8.0, id="fourth"),
        pytest.param(1.0, 10.0, 5, 10.0, id="capped"),
        pytest.param(1.0, 10.0, 50, 10.0, id="stays-capped"),
        pytest.param(2.0, 5.0, 2, 4.0, id="custom"),
        pytest.param(2.0, 5.0, 3, 5.0, id="custom-capped"),
    ],
)
def test_backoff_duration(initial, maximum, attempts, expected):
    q = make_queue(FakeClock(), initial_backoff=initial, max_backoff=maximum)
    assert q.backoff_duration(attempts) == expected


def test_pop_order_priority_then_age():
    clock = FakeClock()
    q = make_queue(clock)
    for name, priority in (("old-low", 0), ("high", 100), ("mid", 50)):
        q.add(pod(name, priority))
        clock.now += 1
    q.add(pod("young-low", 0))
    order = [q.pop().key for _ in range(4)]
    assert order == ["ns/high", "ns/mid", "ns/old-low", "ns/young-low"]
    assert q.pop() is None
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_pop_counts_attempts_and_clears_rejectors():
    clock = FakeClock()
    q = make_queue(clock)
    q.add(pod("a"))
    assert fail(q, "NodeResourcesFit") == "unschedulable"
    q.move_all_to_active_or_backoff(POD_DELETE)
    info = q.pop()  # popped early from backoffQ: the active queue is empty
    assert (info.attempts, info.unschedulable_plugins, info.initial_attempt_timestamp) == (2, set(), 1000.0)


def test_gated_pods_are_never_active():
    clock = FakeClock()
    q = make_queue(clock)
    q.add(pod("g", gates=["example.com/wait"]))
    assert q.pop() is None
    assert q.where("ns/g") == "gated"
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    q.move_all_to_active_or_backoff(NODE_ADD)  # unrelated event: still gated
    clock.now += 301
    assert q.pop() is None  # the periodic flush re-checks the gates; they still hold
    q.update(None, pod("g", labels={"x": "y"}, gates=["example.com/wait"]))
    assert q.where("ns/g") == "gated"
    q.update(None, pod("g"))  # gates removed
    assert q.where("ns/g") == "active"
    assert q.pop().key == "ns/g"


def test_unschedulable_pod_waits_for_a_registered_event():
    clock = FakeClock()
    q = make_queue(clock)
    q.add(pod("a"))
    assert fail(q, "NodeAffinity") == "unschedulable"
    q.move_all_to_active_or_backoff(POD_DELETE)  # NodeAffinity does not care
    assert q.where("ns/a") == "unschedulable"
    q.move_all_to_active_or_backoff(NODE_LABEL)
    assert q.where("ns/a") == "backoff"  # failed 0 s ago: 1 s back-off
    assert q.pending_counts()["backoff"] == 1


def test_event_after_backoff_goes_straight_to_active():
    clock = FakeClock(1000.0)
    q = make_queue(clock)
    q.add(pod("a"))
    fail(q, "NodeAffinity")
    clock.now = 1002.0  # expiry 1001 (aligned), over once the clock is in the next window
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where("ns/a") == "active"


def test_events_seen_in_flight_requeue_at_once():
    clock = FakeClock()
    q = make_queue(clock)
    q.add(pod("a"))
    q.add(pod("b"))
    info = q.pop()
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.add_unschedulable(info, {"NodeResourcesFit"}) == "backoff"
    other = q.pop()
    q.move_all_to_active_or_backoff(NODE_LABEL)  # NodeResourcesFit does not register label changes
    assert q.add_unschedulable(other, {"NodeResourcesFit"}) == "unschedulable"


def test_unknown_plugins_react_to_every_event():
    q = make_queue(FakeClock())
    q.add(pod("a"))
    fail(q, "OutOfTree")
    q.move_all_to_active_or_backoff(
        ClusterEvent("noderesourcetopologies.v1alpha2.topology.node.k8s.io", ActionType.UPDATE)
    )
    assert q.where("ns/a") == "backoff"


@pytest.mark.parametrize(
    ("failed_at", "probe", "backing_off"),
    [
        pytest.param(1000.3, 1000.9, True, id="same-window"),
        pytest.param(1000.3, 1001.5, True, id="expiry-window-still-counts"),
        pytest.param(1000.3, 1002.0, False, id="next-window"),
        pytest.param(1000.0, 1001.999, True, id="aligned-edge"),
    ],
)
def test_backoff_expiry_is_aligned_to_whole_seconds(failed_at, probe, backing_off):
    clock = FakeClock(failed_at)
    q = make_queue(clock)
    q.add(pod("a"))
    info = q.pop()
    q.add_unschedulable(info, {"NodeAffinity"})
    clock.now = probe
    assert q.is_backing_off(info) is backing_off


def test_error_backoff_is_not_popped_early():
    clock = FakeClock(1000.0)
    q = make_queue(clock)
    q.add(pod("a"))
    assert fail(q) == "backoff"  # no rejecting plugin: an error, straight to the error back-off
    assert q.pop() is None
    assert q.next_wakeup() == pytest.approx(2.0)  # expiry 1001, over in the window starting at 1002
    clock.now = 1002.0
    assert q.next_wakeup() == 0.0
    assert q.pop().key == "ns/a"


def test_error_backoff_becomes_active_when_due():
    clock = FakeClock(1000.0)
    q = make_queue(clock)
    q.add(pod("a"))
    fail(q)
    clock.now = 1001.5
    assert q.pop() is None
    clock.now = 1002.0
    info = q.pop()
    assert (info.key, info.attempts) == ("ns/a", 2)


def test_backoff_pods_wait_when_popping_from_backoff_is_off():
    clock = FakeClock(1000.0)
    q = make_queue(clock, pop_from_backoff=False)
    q.add(pod("a"))
    fail(q, "NodeAffinity")
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where("ns/a") == "backoff"
    assert q.pop() is None
    assert q.next_wakeup() == pytest.approx(1.0)  # unaligned: failed at 1000 + 1 s
    clock.now = 1001.0
    assert q.pop().key == "ns/a"


def test_active_pods_go_before_early_backoff_pops():
    clock = FakeClock()
    q = make_queue(clock)
    q.add(pod("a", priority=100))
    fail(q, "NodeAffinity")
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.add(pod("b", priority=0))
    assert [q.pop().key, q.pop().key] == ["ns/b", "ns/a"]


def test_unschedulable_pods_are_flushed_after_five_minutes():
    clock = FakeClock(1000.0)
    q = make_queue(clock)
    q.add(pod("a"))
    fail(q, "NodeAffinity")
    assert q.next_wakeup() == pytest.approx(30.0)  # the next periodic check
    clock.now = 1299.0
    assert q.pop() is None
    clock.now = 1330.5  # 330 s in the map, and a 30 s tick has passed
    info = q.pop()
    assert info is not None and info.key == "ns/a"


def test_deleted_while_in_flight_is_dropped():
    q = make_queue(FakeClock())
    q.add(pod("a"))
    info = q.pop()
    assert q.where("ns/a") == "in-flight"
    q.delete(pod("a"))
    assert q.add_unschedulable(info, {"NodeAffinity"}) == "dropped"
    assert q.where("ns/a") is None


def test_done_forgets_the_pod():
    q = make_queue(FakeClock())
    q.add(pod("a"))
    info = q.pop()
    q.done(info.pod)
    assert q.where("ns/a") is None
    assert q.next_wakeup() is None


@pytest.mark.parametrize(
    ("new", "rejector", "where"),
    [
        pytest.param(
            pod("a") | {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}},
            "NodeResourcesFit",
            "unschedulable",
            id="status-only",
        ),
        pytest.param(pod("a", labels={"x": "1"}), "NodeResourcesFit", "backoff", id="registered-pod-update"),
        pytest.param(
            pod("a", labels={"x": "1"}), "NodeAffinity", "unschedulable", id="plugin-ignores-pod-updates"
        ),
    ],
)
def test_updates_of_unschedulable_pods(new, rejector, where):
    q = make_queue(FakeClock())
    q.add(pod("a"))
    fail(q, rejector)
    q.update(None, new)
    assert q.where("ns/a") == where


def test_update_in_active_queue_reorders():
    q = make_queue(FakeClock())
    q.add(pod("a", 1))
    q.add(pod("b", 2))
    q.update(None, pod("a", 5))
    assert q.pop().key == "ns/a"


def test_nominations():
    q = make_queue(FakeClock())
    q.add(pod("a", 10, nominated="n1"))
    q.add(pod("b", 5))
    q.set_nominated(pod("b", 5), "n1")
    assert {n: sorted(p.key for p in pods) for n, pods in q.nominated().items()} == {"n1": ["ns/a", "ns/b"]}
    q.update(None, pod("a", 10, nominated="n2"))
    q.delete(pod("b"))
    assert {n: [p.key for p in pods] for n, pods in q.nominated().items()} == {"n2": ["ns/a"]}
    q.set_nominated(pod("a", 10), "")
    assert q.nominated() == {}


def test_adding_a_known_pod_updates_it():
    q = make_queue(FakeClock())
    q.add(pod("a", 1))
    q.add(pod("a", 7))
    info = q.pop()
    assert (info.priority, q.pop()) == (7, None)


def test_adding_an_in_flight_pod_does_not_duplicate_it():
    q = make_queue(FakeClock())
    q.add(pod("a"))
    info = q.pop()
    q.add(pod("a", labels={"x": "1"}))  # a re-list while the pod is being scheduled
    assert q.pop() is None
    assert (
        q.add_unschedulable(info, {"NodeResourcesFit"}) == "backoff"
    )  # the update seen in flight is a registered event


def test_events_are_looked_up_in_the_pods_profile():
    q = SchedulingQueue(
        PrioritySort().less,
        pre_enqueue=gates_pre_enqueue,
        events_to_register={
            "default-scheduler": EVENTS,
            "topo-aware-scheduler": {"NodeAffinity": [POD_DELETE]},
        },
        clock=FakeClock(),
    )
    for name, scheduler in (("default", "default-scheduler"), ("topo", "topo-aware-scheduler")):
        p = pod(name)
        p["spec"]["schedulerName"] = scheduler
        q.add(p)
        fail(q, "NodeAffinity")
    assert q.move_all_to_active_or_backoff(POD_DELETE) is True
    assert (q.where("ns/default"), q.where("ns/topo")) == ("unschedulable", "backoff")
    assert q.move_all_to_active_or_backoff(NODE_ADD) is True
    assert q.where("ns/default") == "backoff"
    assert q.move_all_to_active_or_backoff(NODE_ADD) is False


def test_add_backoff_is_the_error_path():
    clock = FakeClock(1000.0)
    q = make_queue(clock)
    q.add(pod("a"))
    info = q.pop()
    info.unschedulable_plugins = {"stale"}
    assert q.add_backoff(info) == "backoff"
    assert info.unschedulable_plugins == set()
    assert q.pop() is None  # the error back-off is never popped early


def test_status_only_updates_in_flight_are_not_events():
    q = make_queue(FakeClock())
    q.add(pod("a"))
    info = q.pop()
    written = pod("a") | {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    q.update(pod("a"), written)
    assert q.add_unschedulable(info, {"NodeResourcesFit"}) == "unschedulable"
