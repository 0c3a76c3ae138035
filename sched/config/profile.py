"""One ``KubeSchedulerConfiguration`` profile resolved: its plugins per extension point and their args.

This module owns the profile half of :mod:`nrop.sched.config.configuration` (upstream ``mergePluginSet``,
``expandMultiPointPlugins`` and the profile checks of ``apis/config/validation`` and
``NewFramework``): each plugin set of a profile merged with upstream's default plugin set
(a re-configured default keeps its place, ``disabled: [{name: "*"}]`` drops every default of
that set), multiPoint plugins expanded to every point they implement unless disabled there,
plugins named at a point first, score weights, removed and unknown plugins, one queue sort
and at least one bind plugin, ``pluginConfig`` args parsed by each plugin class's
``parse_args``, and the queue sort shared by every profile.

The result is a :class:`ProfileConfig` of :class:`PluginRef`; what was left out is in
:attr:`ProfileConfig.skipped`.  The configuration API group's versions live here because
the removed-plugin errors and typed plugin args name them; :mod:`nrop.sched.config.configuration`
re-exports them.  Pure: bad input raises :class:`~nrop.sched.errors.ConfigError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from nrop.sched.config.decoding import child, get_int, get_list, get_str, invalid, show, struct
from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import EXTENSION_POINTS, implements

__all__ = [
    "API_VERSION",
    "API_VERSIONS",
    "DEFAULT_SCHEDULER_NAME",
    "NOT_IMPLEMENTED",
    "REMOVED_PLUGINS",
    "UNKNOWN_PLUGIN_CONFIG",
    "DefaultPlugin",
    "PluginRef",
    "ProfileConfig",
]

GROUP: Final = "kubescheduler.config.k8s.io"
API_VERSION: Final = f"{GROUP}/v1"
#: Removed upstream in 1.29, still read because older operators render it; same schema here.
LEGACY_API_VERSION: Final = f"{GROUP}/v1beta3"
API_VERSIONS: Final = (API_VERSION, LEGACY_API_VERSION)
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

#: Upstream's ``invalidPluginsByVersion``: the non-CSI volume limit plugins, gone since 1.31.
REMOVED_PLUGINS: Final = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

#: Why a plugin is in :attr:`ProfileConfig.skipped`.
NOT_IMPLEMENTED: Final = "upstream plugin not implemented by nrop-scheduler: left out of the profile"
UNKNOWN_PLUGIN_CONFIG: Final = (
    "pluginConfig names no plugin nrop-scheduler knows: ignored, as upstream ignores out-of-tree args"
)

MULTI_POINT: Final = "multiPoint"
#: Every plugin set a profile's ``plugins`` may hold.
PLUGIN_SETS: Final = (*EXTENSION_POINTS, MULTI_POINT)
_WILDCARD: Final = "*"
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


# ----------------------------------------------------------------------------- profiles


def percentage_of(obj: Mapping[str, Any], path: str) -> int | None:
    value = get_int(obj, "percentageOfNodesToScore", path)
    if value is not None and not 0 <= value <= 100:
        raise invalid(child(path, "percentageOfNodesToScore"), value, "not in valid range [0-100]")
    return value


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One ``enabled`` item as configured, with the path it came from (for errors)."""

    name: str
    weight: int
    path: str


@dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginEntry, ...] = ()
    disabled: tuple[str, ...] = ()

    def signature(self) -> tuple[Any, ...]:
        """What upstream compares between profiles: names, weights and disabled names, not paths."""
        return tuple((e.name, e.weight) for e in self.enabled), self.disabled


@dataclass(frozen=True, slots=True)
class ResolveContext:
    registry: Mapping[str, type]
    not_implemented: frozenset[str]
    api_version: str
    defaults: Mapping[str, PluginSet]

    def known(self, entry: PluginEntry, skipped: dict[str, str]) -> bool:
        """True for a registered plugin, False (recorded as skipped) for a not-implemented one."""
        if entry.name in self.registry:
            return True
        if entry.name in self.not_implemented:
            skipped.setdefault(entry.name, NOT_IMPLEMENTED)
            return False
        known = ", ".join(sorted(self.registry))
        raise invalid(entry.path, entry.name, f"plugin does not exist; known plugins: {known}")


def resolve_profile(
    raw: Any, path: str, only: bool, ctx: ResolveContext
) -> tuple[ProfileConfig, tuple[tuple[Any, ...], ...]]:
    """The resolved profile and its configured queueSort set (which must match across profiles)."""
    obj = struct(raw, path, _PROFILE_FIELDS)
    name = get_str(obj, "schedulerName", path)
    if name is None and only:
        name = DEFAULT_SCHEDULER_NAME
    if not name:
        raise ConfigError(f"{path}.schedulerName", "Required value")
    percentage = percentage_of(obj, path)
    custom = _plugin_sets(obj.get("plugins"), f"{path}.plugins")
    sets = {point: _merge(ctx.defaults[point], custom[point]) for point in PLUGIN_SETS}
    _check_removed((e for point in PLUGIN_SETS for e in sets[point].enabled), ctx.api_version)

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


def _plugin_sets(value: Any, path: str) -> dict[str, PluginSet]:
    obj = struct(value, path, PLUGIN_SETS)
    return {point: _plugin_set(obj.get(point), f"{path}.{point}") for point in PLUGIN_SETS}


def _plugin_set(value: Any, path: str) -> PluginSet:
    obj = struct(value, path, ("enabled", "disabled"))
    enabled = tuple(_plugin(v, f"{path}.enabled[{i}]") for i, v in enumerate(get_list(obj, "enabled", path)))
    disabled = tuple(
        _plugin(v, f"{path}.disabled[{i}]").name for i, v in enumerate(get_list(obj, "disabled", path))
    )
    return PluginSet(enabled, disabled)


def _plugin(value: Any, path: str) -> PluginEntry:
    obj = struct(value, path, ("name", "weight"))
    return PluginEntry(get_str(obj, "name", path) or "", get_int(obj, "weight", path) or 0, path)


def _merge(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``: custom entries replace same-named defaults in place, others follow."""
    disabled = custom.disabled + default.disabled
    custom_by_name = {e.name: (i, e) for i, e in enumerate(custom.enabled)}  # the last one wins, as in Go
    replaced: set[int] = set()
    enabled: list[PluginEntry] = []
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
    return PluginSet(tuple(enabled), disabled)


def _check_removed(entries: Iterable[PluginEntry], api_version: str) -> None:
    for entry in entries:
        if entry.name in REMOVED_PLUGINS:
            raise invalid(entry.path, entry.name, _removed_detail(api_version))


def _removed_detail(api_version: str) -> str:
    return f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{api_version}")'


def _resolve(
    sets: Mapping[str, PluginSet], ctx: ResolveContext, skipped: dict[str, str]
) -> tuple[dict[str, list[PluginRef]], list[str]]:
    """Plugins per extension point, and every plugin the profile instantiates (upstream ``pluginsNeeded``)."""
    multi = [e for e in sets[MULTI_POINT].enabled if ctx.known(e, skipped)]
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
    point: str, pset: PluginSet, multi: Sequence[PluginEntry], ctx: ResolveContext, skipped: dict[str, str]
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
    items: Sequence[Any], path: str, needed: Sequence[str], ctx: ResolveContext, skipped: dict[str, str]
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


def check_common_queue_sort(
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
