"""The one pod-request rule (nrop.api.podrequests), and that the scheduler uses it."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.podrequests import amount, pod_requests
from nrop.sched.framework import interface as framework

GI = 1024**3
MI = 1024**2


def ctr(
    name: str, cpu: str | None = None, memory: str | None = None, *, limits_only: bool = False
) -> dict[str, Any]:
    values = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    key = "limits" if limits_only else "requests"
    return {"name": name, "resources": {key: values}}


def sidecar(container: dict[str, Any]) -> dict[str, Any]:
    return {**container, "restartPolicy": "Always"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"containers": [ctr("a")]}, {}, id="nothing-requested"),
        pytest.param(
            {"containers": [ctr("a", "1", "1Gi"), ctr("b", "500m", "1Gi")]},
            {"cpu": 1500, "memory": 2 * GI},
            id="app-containers-add-up",
        ),
        pytest.param(
            {"containers": [ctr("a", "2", "1Gi", limits_only=True)]},
            {"cpu": 2000, "memory": GI},
            id="limit-defaults-the-request",
        ),
        pytest.param(
            {"containers": [ctr("a", "1", "1Gi")], "initContainers": [ctr("i", "3", "512Mi")]},
            {"cpu": 3000, "memory": GI},
            id="init-peak-vs-app-sum-per-resource",
        ),
        pytest.param(
            {
                "containers": [ctr("a", "1", "1Gi")],
                "initContainers": [sidecar(ctr("s", "1", "1Gi")), ctr("i", "2", "1Gi")],
            },
            {"cpu": 3000, "memory": 2 * GI},
            id="sidecar-counts-for-later-inits-and-apps",
        ),
        pytest.param(
            {
                "containers": [ctr("a", "1", "1Gi"), ctr("b", "1", "1Gi")],
                "resources": {"requests": {"cpu": "3"}},
            },
            {"cpu": 3000, "memory": 2 * GI},
            id="pod-level-cpu-replaces-the-aggregate-memory-stays",
        ),
        pytest.param(
            {"containers": [ctr("a", "1", "1Gi")], "resources": {"limits": {"memory": "4Gi"}}},
            {"cpu": 1000, "memory": 4 * GI},
            id="pod-level-limit-defaults-the-pod-level-request",
        ),
        pytest.param(
            {"containers": [ctr("a", "1", "1Gi")], "overhead": {"cpu": "250m", "memory": "64Mi"}},
            {"cpu": 1250, "memory": GI + 64 * MI},
            id="overhead-added-last",
        ),
    ],
)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(spec) == expected
    assert framework.pod_requests({"spec": spec}) == expected


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("cpu", "1500m", 1500),
        ("cpu", "2", 2000),
        ("memory", "1Ki", 1024),
        ("hugepages-2Mi", "4Mi", 4 * MI),
        ("example.com/dev", "3", 3),
    ],
)
def test_amount_counts_cpu_in_millicores_and_the_rest_in_units(name: str, value: str, expected: int) -> None:
    assert amount(name, value) == expected
