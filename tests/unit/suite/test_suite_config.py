"""Tests of nrop.suite.config's environment handling (images, devices)."""

from __future__ import annotations

import pytest

from nrop.suite import config as c


def test_device_types(caplog: pytest.LogCaptureFixture) -> None:
    got = c.device_types_from_env(
        {"E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA", "E2E_NROP_DEVICE_TYPE_3": ""}
    )
    assert got == ("example.com/deviceA", None, None)
    assert "'E2E_NROP_DEVICE_TYPE_2' environment variable is not set" in caplog.text
