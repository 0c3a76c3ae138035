"""Tests of nrop.suite.e2e.config's environment handling (images, devices)."""

from __future__ import annotations

import pytest

from nrop.api.images import PAUSE_IMAGE
from nrop.suite.e2e import config as c


def test_device_types(caplog: pytest.LogCaptureFixture) -> None:
    got = c.device_types_from_env(
        {"E2E_NROP_DEVICE_TYPE_1": "example.com/deviceA", "E2E_NROP_DEVICE_TYPE_3": ""}
    )
    assert got == ("example.com/deviceA", None, None)
    assert "'E2E_NROP_DEVICE_TYPE_2' environment variable is not set" in caplog.text


@pytest.mark.parametrize(
    ("environ", "pause", "numacell"),
    [
        pytest.param({}, PAUSE_IMAGE, c.NUMACELL_IMAGE_CI, id="unset: upstream's images"),
        pytest.param(
            {"E2E_PAUSE_IMAGE_URL": "old", "E2E_NUMACELL_DEVICE_PLUGIN_URL": "old"}, "old", "old", id="legacy"
        ),
        pytest.param(
            {
                "E2E_PAUSE_IMAGE_URL": "old",
                "E2E_NROP_URL_PAUSE_IMAGE": "new",
                "E2E_NUMACELL_DEVICE_PLUGIN_URL": "old",
                "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": "new",
            },
            "new",
            "new",
            id="the new name wins",
        ),
        pytest.param(
            {"E2E_NROP_URL_PAUSE_IMAGE": "", "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": ""},
            "",
            "",
            id="set but empty: upstream's os.LookupEnv takes it",
        ),
    ],
)
def test_images_follow_upstream_s_lookup_env(environ: dict, pause: str, numacell: str) -> None:
    assert c.pause_image_from_env(environ) == pause
    assert c.numacell_image(environ) == numacell
