"""The embedded OLM's decisions: config injection, CSV → Deployment rendering, install check, phases.

Tables over :mod:`nrop.localcluster.controllers.decisions.clusterserviceversions` (the controller itself
runs in ``tests/e2e/test_olm_install_e2e.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nrop.api.metatime import rfc3339
from nrop.localcluster.controllers.decisions import clusterserviceversions as olm

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STAMP = "2026-01-01T00:00:00Z"


def env(**values: str) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in values.items()]


def csv(phase: str = "", reason: str = "", message: str = "", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": olm.API_VERSION,
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": "op.v1",
            "namespace": "ns",
            "uid": "u1",
            "annotations": {"olm.targetNamespaces": ""},
        },
        "spec": {
            "displayName": "op",
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [
                        {
                            "name": "op",
                            "label": {"app": "op"},
                            "spec": {
                                "replicas": 1,
                                "selector": {"matchLabels": {"app": "op"}},
                                "template": {
                                    "metadata": {"labels": {"app": "op"}},
                                    "spec": {
                                        "containers": [
                                            {"name": "manager", "image": "i", "env": env(A="1", B="2")},
                                            {"name": "sidecar", "image": "i"},
                                        ]
                                    },
                                },
                            },
                        }
                    ]
                },
            },
        },
        "status": {"phase": phase, "reason": reason, "message": message, **status} if phase else {},
    }


def sub(installed: str | None = "op.v1", **config: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "sub", "namespace": "ns"},
        "spec": {
            "name": "op",
            "source": "s",
            "sourceNamespace": "m",
            "startingCSV": "op.v1",
            "config": config,
        },
        "status": {"installedCSV": installed} if installed else {},
    }


@pytest.mark.parametrize(
    ("container", "new", "expected"),
    [
        pytest.param(env(A="1"), [], env(A="1"), id="nothing-new"),
        pytest.param([], env(X="x"), env(X="x"), id="into-empty"),
        pytest.param(env(A="1", B="2"), env(A="9"), env(A="9", B="2"), id="override-in-place"),
        pytest.param(env(A="1"), env(Z="z", Y="y"), env(A="1", Z="z", Y="y"), id="append-in-config-order"),
        pytest.param(
            [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            env(A="v"),
            env(A="v"),
            id="value-replaces-valueFrom",
        ),
        pytest.param(
            env(A="1", B="2"), env(B="3", C="4", B2="5"), env(A="1", B="3", C="4", B2="5"), id="mixed"
        ),
    ],
)
def test_merge_env(container, new, expected) -> None:
    assert olm.merge_env(container, new) == expected


TOL = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("pod_spec", "config", "expected"),
    [
        pytest.param(
            {"containers": [{"name": "a"}, {"name": "b", "env": env(X="0")}]},
            {"env": env(X="1")},
            {"containers": [{"name": "a", "env": env(X="1")}, {"name": "b", "env": env(X="1")}]},
            id="env-into-every-container",
        ),
        pytest.param(
            {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
            {"resources": {"limits": {"memory": "1Gi"}}},
            {"containers": [{"name": "a", "resources": {"limits": {"memory": "1Gi"}}}]},
            id="resources-replaced",
        ),
        pytest.param(
            {"containers": [], "nodeSelector": {"a": "b"}},
            {"nodeSelector": {"c": "d"}},
            {"containers": [], "nodeSelector": {"c": "d"}},
            id="nodeSelector-replaced",
        ),
        pytest.param(
            {"containers": [], "tolerations": [TOL]},
            {"tolerations": [TOL, {**TOL, "key": "other"}]},
            {"containers": [], "tolerations": [TOL, {**TOL, "key": "other"}]},
            id="tolerations-appended-once",
        ),
        pytest.param(
            {
                "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/a"}]}],
                "volumes": [{"name": "v"}],
            },
            {
                "volumes": [{"name": "v", "emptyDir": {}}, {"name": "w"}],
                "volumeMounts": [{"name": "v", "mountPath": "/b"}],
            },
            {
                "containers": [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/b"}]}],
                "volumes": [{"name": "v", "emptyDir": {}}, {"name": "w"}],
            },
            id="volumes-by-name",
        ),
        pytest.param({"containers": [{"name": "a"}]}, {}, {"containers": [{"name": "a"}]}, id="empty-config"),
    ],
)
def test_apply_config(pod_spec, config, expected) -> None:
    assert olm.apply_config(pod_spec, config) == expected


def test_render_deployment_as_olm() -> None:
    dp = olm.render_deployment(csv(), csv()["spec"]["install"]["spec"]["deployments"][0], sub())
    meta = dp["metadata"]
    assert meta["name"] == "op" and meta["namespace"] == "ns"
    labels = dict(meta["labels"])
    assert labels.pop(olm.DEPLOYMENT_SPEC_HASH)
    assert labels == {
        "app": "op",
        "olm.managed": "true",
        "olm.owner": "op.v1",
        "olm.owner.namespace": "ns",
        "olm.owner.kind": "ClusterServiceVersion",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "name": "op.v1",
            "uid": "u1",
            "blockOwnerDeletion": False,
            "controller": False,
        }
    ]
    assert dp["spec"]["revisionHistoryLimit"] == 1
    assert dp["spec"]["template"]["metadata"]["annotations"] == {"olm.targetNamespaces": ""}


@pytest.mark.parametrize(
    ("subscription", "manager_env", "sidecar_env"),
    [
        pytest.param(
            None,
            env(A="1", B="2", OPERATOR_CONDITION_NAME="op.v1"),
            env(OPERATOR_CONDITION_NAME="op.v1"),
            id="no-subscription",
        ),
        pytest.param(
            sub(env=env(B="9", C="3")),
            env(A="1", B="9", C="3", OPERATOR_CONDITION_NAME="op.v1"),
            env(B="9", C="3", OPERATOR_CONDITION_NAME="op.v1"),
            id="config-env-in-every-container",
        ),
    ],
)
def test_render_deployment_env(subscription, manager_env, sidecar_env) -> None:
    manager, sidecar = olm.render_deployments(csv(), subscription)[0]["spec"]["template"]["spec"][
        "containers"
    ]
    assert manager["env"] == manager_env
    assert sidecar["env"] == sidecar_env


def test_spec_hash_follows_the_subscription_config() -> None:
    def hash_of(subscription: dict | None) -> str:
        return olm.render_deployments(csv(), subscription)[0]["metadata"]["labels"][olm.DEPLOYMENT_SPEC_HASH]

    assert hash_of(sub(env=env(X="1"))) == hash_of(sub(env=env(X="1")))
    assert hash_of(sub(env=env(X="1"))) != hash_of(sub(env=env(X="2")))
    assert hash_of(None) == hash_of(sub(env=[]))


@pytest.mark.parametrize(
    ("subs", "found"),
    [
        pytest.param([], None, id="none"),
        pytest.param([sub(installed=None)], None, id="not-installed-yet"),
        pytest.param([sub(installed="other"), sub()], 1, id="by-installedCSV"),
    ],
)
def test_owner_subscription(subs, found) -> None:
    got = olm.owner_subscription(subs, "op.v1")
    assert (None if got is None else subs.index(got)) == found


def ready_deployment(want: dict[str, Any], available: str | None = "True", **status: Any) -> dict[str, Any]:
    dp = {**want, "metadata": {**want["metadata"], "generation": 2}}
    conditions = [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]
    if available is not None:
        conditions.append(
            {
                "type": "Available",
                "status": available,
                "message": "Deployment does not have minimum availability.",
            }
        )
    dp["status"] = {
        "observedGeneration": 2,
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "conditions": conditions,
        **status,
    }
    return dp


DESIRED = olm.render_deployments(csv(), None)


@pytest.mark.parametrize(
    ("existing", "reason", "message"),
    [
        pytest.param({}, "ComponentMissing", "missing deployment with name=op", id="missing"),
        pytest.param({"op": ready_deployment(DESIRED[0])}, None, None, id="installed"),
        pytest.param(
            {"op": ready_deployment(DESIRED[0], observedGeneration=1)},
            "Waiting",
            'waiting for deployment op to become ready: waiting for spec update of deployment "op" to be observed...',
            id="generation-not-observed",
        ),
        pytest.param(
            {"op": ready_deployment(DESIRED[0], available="False")},
            "Waiting",
            'waiting for deployment op to become ready: deployment "op" not available: '
            "Deployment does not have minimum availability.",
            id="not-available",
        ),
        pytest.param(
            {"op": ready_deployment(DESIRED[0], available=None)},
            "Waiting",
            'waiting for deployment op to become ready: deployment "op" not available: missing condition "Available"',
            id="no-available-condition",
        ),
        pytest.param(
            {"op": ready_deployment(DESIRED[0], replicas=2)},
            "Waiting",
            'waiting for deployment op to become ready: deployment "op" waiting for 1 outdated replica(s) to be terminated',
            id="old-replicas",
        ),
        pytest.param(
            {
                "op": ready_deployment(
                    DESIRED[0],
                    conditions=[
                        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
                    ],
                )
            },
            "Timeout",
            'deployment op not ready before timeout: deployment "op" exceeded its progress deadline',
            id="progress-deadline",
        ),
        pytest.param(
            {"op": ready_deployment(olm.render_deployments(csv(), sub(env=env(X="1")))[0])},
            "DeploymentUpdated",
            "deployment changed old hash=",
            id="changed-config",
        ),
    ],
)
def test_install_problem(existing, reason, message) -> None:
    problem = olm.install_problem(DESIRED, existing)
    assert (problem and problem.reason) == reason
    if message:
        assert problem is not None and problem.message.startswith(message)


MISSING = olm.InstallProblem("ComponentMissing", "missing deployment with name=op")
WAITING = olm.InstallProblem("Waiting", "waiting for deployment op to become ready: x")
TIMED_OUT = olm.InstallProblem("Timeout", "deployment op not ready before timeout: x")
CHANGED = olm.InstallProblem("DeploymentUpdated", "deployment changed old hash=a, new hash=b")
LONG_AGO = "2025-12-31T23:50:00Z"


@pytest.mark.parametrize(
    ("obj", "groups", "problem", "expected"),
    [
        pytest.param(
            csv(),
            0,
            MISSING,
            ("Failed", "NoOperatorGroup", "csv in namespace with no operatorgroups"),
            id="no-og",
        ),
        pytest.param(csv("Failed", "NoOperatorGroup", "x"), 0, MISSING, None, id="no-og-recorded"),
        pytest.param(csv(), 2, MISSING, ("Failed", "TooManyOperatorGroups", None), id="two-ogs"),
        pytest.param(
            csv(), 1, MISSING, ("Pending", "RequirementsUnknown", "requirements not yet checked"), id="new"
        ),
        pytest.param(csv("Pending"), 1, MISSING, ("InstallReady", "AllRequirementsMet", None), id="pending"),
        pytest.param(
            csv("InstallReady"),
            1,
            MISSING,
            ("Installing", "InstallSucceeded", "waiting for install components to report healthy"),
            id="install",
        ),
        pytest.param(
            csv("Installing", "InstallSucceeded", "w", lastTransitionTime=STAMP),
            1,
            WAITING,
            ("Installing", "InstallWaiting", "installing: waiting for deployment op to become ready: x"),
            id="installing-waits",
        ),
        pytest.param(
            csv("Installing", "InstallWaiting", "installing: waiting for deployment op to become ready: x"),
            1,
            WAITING,
            None,
            id="installing-unchanged",
        ),
        pytest.param(
            csv("Installing", "InstallSucceeded", "w", lastTransitionTime=STAMP),
            1,
            MISSING,
            ("Installing", "InstallWaiting", "installing: missing deployment with name=op"),
            id="installing-deployment-deleted-waits-for-timeout",
        ),
        pytest.param(
            csv("Installing", "InstallSucceeded", "w", lastTransitionTime=STAMP),
            1,
            TIMED_OUT,
            ("Failed", "InstallCheckFailed", "install failed: deployment op not ready before timeout: x"),
            id="progress-deadline-unrecoverable",
        ),
        pytest.param(
            csv("Installing", "InstallWaiting", "w", lastTransitionTime=LONG_AGO),
            1,
            WAITING,
            ("Failed", "InstallCheckFailed", "install timeout"),
            id="install-timeout",
        ),
        pytest.param(
            csv("Installing"),
            1,
            None,
            ("Succeeded", "InstallSucceeded", "install strategy completed with no errors"),
            id="healthy",
        ),
        pytest.param(
            csv("Succeeded", "InstallSucceeded", "install strategy completed with no errors"),
            1,
            None,
            None,
            id="steady",
        ),
        pytest.param(
            csv("Succeeded"),
            1,
            CHANGED,
            ("InstallReady", "NeedsReinstall", "installing: deployment changed old hash=a, new hash=b"),
            id="deployment-changed",
        ),
        pytest.param(
            csv("Succeeded"),
            1,
            MISSING,
            ("Pending", "NeedsReinstall", "installing: missing deployment with name=op"),
            id="deployment-deleted",
        ),
        pytest.param(
            csv("Failed", "InstallCheckFailed", "install timeout"),
            1,
            MISSING,
            ("Pending", "NeedsReinstall", None),
            id="failed-retries",
        ),
    ],
)
def test_next_phase(obj, groups, problem, expected) -> None:
    step = olm.next_phase(obj, groups, problem, NOW)
    if expected is None:
        assert step is None
        return
    assert step is not None
    phase, reason, message = expected
    assert (step.phase, step.reason) == (phase, reason)
    if message is not None:
        assert step.message == message
    assert step.install == (phase == "Installing" and obj["status"].get("phase") == "InstallReady")


def test_phase_status_records_transitions() -> None:
    first = olm.phase_status({}, olm.Phase("Pending", "RequirementsUnknown", "m"), STAMP)
    later = rfc3339(NOW + timedelta(seconds=5))
    second = olm.phase_status(first, olm.Phase("Pending", "RequirementsNotMet", "n"), later)
    assert second["lastTransitionTime"] == STAMP and second["lastUpdateTime"] == later
    third = olm.phase_status(second, olm.Phase("InstallReady", "AllRequirementsMet", "o"), later)
    assert third["lastTransitionTime"] == later
    assert [c["phase"] for c in third["conditions"]] == ["Pending", "Pending", "InstallReady"]


@pytest.mark.parametrize(
    ("subscription", "csvs", "expected"),
    [
        pytest.param(sub(installed=None), [], None, id="csv-absent"),
        pytest.param(
            sub(installed=None),
            ["op.v1"],
            {"currentCSV": "op.v1", "installedCSV": "op.v1", "state": "AtLatestKnown", "lastUpdated": STAMP},
            id="csv-present",
        ),
        pytest.param(
            {**sub(), "status": {"installedCSV": "op.v1", "currentCSV": "op.v1", "state": "AtLatestKnown"}},
            ["op.v1"],
            None,
            id="unchanged",
        ),
    ],
)
def test_subscription_status(subscription, csvs, expected) -> None:
    assert olm.subscription_status(subscription, csvs, STAMP) == expected


def test_install_timeout_is_a_setting() -> None:
    installing = csv("Installing", "InstallWaiting", "w", lastTransitionTime="2025-12-31T23:59:50Z")
    assert olm.next_phase(installing, 1, MISSING, NOW) is not None  # message changes, still Installing
    assert olm.next_phase(installing, 1, MISSING, NOW).phase == "Installing"
    assert olm.next_phase(installing, 1, MISSING, NOW, install_timeout=5.0).phase == "Failed"


@pytest.mark.parametrize(
    ("obj", "left"),
    [
        pytest.param(csv("Succeeded", lastTransitionTime=STAMP), None, id="not-installing"),
        pytest.param(csv("Installing", lastTransitionTime="2025-12-31T23:59:00Z"), 240.0, id="installing"),
        pytest.param(csv("Installing", lastTransitionTime=LONG_AGO), -300.0, id="overdue"),
    ],
)
def test_install_time_left(obj, left) -> None:
    assert olm.install_time_left(obj, NOW) == left
