"""Table tests of NodeResourceTopologyMatchArgs decoding, defaults and validation."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.sched.errors import ConfigError
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    CacheArgs,
    CacheResyncMethod,
    CacheResyncScope,
    ForeignPodsDetectMode,
    InformerMode,
    NodeResourceTopologyMatchArgs,
    PreemptionMode,
    ResourceSpec,
    ScoringStrategy,
    ScoringStrategyType,
    parse_args,
)

P = "profiles[0].pluginConfig[1].args"
DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(None, NodeResourceTopologyMatchArgs(), id="no-args"),
        pytest.param({}, NodeResourceTopologyMatchArgs(), id="empty"),
        pytest.param(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourceTopologyMatchArgs"},
            NodeResourceTopologyMatchArgs(),
            id="type-meta-accepted",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            NodeResourceTopologyMatchArgs(
                ScoringStrategy(ScoringStrategyType.MOST_ALLOCATED, DEFAULT_RESOURCES)
            ),
            id="type-only-gets-default-resources",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "BalancedAllocation", "resources": []}},
            NodeResourceTopologyMatchArgs(
                ScoringStrategy(ScoringStrategyType.BALANCED_ALLOCATION, DEFAULT_RESOURCES)
            ),
            id="empty-resources-get-defaults",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [
                        {"name": "cpu", "weight": 0},
                        {"name": "example.com/dev", "weight": 3},
                        {"name": "memory", "weight": -2},
                    ],
                }
            },
            NodeResourceTopologyMatchArgs(
                ScoringStrategy(
                    ScoringStrategyType.LEAST_ALLOCATED,
                    (ResourceSpec("cpu", 1), ResourceSpec("example.com/dev", 3), ResourceSpec("memory", -2)),
                )
            ),
            id="weight-zero-becomes-one-negative-kept",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastNUMANodes", "resources": [{"name": "cpu"}]}},
            NodeResourceTopologyMatchArgs(
                ScoringStrategy(ScoringStrategyType.LEAST_NUMA_NODES, (ResourceSpec("cpu", 1),))
            ),
            id="weight-unset-is-one",
        ),
        pytest.param(
            {
                "cacheResyncPeriodSeconds": 5,
                "cache": {
                    "foreignPodsDetect": "OnlyExclusiveResources",
                    "resyncMethod": "OnlyExclusiveResources",
                    "informerMode": "Dedicated",
                },
            },
            NodeResourceTopologyMatchArgs(
                cache_resync_period_seconds=5,
                cache=CacheArgs(
                    ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES,
                    CacheResyncMethod.ONLY_EXCLUSIVE_RESOURCES,
                    InformerMode.DEDICATED,
                    CacheResyncScope.ALL,
                ),
            ),
            id="readme-cache-variant",
        ),
        pytest.param(
            {
                "cache": {
                    "informerMode": "Shared",
                    "resyncScope": "OnlyResources",
                    "foreignPodsDetect": "None",
                }
            },
            NodeResourceTopologyMatchArgs(
                cache=CacheArgs(
                    ForeignPodsDetectMode.NONE,
                    CacheResyncMethod.AUTODETECT,
                    InformerMode.SHARED,
                    CacheResyncScope.ONLY_RESOURCES,
                )
            ),
            id="cache-partial-keeps-other-defaults",
        ),
        pytest.param(
            {"discardReservedNodes": True, "cacheResyncPeriodSeconds": -1},
            NodeResourceTopologyMatchArgs(cache_resync_period_seconds=-1, discard_reserved_nodes=True),
            id="discard-reserved",
        ),
        pytest.param(
            {"preemptionMode": "Enabled"},
            NodeResourceTopologyMatchArgs(preemption_mode=PreemptionMode.ENABLED),
            id="preemption-enabled",
        ),
        pytest.param(
            {"preemptionMode": "Disabled"}, NodeResourceTopologyMatchArgs(), id="preemption-disabled"
        ),
    ],
)
def test_parse_args(args: dict[str, Any] | None, expected: NodeResourceTopologyMatchArgs) -> None:
    assert parse_args(args, P) == expected


def test_defaults_are_upstream() -> None:
    args = parse_args(None, P)
    assert args.scoring_strategy.type == "LeastAllocated"
    assert args.scoring_strategy.resources == DEFAULT_RESOURCES
    assert args.cache_resync_period_seconds == 0
    assert args.discard_reserved_nodes is False
    assert (args.cache.foreign_pods_detect, args.cache.resync_method) == ("All", "Autodetect")
    assert (args.cache.informer_mode, args.cache.resync_scope) == ("Dedicated", "All")
    assert args.preemption_mode == "Disabled"


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        pytest.param(
            {"scoringStrategy": {"type": "Foo"}},
            f"{P}.scoringStrategy.type",
            'Invalid value: "Foo": invalid ScoringStrategyType',
            id="bad-strategy",
        ),
        pytest.param(
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            f"{P}.scoringStrategy.type",
            'Invalid value: "": invalid ScoringStrategyType',
            id="strategy-without-type",
        ),
        pytest.param(
            {"preemptionMode": "Sometimes"},
            f"{P}.preemptionMode",
            'Invalid value: "Sometimes": invalid PreemptionMode',
            id="bad-preemption-mode",
        ),
        pytest.param(
            {"cache": {"foreignPodsDetect": "Some"}},
            f"{P}.cache.foreignPodsDetect",
            'Unsupported value: "Some": supported values: "None", "All", "OnlyExclusiveResources"',
            id="bad-foreign-pods-detect",
        ),
        pytest.param(
            {"cache": {"resyncMethod": "Often"}},
            f"{P}.cache.resyncMethod",
            'Unsupported value: "Often": supported values: "Autodetect", "All", "OnlyExclusiveResources"',
            id="bad-resync-method",
        ),
        pytest.param(
            {"cache": {"informerMode": "Private"}},
            f"{P}.cache.informerMode",
            'Unsupported value: "Private": supported values: "Shared", "Dedicated"',
            id="bad-informer-mode",
        ),
        pytest.param(
            {"cache": {"resyncScope": "Some"}},
            f"{P}.cache.resyncScope",
            'Unsupported value: "Some": supported values: "All", "OnlyResources"',
            id="bad-resync-scope",
        ),
        pytest.param(
            {"scoringStrategyy": {}},
            f"{P}.scoringStrategyy",
            'unknown field "scoringStrategyy"',
            id="unknown-top-level",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "weights": {}}},
            f"{P}.scoringStrategy.weights",
            'unknown field "weights"',
            id="unknown-in-strategy",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "wieght": 2}]}},
            f"{P}.scoringStrategy.resources[0].wieght",
            'unknown field "wieght"',
            id="unknown-in-resource",
        ),
        pytest.param(
            {"cache": {"mode": "All"}}, f"{P}.cache.mode", 'unknown field "mode"', id="unknown-in-cache"
        ),
        pytest.param(
            {"cacheResyncPeriodSeconds": "5"},
            f"{P}.cacheResyncPeriodSeconds",
            'Invalid value: "5": must be an integer',
            id="period-string",
        ),
        pytest.param(
            {"cacheResyncPeriodSeconds": 2.5},
            f"{P}.cacheResyncPeriodSeconds",
            "Invalid value: 2.5: must be an integer",
            id="period-float",
        ),
        pytest.param(
            {"cacheResyncPeriodSeconds": True},
            f"{P}.cacheResyncPeriodSeconds",
            "Invalid value: true: must be an integer",
            id="period-bool",
        ),
        pytest.param(
            {"discardReservedNodes": "yes"},
            f"{P}.discardReservedNodes",
            'Invalid value: "yes": must be a boolean',
            id="discard-not-bool",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": "heavy"}]}},
            f"{P}.scoringStrategy.resources[0].weight",
            'Invalid value: "heavy": must be an integer',
            id="weight-not-int",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": {"cpu": 1}}},
            f"{P}.scoringStrategy.resources",
            'Invalid value: {"cpu": 1}: must be a list',
            id="resources-not-list",
        ),
        pytest.param(
            {"scoringStrategy": "MostAllocated"},
            f"{P}.scoringStrategy",
            'Invalid value: "MostAllocated": must be an object',
            id="strategy-not-object",
        ),
        pytest.param(
            {"scoringStrategy": {"type": 3}},
            f"{P}.scoringStrategy.type",
            "Invalid value: 3: must be a string",
            id="type-not-string",
        ),
        pytest.param(
            {"kind": "CoschedulingArgs"},
            f"{P}.kind",
            'Invalid value: "CoschedulingArgs": expected NodeResourceTopologyMatchArgs',
            id="wrong-kind",
        ),
    ],
)
def test_parse_args_errors(args: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_args(args, P)
    assert caught.value.field == field
    assert caught.value.detail == message
    assert str(caught.value) == f"{field}: {message}"


def test_args_not_an_object() -> None:
    with pytest.raises(
        ConfigError, match=r'^profiles\[0\]\.pluginConfig\[1\]\.args: Invalid value: "x": must be an object$'
    ):
        parse_args("x", P)  # type: ignore[arg-type]
