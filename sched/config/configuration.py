"""The scheduler's configuration: a ``KubeSchedulerConfiguration`` turned into one resolved, checked value.

This module owns what upstream kube-scheduler (v1.33) does between reading ``--config`` and
building its frameworks, for the document as a whole:

* **strict decoding** of ``kubescheduler.config.k8s.io/v1`` (``v1beta3`` is read too, for
  older renderings): unknown fields and wrong types are errors;
* **defaulting** (``SetDefaults_KubeSchedulerConfiguration``): one ``default-scheduler``
  profile when none is given, leader election and client settings;
* **validation** (``apis/config/validation``): parallelism, percentageOfNodesToScore,
  back-off, leader election, duplicate scheduler names;
* the result, :class:`SchedulerConfiguration`, and the entry points :func:`parse`,
  :func:`load` and :func:`kubeconfig_source`.

Each profile is resolved by :mod:`nrop.sched.config.profile`: the default plugin set merged
as ``mergePluginSet`` does, the framework's start-up checks and multiPoint expansion
(``NewFramework``), pluginConfig entries, removed plugins and the queue sort shared by
every profile.

The module knows no plugin: the caller gives the registry (name -> class), the upstream
plugins this scheduler does not implement (left out, and reported in
:attr:`~nrop.sched.config.profile.ProfileConfig.skipped` for the caller to log) and
upstream's default plugin set.  Bad input raises :class:`~nrop.sched.errors.ConfigError`
naming the field, worded like upstream's field errors.  Everything is pure except
:func:`load`, which reads one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from nrop.sched.config.decoding import (
    get_bool,
    get_duration,
    get_int,
    get_list,
    get_number,
    get_str,
    invalid,
    read_document,
    show,
    struct,
)
from nrop.sched.config.profile import (
    API_VERSION,
    API_VERSIONS,
    MULTI_POINT,
    PLUGIN_SETS,
    DefaultPlugin,
    PluginEntry,
    PluginSet,
    ProfileConfig,
    ResolveContext,
    check_common_queue_sort,
    percentage_of,
    resolve_profile,
)
from nrop.sched.errors import ConfigError

__all__ = [
    "API_VERSION",
    "API_VERSIONS",
    "KIND",
    "ClientConnection",
    "LeaderElectionConfig",
    "SchedulerConfiguration",
    "kubeconfig_source",
    "load",
    "parse",
]

KIND: Final = "KubeSchedulerConfiguration"
_T = TypeVar("_T")

_TOP_FIELDS: Final = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_LEADER_FIELDS: Final = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CLIENT_FIELDS: Final = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


# ----------------------------------------------------------------------------- the result


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """``leaderElection`` with upstream's defaults; durations in seconds.  Only Lease locks exist."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """``clientConnection`` with the scheduler's defaults (QPS 50, burst 100); a negative QPS means no limit."""

    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    content_type: str = "application/vnd.kubernetes.protobuf"
    accept_content_types: str = ""


@dataclass(slots=True)
class SchedulerConfiguration:
    """The whole configuration; ``percentage_of_nodes_to_score`` 0 is upstream's adaptive default."""

    profiles: list[ProfileConfig]
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16
    delay_cache_until_active: bool = False
    api_version: str = API_VERSION


# ----------------------------------------------------------------------------- entry points


def parse(
    doc: Any,
    registry: Mapping[str, type],
    not_implemented: frozenset[str] = frozenset(),
    default_plugins: Sequence[DefaultPlugin] = (),
) -> SchedulerConfiguration:
    """Decode, default, validate and resolve a ``KubeSchedulerConfiguration`` document.

    ``default_plugins`` is upstream's default ``multiPoint.enabled`` list (``getDefaultPlugins``;
    v1 has defaults nowhere else), merged into every profile.  Plugins named in
    ``not_implemented`` are dropped wherever they are enabled (and reported in ``skipped``);
    any other name missing from ``registry`` is an error where it is enabled.
    """
    api_version = _type_meta(doc)
    top = struct(doc, "", _TOP_FIELDS)
    # Upstream serves pprof behind these switches; nrop-scheduler has no debug endpoint,
    # so they are checked for type and otherwise have no effect.
    get_bool(top, "enableProfiling", "")
    get_bool(top, "enableContentionProfiling", "")
    if get_list(top, "extenders", ""):
        raise ConfigError("extenders", "Forbidden: scheduler extenders are not supported by nrop-scheduler")
    leader_election = _leader_election(top.get("leaderElection"))
    client_connection = _client_connection(top.get("clientConnection"))

    parallelism = _default(get_int(top, "parallelism", ""), 16)
    if parallelism <= 0:
        raise invalid("parallelism", parallelism, "should be an integer value greater than zero")
    percentage = _default(percentage_of(top, ""), 0)
    initial_backoff = _default(get_int(top, "podInitialBackoffSeconds", "", bits=64), 1)
    max_backoff = _default(get_int(top, "podMaxBackoffSeconds", "", bits=64), 10)
    if initial_backoff <= 0:
        raise invalid("podInitialBackoffSeconds", initial_backoff, "must be greater than 0")
    if max_backoff < initial_backoff:
        raise invalid(
            "podMaxBackoffSeconds", max_backoff, "must be greater than or equal to PodInitialBackoffSeconds"
        )

    defaults = {point: PluginSet() for point in PLUGIN_SETS}
    defaults[MULTI_POINT] = PluginSet(
        tuple(PluginEntry(p.name, p.weight, f"<default plugins>[{i}]") for i, p in enumerate(default_plugins))
    )
    ctx = ResolveContext(registry, not_implemented, api_version, defaults)
    raw_profiles = get_list(top, "profiles", "") or [{}]
    profiles: list[ProfileConfig] = []
    queue_sorts: list[tuple[tuple[Any, ...], ...]] = []
    names: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        profile, queue_sort = resolve_profile(raw, f"profiles[{i}]", len(raw_profiles) == 1, ctx)
        if profile.scheduler_name in names:
            raise ConfigError(
                f"profiles[{i}].schedulerName",
                f"Duplicate value: {show(profile.scheduler_name)}: "
                f"already the name of profiles[{names[profile.scheduler_name]}]",
            )
        names[profile.scheduler_name] = i
        profiles.append(profile)
        queue_sorts.append(queue_sort)
    check_common_queue_sort(profiles, queue_sorts)
    return SchedulerConfiguration(
        profiles=profiles,
        leader_election=leader_election,
        client_connection=client_connection,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial_backoff,
        pod_max_backoff_seconds=max_backoff,
        parallelism=parallelism,
        delay_cache_until_active=_default(get_bool(top, "delayCacheUntilActive", ""), False),
        api_version=api_version,
    )


def load(
    path: str | Path,
    registry: Mapping[str, type],
    not_implemented: frozenset[str] = frozenset(),
    default_plugins: Sequence[DefaultPlugin] = (),
) -> SchedulerConfiguration:
    """:func:`parse` the YAML (or ``.json``) file at ``path``; unreadable or malformed files name the file."""
    doc = read_document(path, "scheduler configuration")
    return parse(doc, registry, not_implemented, default_plugins)


def kubeconfig_source(config: SchedulerConfiguration, environ: Mapping[str, str]) -> str | None:
    """The kubeconfig to use: ``clientConnection.kubeconfig``, else ``$KUBECONFIG``; None means in-cluster.

    In-cluster is the pod's service-account token and ``KUBERNETES_SERVICE_HOST``/``PORT``.
    ``$KUBECONFIG`` is returned as given (it may list several files, as kubectl allows).
    """
    return config.client_connection.kubeconfig or environ.get("KUBECONFIG") or None


# ----------------------------------------------------------------------------- sections


def _type_meta(doc: Any) -> str:
    if not isinstance(doc, Mapping):
        raise ConfigError("", f"expected a {KIND} object, got {show(doc)}")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not api_version:
        raise ConfigError("apiVersion", f'Required value: expected "{API_VERSION}"')
    if not kind:
        raise ConfigError("kind", f'Required value: expected "{KIND}"')
    if kind != KIND:
        raise ConfigError("kind", f'Unsupported value: {show(kind)}: supported values: "{KIND}"')
    if api_version not in API_VERSIONS:
        supported = ", ".join(f'"{v}"' for v in API_VERSIONS)
        raise ConfigError(
            "apiVersion", f"Unsupported value: {show(api_version)}: supported values: {supported}"
        )
    return api_version


def _leader_election(value: Any) -> LeaderElectionConfig:
    path = "leaderElection"
    obj = struct(value, path, _LEADER_FIELDS)
    d = LeaderElectionConfig()
    # Upstream defaults a zero duration and an empty string as if they were unset.
    config = LeaderElectionConfig(
        leader_elect=_default(get_bool(obj, "leaderElect", path), d.leader_elect),
        lease_duration=get_duration(obj, "leaseDuration", path) or d.lease_duration,
        renew_deadline=get_duration(obj, "renewDeadline", path) or d.renew_deadline,
        retry_period=get_duration(obj, "retryPeriod", path) or d.retry_period,
        resource_lock=get_str(obj, "resourceLock", path) or d.resource_lock,
        resource_name=get_str(obj, "resourceName", path) or d.resource_name,
        resource_namespace=get_str(obj, "resourceNamespace", path) or d.resource_namespace,
    )
    if not config.leader_elect:
        return config
    for key, seconds in (
        ("leaseDuration", config.lease_duration),
        ("renewDeadline", config.renew_deadline),
        ("retryPeriod", config.retry_period),
    ):
        if seconds <= 0:
            raise invalid(f"{path}.{key}", obj[key], "must be greater than zero")
    if config.lease_duration <= config.renew_deadline:
        raise invalid(
            f"{path}.leaseDuration",
            _seconds(config.lease_duration),
            f"LeaseDuration must be greater than RenewDeadline ({_seconds(config.renew_deadline)})",
        )
    if config.resource_lock != "leases":
        raise invalid(f"{path}.resourceLock", config.resource_lock, 'resourceLock value must be "leases"')
    return config


def _client_connection(value: Any) -> ClientConnection:
    path = "clientConnection"
    obj = struct(value, path, _CLIENT_FIELDS)
    d = ClientConnection()
    burst = get_int(obj, "burst", path) or d.burst
    if burst < 0:
        raise invalid(f"{path}.burst", burst, "must be non-negative")
    return ClientConnection(
        kubeconfig=get_str(obj, "kubeconfig", path) or d.kubeconfig,
        qps=get_number(obj, "qps", path) or d.qps,
        burst=burst,
        content_type=get_str(obj, "contentType", path) or d.content_type,
        accept_content_types=get_str(obj, "acceptContentTypes", path) or d.accept_content_types,
    )


# ----------------------------------------------------------------------------- small helpers


def _default(value: _T | None, default: _T) -> _T:
    return default if value is None else value


def _seconds(value: float) -> str:
    return f"{value:g}s"
