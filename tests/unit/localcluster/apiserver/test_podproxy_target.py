"""The ``pods/proxy`` target syntax (``apiserver/podproxy.py``): ``name``, ``name:port``, ``scheme:name:port``."""

from __future__ import annotations

import pytest

from nrop.localcluster.apiserver.podproxy import split_scheme_name_port


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("web", ("", "web", "")),
        ("web:8080", ("", "web", "8080")),
        ("https:web:8443", ("https", "web", "8443")),
        ("http:web:", ("http", "web", "")),
        ("ftp:web:21", None),
        (":8080", None),
        ("a:b:c:d", None),
    ],
)
def test_split_scheme_name_port(text: str, expected: tuple[str, str, str] | None) -> None:
    assert split_scheme_name_port(text) == expected
