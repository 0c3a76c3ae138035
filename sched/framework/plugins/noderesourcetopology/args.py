"""``NodeResourceTopologyMatchArgs``: the plugin's configuration, decoded, defaulted and validated.

This module owns the args of ``kubescheduler.config.k8s.io/v1``
``NodeResourceTopologyMatchArgs`` as scheduler-plugins defines them: field names,
upstream defaults (``SetDefaults_NodeResourceTopologyMatchArgs`` plus the runtime
fallbacks of the cache) and upstream validation wording
(``Invalid value: "Foo": invalid ScoringStrategyType``).

Decoding is strict, as kube-scheduler decodes plugin args: an unknown field is an error
naming it. Two checks are stricter than upstream, which silently maps unknown values of
the ``cache`` enums to a fallback: here such a value is rejected with a
``Unsupported value`` error, so a configuration this module accepts is one upstream
accepts with the same meaning.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from nrop.api.fielderrors import go_quote, not_supported
from nrop.sched.errors import ConfigError

__all__ = [
    "KIND",
    "CacheArgs",
    "CacheResyncMethod",
    "CacheResyncScope",
    "ForeignPodsDetectMode",
    "InformerMode",
    "NodeResourceTopologyMatchArgs",
    "PreemptionMode",
    "ResourceSpec",
    "ScoringStrategy",
    "ScoringStrategyType",
    "parse_args",
]

KIND: Final = "NodeResourceTopologyMatchArgs"

_E = TypeVar("_E", bound=enum.StrEnum)


class ScoringStrategyType(enum.StrEnum):
    MOST_ALLOCATED = "MostAllocated"
    BALANCED_ALLOCATION = "BalancedAllocation"
    LEAST_ALLOCATED = "LeastAllocated"
    LEAST_NUMA_NODES = "LeastNUMANodes"


class ForeignPodsDetectMode(enum.StrEnum):
    NONE = "None"
    ALL = "All"
    ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"


class CacheResyncMethod(enum.StrEnum):
    AUTODETECT = "Autodetect"
    ALL = "All"
    ONLY_EXCLUSIVE_RESOURCES = "OnlyExclusiveResources"


class InformerMode(enum.StrEnum):
    SHARED = "Shared"
    DEDICATED = "Dedicated"


class CacheResyncScope(enum.StrEnum):
    ALL = "All"
    ONLY_RESOURCES = "OnlyResources"


class PreemptionMode(enum.StrEnum):
    DISABLED = "Disabled"
    ENABLED = "Enabled"


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource and its weight in MostAllocated/LeastAllocated scoring."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES: Final = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: ScoringStrategyType = ScoringStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True, slots=True)
class CacheArgs:
    """``cache``: how the OverReserve cache detects foreign pods and resyncs."""

    foreign_pods_detect: ForeignPodsDetectMode = ForeignPodsDetectMode.ALL
    resync_method: CacheResyncMethod = CacheResyncMethod.AUTODETECT
    informer_mode: InformerMode = InformerMode.DEDICATED
    # Upstream has no defaulter for this one; an unset value means All at run time.
    resync_scope: CacheResyncScope = CacheResyncScope.ALL


@dataclass(frozen=True, slots=True)
class NodeResourceTopologyMatchArgs:
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)
    cache_resync_period_seconds: int = 0
    discard_reserved_nodes: bool = False
    cache: CacheArgs = field(default_factory=CacheArgs)
    preemption_mode: PreemptionMode = PreemptionMode.DISABLED


# ---------------------------------------------------------------------------- decoding


def _render(value: Any) -> str:
    """A bad value the way Kubernetes field errors print it (strings quoted)."""
    if isinstance(value, str):
        return go_quote(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _invalid(path: str, value: Any, detail: str) -> ConfigError:
    return ConfigError(path, f"Invalid value: {_render(value)}: {detail}")


def _check_fields(obj: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise _invalid(path, obj, "must be an object")
    for key in obj:
        if key not in allowed:
            raise ConfigError(f"{path}.{key}", f'unknown field "{key}"')
    return obj


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, value, "must be an integer")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _invalid(path, value, "must be a string")
    return value


def _enum_value(kind: type[_E], value: Any, path: str) -> _E:
    text = _str(value, path)
    try:
        return kind(text)
    except ValueError:
        raise ConfigError(path, not_supported(path, text, [m.value for m in kind]).body()) from None


def _parse_resources(value: Any, path: str) -> tuple[ResourceSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _invalid(path, value, "must be a list")
    specs = []
    for index, raw in enumerate(value):
        item_path = f"{path}[{index}]"
        item = _check_fields(raw, item_path, ("name", "weight"))
        name = _str(item.get("name", ""), f"{item_path}.name")
        weight = _int(item.get("weight", 0), f"{item_path}.weight")
        # Upstream's defaulter turns an unset (zero) weight into 1; negative weights stay.
        specs.append(ResourceSpec(name, 1 if weight == 0 else weight))
    return tuple(specs)


def _parse_scoring_strategy(value: Any, path: str) -> ScoringStrategy:
    if value is None:
        return ScoringStrategy()
    obj = _check_fields(value, path, ("type", "resources"))
    type_path = f"{path}.type"
    raw_type = _str(obj.get("type", ""), type_path)
    try:
        strategy_type = ScoringStrategyType(raw_type)
    except ValueError:
        raise _invalid(type_path, raw_type, "invalid ScoringStrategyType") from None
    resources = _parse_resources(obj.get("resources"), f"{path}.resources") or DEFAULT_RESOURCES
    return ScoringStrategy(strategy_type, resources)


def _parse_cache(value: Any, path: str) -> CacheArgs:
    if value is None:
        return CacheArgs()
    obj = _check_fields(value, path, ("foreignPodsDetect", "resyncMethod", "informerMode", "resyncScope"))
    defaults = CacheArgs()

    def pick(key: str, kind: type[_E], default: _E) -> _E:
        raw = obj.get(key)
        return default if raw is None else _enum_value(kind, raw, f"{path}.{key}")

    return CacheArgs(
        foreign_pods_detect=pick("foreignPodsDetect", ForeignPodsDetectMode, defaults.foreign_pods_detect),
        resync_method=pick("resyncMethod", CacheResyncMethod, defaults.resync_method),
        informer_mode=pick("informerMode", InformerMode, defaults.informer_mode),
        resync_scope=pick("resyncScope", CacheResyncScope, defaults.resync_scope),
    )


_TOP_LEVEL_FIELDS: Final = (
    "apiVersion",
    "kind",
    "scoringStrategy",
    "cacheResyncPeriodSeconds",
    "discardReservedNodes",
    "cache",
    "preemptionMode",
)


def parse_args(args: Mapping[str, Any] | None, path: str) -> NodeResourceTopologyMatchArgs:
    """Decode (strictly), default and validate the plugin args found at JSON path ``path``.

    ``None`` (no ``pluginConfig`` entry) gives the upstream defaults. Errors are
    :class:`~nrop.sched.errors.ConfigError` whose ``field`` is the full JSON path.
    """
    if args is None:
        return NodeResourceTopologyMatchArgs()
    obj = _check_fields(args, path, _TOP_LEVEL_FIELDS)
    kind = obj.get("kind")
    if kind is not None and kind != KIND:
        raise _invalid(f"{path}.kind", kind, f"expected {KIND}")
    period = obj.get("cacheResyncPeriodSeconds")
    discard = obj.get("discardReservedNodes", False)
    if not isinstance(discard, bool):
        raise _invalid(f"{path}.discardReservedNodes", discard, "must be a boolean")
    preemption = obj.get("preemptionMode")
    if preemption is None:
        preemption_mode = PreemptionMode.DISABLED
    else:
        raw_mode = _str(preemption, f"{path}.preemptionMode")
        try:
            preemption_mode = PreemptionMode(raw_mode)
        except ValueError:
            raise _invalid(f"{path}.preemptionMode", raw_mode, "invalid PreemptionMode") from None
    return NodeResourceTopologyMatchArgs(
        scoring_strategy=_parse_scoring_strategy(obj.get("scoringStrategy"), f"{path}.scoringStrategy"),
        cache_resync_period_seconds=0 if period is None else _int(period, f"{path}.cacheResyncPeriodSeconds"),
        discard_reserved_nodes=discard,
        cache=_parse_cache(obj.get("cache"), f"{path}.cache"),
        preemption_mode=preemption_mode,
    )
