"""Which embedded profile a spec needs, and where a serial run prepares its next target (nrop.suite.plugin.selecting)."""

from __future__ import annotations

import pytest

from nrop.suite.plugin import selecting


@pytest.mark.parametrize(
    ("profiles", "ahead", "points"),
    [
        (["d", "d", "d", "d", "c", "c"], 2, {2: "c"}),
        (["d", "c"], 2, {0: "c"}),
        (["d", "d", "c"], 0, {2: "c"}),
        (["d", "d", "d"], 2, {}),
        (["c", "c"], 2, {}),
        ([], 2, {}),
        (["d", "d", "c", "s"], 1, {1: "c", 2: "s"}),
    ],
)
def test_prepare_points(profiles: list[str], ahead: int, points: dict[int, str]) -> None:
    assert selecting.prepare_points(profiles, ahead) == points


@pytest.mark.parametrize(
    ("labels", "default", "expected"),
    [
        (("tier0", "tmscope:cnt"), "default", "container-scope"),
        (("tmscope:container",), "default", "container-scope"),
        (("tier0", "tmscope:pod"), "default", "default"),
        (("tier0",), "smt-aligned", "smt-aligned"),
    ],
)
def test_profile_for(labels: tuple[str, ...], default: str, expected: str) -> None:
    assert selecting.profile_for(labels, default) == expected


@pytest.mark.parametrize(
    ("labels", "marked", "expected"),
    [
        (("tier0",), "wide-zones", "wide-zones"),
        (("tmscope:cnt",), "wide-zones", "wide-zones"),
        (("tier0",), None, "default"),
    ],
)
def test_profile_for_a_marked_spec(labels: tuple[str, ...], marked: str | None, expected: str) -> None:
    assert selecting.profile_for(labels, "default", marked) == expected
