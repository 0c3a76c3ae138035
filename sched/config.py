"""The scheduler's configuration: a ``KubeSchedulerConfiguration`` turned into one resolved, checked value.

This module owns what upstream kube-scheduler (v1.33) does between reading ``--config`` and
building its frameworks:

* **strict decoding** of ``kubescheduler.config.k8s.io/v1`` (``v1beta3`` is read too, for
  older renderings): unknown fields and wrong types are errors;
* **defaulting** (``SetDefaults_KubeSchedulerConfiguration``): one ``default-scheduler``
  profile when none is given, leader election and client settings, and the default plugin
  set merged into each profile as ``mergePluginSet`` does (a re-configured default keeps its
  place, ``disabled: [{name: "*"}]`` drops every default of that set);
* **validation** (``apis/config/validation``): parallelism, percentageOfNodesToScore,
  back-off, leader election, duplicate scheduler names and pluginConfig entries, removed
  plugins, one queue sort shared by every profile;
* the framework's own **start-up checks and multiPoint expansion** (``NewFramework``):
  enabled plugins exist and implement the point they are enabled at, no plugin twice at a
  point, multiPoint plugins go to every point they implement unless disabled there, plugins
  named at a point come first, score weights (the score section's weight wins over
  multiPoint's; 0 means 1), exactly one queue sort plugin and at least one bind plugin.

The module knows no plugin: the caller gives the registry (name -> class), the upstream
plugins this scheduler does not implement (left out, and reported in
:attr:`ProfileConfig.skipped` for the caller to log) and upstream's default plugin set.
Bad input raises :class:`~nrop.sched.errors.ConfigError` naming the field, worded like
upstream's field errors.  Everything is pure except :func:`load`, which reads one file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from nrop.sched.decoding import (
    child,
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
from nrop.sched.errors import ConfigError
from nrop.sched.framework import EXTENSION_POINTS, implements

__all__ = [
    "API_VERSION",
    "API_VERSIONS",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "NOT_IMPLEMENTED",
    "REMOVED_PLUGINS",
    "UNKNOWN_PLUGIN_CONFIG",
    "ClientConnection",
    "DefaultPlugin",
    "LeaderElectionConfig",
    "PluginRef",
    "ProfileConfig",
    "SchedulerConfiguration",
    "kubeconfig_source",
    "load",
    "parse",
]

GROUP: Final = "kubescheduler.config.k8s.io"
API_VERSION: Final = f"{GROUP}/v1"
#: Removed upstream in 1.29, still read because older operators render it; same schema here.
LEGACY_API_VERSION: Final = f"{GROUP}/v1beta3"
API_VERSIONS: Final = (API_VERSION, LEGACY_API_VERSION)
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

#: Upstream's ``invalidPluginsByVersion``: the non-CSI volume limit plugins, gone since 1.31.
REMOVED_PLUGINS: Final = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

#: Why a plugin is in :attr:`ProfileConfig.skipped`.
NOT_IMPLEMENTED: Final = "upstream plugin not implemented by nrop-scheduler: left out of the profile"
UNKNOWN_PLUGIN_CONFIG: Final = (
    "pluginConfig names no plugin nrop-scheduler knows: ignored, as upstream ignores out-of-tree args"
)

_MULTI_POINT: Final = "multiPoint"
#: Every plugin set a profile's ``plugins`` may hold.
_PLUGIN_SETS: Final = (*EXTENSION_POINTS, _MULTI_POINT)
_WILDCARD: Final = "*"
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
_PROFILE_FIELDS: Final = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")


# ----------------------------------------------------------------------------- the result


@dataclass(frozen=True, slots=True)
class PluginRef:
    """A plugin at an extension point; ``weight`` is its score weight (>= 1 under ``score``, else 0)."""

    name: str
    weight: int = 0


class DefaultPlugin(Protocol):
    """An entry of upstream's default multiPoint list (``registry.DefaultPlugin``, :class:`PluginRef`)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int:
        """The configured score weight; 0 means unset."""
        ...


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
class ProfileConfig:
    """One profile, fully resolved.

    ``plugins`` has every framework extension point (``EXTENSION_POINTS`` order) with the
    plugins to run there, in order.  ``plugin_args`` has an entry for every plugin the
    profile instantiates: what its class's ``parse_args`` returned (defaults when the
    profile has no pluginConfig for it), or None for a class without ``parse_args``.
    ``skipped`` lists ``(plugin, reason)`` for what was left out; the caller logs them.
    ``percentage_of_nodes_to_score`` None means the configuration-wide value.
    """

    scheduler_name: str
    plugins: dict[str, list[PluginRef]]
    plugin_args: dict[str, Any]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None


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
    percentage = _default(_percentage(top, ""), 0)
    initial_backoff = _default(get_int(top, "podInitialBackoffSeconds", "", bits=64), 1)
    max_backoff = _default(get_int(top, "podMaxBackoffSeconds", "", bits=64), 10)
    if initial_backoff <= 0:
        raise invalid("podInitialBackoffSeconds", initial_backoff, "must be greater than 0")
    if max_backoff < initial_backoff:
        raise invalid(
            "podMaxBackoffSeconds", max_backoff, "must be greater than or equal to PodInitialBackoffSeconds"
        )

    defaults = {point: _PluginSet() for point in _PLUGIN_SETS}
    defaults[_MULTI_POINT] = _PluginSet(
        tuple(_Entry(p.name, p.weight, f"<default plugins>[{i}]") for i, p in enumerate(default_plugins))
    )
    ctx = _Context(registry, not_implemented, api_version, defaults)
    raw_profiles = get_list(top, "profiles", "") or [{}]
    profiles: list[ProfileConfig] = []
    queue_sorts: list[tuple[tuple[Any, ...], ...]] = []
    names: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        profile, queue_sort = _profile(raw, f"profiles[{i}]", len(raw_profiles) == 1, ctx)
        if profile.scheduler_name in names:
            raise ConfigError(
                f"profiles[{i}].schedulerName",
                f"Duplicate value: {show(profile.scheduler_name)}: "
                f"already the name of profiles[{names[profile.scheduler_name]}]",
            )
        names[profile.scheduler_name] = i
        profiles.append(profile)
        queue_sorts.append(queue_sort)
    _check_common_queue_sort(profiles, queue_sorts)
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


def _percentage(obj: Mapping[str, Any], path: str) -> int | None:
    value = get_int(obj, "percentageOfNodesToScore", path)
    if value is not None and not 0 <= value <= 100:
        raise invalid(child(path, "percentageOfNodesToScore"), value, "not in valid range [0-100]")
    return value


# ----------------------------------------------------------------------------- profiles


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ``enabled`` item as configured, with the path it came from (for errors)."""

    name: str
    weight: int
    path: str


@dataclass(frozen=True, slots=True)
class _PluginSet:
    enabled: tuple[_Entry, ...] = ()
    disabled: tuple[str, ...] = ()

    def signature(self) -> tuple[Any, ...]:
        """What upstream compares between profiles: names, weights and disabled names, not paths."""
        return tuple((e.name, e.weight) for e in self.enabled), self.disabled


@dataclass(frozen=True, slots=True)
class _Context:
    registry: Mapping[str, type]
    not_implemented: frozenset[str]
    api_version: str
    defaults: Mapping[str, _PluginSet]

    def known(self, entry: _Entry, skipped: dict[str, str]) -> bool:
        """True for a registered plugin, False (recorded as skipped) for a not-implemented one."""
        if entry.name in self.registry:
            return True
        if entry.name in self.not_implemented:
            skipped.setdefault(entry.name, NOT_IMPLEMENTED)
            return False
        known = ", ".join(sorted(self.registry))
        raise invalid(entry.path, entry.name, f"plugin does not exist; known plugins: {known}")


def _profile(
    raw: Any, path: str, only: bool, ctx: _Context
) -> tuple[ProfileConfig, tuple[tuple[Any, ...], ...]]:
    """The resolved profile and its configured queueSort set (which must match across profiles)."""
    obj = struct(raw, path, _PROFILE_FIELDS)
    name = get_str(obj, "schedulerName", path)
    if name is None and only:
        name = DEFAULT_SCHEDULER_NAME
    if not name:
        raise ConfigError(f"{path}.schedulerName", "Required value")
    percentage = _percentage(obj, path)
    custom = _plugin_sets(obj.get("plugins"), f"{path}.plugins")
    sets = {point: _merge(ctx.defaults[point], custom[point]) for point in _PLUGIN_SETS}
    _check_removed((e for point in _PLUGIN_SETS for e in sets[point].enabled), ctx.api_version)

    skipped: dict[str, str] = {}
    plugins, needed = _resolve(sets, ctx, skipped)
    if len(plugins["queueSort"]) != 1:
        queue_sort = [ref.name for ref in plugins["queueSort"]]
        raise invalid(f"{path}.plugins.queueSort", queue_sort, "exactly one queue sort plugin is required")
    if not plugins["bind"]:
        raise ConfigError(
            f"{path}.plugins.bind",
            f"Required value: at least one bind plugin is needed for profile {show(name)}",
        )
    plugin_args = _plugin_args(get_list(obj, "pluginConfig", path), path, needed, ctx, skipped)
    profile = ProfileConfig(name, plugins, plugin_args, list(skipped.items()), percentage)
    return profile, sets["queueSort"].signature()


def _plugin_sets(value: Any, path: str) -> dict[str, _PluginSet]:
    obj = struct(value, path, _PLUGIN_SETS)
    return {point: _plugin_set(obj.get(point), f"{path}.{point}") for point in _PLUGIN_SETS}


def _plugin_set(value: Any, path: str) -> _PluginSet:
    obj = struct(value, path, ("enabled", "disabled"))
    enabled = tuple(_plugin(v, f"{path}.enabled[{i}]") for i, v in enumerate(get_list(obj, "enabled", path)))
    disabled = tuple(
        _plugin(v, f"{path}.disabled[{i}]").name for i, v in enumerate(get_list(obj, "disabled", path))
    )
    return _PluginSet(enabled, disabled)


def _plugin(value: Any, path: str) -> _Entry:
    obj = struct(value, path, ("name", "weight"))
    return _Entry(get_str(obj, "name", path) or "", get_int(obj, "weight", path) or 0, path)


def _merge(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
    """Upstream ``mergePluginSet``: custom entries replace same-named defaults in place, others follow."""
    disabled = custom.disabled + default.disabled
    custom_by_name = {e.name: (i, e) for i, e in enumerate(custom.enabled)}  # the last one wins, as in Go
    replaced: set[int] = set()
    enabled: list[_Entry] = []
    if _WILDCARD not in disabled:
        for entry in default.enabled:
            if entry.name in disabled:
                continue
            if entry.name in custom_by_name:
                index, replacement = custom_by_name[entry.name]
                replaced.add(index)
                enabled.append(replacement)
            else:
                enabled.append(entry)
    # Duplicated custom entries are appended too; resolving reports them.
    enabled.extend(e for i, e in enumerate(custom.enabled) if i not in replaced)
    return _PluginSet(tuple(enabled), disabled)


def _check_removed(entries: Iterable[_Entry], api_version: str) -> None:
    for entry in entries:
        if entry.name in REMOVED_PLUGINS:
            raise invalid(entry.path, entry.name, _removed_detail(api_version))


def _removed_detail(api_version: str) -> str:
    return f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{api_version}")'


def _resolve(
    sets: Mapping[str, _PluginSet], ctx: _Context, skipped: dict[str, str]
) -> tuple[dict[str, list[PluginRef]], list[str]]:
    """Plugins per extension point, and every plugin the profile instantiates (upstream ``pluginsNeeded``)."""
    multi = [e for e in sets[_MULTI_POINT].enabled if ctx.known(e, skipped)]
    needed = dict.fromkeys(e.name for e in multi)
    names = {point: _expand(point, sets[point], multi, ctx, skipped) for point in EXTENSION_POINTS}
    weights: dict[str, int] = {}
    for entry in (*sets["score"].enabled, *multi):
        cls = ctx.registry.get(entry.name)
        if cls is not None and implements(cls, "score"):
            weights.setdefault(entry.name, entry.weight or 1)
    plugins: dict[str, list[PluginRef]] = {}
    for point, point_names in names.items():
        needed.update(dict.fromkeys(point_names))
        plugins[point] = [PluginRef(n, weights[n] if point == "score" else 0) for n in point_names]
    return plugins, list(needed)


def _expand(
    point: str, pset: _PluginSet, multi: Sequence[_Entry], ctx: _Context, skipped: dict[str, str]
) -> list[str]:
    """One point's plugins: those named there, then multiPoint's (upstream ``expandMultiPointPlugins``)."""
    specific: list[str] = []
    for entry in pset.enabled:
        if not ctx.known(entry, skipped):
            continue
        if not implements(ctx.registry[entry.name], point):
            raise invalid(entry.path, entry.name, f"plugin does not implement the {point} extension point")
        if entry.name in specific:
            raise ConfigError(entry.path, f"Duplicate value: {show(entry.name)}: already enabled at {point}")
        specific.append(entry.name)
    if _WILDCARD in pset.disabled:
        return specific
    overridden: set[str] = set()
    expanded: list[str] = []
    for entry in multi:
        if not implements(ctx.registry[entry.name], point) or entry.name in pset.disabled:
            continue
        if entry.name in specific:
            overridden.add(entry.name)  # named at the point too: that entry wins, and runs first
        elif entry.name in expanded:
            raise ConfigError(
                entry.path, f"Duplicate value: {show(entry.name)}: already enabled through multiPoint"
            )
        else:
            expanded.append(entry.name)
    first = [n for n in specific if n in overridden]
    return first + expanded + [n for n in specific if n not in overridden]


def _plugin_args(
    items: Sequence[Any], path: str, needed: Sequence[str], ctx: _Context, skipped: dict[str, str]
) -> dict[str, Any]:
    """Parsed args of each needed plugin; every pluginConfig entry is checked, needed or not (as upstream)."""
    explicit: dict[str, Any] = {}
    seen: set[str] = set()
    for i, item in enumerate(items):
        item_path = f"{path}.pluginConfig[{i}]"
        obj = struct(item, item_path, ("name", "args"))
        name = get_str(obj, "name", item_path) or ""
        if name in seen:
            raise ConfigError(item_path, f"Duplicate value: {show(name)}")
        seen.add(name)
        if name in REMOVED_PLUGINS:
            raise invalid(item_path, name, _removed_detail(ctx.api_version))
        if name in ctx.registry:
            explicit[name] = _parse_args(ctx.registry[name], name, obj.get("args"), f"{item_path}.args")
        else:
            skipped.setdefault(
                name, NOT_IMPLEMENTED if name in ctx.not_implemented else UNKNOWN_PLUGIN_CONFIG
            )
    return {
        name: explicit[name]
        if name in explicit
        else _parse_args(ctx.registry[name], name, None, f"{path}.pluginConfig[{name}].args")
        for name in needed
    }


def _parse_args(cls: type, name: str, args: Any, path: str) -> Any:
    """The class's ``parse_args`` over the args without their type meta; None for a class without args."""
    parser = getattr(cls, "parse_args", None)
    if parser is None:
        return None  # upstream ignores args of plugins that take none
    if args is not None:
        if not isinstance(args, Mapping):
            raise invalid(path, args, "expected an object")
        kind, api_version = args.get("kind"), args.get("apiVersion")
        if kind is not None and kind != f"{name}Args":
            raise invalid(f"{path}.kind", kind, f'args of plugin {name} must be of kind "{name}Args"')
        if api_version is not None and api_version not in API_VERSIONS:
            supported = ", ".join(f'"{v}"' for v in API_VERSIONS)
            raise ConfigError(
                f"{path}.apiVersion",
                f"Unsupported value: {show(api_version)}: supported values: {supported}",
            )
        args = {k: v for k, v in args.items() if k not in ("kind", "apiVersion")}
    return parser(args, path)


def _check_common_queue_sort(
    profiles: Sequence[ProfileConfig], configured: Sequence[tuple[tuple[Any, ...], ...]]
) -> None:
    """Upstream ``validateCommonQueueSort`` and the framework's check: one queue sort, same args, everywhere."""
    first = profiles[0]
    queue_sort = first.plugins["queueSort"][0].name
    for i, profile in enumerate(profiles[1:], start=1):
        if configured[i] != configured[0] or profile.plugins["queueSort"] != first.plugins["queueSort"]:
            names = [ref.name for ref in profile.plugins["queueSort"]]
            raise invalid(f"profiles[{i}].plugins.queueSort", names, "must be the same for all profiles")
        if profile.plugin_args.get(queue_sort) != first.plugin_args.get(queue_sort):
            raise ConfigError(
                f"profiles[{i}].pluginConfig",
                f"Invalid value: {show(queue_sort)}: queueSort args must be the same for all profiles",
            )


# ----------------------------------------------------------------------------- small helpers


def _default(value: _T | None, default: _T) -> _T:
    return default if value is None else value


def _seconds(value: float) -> str:
    return f"{value:g}s"
