"""Which skips the embedded cluster allows: by spec (test_id, else the function's name) and reason."""

from __future__ import annotations

import pytest

from nrop.suite.plugin import expectedskips as es


@pytest.mark.parametrize(
    ("test_id", "name", "reason", "expected"),
    [
        pytest.param("85776", "test_traffic", "currently known broken: scheduler should NOT access operator", True,
                     id="upstream's own skip"),
        pytest.param("80823", "test_80823", "requires HyperShift: a spec of the hypershift lane", True,
                     id="a flavour not served yet"),
        pytest.param("85774", "test_traffic", "requires OpenShift: no Prometheus pod in openshift-monitoring", False,
                     id="the openshift profile has its Prometheus pod"),
        pytest.param("88383", "test_88383", "requires OpenShift: APIServer.config.openshift.io/v1 not served", False,
                     id="a spec the profiles now serve"),
        pytest.param(None, "test_mixed_selinux_policy", "mixed SELinux policy test requires platform >= 4.18", False,
                     id="no test_id: the openshift profile is 4.22"),
        pytest.param("88383", "test_88383", "not enough nodes with NUMA zones", False, id="another reason"),
        pytest.param("50157", "test_x", "not enough nodes with NUMA zones each of them can match requests", False,
                     id="a spec the profiles are built for"),
        pytest.param(None, "test_traffic", "currently known broken: x", False, id="an id is not a name"),
    ],
)  # fmt: skip
def test_is_expected(test_id: str | None, name: str, reason: str, expected: bool) -> None:
    assert es.is_expected(test_id, name, reason) is expected


def test_every_entry_says_why() -> None:
    assert all(entry.spec and entry.reason and entry.why for entry in es.EXPECTED)


@pytest.mark.parametrize(
    ("test_id", "why"),
    [
        ("80823", "requires HyperShift: no embedded profile is a HyperShift hosted cluster yet"),
        ("80912", "requires HyperShift: no embedded profile is a HyperShift hosted cluster yet"),
        ("85776", None),  # upstream skips it itself: its binary runs it
        ("47591", None),
        (None, None),
    ],
)
def test_flavour_missing(test_id: str | None, why: str | None) -> None:
    assert es.flavour_missing(test_id) == why
