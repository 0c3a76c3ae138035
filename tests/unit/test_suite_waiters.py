"""Table tests of nrop.suite.waiters' completion rules and the pod-fingerprint settle counting."""

from __future__ import annotations

import pytest

from nrop.suite import waiters as w


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


@pytest.mark.parametrize(
    ("observations", "threshold", "counts", "all_ready"),
    [
        ([("a", "p1")] * 5, 5, {"a": 5}, True),
        ([("a", "p1")] * 4, 5, {"a": 4}, False),
        ([("a", "p1"), ("a", "p1"), ("a", "p2"), ("a", "p2")], 2, {"a": 2}, True),
        ([("a", "p1"), ("b", "q"), ("a", "p1"), ("b", "q2")], 2, {"a": 2, "b": 1}, False),
        ([("a", "p1"), ("a", "p2"), ("a", "p1")], 2, {"a": 1}, False),
    ],
)
def test_pfp_state(observations, threshold, counts, all_ready) -> None:
    state = w.PFPState()
    for node, value in observations:
        state.observe(node, value)
    assert {node: count for node, (_, count) in state.counts.items()} == counts
    assert state.all_ready(threshold) is all_ready
    assert state.count_ready(threshold) == sum(c >= threshold for c in counts.values())


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
