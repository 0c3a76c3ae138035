"""Status decisions: base conditions as upstream's pkg/status, readiness, object drift, leader election."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nrop.api.leases import candidate_identity
from nrop.operator.decisions import conditions
from nrop.operator.decisions.conditions import Reason, Step, Type
from nrop.operator.kubeapi import ApiException, is_subset
from nrop.operator.leaderelection import LeaderElector
from nrop.operator.numaresourcesoperator import daemonset_step
from nrop.operator.numaresourcesscheduler import deployment_step
from nrop.operator.reconciling import retrying

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def summary(conds: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conds}


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        pytest.param(Step.available(), {"Available": ("True", "AsExpected"), "Upgradeable": ("True", "AsExpected"),
                                        "Progressing": ("False", "Progressing"), "Degraded": ("False", "Degraded")},
                     id="available"),
        pytest.param(Step.progressing(Reason.DAEMONSET_UPDATING, "x is updating"),
                     {"Available": ("False", "Available"), "Upgradeable": ("False", "Upgradeable"),
                      "Progressing": ("True", "DaemonSetIsUpdating"), "Degraded": ("False", "Degraded")},
                     id="progressing"),
        pytest.param(Step.degraded(Reason.CUSTOM_USER_IMAGE, "m"),
                     {"Available": ("False", "Available"), "Upgradeable": ("False", "Upgradeable"),
                      "Progressing": ("False", "Progressing"), "Degraded": ("True", "CustomUserImage")},
                     id="degraded"),
    ],
)  # fmt: skip
def test_base_conditions_move_together(step: Step, expected: dict[str, tuple[str, str]]) -> None:
    conds = conditions.compute([], step, 3, T0, (Type.MCP_PAUSED,))
    assert {k: v for k, v in summary(conds).items() if k in expected} == expected
    assert summary(conds)["MachineConfigPoolPaused"] == ("Unknown", "MachineConfigPoolPaused")
    assert {c["observedGeneration"] for c in conds if c["type"] in expected} == {3}


def test_transition_time_changes_only_with_the_status() -> None:
    first = conditions.compute([], Step.available(), 1, T0)
    again = conditions.compute(first, Step.available(), 2, T1)
    assert conditions.find(again, "Available")["lastTransitionTime"] == T0
    assert conditions.find(again, "Available")["observedGeneration"] == 2
    degraded = conditions.compute(again, Step.degraded(Reason.INTERNAL_ERROR, "boom"), 3, T1)
    assert conditions.find(degraded, "Available")["lastTransitionTime"] == T1
    assert conditions.find(degraded, "Degraded")["message"] == "boom"
    assert not conditions.conditions_equal(again, degraded)
    assert conditions.conditions_equal(first, conditions.compute(first, Step.available(), 1, T1))


def ds(generation: int, observed: int, desired: int, ready: int, updated: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "d", "generation": generation},
        "status": {"observedGeneration": observed, "desiredNumberScheduled": desired, "numberReady": ready,
                   "numberAvailable": ready, "updatedNumberScheduled": updated},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("daemonsets", "expected"),
    [
        pytest.param([ds(1, 1, 2, 2, 2)], Type.AVAILABLE, id="ready"),
        pytest.param([ds(1, 1, 2, 1, 2)], Type.PROGRESSING, id="pod-not-ready"),
        pytest.param([ds(2, 1, 2, 2, 2)], Type.PROGRESSING, id="not-observed"),
        pytest.param([ds(1, 1, 2, 2, 1)], Type.PROGRESSING, id="rolling"),
        pytest.param([], Type.AVAILABLE, id="no-groups"),
    ],
)
def test_daemonset_step(daemonsets: list[dict[str, Any]], expected: Type) -> None:
    step = daemonset_step(daemonsets)
    assert step.type == expected
    if expected == Type.PROGRESSING:
        assert (step.reason, step.message) == ("DaemonSetIsUpdating", "d is updating")


@pytest.mark.parametrize(
    ("available", "observed", "replicas", "updated", "expected"),
    [
        pytest.param("True", 2, 1, 1, Type.AVAILABLE, id="ready"),
        pytest.param("False", 2, 1, 1, Type.PROGRESSING, id="unavailable"),
        # upstream's isDeploymentRunning reads the Available condition alone: a rollout that has
        # not started or is half-way (the old replica still available) is Available
        pytest.param("True", 1, 1, 1, Type.AVAILABLE, id="not-observed"),
        pytest.param("True", 2, 1, 0, Type.AVAILABLE, id="rolling"),
        pytest.param("True", 2, 2, 1, Type.AVAILABLE, id="old-replica-terminating"),
        pytest.param("", 2, 1, 1, Type.PROGRESSING, id="no-condition"),
    ],
)
def test_deployment_step(available: str, observed: int, replicas: int, updated: int, expected: Type) -> None:
    conditions = [{"type": "Available", "status": available}] if available else []
    deployment = {
        "metadata": {"generation": 2},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": observed, "replicas": replicas, "updatedReplicas": updated,
                   "availableReplicas": replicas, "conditions": conditions},
    }  # fmt: skip
    assert deployment_step(deployment).type == expected


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        pytest.param({"a": 1}, {"a": 1, "b": 2}, True, id="server-added-field"),
        pytest.param({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2, "d": 3}]}}, True, id="nested"),
        pytest.param({"a": 1}, {"a": 2}, False, id="edited"),
        pytest.param({"a": [1, 2]}, {"a": [1]}, False, id="list-shorter"),
        pytest.param({"a": [1]}, {"a": [1, 2]}, False, id="list-longer"),
        pytest.param({"a": {"b": 1}}, {}, False, id="missing"),
    ],
)
def test_is_subset(desired: Any, live: Any, expected: bool) -> None:
    assert is_subset(desired, live) is expected


@pytest.mark.parametrize(
    ("statuses", "result", "sleeps"),
    [
        pytest.param([], "done", 0, id="first-try"),
        pytest.param([409, 503], "done", 2, id="conflict-then-unavailable"),
        pytest.param([404], 404, 0, id="not-transient"),
        pytest.param([409, 409, 409, 409], 409, 3, id="gives-up"),
    ],
)
def test_retrying(statuses: list[int], result: Any, sleeps: int) -> None:
    failures = list(statuses)
    slept: list[float] = []

    def action() -> str:
        if failures:
            raise ApiException(failures.pop(0), "r", "injected")
        return "done"

    try:
        outcome: Any = retrying(action, sleep=slept.append)
    except ApiException as exc:
        outcome = exc.status
    assert outcome == result
    assert len(slept) == sleeps


class FakeLeases:
    """The three calls LeaderElector makes, on one in-memory Lease."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None

    def raw_get(self, path: str) -> dict[str, Any]:
        if self.lease is None:
            raise ApiException(404, "NotFound", "not found")
        return json.loads(json.dumps(self.lease))

    def raw_post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.lease is not None:
            raise ApiException(409, "Conflict", "conflict")
        self.lease = body
        return body

    def raw_put(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.lease = body
        return body


def test_leader_election_lifecycle() -> None:
    leases = FakeLeases()
    clock = [1000.0]

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(leases, "ns", "lease", identity, clock=lambda: clock[0], wall_ns=lambda: int(clock[0] * 1e9))  # type: ignore[arg-type]  # fmt: skip

    a, b = elector("a"), elector("b")
    assert a.try_acquire() and leases.lease is not None
    assert leases.lease["spec"]["holderIdentity"] == "a"
    assert leases.lease["spec"]["renewTime"] == "1970-01-01T00:16:40.000000Z"
    assert not b.try_acquire()  # held and fresh
    clock[0] += 5
    assert a.try_acquire()  # renew
    clock[0] += 16
    # client-go's rule: b saw the renewal only now, so the lease runs 15 s from here, whatever renewTime says
    assert not b.try_acquire()
    clock[0] += 15
    assert b.try_acquire()  # unchanged for a whole lease duration: expired, taken over
    assert (leases.lease["spec"]["holderIdentity"], leases.lease["spec"]["leaseTransitions"]) == ("b", 1)
    assert not a.try_acquire()  # a, which led, lost it to b's valid lease


def test_a_stopped_leaders_successor_waits_for_the_lease_to_expire() -> None:
    """Nothing is released on stop (upstream's manager): a new process, a new identity, waits a
    whole lease duration from when it first sees the Lease."""
    leases = FakeLeases()
    clock = [1000.0]
    leader = LeaderElector(leases, "ns", "lease", candidate_identity("pod-0"), clock=lambda: clock[0])  # type: ignore[arg-type]  # fmt: skip
    assert leader.try_acquire()
    clock[0] += 1  # the leader stops here; a container restarted in the same pod starts
    successor = LeaderElector(leases, "ns", "lease", candidate_identity("pod-0"), clock=lambda: clock[0])  # type: ignore[arg-type]  # fmt: skip
    assert not successor.try_acquire()
    clock[0] += 14.9
    assert not successor.try_acquire()
    clock[0] += 0.2
    assert successor.try_acquire()
    assert leases.lease is not None and leases.lease["spec"]["leaseTransitions"] == 1


def test_leader_election_same_identity_takes_its_lease_back_at_once() -> None:
    """client-go's rule: the holder's own identity renews at once, even before it has observed the record."""
    leases = FakeLeases()
    clock = [1000.0]
    first = LeaderElector(leases, "ns", "lease", "pod-0", clock=lambda: clock[0])  # type: ignore[arg-type]
    assert first.try_acquire()
    restarted = LeaderElector(leases, "ns", "lease", "pod-0", clock=lambda: clock[0] + 1)  # type: ignore[arg-type]
    assert restarted.try_acquire()
    assert leases.lease is not None and leases.lease["spec"]["leaseTransitions"] == 0
