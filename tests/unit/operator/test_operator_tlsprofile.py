"""The cluster's TLS profile at start and the restart decision (upstream's SecurityProfileWatcher)."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from nrop.api import tlsprofiles
from nrop.api.tlsprofiles import ProfileError, Settings, TLSProfileSpec
from nrop.operator import tlsprofilewatcher
from nrop.operator.kubeapi import Kind

INTERMEDIATE = tlsprofiles.TLS_PROFILES["Intermediate"]
MODERN = tlsprofiles.TLS_PROFILES["Modern"]


def apiserver(profile: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"audit": {"profile": "Default"}}
    if profile is not None:
        spec["tlsSecurityProfile"] = profile
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "APIServer",
        "metadata": {"name": "cluster"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("current", "obj", "expected"),
    [
        pytest.param(INTERMEDIATE, apiserver(), None, id="unset-stays-intermediate"),
        pytest.param(INTERMEDIATE, apiserver({"type": "Intermediate", "intermediate": {}}), None,
                     id="explicit-intermediate-is-no-change"),
        pytest.param(INTERMEDIATE, apiserver({"type": "Modern", "modern": {}}), MODERN, id="to-modern"),
        pytest.param(MODERN, apiserver(), INTERMEDIATE, id="back-to-default"),
        pytest.param(INTERMEDIATE, apiserver({"type": ""}), None, id="empty-type"),
        pytest.param(INTERMEDIATE,
                     apiserver({"type": "Custom", "custom": {"ciphers": ["AES128-SHA"], "minTLSVersion": "VersionTLS12"}}),
                     TLSProfileSpec(("AES128-SHA",), "VersionTLS12"), id="to-custom"),
        # Only the effective profile counts: other fields of the object change nothing.
        pytest.param(INTERMEDIATE, {**apiserver(), "spec": {"audit": {"profile": "AllRequestBodies"}}}, None,
                     id="other-fields"),
    ],
)  # fmt: skip
def test_changed_profile(
    current: TLSProfileSpec, obj: dict[str, Any], expected: TLSProfileSpec | None
) -> None:
    assert tlsprofilewatcher.changed_profile(current, obj) == expected


def test_custom_without_spec_is_no_restart_but_an_error() -> None:
    with pytest.raises(ProfileError, match="Custom field is nil"):
        tlsprofilewatcher.changed_profile(INTERMEDIATE, apiserver({"type": "Custom"}))


class FakeApi:
    def __init__(self, served: bool, obj: dict[str, Any] | None) -> None:
        self.served, self.obj = served, obj

    def serves(self, k: Kind) -> bool:
        assert (k.api_version, k.plural) == ("config.openshift.io/v1", "apiservers")
        return self.served

    def get(self, k: Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        assert name == "cluster"
        return self.obj


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        pytest.param(FakeApi(False, None), tlsprofilewatcher.Startup(), id="kubernetes"),
        pytest.param(
            FakeApi(True, apiserver()),
            tlsprofilewatcher.Startup(INTERMEDIATE, tlsprofiles.settings_from_profile(INTERMEDIATE)),
            id="default",
        ),
        pytest.param(
            FakeApi(True, apiserver({"type": "Modern"})),
            tlsprofilewatcher.Startup(MODERN, Settings("VersionTLS13", "")),
            id="modern",
        ),
    ],
)
def test_startup(api: FakeApi, expected: tlsprofilewatcher.Startup) -> None:
    assert tlsprofilewatcher.startup(api) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(None, 'failed to get APIServer "cluster": .*not found', id="missing"),
        pytest.param(apiserver({"type": "Custom"}), "Custom field is nil", id="custom-nil"),
        pytest.param(apiserver({"type": "Custom", "custom": {"minTLSVersion": "TLS1.2"}}),
                     'unknown tls version "TLS1.2"', id="bad-version"),
    ],
)  # fmt: skip
def test_startup_fails_as_upstream(obj: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        tlsprofilewatcher.startup(FakeApi(True, obj))  # type: ignore[arg-type]


def test_unsupported_ciphers_are_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    custom = {
        "type": "Custom",
        "custom": {"ciphers": ["DHE-RSA-AES128-GCM-SHA256", "AES128-SHA"], "minTLSVersion": ""},
    }
    with caplog.at_level("INFO"):
        started = tlsprofilewatcher.startup(FakeApi(True, apiserver(custom)))  # type: ignore[arg-type]
    assert started.metrics_tls == Settings("VersionTLS12", "TLS_RSA_WITH_AES_128_CBC_SHA")
    assert "unsupported ciphers that will be ignored: DHE-RSA-AES128-GCM-SHA256" in caplog.text


def test_the_watch_calls_back_once_per_change() -> None:
    registry = kopf.OperatorRegistry()
    changes: list[tuple[TLSProfileSpec, TLSProfileSpec]] = []
    tlsprofilewatcher.register(registry, INTERMEDIATE, lambda old, new: changes.append((old, new)))
    (handler,) = [h for h in registry._watching.get_all_handlers() if h.id == "tlssecurityprofilewatcher"]

    def event(obj: dict[str, Any], type: str | None = "MODIFIED", name: str = "cluster") -> None:
        handler.fn(name=name, type=type, body=obj)

    event(apiserver())
    event(apiserver({"type": "Modern"}), name="other")
    event(apiserver({"type": "Custom"}))  # an error: logged, no change
    assert changes == []
    event(apiserver({"type": "Modern"}))
    event(apiserver({"type": "Modern"}))
    event(apiserver(), type="DELETED")
    assert changes == [(INTERMEDIATE, MODERN)]
