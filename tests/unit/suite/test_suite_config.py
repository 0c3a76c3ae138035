"""Tests of nrop.suite.config's environment handling (images, devices)."""

from __future__ import annotations

import pytest

from nrop.suite import config as c


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, "quay.io/openshift-kni/pause:test-ci"),
        ({"E2E_PAUSE_IMAGE_URL": "legacy"}, "legacy"),
        ({"E2E_PAUSE_IMAGE_URL": "legacy", "E2E_NROP_URL_PAUSE_IMAGE": "new"}, "new"),
    ],
)
def test_pause_image(env, want) -> None:
    assert c.pause_image_from_env(env) == want


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, "quay.io/openshift-kni/numacell-device-plugin:test-ci"),
        ({"E2E_NUMACELL_DEVICE_PLUGIN_URL": "legacy"}, "legacy"),
        ({"E2E_NUMACELL_DEVICE_PLUGIN_URL": "legacy", "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": "new"}, "new"),
    ],
)
def test_numacell_image(env, want) -> None:
    assert c.numacell_image_from_env(env) == want


def test_device_types(caplog: pytest.LogCaptureFixture) -> None:
    got = c.device_types_from_env(
        {"E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA", "E2E_NROP_DEVICE_TYPE_3": ""}
    )
    assert got == ("example.com/deviceA", None, None)
    assert "'E2E_NROP_DEVICE_TYPE_2' environment variable is not set" in caplog.text
