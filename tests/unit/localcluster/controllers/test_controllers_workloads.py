"""Shared workload helpers: claims, templates, pod health, int-or-percent, conditions, hashes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.localcluster.controllers.decisions.workloads import (
    Claim,
    claim,
    compute_hash,
    controller_ref,
    is_active,
    is_available,
    pod_from_template,
    scaled_value,
    set_condition,
)

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
OWNER = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
}


def pod(
    ref_uid: str | None = None, *, deleting: bool = False, phase: str = "Running", ready_at: str | None = None
) -> dict:
    meta: dict = {"name": "p", "namespace": "ns", "uid": "p1"}
    if ref_uid is not None:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "x", "uid": ref_uid, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T11:00:00Z"
    status: dict = {"phase": phase}
    if ready_at is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    return {"metadata": meta, "status": status}


@pytest.mark.parametrize(
    ("obj", "matches", "owner_deleting", "expected"),
    [
        pytest.param(pod("u1"), True, False, Claim.KEEP, id="owned-matching-kept"),
        pytest.param(pod("u1"), False, False, Claim.RELEASE, id="owned-not-matching-released"),
        pytest.param(pod("u1"), False, True, Claim.IGNORE, id="owner-deleting-releases-nothing"),
        pytest.param(pod("other"), True, False, Claim.IGNORE, id="someone-elses"),
        pytest.param(pod(), True, False, Claim.ADOPT, id="matching-orphan-adopted"),
        pytest.param(pod(), False, False, Claim.IGNORE, id="non-matching-orphan"),
        pytest.param(pod(), True, True, Claim.IGNORE, id="owner-deleting-adopts-nothing"),
        pytest.param(pod(deleting=True), True, False, Claim.IGNORE, id="deleting-orphan-not-adopted"),
    ],
)
def test_claim(obj: dict, matches: bool, owner_deleting: bool, expected: Claim) -> None:
    owner = {
        **OWNER,
        "metadata": {**OWNER["metadata"], **({"deletionTimestamp": "x"} if owner_deleting else {})},
    }
    assert claim(owner, obj, matches) is expected


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        pytest.param(2, 10, True, 2, id="int"),
        pytest.param("25%", 10, True, 3, id="percent-up"),
        pytest.param("25%", 10, False, 2, id="percent-down"),
        pytest.param("25%", 4, False, 1, id="exact"),
        pytest.param("0%", 7, True, 0, id="zero-percent"),
        pytest.param(None, 7, True, 0, id="absent"),
    ],
)
def test_scaled_value(value: int | str | None, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up, field="f") == expected


@pytest.mark.parametrize("value", ["25", "x%", True])
def test_scaled_value_rejects_bad_values_naming_the_field(value: object) -> None:
    with pytest.raises(ValueError, match=r"spec\.strategy\.rollingUpdate\.maxSurge"):
        scaled_value(value, 4, round_up=True, field="spec.strategy.rollingUpdate.maxSurge")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("obj", "min_ready", "expected"),
    [
        pytest.param(pod(ready_at="2025-01-01T11:59:00Z"), 0, True, id="ready"),
        pytest.param(pod(), 0, False, id="not-ready"),
        pytest.param(pod(ready_at="2025-01-01T11:59:00Z"), 30, True, id="ready-long-enough"),
        pytest.param(pod(ready_at="2025-01-01T11:59:50Z"), 30, False, id="ready-too-recently"),
        pytest.param(pod(ready_at="2025-01-01T11:59:30Z"), 30, False, id="boundary-is-not-available"),
    ],
)
def test_is_available(obj: dict, min_ready: int, expected: bool) -> None:
    assert is_available(obj, min_ready, NOW) is expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(pod(), True, id="running"),
        pytest.param(pod(phase="Pending"), True, id="pending"),
        pytest.param(pod(phase="Succeeded"), False, id="succeeded"),
        pytest.param(pod(phase="Failed"), False, id="failed"),
        pytest.param(pod(deleting=True), False, id="terminating"),
    ],
)
def test_is_active(obj: dict, expected: bool) -> None:
    assert is_active(obj) is expected


def cond(status: str, reason: str, since: str) -> dict:
    return {"type": "Available", "status": status, "reason": reason, "lastTransitionTime": since}


@pytest.mark.parametrize(
    ("current", "new", "expected"),
    [
        pytest.param([], cond("True", "A", "t1"), [cond("True", "A", "t1")], id="added"),
        pytest.param(
            [cond("True", "A", "t0")], cond("True", "A", "t1"), [cond("True", "A", "t0")], id="same-is-no-op"
        ),
        pytest.param(
            [cond("True", "A", "t0")],
            cond("True", "B", "t1"),
            [cond("True", "B", "t0")],
            id="reason-keeps-time",
        ),
        pytest.param(
            [cond("True", "A", "t0")], cond("False", "B", "t1"), [cond("False", "B", "t1")], id="transition"
        ),
    ],
)
def test_set_condition(current: list, new: dict, expected: list) -> None:
    assert set_condition(current, new) == expected


def test_pod_from_template_carries_labels_annotations_finalizers_and_controller_ref() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["f"]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    body = pod_from_template(template, OWNER)
    assert body["metadata"] == {
        "generateName": "web-",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "finalizers": ["f"],
        "ownerReferences": [controller_ref(OWNER)],
    }
    assert controller_ref(OWNER)["controller"] and controller_ref(OWNER)["blockOwnerDeletion"]
    body["spec"]["containers"][0]["image"] = "changed"
    assert template["spec"]["containers"][0]["image"] == "i"


def test_compute_hash_is_stable_name_safe_and_sensitive_to_template_and_collisions() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    digest = compute_hash(template)
    assert digest == compute_hash({"spec": template["spec"], "metadata": template["metadata"]})
    assert set(digest) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(digest) <= 10
    assert compute_hash({**template, "spec": {"containers": [{"name": "c", "image": "j"}]}}) != digest
    assert compute_hash(template, 1) != digest
