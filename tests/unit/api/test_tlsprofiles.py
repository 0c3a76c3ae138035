"""OpenShift's TLS profiles -> the exporters' metrics TLS settings, against upstream's Go behaviour.

Expected values are those of ``controller-runtime-common/pkg/tls`` (``GetTLSProfileSpec``,
``NewTLSConfigFromProfile``), the operator's ``objectupdate/tls`` ``NewSettings`` (and its unit
tests), and the exporter's ``metricsTLSPolicyOpts`` tests (``tls_policy_test.go``).
"""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from nrop.api import tlsprofiles as t
from nrop.api.tlsprofiles import ProfileError, Settings, TLSProfileSpec

INTERMEDIATE_GO = (
    "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,"
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
)
OLD_GO = INTERMEDIATE_GO + (
    ",TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,"
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,"
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,"
    "TLS_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA256,"
    "TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_256_CBC_SHA,TLS_RSA_WITH_3DES_EDE_CBC_SHA"
)
INTERMEDIATE = t.TLS_PROFILES["Intermediate"]


def custom(ciphers: list[str] | None, version: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"minTLSVersion": version}
    if ciphers is not None:
        spec["ciphers"] = ciphers
    return {"type": "Custom", "custom": spec}


# ----------------------------------------------------------------------------- GetTLSProfileSpec


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        pytest.param(None, INTERMEDIATE, id="nil-is-intermediate"),
        pytest.param({}, INTERMEDIATE, id="empty-is-intermediate"),
        pytest.param({"type": ""}, INTERMEDIATE, id="no-type-is-intermediate"),
        pytest.param({"type": "Old", "old": {}}, t.TLS_PROFILES["Old"], id="old"),
        pytest.param({"type": "Intermediate"}, INTERMEDIATE, id="intermediate"),
        pytest.param({"type": "Modern", "modern": {}}, t.TLS_PROFILES["Modern"], id="modern"),
        pytest.param({"type": "Paranoid"}, INTERMEDIATE, id="unknown-type-is-intermediate"),
        pytest.param(
            custom(["ECDHE-RSA-AES128-GCM-SHA256"], "VersionTLS11"),
            TLSProfileSpec(("ECDHE-RSA-AES128-GCM-SHA256",), "VersionTLS11"),
            id="custom",
        ),
        pytest.param(custom(None, ""), TLSProfileSpec((), ""), id="custom-empty"),
    ],
)
def test_profile_spec(profile: dict[str, Any] | None, expected: TLSProfileSpec) -> None:
    assert t.profile_spec(profile) == expected


def test_custom_without_its_spec_is_an_error() -> None:
    with pytest.raises(ProfileError, match=r"^custom TLS profile specified but Custom field is nil$"):
        t.profile_spec({"type": "Custom"})
    apiserver = {"metadata": {"name": "cluster"}, "spec": {"tlsSecurityProfile": {"type": "Custom"}}}
    with pytest.raises(
        ProfileError, match=r'^failed to get TLS profile from APIServer "cluster": custom TLS'
    ):
        t.apiserver_profile_spec(apiserver)


@pytest.mark.parametrize(
    ("apiserver", "expected"),
    [
        pytest.param({"metadata": {"name": "cluster"}}, INTERMEDIATE, id="no-spec"),
        pytest.param({"spec": {"audit": {"profile": "Default"}}}, INTERMEDIATE, id="no-profile"),
        pytest.param(
            {"spec": {"tlsSecurityProfile": {"type": "Modern"}}}, t.TLS_PROFILES["Modern"], id="modern"
        ),
    ],
)
def test_apiserver_profile_spec(apiserver: dict[str, Any], expected: TLSProfileSpec) -> None:
    assert t.apiserver_profile_spec(apiserver) == expected


def test_profiles_are_openshift_api_s() -> None:
    assert {k: (len(v.ciphers), v.min_tls_version) for k, v in t.TLS_PROFILES.items()} == {
        "Old": (21, "VersionTLS10"),
        "Intermediate": (9, "VersionTLS12"),
        "Modern": (3, "VersionTLS13"),
    }


# ----------------------------------------------------------------------------- NewTLSConfigFromProfile + NewSettings


@pytest.mark.parametrize(
    ("spec", "expected", "unsupported"),
    [
        pytest.param(t.TLS_PROFILES["Old"], Settings("VersionTLS10", OLD_GO), (), id="old"),
        pytest.param(INTERMEDIATE, Settings("VersionTLS12", INTERMEDIATE_GO), (), id="intermediate"),
        # TLS 1.3: Go's suites are not configurable, so no cipher list at all.
        pytest.param(t.TLS_PROFILES["Modern"], Settings("VersionTLS13", ""), (), id="modern"),
        pytest.param(
            TLSProfileSpec(("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"), "VersionTLS12"),
            Settings("VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
            (),
            id="openssl-names-in-their-order",
        ),
        pytest.param(
            TLSProfileSpec(
                ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"), "VersionTLS11"
            ),
            Settings("VersionTLS11", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
            (),
            id="iana-and-legacy-names",
        ),
        pytest.param(
            TLSProfileSpec(
                ("DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-SHA384", "bogus"),
                "VersionTLS12",
            ),
            Settings("VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            ("DHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-SHA384", "bogus"),
            id="unsupported-dropped",
        ),
        pytest.param(
            TLSProfileSpec(("ECDHE-RSA-AES128-GCM-SHA256", "bogus"), "VersionTLS13"),
            Settings("VersionTLS13", ""),
            ("bogus",),
            id="custom-tls13-drops-the-list",
        ),
        pytest.param(TLSProfileSpec((), ""), Settings("VersionTLS12", ""), (), id="empty-version-is-tls12"),
        pytest.param(
            TLSProfileSpec(("AES128-SHA", "AES128-SHA"), "VersionTLS12"),
            Settings("VersionTLS12", "TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_128_CBC_SHA"),
            (),
            id="duplicates-kept",
        ),
    ],
)  # fmt: skip
def test_settings_from_profile(
    spec: TLSProfileSpec, expected: Settings, unsupported: tuple[str, ...]
) -> None:
    config = t.tls_config(spec)
    assert t.settings(config) == expected
    assert config.unsupported == unsupported
    assert str(expected).startswith(f"MinVersion: {expected.min_version}, CipherSuites: ")


def test_tls13_config_sets_no_cipher_suites() -> None:
    assert t.tls_config(t.TLS_PROFILES["Modern"]).cipher_suites is None
    assert t.tls_config(TLSProfileSpec((), "VersionTLS12")).cipher_suites == ()


def test_unknown_min_version_is_an_error() -> None:
    """Upstream's TLSVersionOrDie panics: the operator does not start."""
    with pytest.raises(ProfileError, match='unknown tls version "VersionTLS14"'):
        t.tls_config(TLSProfileSpec((), "VersionTLS14"))


@pytest.mark.parametrize(
    ("version", "name"),
    [(0x0301, "VersionTLS10"), (0x0302, "VersionTLS11"), (0x0303, "VersionTLS12"), (0x0304, "VersionTLS13")],
)
def test_new_settings_min_version(version: int, name: str) -> None:
    """``TestNewSettingsMinVersion``."""
    assert t.settings(t.GoTLSConfig(version, (0xC02B,))).min_version == name


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        pytest.param((0xC02B, 0xC030), "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                     id="two"),
        pytest.param((), "", id="empty"),
        pytest.param(None, "", id="unset"),
        pytest.param((0x1301,), "TLS_AES_128_GCM_SHA256", id="single"),
        pytest.param((0x1234,), "0x1234", id="unknown-id"),
    ],
)  # fmt: skip
def test_new_settings_cipher_suites(codes: tuple[int, ...] | None, expected: str) -> None:
    """``TestNewSettingsCipherSuites*``."""
    assert t.settings(t.GoTLSConfig(0x0303, codes)).cipher_suites == expected


# ----------------------------------------------------------------------------- SecurityProfileWatcher


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        pytest.param(INTERMEDIATE, t.profile_spec(None), False, id="default-is-intermediate"),
        pytest.param(INTERMEDIATE, t.TLS_PROFILES["Modern"], True, id="to-modern"),
        pytest.param(
            INTERMEDIATE, TLSProfileSpec(INTERMEDIATE.ciphers, "VersionTLS12"), False, id="custom-equal-to-intermediate"
        ),
        pytest.param(INTERMEDIATE, TLSProfileSpec(INTERMEDIATE.ciphers[::-1], "VersionTLS12"), True, id="order-counts"),
    ],
)  # fmt: skip
def test_profile_changed(old: TLSProfileSpec, new: TLSProfileSpec, changed: bool) -> None:
    assert t.profile_changed(old, new) is changed


# ----------------------------------------------------------------------------- the exporter's flags


@pytest.mark.parametrize(
    ("minimum", "ciphers", "expected"),
    [
        pytest.param("", "", None, id="neither"),
        pytest.param("VersionTLS12", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                     t.MetricsTLSPolicy(0x0303, None, (0xC02B, 0xC02F)), id="tls12-two-ciphers"),
        pytest.param("VersionTLS12", "", t.MetricsTLSPolicy(0x0303), id="tls12-go-default-ciphers"),
        pytest.param("", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", t.MetricsTLSPolicy(0x0303, None, (0xC02F,)),
                     id="ciphers-only-min-tls12"),
        pytest.param("VersionTLS13", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", t.MetricsTLSPolicy(0x0304, 0x0304, (), 1),
                     id="tls13-pins-and-drops-ciphers"),
        pytest.param("VersionTLS13", "", t.MetricsTLSPolicy(0x0304, 0x0304), id="tls13"),
        pytest.param("VersionTLS11", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", t.MetricsTLSPolicy(0x0302, None, (0xC009,)),
                     id="tls11"),
        pytest.param(" VersionTLS12 ", " , ,TLS_RSA_WITH_RC4_128_SHA, ", t.MetricsTLSPolicy(0x0303, None, (0x0005,)),
                     id="trimmed-insecure-accepted"),
    ],
)  # fmt: skip
def test_metrics_tls_policy(minimum: str, ciphers: str, expected: t.MetricsTLSPolicy | None) -> None:
    assert t.metrics_tls_policy(minimum, ciphers) == expected


@pytest.mark.parametrize(
    ("minimum", "ciphers", "message"),
    [
        pytest.param("VersionTLS99", "", 'metrics TLS policy: unknown tls version "VersionTLS99"', id="version"),
        pytest.param("VersionTLS12", "NOT_A_REAL_CIPHER",
                     "metrics TLS policy: Cipher suite NOT_A_REAL_CIPHER not supported or doesn't exist", id="cipher"),
        pytest.param("VersionTLS13", "BAD_CIPHER", "Cipher suite BAD_CIPHER", id="checked-even-for-tls13"),
    ],
)  # fmt: skip
def test_metrics_tls_policy_errors(minimum: str, ciphers: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        t.metrics_tls_policy(minimum, ciphers)


@pytest.mark.parametrize("profile", ["Old", "Intermediate", "Modern"])
def test_the_exporter_accepts_what_the_operator_renders(profile: str) -> None:
    rendered = t.settings_from_profile(t.TLS_PROFILES[profile])
    policy = t.metrics_tls_policy(rendered.min_version, rendered.cipher_suites)
    assert policy is not None and t.version_name(policy.min_version) == rendered.min_version
    assert (
        t.settings(t.GoTLSConfig(policy.min_version, policy.cipher_suites)).cipher_suites
        == rendered.cipher_suites
    )


def test_openssl_cipher_list_skips_tls13_suites() -> None:
    codes = t.tls_config(INTERMEDIATE).cipher_suites or ()
    assert t.openssl_cipher_list(codes) == ":".join(
        c for c in INTERMEDIATE.ciphers if not c.startswith("TLS_")
    )
    assert t.openssl_cipher_list((0x1301, 0x1302)) == ""


@pytest.mark.parametrize(
    "suite", [pytest.param(s, id=s.name) for s in t.GO_CIPHER_SUITES if not s.tls13_only and not s.insecure]
)
def test_openssl_knows_every_secure_go_suite(suite: t.GoCipherSuite) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers(suite.openssl)
    assert suite.openssl in {c["name"] for c in context.get_ciphers()}
