"""Container resource requirements as the API server validates them (``nrop.api.resourcerequirements``)."""

from __future__ import annotations

import pytest

from nrop.api.resourcerequirements import (
    FieldProblem,
    validate_container_resources,
    validate_pod_spec_resources,
)

P = "spec.containers[0].resources"


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": {"cpu": "2", "memory": "1Gi"}}, [], id="limits-only"),
        pytest.param({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}, [], id="cpu-overcommit"),
        pytest.param(
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
            [FieldProblem("Invalid", f"{P}.requests", "must be less than or equal to cpu limit of 1", "2")],
            id="cpu-request-above-limit",
        ),
        pytest.param(
            {"limits": {"kni.node/numacell00": "1"}, "requests": {"kni.node/numacell00": "0"}},
            [
                FieldProblem(
                    "Invalid", f"{P}.requests", "must be equal to kni.node/numacell00 limit of 1", "0"
                )
            ],
            id="extended-below-limit",
        ),
        pytest.param(
            {
                "limits": {"cpu": "1", "hugepages-2Mi": "4Mi"},
                "requests": {"cpu": "1", "hugepages-2Mi": "2Mi"},
            },
            [FieldProblem("Invalid", f"{P}.requests", "must be equal to hugepages-2Mi limit of 4Mi", "2Mi")],
            id="hugepages-below-limit",
        ),
        pytest.param(
            {"requests": {"example.com/deviceA": "1"}},
            [FieldProblem("Required", f"{P}.limits", "Limit must be set for non overcommitable resources")],
            id="extended-without-limit",
        ),
        pytest.param(
            {"limits": {"example.com/deviceA": "1500m"}},
            [FieldProblem("Invalid", f"{P}.limits[example.com/deviceA]", "must be an integer", "1500m")],
            id="extended-fraction",
        ),
        pytest.param(
            {"limits": {"cpu": "-1"}},
            [FieldProblem("Invalid", f"{P}.limits[cpu]", "must be greater than or equal to 0", "-1")],
            id="negative",
        ),
        pytest.param(
            {"limits": {"gpus": "1"}},
            [
                FieldProblem(
                    "Invalid", f"{P}.limits[gpus]", "must be a standard resource for containers", "gpus"
                )
            ],
            id="bare-unknown-name",
        ),
        pytest.param(
            {"limits": {"Example.com/x": "1"}},
            [
                FieldProblem(
                    "Invalid",
                    f"{P}.limits[Example.com/x]",
                    "doesn't follow extended resource name standard",
                    "Example.com/x",
                )
            ],
            id="bad-extended-name",
        ),
        pytest.param(
            {"limits": {"hugepages-2Mi": "2Mi"}},
            [FieldProblem("Forbidden", P, "HugePages require cpu or memory")],
            id="hugepages-alone",
        ),
        pytest.param({"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}, [], id="ephemeral-storage"),
        pytest.param({"limits": {"cpu": "not-a-quantity"}}, [], id="malformed-left-to-schema"),
    ],
)
def test_container_resources(resources: dict, expected: list[FieldProblem]) -> None:
    assert validate_container_resources(resources, P) == expected


def test_pod_spec_paths_cover_init_and_app_containers() -> None:
    bad = {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}
    spec = {
        "initContainers": [{"name": "i", "resources": bad}],
        "containers": [{"name": "a"}, {"name": "b", "resources": bad}],
    }
    fields = [p.field for p in validate_pod_spec_resources(spec, "spec.template.spec")]
    assert fields == [
        "spec.template.spec.initContainers[0].resources.requests",
        "spec.template.spec.containers[1].resources.requests",
    ]
