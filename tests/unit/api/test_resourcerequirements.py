"""Container resource requirements as the API server validates them (``nrop.api.resourcerequirements``)."""

from __future__ import annotations

import pytest

from nrop.api.fielderrors import FieldError, forbidden, invalid, required
from nrop.api.resourcerequirements import validate_container_resources, validate_pod_spec_resources

P = "spec.containers[0].resources"


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": {"cpu": "2", "memory": "1Gi"}}, [], id="limits-only"),
        pytest.param({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}, [], id="cpu-overcommit"),
        pytest.param(
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
            [invalid(f"{P}.requests", "2", "must be less than or equal to cpu limit of 1")],
            id="cpu-request-above-limit",
        ),
        pytest.param(
            {"limits": {"kni.node/numacell00": "1"}, "requests": {"kni.node/numacell00": "0"}},
            [invalid(f"{P}.requests", "0", "must be equal to kni.node/numacell00 limit of 1")],
            id="extended-below-limit",
        ),
        pytest.param(
            {
                "limits": {"cpu": "1", "hugepages-2Mi": "4Mi"},
                "requests": {"cpu": "1", "hugepages-2Mi": "2Mi"},
            },
            [invalid(f"{P}.requests", "2Mi", "must be equal to hugepages-2Mi limit of 4Mi")],
            id="hugepages-below-limit",
        ),
        pytest.param(
            {"requests": {"example.com/deviceA": "1"}},
            [required(f"{P}.limits", "Limit must be set for non overcommitable resources")],
            id="extended-without-limit",
        ),
        pytest.param(
            {"limits": {"example.com/deviceA": "1500m"}},
            [invalid(f"{P}.limits[example.com/deviceA]", "1500m", "must be an integer")],
            id="extended-fraction",
        ),
        pytest.param(
            {"limits": {"cpu": "-1"}},
            [invalid(f"{P}.limits[cpu]", "-1", "must be greater than or equal to 0")],
            id="negative",
        ),
        pytest.param(
            {"limits": {"gpus": "1"}},
            [invalid(f"{P}.limits[gpus]", "gpus", "must be a standard resource for containers")],
            id="bare-unknown-name",
        ),
        pytest.param(
            {"limits": {"Example.com/x": "1"}},
            [
                invalid(
                    f"{P}.limits[Example.com/x]",
                    "Example.com/x",
                    "doesn't follow extended resource name standard",
                )
            ],
            id="bad-extended-name",
        ),
        pytest.param(
            {"limits": {"hugepages-2Mi": "2Mi"}},
            [forbidden(P, "HugePages require cpu or memory")],
            id="hugepages-alone",
        ),
        pytest.param({"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}, [], id="ephemeral-storage"),
        pytest.param({"limits": {"cpu": "not-a-quantity"}}, [], id="malformed-left-to-schema"),
    ],
)
def test_container_resources(resources: dict, expected: list[FieldError]) -> None:
    assert validate_container_resources(resources, P) == expected


def test_pod_spec_paths_cover_app_then_init_containers() -> None:
    bad = {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}
    spec = {
        "initContainers": [{"name": "i", "resources": bad}],
        "containers": [{"name": "a"}, {"name": "b", "resources": bad}],
    }
    fields = [p.field for p in validate_pod_spec_resources(spec, "spec.template.spec")]
    assert fields == [
        "spec.template.spec.containers[1].resources.requests",
        "spec.template.spec.initContainers[0].resources.requests",
    ]
