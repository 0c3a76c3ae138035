"""Pod admission: service-account volume, default tolerations and RuntimeClass, as upstream's plugins."""

from __future__ import annotations

import random
from typing import Any

import pytest

from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.admission import SERVICE_ACCOUNT_DIR, admit_pod

RUNTIME_CLASSES = {
    "plain": {"handler": "runc"},
    "costly": {"handler": "crun", "overhead": {"podFixed": {"cpu": "250m"}}},
    "pinned": {
        "handler": "runc",
        "scheduling": {"nodeSelector": {"pool": "a"}, "tolerations": [{"key": "t", "operator": "Exists"}]},
    },
}
ACCOUNTS = {"quiet": {"automountServiceAccountToken": False}}
PRIORITY_CLASSES = {
    "system-node-critical": {"metadata": {"name": "system-node-critical"}, "value": 2000001000},
    "e2e-preemption-low": {"metadata": {"name": "e2e-preemption-low"}, "value": 100},
    "polite": {"metadata": {"name": "polite"}, "value": 50, "preemptionPolicy": "Never"},
}


def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    tables = {"runtimeclasses": RUNTIME_CLASSES, "priorityclasses": PRIORITY_CLASSES}
    return tables.get(plural, ACCOUNTS).get(name)


def pod(**spec: Any) -> dict[str, Any]:
    base = {"serviceAccountName": "default", "containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {**base, **spec}}


def admitted(**spec: Any) -> dict[str, Any]:
    body = pod(**spec)
    admit_pod(body, lookup, rng=random.Random(1))
    return body["spec"]


def test_service_account_volume_is_projected_and_mounted_everywhere() -> None:
    spec = admitted()
    (volume,) = spec["volumes"]
    assert (
        volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    )
    sources = volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
    for container in (*spec["containers"], *spec["initContainers"]):
        assert container["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": SERVICE_ACCOUNT_DIR}
        ]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"automountServiceAccountToken": False}, id="pod-opts-out"),
        pytest.param({"serviceAccountName": "quiet"}, id="account-opts-out"),
    ],
)
def test_no_service_account_volume_when_automount_is_off(spec: dict[str, Any]) -> None:
    assert "volumes" not in admitted(**spec)


def test_own_mount_at_the_service_account_dir_is_kept() -> None:
    own = {"name": "c", "volumeMounts": [{"name": "mine", "mountPath": SERVICE_ACCOUNT_DIR}]}
    spec = admitted(containers=[own], volumes=[{"name": "mine", "emptyDir": {}}])
    assert spec["containers"][0]["volumeMounts"] == [{"name": "mine", "mountPath": SERVICE_ACCOUNT_DIR}]


@pytest.mark.parametrize(
    ("tolerations", "added"),
    [
        pytest.param([], ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"], id="both"),
        pytest.param(
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
            ["node.kubernetes.io/not-ready"],
            id="one-present",
        ),
        pytest.param([{"operator": "Exists"}], [], id="tolerates-everything"),
        pytest.param(
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
            ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"],
            id="other-effect-does-not-count",
        ),
    ],
)
def test_default_toleration_seconds(tolerations: list[dict[str, Any]], added: list[str]) -> None:
    spec = admitted(tolerations=[dict(t) for t in tolerations])
    new = spec["tolerations"][len(tolerations) :]
    assert new == [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300} for key in added
    ]


def test_runtime_class_overhead_and_scheduling() -> None:
    assert admitted(runtimeClassName="costly")["overhead"] == {"cpu": "250m"}
    assert "overhead" not in admitted(runtimeClassName="plain")
    spec = admitted(runtimeClassName="pinned", nodeSelector={"zone": "z"})
    assert spec["nodeSelector"] == {"zone": "z", "pool": "a"}
    assert {"key": "t", "operator": "Exists"} in spec["tolerations"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"runtimeClassName": "nosuch"}, 'pod rejected: RuntimeClass "nosuch" not found', id="missing"
        ),
        pytest.param(
            {"runtimeClassName": "costly", "overhead": {"cpu": "1"}},
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
            id="overhead-mismatch",
        ),
        pytest.param(
            {"overhead": {"cpu": "1"}},
            "pod rejected: Pod Overhead set without corresponding RuntimeClass",
            id="no-class",
        ),
        pytest.param(
            {"runtimeClassName": "pinned", "nodeSelector": {"pool": "b"}},
            "conflict: runtimeClass.scheduling.nodeSelector[pool] = a; pod.spec.nodeSelector[pool] = b",
            id="selector-conflict",
        ),
    ],
)
def test_runtime_class_refusals(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.Forbidden) as refused:
        admitted(**spec)
    assert str(refused.value) == f'pods "p" is forbidden: {message}'


@pytest.mark.parametrize(
    ("spec", "classes", "expected"),
    [
        pytest.param({}, [], {"priority": 0}, id="no-class-no-default"),
        pytest.param(
            {"priorityClassName": "system-node-critical"},
            [],
            {"priorityClassName": "system-node-critical", "priority": 2000001000},
            id="named-class",
        ),
        pytest.param(
            {},
            [{"metadata": {"name": "fallback"}, "value": 7, "globalDefault": True}],
            {"priorityClassName": "fallback", "priority": 7},
            id="global-default",
        ),
        pytest.param(
            {"priorityClassName": "polite"},
            [],
            {"priorityClassName": "polite", "priority": 50, "preemptionPolicy": "Never"},
            id="class-preemption-policy",
        ),
        pytest.param(
            {"priorityClassName": "e2e-preemption-low", "priority": 100},
            [],
            {"priorityClassName": "e2e-preemption-low", "priority": 100},
            id="stated-priority-that-agrees",
        ),
    ],
)
def test_priority_from_the_priority_class(
    spec: dict[str, Any], classes: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    body = pod(**spec)
    admit_pod(
        body,
        lookup,
        lister=lambda plural: classes if plural == "priorityclasses" else [],
        rng=random.Random(1),
    )
    assert {k: body["spec"][k] for k in expected} == expected
    assert ("preemptionPolicy" in body["spec"]) == ("preemptionPolicy" in expected)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"priorityClassName": "nope"}, "no PriorityClass with name nope was found", id="unknown-class"
        ),
        pytest.param(
            {"priorityClassName": "e2e-preemption-low", "priority": 5},
            "the integer value of priority (5) must not be provided in pod spec; "
            "priority admission controller computed 100 from the given PriorityClass name",
            id="stated-priority-differs",
        ),
        pytest.param(
            {"priorityClassName": "polite", "preemptionPolicy": "PreemptLowerPriority"},
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; "
            "priority admission controller computed Never from the given PriorityClass name",
            id="stated-policy-differs",
        ),
    ],
)
def test_priority_refusals(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.Forbidden) as refused:
        admitted(**spec)
    assert str(refused.value) == f'pods "p" is forbidden: {message}'
