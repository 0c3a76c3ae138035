"""Workload readiness: DeploymentComplete and the operator's DaemonSet rule, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.workloads import daemonset_ready, deployment_complete


def deployment(want: int | None = 2, generation: int = 3, **status: int) -> dict[str, Any]:
    """A Deployment wanting ``want`` replicas (None: unset); ``status`` overrides a complete one."""
    spec = {} if want is None else {"replicas": want}
    full = {"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, **status}
    return {"metadata": {"name": "d", "generation": generation}, "spec": spec, "status": full}


@pytest.mark.parametrize(
    ("obj", "complete"),
    [
        pytest.param(deployment(), True, id="all-updated-and-available"),
        pytest.param(deployment(observedGeneration=2), False, id="generation-not-observed"),
        pytest.param(deployment(observedGeneration=4), True, id="newer-generation-observed"),
        pytest.param(deployment(updatedReplicas=1), False, id="rolling"),
        pytest.param(deployment(availableReplicas=1), False, id="not-all-available"),
        pytest.param(deployment(replicas=3), False, id="old-replica-pending-termination"),
        pytest.param(deployment(availableReplicas=3), False, id="more-available-than-wanted"),
        pytest.param(
            deployment(None, replicas=1, updatedReplicas=1, availableReplicas=1),
            True,
            id="unset-replicas-is-one",
        ),
        pytest.param(
            deployment(0, replicas=0, updatedReplicas=0, availableReplicas=0), True, id="scaled-to-zero"
        ),
        pytest.param({"metadata": {"generation": 1}, "spec": {"replicas": 1}}, False, id="no-status-yet"),
    ],
)
def test_deployment_complete(obj: dict[str, Any], complete: bool) -> None:
    assert deployment_complete(obj) is complete


def test_deployment_complete_reads_the_status_given() -> None:
    """The deployment controller asks about the status it is about to write (DeploymentComplete's newStatus)."""
    stale = deployment(updatedReplicas=0)
    assert not deployment_complete(stale)
    assert deployment_complete(stale, {**stale["status"], "updatedReplicas": 2})


def daemonset(generation: int = 1, **status: int | None) -> dict[str, Any]:
    full = {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2,
            "numberAvailable": 2, "numberReady": 2, **status}  # fmt: skip
    return {"metadata": {"name": "ds", "generation": generation}, "status": full}


@pytest.mark.parametrize(
    ("obj", "ready"),
    [
        pytest.param(daemonset(), True, id="ready"),
        pytest.param(daemonset(generation=2), False, id="generation-not-observed"),
        pytest.param(daemonset(updatedNumberScheduled=1), False, id="rolling"),
        pytest.param(daemonset(numberAvailable=1), False, id="pod-not-available"),
        pytest.param(daemonset(numberReady=1), False, id="pod-not-ready"),
        pytest.param(
            daemonset(desiredNumberScheduled=0, updatedNumberScheduled=0, numberAvailable=0, numberReady=0),
            True,
            id="no-node-selected",
        ),
        pytest.param({"metadata": {"generation": 1}}, False, id="no-status-yet"),
        pytest.param(daemonset(numberMisscheduled=None), True, id="null-field-ignored"),
    ],
)
def test_daemonset_ready(obj: dict[str, Any], ready: bool) -> None:
    assert daemonset_ready(obj) is ready
