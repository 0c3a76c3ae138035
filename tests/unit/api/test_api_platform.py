"""Platform and version detection, as upstream's deployer decides them, and the node-group annotations."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.annotations import SELINUX_POLICY_ANNOTATION, any_custom_policy, custom_policy
from nrop.api.platform import Platform, parse_version, platform_of, version_of


@pytest.mark.parametrize(
    ("count", "infrastructure", "expected"),
    [
        (0, None, Platform.KUBERNETES),
        (0, {"status": {"controlPlaneTopology": "External"}}, Platform.KUBERNETES),
        (1, {"status": {"controlPlaneTopology": "HighlyAvailable"}}, Platform.OPENSHIFT),
        (1, {"status": {"controlPlaneTopology": "External"}}, Platform.HYPERSHIFT),
        (1, None, Platform.OPENSHIFT),
    ],
)
def test_platform_of(count: int, infrastructure: dict[str, Any] | None, expected: Platform) -> None:
    assert platform_of(count, infrastructure) is expected


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ({"status": {"versions": [{"name": "operator", "version": "4.22.0"}]}}, "4.22.0"),
        ({"status": {"versions": []}}, None),
        ({"status": {}}, None),
        (None, None),
    ],
)
def test_version_of(operator: dict[str, Any] | None, expected: str | None) -> None:
    assert version_of(operator) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("4.18.3", (4, 18, 3)), ("v1.30.0+k3s", (1, 30, 0)), ("4.22", (4, 22))]
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert parse_version(text) == expected


def test_parse_version_refuses_text() -> None:
    with pytest.raises(ValueError, match="not a version"):
        parse_version("latest")


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([{"annotations": {SELINUX_POLICY_ANNOTATION: "custom"}}], True),
        ([{}, {"annotations": {SELINUX_POLICY_ANNOTATION: "custom"}}], True),
        ([{"annotations": {SELINUX_POLICY_ANNOTATION: "default"}}], False),
        ([{"annotations": None}], False),
        ([], False),
    ],
)
def test_custom_selinux_policy_annotation(groups: list[dict[str, Any]], expected: bool) -> None:
    assert any_custom_policy({"spec": {"nodeGroups": groups}}) is expected
    assert [custom_policy(g.get("annotations")) for g in groups].count(True) == (1 if expected else 0)
