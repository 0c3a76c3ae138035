"""Job arithmetic: finished-pod accounting, pods to run, failure back-off, how and when a Job ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.localcluster.controllers.decisions import jobstatus as js

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def job(
    completions: int | None = 3,
    parallelism: int = 2,
    backoff: int = 6,
    status: dict | None = None,
    **spec: object,
) -> dict:
    body: dict = {
        "parallelism": parallelism,
        "backoffLimit": backoff,
        "template": {"spec": {"restartPolicy": spec.pop("restart", "Never")}},
    }
    if completions is not None:
        body["completions"] = completions
    body.update(spec)
    return {"metadata": {"name": "j", "uid": "j1"}, "spec": body, "status": status or {}}


def pod(
    name: str, phase: str = "Running", *, tracked: bool = True, finished: str | None = None, restarts: int = 0
) -> dict:
    meta: dict = {"name": name, "uid": name}
    if tracked:
        meta["finalizers"] = [js.TRACKING_FINALIZER]
    container: dict = {"restartCount": restarts}
    if finished:
        container["state"] = {"terminated": {"finishedAt": finished}}
    return {"metadata": meta, "status": {"phase": phase, "containerStatuses": [container]}}


def test_finished_pods_are_counted_once_through_the_uncounted_list() -> None:
    pods = [pod("s1", "Succeeded"), pod("f1", "Failed"), pod("r1"), pod("old", "Succeeded", tracked=False)]
    uncounted, release = js.record_finished(job(), pods)
    assert uncounted == {"succeeded": ["s1"], "failed": ["f1"]}
    assert [p["metadata"]["name"] for p in release] == ["s1", "f1"]
    j = job(status={"succeeded": 1, "uncountedTerminatedPods": uncounted})
    assert js.fold_uncounted(j, uncounted, still_tracked={"f1"}) == (2, 0, {"failed": ["f1"]})
    assert js.fold_uncounted(j, uncounted, still_tracked=set()) == (2, 1, {})
    again, _ = js.record_finished(j, [pod("s1", "Succeeded")])
    assert again == uncounted  # not recorded twice


@pytest.mark.parametrize(
    ("j", "succeeded", "active", "expected"),
    [
        pytest.param(job(3, 2), 0, 0, 2, id="parallelism"),
        pytest.param(job(3, 2), 2, 1, 1, id="completions-left"),
        pytest.param(job(3, 2), 3, 0, 0, id="done"),
        pytest.param(job(None, 2), 0, 0, 2, id="work-queue"),
        pytest.param(job(None, 2), 1, 1, 1, id="work-queue-after-a-success-starts-nothing"),
    ],
)
def test_want_active(j: dict, succeeded: int, active: int, expected: int) -> None:
    assert js.want_active(j, succeeded, active) == expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([], 0.0, id="no-failures"),
        pytest.param([pod("f1", "Failed", finished="2025-01-01T11:59:58Z")], 8.0, id="first-failure-10s"),
        pytest.param(
            [
                pod("f1", "Failed", finished="2025-01-01T11:59:50Z"),
                pod("f2", "Failed", finished="2025-01-01T11:59:58Z"),
            ],
            18.0,
            id="second-failure-20s",
        ),
        pytest.param(
            [
                pod("f1", "Failed", finished="2025-01-01T11:59:50Z"),
                pod("s1", "Succeeded", finished="2025-01-01T11:59:55Z"),
            ],
            0.0,
            id="success-resets",
        ),
        pytest.param([pod("f1", "Failed", finished="2025-01-01T11:00:00Z")], 0.0, id="elapsed"),
    ],
)
def test_backoff_remaining(pods: list[dict], expected: float) -> None:
    assert js.backoff_remaining(pods, NOW, 10.0, 360.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("j", "pods", "succeeded", "failed", "expected"),
    [
        pytest.param(job(backoff=1), [], 0, 2, js.BACKOFF_LIMIT_EXCEEDED, id="failures-above-limit"),
        pytest.param(job(backoff=1), [], 0, 1, None, id="failures-at-limit"),
        pytest.param(
            job(backoff=2, restart="OnFailure"),
            [pod("r", restarts=2)],
            0,
            0,
            js.BACKOFF_LIMIT_EXCEEDED,
            id="restarts-reach-limit",
        ),
        pytest.param(
            job(backoff=0, restart="OnFailure"),
            [pod("r", restarts=1)],
            0,
            0,
            js.BACKOFF_LIMIT_EXCEEDED,
            id="limit-zero",
        ),
        pytest.param(
            job(activeDeadlineSeconds=60, status={"startTime": "2025-01-01T11:58:00Z"}),
            [pod("r")],
            0,
            0,
            js.DEADLINE_EXCEEDED,
            id="deadline",
        ),
        pytest.param(job(3), [], 3, 0, js.COMPLETIONS_REACHED, id="completions"),
        pytest.param(job(3), [pod("r")], 2, 0, None, id="running"),
        pytest.param(job(None), [], 1, 0, js.COMPLETIONS_REACHED, id="work-queue-drained"),
        pytest.param(job(None), [pod("r")], 1, 0, None, id="work-queue-still-running"),
    ],
)
def test_finish_reason(
    j: dict, pods: list[dict], succeeded: int, failed: int, expected: js.Finish | None
) -> None:
    assert js.finish_reason(j, pods, succeeded, failed, NOW) == expected


def test_conditions_come_in_pairs_once_settled() -> None:
    target_only = js.conditions_for(job(), js.BACKOFF_LIMIT_EXCEEDED, settled=False, now=NOW)
    assert [c["type"] for c in target_only] == ["FailureTarget"]
    both = js.conditions_for(
        job(status={"conditions": target_only}), js.BACKOFF_LIMIT_EXCEEDED, settled=True, now=NOW
    )
    assert [(c["type"], c["reason"]) for c in both] == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    done = js.conditions_for(job(), js.COMPLETIONS_REACHED, settled=True, now=NOW)
    assert [c["type"] for c in done] == ["SuccessCriteriaMet", "Complete"]
    assert done[1]["message"] == "Reached expected number of succeeded pods"
    assert js.is_finished({"status": {"conditions": done}})
