"""Deployment arithmetic: fenceposts, rolling steps, proportional scaling, revisions, status and conditions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.localcluster.controllers.decisions import rollout, rolloutstatus

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "v2"}]}}


def deployment(
    replicas: int = 4,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
    *,
    strategy: str = "RollingUpdate",
    generation: int = 1,
    status: dict | None = None,
    deadline: int | None = 600,
    history: int | None = 10,
) -> dict:
    spec: dict = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": TEMPLATE,
        "strategy": {"type": strategy}
        | (
            {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
            if strategy == "RollingUpdate"
            else {}
        ),
    }
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "d1", "generation": generation},
        "spec": spec,
        "status": status or {},
    }


def rs(
    name: str,
    replicas: int,
    available: int | None = None,
    *,
    created: str = "2025-01-01T10:00:00Z",
    revision: int | None = None,
    desired: int | None = None,
    max_replicas: int | None = None,
    actual: int | None = None,
    image: str = "v1",
) -> dict:
    annotations = {}
    if revision is not None:
        annotations[rollout.REVISION] = str(revision)
    if desired is not None:
        annotations[rollout.DESIRED_REPLICAS] = str(desired)
    if max_replicas is not None:
        annotations[rollout.MAX_REPLICAS] = str(max_replicas)
    available = replicas if available is None else available
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "creationTimestamp": created,
            "annotations": annotations,
            "generation": 1,
        },
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": "web", "pod-template-hash": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
        "status": {
            "replicas": replicas if actual is None else actual,
            "readyReplicas": available,
            "availableReplicas": available,
            "observedGeneration": 1,
        },
    }


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        pytest.param("25%", "25%", 4, (1, 1), id="defaults-of-4"),
        pytest.param("25%", "25%", 10, (3, 2), id="surge-up-unavailable-down"),
        pytest.param(0, 0, 3, (0, 1), id="both-zero-means-one-unavailable"),
        pytest.param("0%", "0%", 1, (0, 1), id="percent-zeros"),
        pytest.param(2, "50%", 3, (2, 1), id="mixed"),
    ],
)
def test_resolve_fenceposts(
    surge: int | str, unavailable: int | str, desired: int, expected: tuple[int, int]
) -> None:
    assert rollout.resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("d", "expected_surge", "expected_unavailable"),
    [
        pytest.param(deployment(4), 1, 1, id="rolling"),
        pytest.param(deployment(4, strategy="Recreate"), 0, 0, id="recreate"),
        pytest.param(deployment(0), 0, 0, id="zero-replicas"),
        pytest.param(deployment(2, unavailable=5), 1, 2, id="unavailable-capped-at-replicas"),
    ],
)
def test_max_surge_and_unavailable(d: dict, expected_surge: int, expected_unavailable: int) -> None:
    assert (rollout.max_surge(d), rollout.max_unavailable(d)) == (expected_surge, expected_unavailable)


@pytest.mark.parametrize(
    ("d", "old", "new_size", "expected"),
    [
        pytest.param(deployment(4), [rs("old", 4)], 0, 1, id="first-step-uses-the-surge"),
        pytest.param(deployment(4), [rs("old", 3)], 1, 2, id="room-after-scale-down"),
        pytest.param(deployment(4), [rs("old", 4)], 1, 1, id="at-max-total"),
        pytest.param(deployment(4, surge=10), [rs("old", 4)], 0, 4, id="never-beyond-replicas"),
        pytest.param(
            deployment(4, strategy="Recreate"), [rs("old", 4)], 0, 4, id="recreate-goes-all-the-way"
        ),
    ],
)
def test_new_rs_new_replicas(d: dict, old: list[dict], new_size: int, expected: int) -> None:
    new = rs("new", new_size, 0, image="v2")
    assert rollout.new_rs_new_replicas(d, [*old, new], new) == expected


@pytest.mark.parametrize(
    ("d", "new", "old", "expected"),
    [
        pytest.param(
            deployment(4), rs("new", 1, 0), [rs("old", 4)], {"old": 3}, id="max-unavailable-goes-first"
        ),
        pytest.param(
            deployment(4), rs("new", 1, 1), [rs("old", 4)], {"old": 2}, id="available-new-frees-one-more"
        ),
        pytest.param(deployment(4), rs("new", 2, 0), [rs("old", 3)], {}, id="blocked-by-unavailable-new"),
        pytest.param(
            deployment(4),
            rs("new", 1, 0),
            [rs("old", 4, 2)],
            {"old": 3},
            id="unhealthy-old-pods-first",
        ),
        pytest.param(
            deployment(4),
            rs("new", 2, 2),
            [rs("older", 1, created="2025-01-01T09:00:00Z"), rs("old", 2)],
            {"older": 0, "old": 1},
            id="oldest-set-first",
        ),
        pytest.param(deployment(4), rs("new", 4, 4), [rs("old", 0)], {}, id="nothing-left"),
        pytest.param(
            deployment(10, surge=3, unavailable=2),
            rs("new", 3, 3),
            [rs("old", 10)],
            {"old": 5},
            id="within-min-available",
        ),
    ],
)
def test_old_replica_set_scale_down(d: dict, new: dict, old: list[dict], expected: dict[str, int]) -> None:
    assert rollout.old_replica_set_scale_down(d, new, old) == expected


@pytest.mark.parametrize(
    ("d", "new", "old", "expected"),
    [
        pytest.param(deployment(5), rs("new", 4), [], [("new", 5)], id="single-active-takes-all"),
        pytest.param(deployment(4), rs("new", 4), [rs("old", 0)], [], id="nothing-to-do"),
        pytest.param(
            deployment(20, surge=3, unavailable=2),
            rs("new", 3, 0, desired=10, max_replicas=13, created="2025-01-01T11:00:00Z"),
            [rs("old", 8, desired=10, max_replicas=13)],
            [("old", 18), ("new", 5)],
            id="scale-up-proportionally",
        ),
        pytest.param(
            deployment(5, surge=1, unavailable=0),
            rs("new", 3, 0, desired=10, max_replicas=11, created="2025-01-01T11:00:00Z"),
            [rs("old", 8, desired=10, max_replicas=11)],
            [("old", 4), ("new", 2)],
            id="scale-down-proportionally",
        ),
        pytest.param(
            deployment(3),
            rs("new", 3, 3, desired=3),
            [rs("old", 2)],
            [("old", 0)],
            id="saturated-new-drops-old",
        ),
    ],
)
def test_proportional_scale(d: dict, new: dict, old: list[dict], expected: list[tuple[str, int]]) -> None:
    plan = rollout.proportional_scale(d, new, old)
    assert [(r["metadata"]["name"], size) for r, size in plan] == expected


def test_scaling_event_is_a_desired_replicas_annotation_mismatch() -> None:
    assert rollout.is_scaling_event(deployment(5), [rs("new", 4, desired=4), None])
    assert not rollout.is_scaling_event(deployment(4), [rs("new", 4, desired=4)])
    assert not rollout.is_scaling_event(deployment(5), [rs("idle", 0, desired=4)])


def test_find_new_replica_set_ignores_the_hash_label_and_prefers_the_oldest() -> None:
    older = rs("a", 0, image="v2", created="2025-01-01T08:00:00Z")
    newer = rs("b", 0, image="v2")
    assert rollout.find_new_replica_set(deployment(), [newer, rs("c", 1), older]) is older
    assert rollout.find_new_replica_set(deployment(), [rs("c", 1)]) is None


def test_new_replica_set_body_names_labels_and_annotates() -> None:
    d = deployment(4)
    d["metadata"]["annotations"] = {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"}
    body = rollout.new_replica_set_body(d, 1, 3, None)
    template_hash = body["spec"]["template"]["metadata"]["labels"][rollout.POD_TEMPLATE_HASH]
    assert body["metadata"]["name"] == f"web-{template_hash}"
    assert body["spec"]["selector"] == {
        "matchLabels": {"app": "web", rollout.POD_TEMPLATE_HASH: template_hash}
    }
    assert body["metadata"]["annotations"] == {
        "team": "a",
        rollout.REVISION: "3",
        rollout.DESIRED_REPLICAS: "4",
        rollout.MAX_REPLICAS: "5",
    }
    assert body["metadata"]["ownerReferences"][0]["controller"] is True
    assert rollout.new_replica_set_body(d, 1, 3, 1)["metadata"]["name"] != body["metadata"]["name"]


def test_rolling_back_to_a_replica_set_keeps_its_revision_history() -> None:
    back = rs("a", 0, revision=1)
    back["metadata"]["annotations"][rollout.REVISION_HISTORY] = "0"
    annotations = rollout.replica_set_annotations(deployment(), back, 4, exists=True)
    assert annotations[rollout.REVISION] == "4"
    assert annotations[rollout.REVISION_HISTORY] == "0,1"
    assert (
        rollout.replica_set_annotations(deployment(), rs("b", 0, revision=5), 4, exists=True)[
            rollout.REVISION
        ]
        == "5"
    )


def progressing(reason: str, status: str = "True", updated: str = "2025-01-01T11:00:00Z") -> dict:
    return {
        "type": "Progressing",
        "status": status,
        "reason": reason,
        "message": "m",
        "lastUpdateTime": updated,
        "lastTransitionTime": "2025-01-01T10:00:00Z",
    }


@pytest.mark.parametrize(
    ("d", "all_rs", "expected_counts", "available", "progress"),
    [
        pytest.param(
            deployment(4, status={"conditions": [progressing("NewReplicaSetCreated")]}),
            [rs("new", 4, image="v2")],
            {
                "observedGeneration": 1,
                "replicas": 4,
                "updatedReplicas": 4,
                "readyReplicas": 4,
                "availableReplicas": 4,
            },
            ("True", "MinimumReplicasAvailable"),
            ("True", "NewReplicaSetAvailable", 'ReplicaSet "new" has successfully progressed.'),
            id="complete",
        ),
        pytest.param(
            deployment(
                4,
                status={
                    "replicas": 4,
                    "updatedReplicas": 0,
                    "conditions": [progressing("NewReplicaSetCreated")],
                },
            ),
            [rs("old", 3), rs("new", 1, 0, image="v2")],
            {
                "observedGeneration": 1,
                "replicas": 4,
                "updatedReplicas": 1,
                "readyReplicas": 3,
                "availableReplicas": 3,
                "unavailableReplicas": 1,
            },
            ("True", "MinimumReplicasAvailable"),
            ("True", "ReplicaSetUpdated", 'ReplicaSet "new" is progressing.'),
            id="progressing",
        ),
        pytest.param(
            deployment(
                4,
                status={
                    "replicas": 4,
                    "updatedReplicas": 1,
                    "readyReplicas": 0,
                    "conditions": [progressing("ReplicaSetUpdated")],
                },
                deadline=60,
            ),
            [rs("new", 4, 0, image="v2")],
            {"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "unavailableReplicas": 4},
            ("False", "MinimumReplicasUnavailable"),
            ("True", "ReplicaSetUpdated", 'ReplicaSet "new" is progressing.'),
            id="updated-replicas-count-as-progress",
        ),
        pytest.param(
            deployment(
                4,
                status={
                    "replicas": 4,
                    "updatedReplicas": 4,
                    "conditions": [progressing("ReplicaSetUpdated")],
                },
                deadline=60,
            ),
            [rs("new", 4, 0, image="v2")],
            {"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "unavailableReplicas": 4},
            ("False", "MinimumReplicasUnavailable"),
            ("False", "ProgressDeadlineExceeded", 'ReplicaSet "new" has timed out progressing.'),
            id="deadline-exceeded",
        ),
    ],
)
def test_rollout_status(
    d: dict, all_rs: list[dict], expected_counts: dict, available: tuple, progress: tuple
) -> None:
    new = next(r for r in all_rs if r["metadata"]["name"] == "new")
    status = rolloutstatus.rollout_status(d, all_rs, new, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == expected_counts
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Available"]["status"], conditions["Available"]["reason"]) == available
    p = conditions["Progressing"]
    assert (p["status"], p["reason"], p["message"]) == progress


def test_progress_keeps_the_transition_time_and_refreshes_the_update_time() -> None:
    d = deployment(
        4, status={"replicas": 4, "updatedReplicas": 0, "conditions": [progressing("ReplicaSetUpdated")]}
    )
    status = rolloutstatus.rollout_status(d, [rs("old", 3), rs("new", 1, 0, image="v2")], None, NOW)
    (p,) = [c for c in status["conditions"] if c["type"] == "Progressing"]
    assert (p["lastTransitionTime"], p["lastUpdateTime"]) == ("2025-01-01T10:00:00Z", "2025-01-01T12:00:00Z")
    assert p["message"] == "Deployment is progressing."


def test_no_progress_deadline_drops_the_progressing_condition() -> None:
    status = rolloutstatus.rollout_status(
        deployment(1, deadline=None, status={"conditions": [progressing("X")]}), [rs("new", 1)], None, NOW
    )
    assert [c["type"] for c in status["conditions"]] == ["Available"]


def test_requeue_after_counts_down_to_the_deadline() -> None:
    d = deployment(4, deadline=3600)
    assert rolloutstatus.requeue_after(
        d, {"conditions": [progressing("ReplicaSetUpdated")]}, NOW
    ) == pytest.approx(1.0 + 0.0)
    later = {"conditions": [progressing("ReplicaSetUpdated", updated="2025-01-01T11:59:00Z")]}
    assert rolloutstatus.requeue_after(d, later, NOW) == pytest.approx(3541.0)
    assert (
        rolloutstatus.requeue_after(d, {"conditions": [progressing("NewReplicaSetAvailable")]}, NOW) is None
    )


def test_paused_and_resumed_conditions() -> None:
    paused = deployment(1)
    paused["spec"]["paused"] = True
    conditions = rolloutstatus.paused_condition(paused, NOW)
    assert conditions is not None and (conditions[-1]["status"], conditions[-1]["reason"]) == (
        "Unknown",
        "DeploymentPaused",
    )
    resumed = deployment(1, status={"conditions": conditions})
    after = rolloutstatus.paused_condition(resumed, NOW)
    assert after is not None and after[-1]["reason"] == "DeploymentResumed"
    assert rolloutstatus.paused_condition(deployment(1), NOW) is None


def test_history_beyond_the_limit_is_deleted_oldest_revision_first_and_only_when_empty() -> None:
    old = [rs("r1", 0, revision=1), rs("r2", 0, revision=2), rs("r3", 1, revision=3), rs("r4", 0, revision=4)]
    victims = rollout.history_to_delete(deployment(history=1), old)
    assert [r["metadata"]["name"] for r in victims] == ["r1", "r2"]  # r3 still has a replica
    assert rollout.history_to_delete(deployment(history=None), old) == []
