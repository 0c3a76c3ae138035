"""ReplicaSet decisions: the replica diff, slow-start batches, which pods go first, the status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.localcluster.controllers.decisions.replicas import (
    BURST_REPLICAS,
    deletion_order,
    replica_diff,
    replica_set_status,
    slow_start_batches,
)

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("replicas", "active", "expected"),
    [
        pytest.param(3, 0, -3, id="create-three"),
        pytest.param(3, 3, 0, id="steady"),
        pytest.param(1, 4, 3, id="delete-three"),
        pytest.param(2000, 0, -BURST_REPLICAS, id="burst-capped"),
    ],
)
def test_replica_diff(replicas: int, active: int, expected: int) -> None:
    assert replica_diff(replicas, active) == expected


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(0, [], id="none"),
        pytest.param(1, [1], id="one"),
        pytest.param(5, [1, 2, 2], id="five"),
        pytest.param(10, [1, 2, 4, 3], id="ten"),
    ],
)
def test_slow_start_batches(count: int, expected: list[int]) -> None:
    assert slow_start_batches(count) == expected


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready_at: str | None = "2025-01-01T10:00:00Z",
    created: str = "2025-01-01T09:00:00Z",
    restarts: int = 0,
    cost: str | None = None,
    labels: dict | None = None,
) -> dict:
    meta: dict = {"name": name, "uid": name, "creationTimestamp": created, "labels": labels or {"app": "web"}}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    status: dict = {"phase": phase, "containerStatuses": [{"restartCount": restarts}]}
    if ready_at is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


@pytest.mark.parametrize(
    ("pods", "related", "first"),
    [
        pytest.param([pod("bound"), pod("unbound", node="")], [], "unbound", id="unscheduled-first"),
        pytest.param(
            [pod("running"), pod("pending", phase="Pending")], [], "pending", id="pending-before-running"
        ),
        pytest.param([pod("ready"), pod("unready", ready_at=None)], [], "unready", id="not-ready-first"),
        pytest.param(
            [pod("dear", cost="10"), pod("cheap", cost="-5")], [], "cheap", id="lower-deletion-cost-first"
        ),
        pytest.param(
            [pod("alone", node="n1"), pod("crowded", node="n2")],
            [pod("sibling", node="n2")],
            "crowded",
            id="doubled-up-first",
        ),
        pytest.param(
            [pod("old-ready"), pod("new-ready", ready_at="2025-01-01T11:00:00Z")],
            [],
            "new-ready",
            id="ready-less-time-first",
        ),
        pytest.param([pod("calm"), pod("crashy", restarts=3)], [], "crashy", id="more-restarts-first"),
        pytest.param(
            [pod("older"), pod("newer", created="2025-01-01T09:30:00Z")], [], "newer", id="newer-first"
        ),
    ],
)
def test_deletion_order(pods: list[dict], related: list[dict], first: str) -> None:
    assert deletion_order(pods, related)[0]["metadata"]["name"] == first


RS = {
    "metadata": {"name": "web", "generation": 2},
    "spec": {"replicas": 3, "minReadySeconds": 0, "template": {"metadata": {"labels": {"app": "web"}}}},
}


@pytest.mark.parametrize(
    ("rs", "pods", "failure", "expected"),
    [
        pytest.param(RS, [], None, {"replicas": 0, "observedGeneration": 2}, id="no-pods-zeros-omitted"),
        pytest.param(
            RS,
            [pod("a"), pod("b", ready_at=None), pod("c", labels={"other": "x"})],
            None,
            {
                "replicas": 3,
                "fullyLabeledReplicas": 2,
                "readyReplicas": 2,
                "availableReplicas": 2,
                "observedGeneration": 2,
            },
            id="counts",
        ),
        pytest.param(
            {**RS, "spec": {**RS["spec"], "minReadySeconds": 3600}},
            [pod("a", ready_at="2025-01-01T11:59:00Z")],
            None,
            {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "observedGeneration": 2},
            id="ready-not-yet-available",
        ),
        pytest.param(
            RS,
            [pod("gone", phase="Succeeded")],
            None,
            {"replicas": 0, "observedGeneration": 2},
            id="terminal-pods-not-counted",
        ),
        pytest.param(
            RS,
            [],
            ("FailedCreate", "quota"),
            {
                "replicas": 0,
                "observedGeneration": 2,
                "conditions": [
                    {
                        "type": "ReplicaFailure",
                        "status": "True",
                        "reason": "FailedCreate",
                        "message": "quota",
                        "lastTransitionTime": "2025-01-01T12:00:00Z",
                    }
                ],
            },
            id="failure-condition",
        ),
        pytest.param(
            {**RS, "status": {"conditions": [{"type": "ReplicaFailure", "status": "True"}]}},
            [],
            None,
            {"replicas": 0, "observedGeneration": 2},
            id="clean-sync-clears-failure",
        ),
    ],
)
def test_replica_set_status(
    rs: dict, pods: list[dict], failure: tuple[str, str] | None, expected: dict
) -> None:
    assert replica_set_status(rs, pods, NOW, failure=failure) == expected
