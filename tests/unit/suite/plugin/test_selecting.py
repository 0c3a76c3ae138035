"""Which embedded profile a spec needs (nrop.suite.plugin.selecting)."""

from __future__ import annotations

import pytest

from nrop.suite.plugin import selecting


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
