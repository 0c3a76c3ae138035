"""OpenShift's TLS security profiles and what they make of a metrics server's TLS settings.

This module owns, once for the operator, the exporter and the suite, the rules upstream spreads
over four Go packages:

* ``openshift/api`` ``config/v1`` ``TLSProfiles`` (:data:`TLS_PROFILES`): Old, Intermediate and
  Modern, their ciphers (OpenSSL names, TLS 1.3 suites by their IANA names) and minimum version;
* ``controller-runtime-common`` ``pkg/tls`` (:func:`profile_spec`, :func:`apiserver_profile_spec`,
  :func:`tls_config`, :func:`profile_changed`): the effective profile of ``APIServer/cluster``
  (none, or no type, or an unknown type: Intermediate; ``Custom``: its own ``custom`` spec), and
  the Go ``tls.Config`` it makes — OpenSSL or IANA cipher names become Go cipher suite ids
  through ``library-go``'s tables, unsupported names are dropped (and reported), and the cipher
  list is left unset for a TLS 1.3 minimum (Go's TLS 1.3 suites are not configurable);
* the operator's ``pkg/objectupdate/tls`` ``NewSettings`` (:func:`settings`): that config as the
  exporter flags ``--metrics-tls-min-version`` (``VersionTLS12``…) and
  ``--metrics-tls-cipher-suites`` (Go's names, in the profile's order, joined by ``,``);
* the exporter's ``metricsTLSPolicyOpts`` with Kubernetes' ``cli/flag`` parsing
  (:func:`metrics_tls_policy`): those flags back into a minimum (and, for TLS 1.3, maximum)
  version and Go cipher suites, with upstream's error texts; :func:`openssl_cipher_list` names
  the TLS ≤ 1.2 suites for OpenSSL (Python's ``ssl``), TLS 1.3 suites being fixed there as in Go.

Pure: plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "APISERVER_NAME",
    "CUSTOM",
    "DEFAULT_PROFILE_TYPE",
    "GO_CIPHER_SUITES",
    "INTERMEDIATE",
    "MODERN",
    "OLD",
    "TLS_PROFILES",
    "VERSIONS",
    "GoCipherSuite",
    "GoTLSConfig",
    "MetricsTLSPolicy",
    "ProfileError",
    "Settings",
    "TLSProfileSpec",
    "apiserver_profile_spec",
    "cipher_code",
    "cipher_suite_name",
    "metrics_tls_policy",
    "openssl_cipher_list",
    "openssl_to_iana_cipher_suites",
    "profile_changed",
    "profile_spec",
    "settings",
    "settings_from_profile",
    "tls_config",
    "tls_flags",
    "version_name",
]

#: The name of the cluster-scoped ``config.openshift.io/v1`` APIServer the profile is read from.
APISERVER_NAME: Final = "cluster"

OLD: Final = "Old"
INTERMEDIATE: Final = "Intermediate"
MODERN: Final = "Modern"
CUSTOM: Final = "Custom"
DEFAULT_PROFILE_TYPE: Final = INTERMEDIATE

# Go's crypto/tls version numbers.
TLS10: Final = 0x0301
TLS11: Final = 0x0302
TLS12: Final = 0x0303
TLS13: Final = 0x0304
#: ``VersionTLS1x`` names (library-go's and Kubernetes' ``cli/flag`` ``versions``) -> Go's numbers.
VERSIONS: Final[Mapping[str, int]] = {
    "VersionTLS10": TLS10,
    "VersionTLS11": TLS11,
    "VersionTLS12": TLS12,
    "VersionTLS13": TLS13,
}
_VERSION_NAMES: Final = {v: k for k, v in VERSIONS.items()}
#: ``TLSVersion("")``: Go's and Kubernetes' default minimum.
DEFAULT_VERSION: Final = TLS12


class ProfileError(ValueError):
    """A TLS profile or metrics TLS setting that cannot be used; the text is upstream's."""


@dataclass(frozen=True)
class TLSProfileSpec:
    """``configv1.TLSProfileSpec``: cipher names (OpenSSL or IANA) and the minimum version name."""

    ciphers: tuple[str, ...]
    min_tls_version: str

    def __str__(self) -> str:
        # As Go's %v of the struct, which upstream logs.
        return f"{{[{' '.join(self.ciphers)}] {self.min_tls_version}}}"


_TLS13_CIPHERS: Final = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_INTERMEDIATE_CIPHERS: Final = (
    *_TLS13_CIPHERS,
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
)
#: ``configv1.TLSProfiles``.
TLS_PROFILES: Final[Mapping[str, TLSProfileSpec]] = {
    OLD: TLSProfileSpec(
        (
            *_INTERMEDIATE_CIPHERS,
            "ECDHE-ECDSA-AES128-SHA256",
            "ECDHE-RSA-AES128-SHA256",
            "ECDHE-ECDSA-AES128-SHA",
            "ECDHE-RSA-AES128-SHA",
            "ECDHE-ECDSA-AES256-SHA",
            "ECDHE-RSA-AES256-SHA",
            "AES128-GCM-SHA256",
            "AES256-GCM-SHA384",
            "AES128-SHA256",
            "AES128-SHA",
            "AES256-SHA",
            "DES-CBC3-SHA",
        ),
        "VersionTLS10",
    ),
    INTERMEDIATE: TLSProfileSpec(_INTERMEDIATE_CIPHERS, "VersionTLS12"),
    MODERN: TLSProfileSpec(_TLS13_CIPHERS, "VersionTLS13"),
}


@dataclass(frozen=True)
class GoCipherSuite:
    """A suite of Go's ``tls.CipherSuites()`` / ``tls.InsecureCipherSuites()``."""

    id: int
    name: str
    openssl: str
    tls13_only: bool = False
    insecure: bool = False


#: Go's cipher suites, secure ones first, in Go's listing order; ``openssl``: OpenSSL's name.
GO_CIPHER_SUITES: Final = (
    GoCipherSuite(0x1301, "TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", tls13_only=True),
    GoCipherSuite(0x1302, "TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384", tls13_only=True),
    GoCipherSuite(0x1303, "TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256", tls13_only=True),
    GoCipherSuite(0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"),
    GoCipherSuite(0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"),
    GoCipherSuite(0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"),
    GoCipherSuite(0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"),
    GoCipherSuite(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"),
    GoCipherSuite(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"),
    GoCipherSuite(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
    GoCipherSuite(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"),
    GoCipherSuite(0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"),
    GoCipherSuite(0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"),
    GoCipherSuite(0x0005, "TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA", insecure=True),
    GoCipherSuite(0x000A, "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA", insecure=True),
    GoCipherSuite(0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA", insecure=True),
    GoCipherSuite(0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA", insecure=True),
    GoCipherSuite(0x003C, "TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256", insecure=True),
    GoCipherSuite(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256", insecure=True),
    GoCipherSuite(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384", insecure=True),
    GoCipherSuite(0xC007, "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA", insecure=True),
    GoCipherSuite(
        0xC023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256", insecure=True
    ),
    GoCipherSuite(0xC011, "TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA", insecure=True),
    GoCipherSuite(0xC012, "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA", insecure=True),
    GoCipherSuite(0xC027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256", insecure=True),
)
_BY_ID: Final = {s.id: s for s in GO_CIPHER_SUITES}
#: Kubernetes ``cli/flag`` (and library-go ``crypto.CipherSuite``): Go's names plus two legacy ones.
_FLAG_CIPHERS: Final[Mapping[str, int]] = {
    **{s.name: s.id for s in GO_CIPHER_SUITES},
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": 0xCCA9,
}
#: library-go's ``openSSLToIANACiphersMap`` (CBC-SHA384/SHA256-with-AES256 and DHE suites are left
#: out there: Go does not implement them).
_OPENSSL_TO_IANA: Final[Mapping[str, str]] = {
    **{name: name for name in _TLS13_CIPHERS},
    "ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "ECDHE-RSA-AES128-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "AES128-GCM-SHA256": "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "AES256-GCM-SHA384": "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "AES128-SHA256": "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "ECDHE-ECDSA-AES128-SHA": "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "ECDHE-RSA-AES128-SHA": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "ECDHE-ECDSA-AES256-SHA": "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "ECDHE-RSA-AES256-SHA": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "AES128-SHA": "TLS_RSA_WITH_AES_128_CBC_SHA",
    "AES256-SHA": "TLS_RSA_WITH_AES_256_CBC_SHA",
    "DES-CBC3-SHA": "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "ECDHE-RSA-DES-CBC3-SHA": "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
}


# ----------------------------------------------------------------------------- the profile


def _spec_of(data: Mapping[str, Any] | None) -> TLSProfileSpec:
    data = data or {}
    return TLSProfileSpec(
        tuple(str(c) for c in data.get("ciphers") or ()), str(data.get("minTLSVersion") or "")
    )


def profile_spec(profile: Mapping[str, Any] | None) -> TLSProfileSpec:
    """``GetTLSProfileSpec``: the spec of a ``tlsSecurityProfile`` (a plain dict, or None).

    None or no ``type``: Intermediate; a predefined type: its spec; an unknown type: Intermediate;
    ``Custom``: its ``custom`` spec, a :class:`ProfileError` when ``custom`` is missing.
    """
    default = TLS_PROFILES[DEFAULT_PROFILE_TYPE]
    if not profile or not profile.get("type"):
        return default
    kind = str(profile["type"])
    if kind != CUSTOM:
        return TLS_PROFILES.get(kind, default)
    if profile.get("custom") is None:
        raise ProfileError("custom TLS profile specified but Custom field is nil")
    return _spec_of(profile["custom"])


def apiserver_profile_spec(apiserver: Mapping[str, Any] | None) -> TLSProfileSpec:
    """The effective profile of an ``APIServer`` object (``spec.tlsSecurityProfile``)."""
    spec = (apiserver or {}).get("spec") or {}
    try:
        return profile_spec(spec.get("tlsSecurityProfile"))
    except ProfileError as exc:
        name = ((apiserver or {}).get("metadata") or {}).get("name", APISERVER_NAME)
        raise ProfileError(f'failed to get TLS profile from APIServer "{name}": {exc}') from None


def profile_changed(old: TLSProfileSpec, new: TLSProfileSpec) -> bool:
    """``SecurityProfileWatcher``'s decision: the effective profile differs (the operator restarts)."""
    return old != new


# ----------------------------------------------------------------------------- Go's tls.Config


def cipher_code(name: str) -> int | None:
    """``cipherCode``: the Go id of an IANA or OpenSSL cipher name; None when Go has no such suite."""
    if name in _FLAG_CIPHERS:
        return _FLAG_CIPHERS[name]
    iana = _OPENSSL_TO_IANA.get(name)
    return _FLAG_CIPHERS.get(iana) if iana is not None else None


def cipher_suite_name(code: int) -> str:
    """Go's ``tls.CipherSuiteName``."""
    suite = _BY_ID.get(code)
    return suite.name if suite is not None else f"0x{code:04X}"


def version_name(version: int) -> str:
    """library-go's ``TLSVersionToNameOrDie``."""
    try:
        return _VERSION_NAMES[version]
    except KeyError:
        raise ProfileError(f"no name found for {version}") from None


def _tls_version(name: str) -> int:
    """Kubernetes' / library-go's ``TLSVersion``: empty is TLS 1.2."""
    if not name:
        return DEFAULT_VERSION
    try:
        return VERSIONS[name]
    except KeyError:
        raise ProfileError(f'unknown tls version "{name}"') from None


@dataclass(frozen=True)
class GoTLSConfig:
    """What ``NewTLSConfigFromProfile`` sets on a ``tls.Config``; ``unsupported``: names it dropped."""

    min_version: int
    cipher_suites: tuple[int, ...] | None
    unsupported: tuple[str, ...] = ()


def tls_config(spec: TLSProfileSpec) -> GoTLSConfig:
    """``NewTLSConfigFromProfile``: the minimum version, and the ciphers unless it is TLS 1.3.

    An unknown ``minTLSVersion`` is a :class:`ProfileError` (upstream panics).
    """
    minimum = _tls_version(spec.min_tls_version)
    codes: list[int] = []
    unsupported: list[str] = []
    for name in spec.ciphers:
        code = cipher_code(name)
        if code is None:
            unsupported.append(name)
        else:
            codes.append(code)
    return GoTLSConfig(minimum, None if minimum == TLS13 else tuple(codes), tuple(unsupported))


@dataclass(frozen=True)
class Settings:
    """``objtls.Settings``: the exporter's ``--metrics-tls-min-version`` / ``--metrics-tls-cipher-suites``."""

    min_version: str = ""
    cipher_suites: str = ""

    def __str__(self) -> str:
        return f"MinVersion: {self.min_version}, CipherSuites: {self.cipher_suites}"


def settings(config: GoTLSConfig) -> Settings:
    """``NewSettings``: the version's name and Go's names of the suites, in order, joined by ``,``."""
    return Settings(
        version_name(config.min_version), ",".join(cipher_suite_name(c) for c in config.cipher_suites or ())
    )


def settings_from_profile(spec: TLSProfileSpec) -> Settings:
    """What the operator renders into the exporters' arguments for the cluster's profile."""
    return settings(tls_config(spec))


# ----------------------------------------------------------------------------- the exporter's side


@dataclass(frozen=True)
class MetricsTLSPolicy:
    """The exporter's ``metricsTLSPolicyOpts``: TLS 1.3 pins both ends and drops the cipher list."""

    min_version: int
    max_version: int | None = None
    cipher_suites: tuple[int, ...] = ()
    ignored_ciphers: int = 0


def _split_csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def tls_flags(min_version: str, cipher_suites: Iterable[str]) -> tuple[int, tuple[int, ...]]:
    """Kubernetes' ``cli/flag`` ``TLSVersion`` and ``TLSCipherSuites`` (a kubelet's ``tlsMinVersion``
    and ``tlsCipherSuites``, a component's ``--tls-min-version``): the version (empty: TLS 1.2)
    and the suites' ids; a :class:`ProfileError` with Kubernetes' text for an unknown name."""
    minimum = _tls_version(min_version)
    codes = []
    for name in cipher_suites:
        if name not in _FLAG_CIPHERS:
            raise ProfileError(f"Cipher suite {name} not supported or doesn't exist")
        codes.append(_FLAG_CIPHERS[name])
    return minimum, tuple(codes)


def openssl_to_iana_cipher_suites(names: Iterable[str]) -> list[str]:
    """library-go's ``OpenSSLToIANACipherSuites``: the IANA names of the OpenSSL-named suites Go
    implements, in order; other names are dropped (what MCO writes into kubelet configurations)."""
    return [_OPENSSL_TO_IANA[name] for name in names if name in _OPENSSL_TO_IANA]


def metrics_tls_policy(min_version: str, cipher_suites: str) -> MetricsTLSPolicy | None:
    """The policy of ``--metrics-tls-min-version`` and ``--metrics-tls-cipher-suites``; None: neither set.

    Names as Kubernetes' ``--tls-min-version`` / ``--tls-cipher-suites``; unknown ones are a
    :class:`ProfileError` with the exporter's text. Only a cipher list: minimum TLS 1.2.
    """
    minimum_name = min_version.strip()
    names = _split_csv(cipher_suites)
    if not minimum_name and not names:
        return None
    try:
        minimum, codes = tls_flags(minimum_name, names)
    except ProfileError as exc:
        raise ProfileError(f"metrics TLS policy: {exc}") from None
    if minimum == TLS13:
        return MetricsTLSPolicy(TLS13, TLS13, (), len(names))
    return MetricsTLSPolicy(minimum, None, tuple(codes))


def openssl_cipher_list(codes: Iterable[int]) -> str:
    """OpenSSL's names of the TLS ≤ 1.2 suites among ``codes``, ``:``-joined (TLS 1.3 ones skipped:
    Go ignores them in ``CipherSuites`` and enables every TLS 1.3 suite, as OpenSSL does by default)."""
    seen: list[str] = []
    for code in codes:
        suite = _BY_ID.get(code)
        if suite is not None and not suite.tls13_only and suite.openssl not in seen:
            seen.append(suite.openssl)
    return ":".join(seen)
