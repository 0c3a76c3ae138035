"""When the operator reconciles a CR again without an event (``operator/requeueing.py``), that
the events it waits for are ones its ClusterRole lets it watch, and which node events reconcile
the NUMAResourcesScheduler."""

from __future__ import annotations

import threading
from unittest import mock

import pytest

from nrop.api.platform import Platform
from nrop.operator import numaresourcesscheduler, running
from nrop.operator.decisions.conditions import Reason, Step
from nrop.operator.decisions.manifests import OPERATOR_RULES
from nrop.operator.reconciling import Context
from nrop.operator.requeueing import Requeue, requeue_after

DEGRADED = Step.degraded(Reason.INTERNAL_ERROR, "boom")


@pytest.mark.parametrize(
    ("step", "failures", "after"),
    [
        pytest.param(None, 0, None, id="cr-gone-or-paused"),
        pytest.param(Step.available(), 3, None, id="available-waits-for-events"),
        pytest.param(Step.progressing(Reason.DAEMONSET_UPDATING), 0, 5.0, id="daemonset-updating"),
        pytest.param(Step.progressing(), 0, 5.0, id="deployment-not-running"),
        pytest.param(Step.progressing(Reason.MCP_UPDATING), 0, 60.0, id="pool-updating"),
        pytest.param(DEGRADED, 0, 0.005, id="first-failure"),
        pytest.param(DEGRADED, 3, 0.04, id="fourth-failure-in-a-row"),
        pytest.param(DEGRADED, 30, 1000.0, id="capped"),
    ],
)
def test_requeue_after(step: Step | None, failures: int, after: float | None) -> None:
    assert requeue_after(step, failures) == after


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_failures_back_off_and_success_forgets_them() -> None:
    clock, runs = Clock(), []
    queue = Requeue(threading.Event(), clock)
    for _ in range(3):
        queue.after_step("a", DEGRADED, lambda: runs.append("a"))
        clock.now += 1.0
        assert len(queue.take_due()) == 1  # 5 ms, 10 ms, 20 ms: each due within the second
    queue.after_step("a", DEGRADED, lambda: runs.append("a"))
    clock.now += 0.039
    assert queue.take_due() == []  # the fourth failure in a row waits 40 ms
    queue.after_step("a", Step.available(), lambda: runs.append("a"))
    clock.now += 2000.0
    assert queue.take_due() == []  # available: nothing pending, failures forgotten
    queue.after_step("a", DEGRADED, lambda: runs.append("a"))
    clock.now += 0.005
    assert len(queue.take_due()) == 1


def test_a_key_keeps_its_earliest_time_and_runs_once() -> None:
    clock, runs = Clock(), []
    queue = Requeue(threading.Event(), clock)
    queue.after_step(("NROP", "x"), Step.progressing(Reason.MCP_UPDATING), lambda: runs.append("late"))
    queue.after_step(("NROP", "x"), Step.progressing(Reason.DAEMONSET_UPDATING), lambda: runs.append("soon"))
    queue.after_step(("NROP", "x"), Step.progressing(Reason.MCP_UPDATING), lambda: runs.append("later"))
    queue.after_step(("NRS", "y"), Step.progressing(), lambda: runs.append("other"))
    clock.now += 5.0
    for work in queue.take_due():
        work()
    assert runs == ["soon", "other"]
    clock.now += 120.0
    assert queue.take_due() == []


def test_run_stops_with_its_flag() -> None:
    stop = threading.Event()
    done = threading.Event()
    queue = Requeue(stop)
    queue.after_step("k", Step.progressing(), done.set)
    thread = threading.Thread(target=queue.run)
    thread.start()
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive() and not done.is_set()


@pytest.mark.parametrize("platform", [Platform.KUBERNETES, Platform.OPENSHIFT], ids=str)
def test_every_watched_kind_is_listable_and_watchable_cluster_wide(platform: Platform) -> None:
    """kopf stops every handler when one watch is forbidden: the ClusterRole must cover each."""
    ctx = Context(api=mock.Mock(), namespace="ns", image="img", environ={}, platform=platform)
    registry = running.build_registry(ctx, None, kubeletconfigs=True)
    watched = {(h.selector.group, h.selector.any_name) for h in registry._watching.get_all_handlers()}
    assert ("", "nodes") in watched and ("apps", "daemonsets") in watched
    for group, plural in sorted(watched):
        assert any(
            group in rule["apiGroups"]
            and plural in rule["resources"]
            and {"list", "watch"} <= set(rule["verbs"])
            for rule in OPERATOR_RULES
        ), f"the operator watches {plural}.{group} but its ClusterRole does not let it list and watch them"


@pytest.mark.parametrize(
    ("event", "reconciled"),
    [
        pytest.param(None, True, id="listed-at-start"),
        pytest.param("ADDED", True, id="added"),
        pytest.param("DELETED", True, id="deleted"),
        pytest.param("MODIFIED", False, id="updates-filtered-out"),
    ],
)
def test_a_node_added_or_removed_reconciles_every_nrs(event: str | None, reconciled: bool) -> None:
    """upstream's ``nodeToNUMAResourcesScheduler`` with its create/delete-only predicate."""
    api = mock.Mock()
    api.list.return_value = [
        {"metadata": {"name": "numaresourcesscheduler"}},
        {"metadata": {"name": "other"}},
    ]
    ctx = Context(api=api, namespace="ns", image="img", environ={}, platform=Platform.KUBERNETES)
    registry = running.build_registry(ctx, None)
    (handler,) = [h for h in registry._watching.get_all_handlers() if h.id == "nrs-nodes"]
    with mock.patch.object(numaresourcesscheduler, "reconcile") as reconcile:
        handler.fn(type=event, body={}, name="node-3")
    expected = [mock.call(ctx, "numaresourcesscheduler"), mock.call(ctx, "other")] if reconciled else []
    assert reconcile.call_args_list == expected
