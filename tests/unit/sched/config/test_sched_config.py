"""KubeSchedulerConfiguration loading: defaults, plugin merging and multiPoint expansion, validation, files."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from nrop.sched.config import configuration as config
from nrop.sched.config.configuration import (
    ClientConnection,
    LeaderElectionConfig,
    SchedulerConfiguration,
    kubeconfig_source,
)
from nrop.sched.config.decoding import get_int, get_str, struct
from nrop.sched.config.profile import NOT_IMPLEMENTED, UNKNOWN_PLUGIN_CONFIG, PluginRef
from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import EXTENSION_POINTS

EXAMPLES = Path(config.__file__).parents[1] / "examples"

# ----------------------------------------------------------------------------- test data: a registry
# Dummy plugin classes with the extension points of the upstream plugins they are named
# after; two of them take args, parsed strictly like a real plugin's parse_args.


def _noop(*_args: Any) -> None:
    """Stands for an extension-point method; the loader only looks at which methods exist."""


@dataclass(frozen=True)
class TopologyArgs:
    scoring: str = "LeastAllocated"
    resync_period: int = 0
    cache: tuple[tuple[str, str], ...] = ()


def _parse_topology_args(_cls: type, args: Mapping[str, Any] | None, path: str) -> TopologyArgs:
    obj = struct(args, path, ("scoringStrategy", "cacheResyncPeriodSeconds", "cache"))
    strategy = struct(obj.get("scoringStrategy"), f"{path}.scoringStrategy", ("type",))
    scoring = get_str(strategy, "type", f"{path}.scoringStrategy") or "LeastAllocated"
    supported = ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes")
    if scoring not in supported:
        raise ConfigError(f"{path}.scoringStrategy.type", f'Unsupported value: "{scoring}"')
    cache = struct(obj.get("cache"), f"{path}.cache", ("foreignPodsDetect", "resyncMethod", "informerMode"))
    resync = get_int(obj, "cacheResyncPeriodSeconds", path, bits=64) or 0
    return TopologyArgs(scoring, resync, tuple(sorted(cache.items())))


def _parse_sort_args(_cls: type, args: Mapping[str, Any] | None, path: str) -> str:
    return get_str(struct(args, path, ("order",)), "order", path) or "asc"


def _plugin(name: str, *points: str, parse_args: Any = None) -> type:
    attrs: dict[str, Any] = {"name": name, **{EXTENSION_POINTS[p]: _noop for p in points}}
    if parse_args is not None:
        attrs["parse_args"] = classmethod(parse_args)
    return type(name, (), attrs)


NRT = "NodeResourceTopologyMatch"
REGISTRY: dict[str, type] = {
    cls.name: cls  # type: ignore[attr-defined]
    for cls in (
        _plugin("SchedulingGates", "preEnqueue"),
        _plugin("PrioritySort", "queueSort"),
        _plugin("CustomSort", "queueSort", parse_args=_parse_sort_args),
        _plugin("NodeUnschedulable", "filter"),
        _plugin("NodeName", "filter"),
        _plugin("TaintToleration", "filter", "preScore", "score"),
        _plugin("NodeAffinity", "preFilter", "filter", "preScore", "score"),
        _plugin("NodePorts", "preFilter", "filter"),
        _plugin("NodeResourcesFit", "preFilter", "filter", "preScore", "score"),
        _plugin("InterPodAffinity", "preFilter", "filter", "preScore", "score"),
        _plugin("DefaultPreemption", "postFilter"),
        _plugin("NodeResourcesBalancedAllocation", "preScore", "score"),
        _plugin("DefaultBinder", "bind"),
        _plugin(NRT, "preFilter", "filter", "score", "reserve", "postBind", parse_args=_parse_topology_args),
    )
}
NOT_IMPLEMENTED_PLUGINS = frozenset(
    {
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "ImageLocality",
    }
)
#: Upstream v1.33 ``getDefaultPlugins`` (DynamicResourceAllocation off): the default multiPoint list.
UPSTREAM_DEFAULTS = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
)
SKIPPED_DEFAULTS = [(name, NOT_IMPLEMENTED) for name in ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                                                         "VolumeZone", "PodTopologySpread", "ImageLocality")]  # fmt: skip

V1 = "kubescheduler.config.k8s.io/v1"
HEAD = {"apiVersion": V1, "kind": "KubeSchedulerConfiguration"}


def parse(doc: Mapping[str, Any]) -> SchedulerConfiguration:
    return config.parse(doc, REGISTRY, NOT_IMPLEMENTED_PLUGINS, UPSTREAM_DEFAULTS)


def doc_of(text: str) -> dict[str, Any]:
    return {**HEAD, **(yaml.safe_load(textwrap.dedent(text)) or {})}


def points(profile: config.ProfileConfig) -> dict[str, list[str | tuple[str, int]]]:
    """The resolved plugins, compactly: names, and (name, weight) under score; empty points left out."""
    out: dict[str, list[str | tuple[str, int]]] = {}
    for point, refs in profile.plugins.items():
        if refs:
            out[point] = [(r.name, r.weight) if point == "score" else r.name for r in refs]
    return out


DEFAULT_POINTS: dict[str, list[str | tuple[str, int]]] = {
    "preEnqueue": ["SchedulingGates"],
    "queueSort": ["PrioritySort"],
    "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit", "InterPodAffinity"],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "InterPodAffinity",
    ],
    "postFilter": ["DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
    ],
    "bind": ["DefaultBinder"],
}


# ----------------------------------------------------------------------------- defaults


def test_an_empty_configuration_gets_upstream_defaults() -> None:
    cfg = parse(HEAD)
    assert cfg.leader_election == LeaderElectionConfig(
        leader_elect=True,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        resource_lock="leases",
        resource_name="kube-scheduler",
        resource_namespace="kube-system",
    )
    assert cfg.client_connection == ClientConnection(
        kubeconfig="", qps=50.0, burst=100, content_type="application/vnd.kubernetes.protobuf"
    )
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (16, 0)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.delay_cache_until_active is False
    [profile] = cfg.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.percentage_of_nodes_to_score is None
    assert list(profile.plugins) == list(EXTENSION_POINTS)
    assert points(profile) == DEFAULT_POINTS
    assert profile.skipped == SKIPPED_DEFAULTS
    assert set(profile.plugin_args) == set(REGISTRY) - {"CustomSort", NRT}
    assert all(args is None for args in profile.plugin_args.values())


def test_null_sections_mean_defaults() -> None:
    cfg = parse(doc_of("{leaderElection: null, clientConnection: null, profiles: null, extenders: null}"))
    assert cfg.leader_election == LeaderElectionConfig()
    assert points(cfg.profiles[0]) == DEFAULT_POINTS


def test_zero_and_empty_values_are_defaulted_like_unset_ones() -> None:
    cfg = parse(
        doc_of("""
        leaderElection: {leaseDuration: 0s, renewDeadline: "0", resourceLock: "", resourceName: ""}
        clientConnection: {qps: 0, burst: 0, contentType: ""}
        """)
    )
    assert cfg.leader_election == LeaderElectionConfig()
    assert cfg.client_connection == ClientConnection()


def test_leader_election_settings_are_only_checked_when_electing() -> None:
    cfg = parse(doc_of("leaderElection: {leaderElect: false, resourceLock: endpoints, retryPeriod: -1s}"))
    assert cfg.leader_election.leader_elect is False
    assert cfg.leader_election.resource_lock == "endpoints"


def test_every_setting_is_read() -> None:
    cfg = parse(
        doc_of("""
        parallelism: 4
        percentageOfNodesToScore: 30
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 2
        delayCacheUntilActive: true
        enableProfiling: false
        leaderElection: {leaseDuration: 1m30s, renewDeadline: 1m, retryPeriod: 500ms,
                         resourceName: nrop, resourceNamespace: numaresources}
        clientConnection: {kubeconfig: /k.conf, qps: 12.5, burst: 7, contentType: application/json,
                           acceptContentTypes: application/json}
        profiles: [{schedulerName: a, percentageOfNodesToScore: 0}]
        """)
    )
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 2)
    assert cfg.delay_cache_until_active is True
    assert cfg.leader_election == LeaderElectionConfig(
        True, 90.0, 60.0, 0.5, "leases", "nrop", "numaresources"
    )
    assert cfg.client_connection == ClientConnection(
        "/k.conf", 12.5, 7, "application/json", "application/json"
    )
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in cfg.profiles] == [("a", 0)]


# ----------------------------------------------------------------------------- merging and multiPoint

MERGE_CASES = {
    "a default re-configured in multiPoint keeps its place, with the new weight": (
        "multiPoint: {enabled: [{name: TaintToleration, weight: 7}]}",
        {"score": [("TaintToleration", 7), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("InterPodAffinity", 2),
                   ("NodeResourcesBalancedAllocation", 1)]},
    ),
    "a plugin named at score runs first there, with the score section's weight": (
        "score: {enabled: [{name: NodeAffinity, weight: 4}]}",
        {"score": [("NodeAffinity", 4), ("TaintToleration", 3), ("NodeResourcesFit", 1), ("InterPodAffinity", 2),
                   ("NodeResourcesBalancedAllocation", 1)]},
    ),
    "a score entry without weight has weight 1, whatever multiPoint says": (
        "score: {enabled: [{name: TaintToleration}]}",
        {"score": [("TaintToleration", 1), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("InterPodAffinity", 2),
                   ("NodeResourcesBalancedAllocation", 1)]},
    ),
    "weight 0 means 1; a new multiPoint plugin goes after the defaults everywhere it fits": (
        f"multiPoint: {{enabled: [{{name: {NRT}, weight: 0}}]}}",
        {
            "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit", "InterPodAffinity", NRT],
            "score": [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("InterPodAffinity", 2),
                      ("NodeResourcesBalancedAllocation", 1), (NRT, 1)],
            "reserve": [NRT],
            "postBind": [NRT],
        },
    ),
    "disabling '*' at a point stops multiPoint expansion there only": (
        "score: {disabled: [{name: '*'}], enabled: [{name: NodeResourcesFit, weight: 2}]}",
        {"score": [("NodeResourcesFit", 2)],
         "preScore": ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "InterPodAffinity",
                      "NodeResourcesBalancedAllocation"]},
    ),
    "a multiPoint plugin disabled at one point still runs at the others": (
        "preScore: {disabled: [{name: TaintToleration}]}",
        {"preScore": ["NodeAffinity", "NodeResourcesFit", "InterPodAffinity", "NodeResourcesBalancedAllocation"],
         "score": DEFAULT_POINTS["score"]},
    ),
    "multiPoint disabled '*' drops every default": (
        f"multiPoint: {{disabled: [{{name: '*'}}], enabled: [{{name: PrioritySort}}, {{name: DefaultBinder}}, "
        f"{{name: {NRT}}}]}}",
        {"queueSort": ["PrioritySort"], "preFilter": [NRT], "filter": [NRT], "score": [(NRT, 1)],
         "reserve": [NRT], "bind": ["DefaultBinder"], "postBind": [NRT]},
    ),
    "a default disabled by name in multiPoint is gone from every point": (
        "multiPoint: {disabled: [{name: NodeResourcesBalancedAllocation}]}",
        {"preScore": ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "InterPodAffinity"],
         "score": [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("InterPodAffinity", 2)]},
    ),
    "plugins named only at a point run after multiPoint's there, and nowhere else": (
        f"filter: {{enabled: [{{name: {NRT}}}]}}",
        {"filter": DEFAULT_POINTS["filter"] + [NRT], "reserve": [], "postBind": []},
    ),
    "plugins named at a point and in multiPoint run first there, in the point's order": (
        f"multiPoint: {{enabled: [{{name: {NRT}}}]}}\nfilter: {{enabled: [{{name: {NRT}}}, {{name: NodeName}}]}}",
        {"filter": [NRT, "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts",
                    "NodeResourcesFit", "InterPodAffinity"]},
    ),
    "enabled wins over disabled in the same multiPoint set": (
        f"multiPoint: {{enabled: [{{name: {NRT}}}], disabled: [{{name: {NRT}}}]}}",
        {"reserve": [NRT]},
    ),
    "disabling a plugin at a point where it is also named keeps it there": (
        "filter: {enabled: [{name: NodeName}], disabled: [{name: NodeName}]}",
        {"filter": ["NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
                    "InterPodAffinity", "NodeName"]},
    ),
}  # fmt: skip


@pytest.mark.parametrize(("plugins", "expected"), MERGE_CASES.values(), ids=MERGE_CASES.keys())
def test_plugin_merging_and_multipoint_expansion(plugins: str, expected: dict[str, list[Any]]) -> None:
    doc = {**HEAD, "profiles": [{"schedulerName": "p", "plugins": yaml.safe_load(plugins)}]}
    got = points(parse(doc).profiles[0])
    for point, plugins_there in expected.items():
        assert got.get(point, []) == plugins_there, point


def test_plugins_disabled_everywhere_are_still_instantiated_and_disabled_defaults_are_not() -> None:
    cfg = parse(
        doc_of(f"""
        profiles:
        - plugins:
            multiPoint:
              enabled: [{{name: {NRT}}}]
              disabled: [{{name: NodeResourcesBalancedAllocation}}]
            preFilter: {{disabled: [{{name: {NRT}}}]}}
            filter: {{disabled: [{{name: {NRT}}}]}}
            score: {{disabled: [{{name: {NRT}}}]}}
            reserve: {{disabled: [{{name: {NRT}}}]}}
            postBind: {{disabled: [{{name: {NRT}}}]}}
        """)
    )
    profile = cfg.profiles[0]
    assert all(NRT not in [r.name for r in refs] for refs in profile.plugins.values())
    assert profile.plugin_args[NRT] == TopologyArgs()
    assert "NodeResourcesBalancedAllocation" not in profile.plugin_args


def test_skipped_plugins_are_reported_once_with_their_reason() -> None:
    cfg = parse(
        doc_of("""
        profiles:
        - plugins:
            preEnqueue: {enabled: [{name: SchedulingGates}]}
            filter: {enabled: [{name: VolumeZone}]}
          pluginConfig:
          - {name: VolumeBinding, args: {bindTimeoutSeconds: 600}}
          - {name: OutOfTreePlugin, args: {anything: [1, 2]}}
          - {name: NoArgsHere, args: 7}
        """)
    )
    profile = cfg.profiles[0]
    assert profile.skipped == [
        *SKIPPED_DEFAULTS,
        ("OutOfTreePlugin", UNKNOWN_PLUGIN_CONFIG),
        ("NoArgsHere", UNKNOWN_PLUGIN_CONFIG),
    ]
    assert "VolumeZone" not in profile.plugins["filter"]


def test_a_profile_with_no_defaults_given() -> None:
    doc = doc_of(
        "profiles: [{plugins: {multiPoint: {enabled: [{name: PrioritySort}, {name: DefaultBinder}]}}}]"
    )
    profile = config.parse(doc, REGISTRY).profiles[0]
    assert points(profile) == {"queueSort": ["PrioritySort"], "bind": ["DefaultBinder"]}
    assert profile.skipped == []


# ----------------------------------------------------------------------------- plugin args


def test_args_are_parsed_by_the_plugin_class_with_their_path_and_defaulted_when_absent() -> None:
    cfg = parse(
        doc_of(f"""
        profiles:
        - schedulerName: with-args
          plugins: {{multiPoint: {{enabled: [{{name: {NRT}}}]}}}}
          pluginConfig:
          - name: {NRT}
            args: {{apiVersion: {V1}, kind: {NRT}Args, scoringStrategy: {{type: MostAllocated}}}}
        - schedulerName: defaults
          plugins: {{multiPoint: {{enabled: [{{name: {NRT}}}]}}}}
        - schedulerName: args-without-plugin
          pluginConfig: [{{name: {NRT}, args: {{cacheResyncPeriodSeconds: 5}}}}]
        """)
    )
    with_args, defaults, unused = cfg.profiles
    assert with_args.plugin_args[NRT] == TopologyArgs(scoring="MostAllocated")
    assert defaults.plugin_args[NRT] == TopologyArgs()
    assert NRT not in unused.plugin_args
    assert with_args.plugin_args["NodeResourcesFit"] is None  # a class without parse_args


def test_args_of_a_plugin_that_is_not_enabled_are_still_checked() -> None:
    doc = doc_of(f"profiles: [{{pluginConfig: [{{name: {NRT}, args: {{scoringStrategy: {{type: Foo}}}}}}]}}]")
    with pytest.raises(ConfigError) as err:
        parse(doc)
    assert str(err.value) == 'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Foo"'
    assert err.value.field == "profiles[0].pluginConfig[0].args.scoringStrategy.type"


# ----------------------------------------------------------------------------- rejected configurations

ERROR_CASES = {
    "not an object": ("[]", "", 'expected a KubeSchedulerConfiguration object, got []'),
    "no apiVersion": ("{apiVersion: null}", "apiVersion",
                      'apiVersion: Required value: expected "kubescheduler.config.k8s.io/v1"'),
    "removed apiVersion": (
        "{apiVersion: kubescheduler.config.k8s.io/v1beta2}", "apiVersion",
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta2": supported values: '
        '"kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3"',
    ),
    "wrong kind": ("{kind: KubeletConfiguration}", "kind",
                   'kind: Unsupported value: "KubeletConfiguration": supported values: "KubeSchedulerConfiguration"'),
    "unknown top-level field": ("{algorithmSource: {}}", "algorithmSource", None),
    "unknown profile field": ("{profiles: [{plugin: {}}]}", "profiles[0].plugin", None),
    "unknown extension point": ("{profiles: [{plugins: {filters: {}}}]}", "profiles[0].plugins.filters", None),
    "unknown plugin field": (
        "{profiles: [{plugins: {score: {enabled: [{name: NodeAffinity, weigth: 2}]}}}]}",
        "profiles[0].plugins.score.enabled[0].weigth", None,
    ),
    "unknown leader election field": ("{leaderElection: {leaseDurationSeconds: 15}}",
                                      "leaderElection.leaseDurationSeconds", None),
    "profiles not a list": ("{profiles: {a: 1}}", "profiles", 'profiles: Invalid value: {"a": 1}: expected a list'),
    "profile not an object": ("{profiles: [x]}", "profiles[0]", 'profiles[0]: Invalid value: "x": expected an object'),
    "parallelism zero": ("{parallelism: 0}", "parallelism",
                         "parallelism: Invalid value: 0: should be an integer value greater than zero"),
    "parallelism as a string": ("{parallelism: '8'}", "parallelism",
                                'parallelism: Invalid value: "8": expected an integer'),
    "parallelism beyond int32": ("{parallelism: 2147483648}", "parallelism",
                                 "parallelism: Invalid value: 2147483648: out of range for a 32-bit integer"),
    "percentage above 100": ("{percentageOfNodesToScore: 101}", "percentageOfNodesToScore",
                             "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
    "profile percentage below 0": (
        "{profiles: [{percentageOfNodesToScore: -1}]}", "profiles[0].percentageOfNodesToScore",
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
    ),
    "initial back-off zero": ("{podInitialBackoffSeconds: 0}", "podInitialBackoffSeconds",
                              "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
    "max back-off below initial": (
        "{podInitialBackoffSeconds: 6, podMaxBackoffSeconds: 5}", "podMaxBackoffSeconds",
        "podMaxBackoffSeconds: Invalid value: 5: must be greater than or equal to PodInitialBackoffSeconds",
    ),
    "max back-off below the default initial": (
        "{podMaxBackoffSeconds: -3}", "podMaxBackoffSeconds",
        "podMaxBackoffSeconds: Invalid value: -3: must be greater than or equal to PodInitialBackoffSeconds",
    ),
    "a lock other than leases": ("{leaderElection: {resourceLock: endpointsleases}}", "leaderElection.resourceLock",
                                 'leaderElection.resourceLock: Invalid value: "endpointsleases": '
                                 'resourceLock value must be "leases"'),
    "lease not longer than the renew deadline": (
        "{leaderElection: {leaseDuration: 5s}}", "leaderElection.leaseDuration",
        'leaderElection.leaseDuration: Invalid value: "5s": LeaseDuration must be greater than RenewDeadline (10s)',
    ),
    "negative retry period": ("{leaderElection: {retryPeriod: -1s}}", "leaderElection.retryPeriod",
                              'leaderElection.retryPeriod: Invalid value: "-1s": must be greater than zero'),
    "duration as a number": ("{leaderElection: {leaseDuration: 15}}", "leaderElection.leaseDuration",
                             'leaderElection.leaseDuration: Invalid value: 15: expected a duration such as '
                             '"15s", "1m30s" or "500ms"'),
    "duration without a unit": ("{leaderElection: {renewDeadline: '10'}}", "leaderElection.renewDeadline", None),
    "leaderElect as a string": ("{leaderElection: {leaderElect: 'false'}}", "leaderElection.leaderElect",
                                'leaderElection.leaderElect: Invalid value: "false": expected true or false'),
    "negative burst": ("{clientConnection: {burst: -1}}", "clientConnection.burst",
                       "clientConnection.burst: Invalid value: -1: must be non-negative"),
    "qps as a word": ("{clientConnection: {qps: fast}}", "clientConnection.qps",
                      'clientConnection.qps: Invalid value: "fast": expected a number'),
    "extenders": ("{extenders: [{urlPrefix: 'http://x'}]}", "extenders",
                  "extenders: Forbidden: scheduler extenders are not supported by nrop-scheduler"),
    "duplicate scheduler name": ("{profiles: [{schedulerName: x}, {schedulerName: x}]}", "profiles[1].schedulerName",
                                 'profiles[1].schedulerName: Duplicate value: "x": already the name of profiles[0]'),
    "unnamed profile among several": ("{profiles: [{schedulerName: x}, {}]}", "profiles[1].schedulerName",
                                      "profiles[1].schedulerName: Required value"),
    "empty scheduler name": ("{profiles: [{schedulerName: ''}]}", "profiles[0].schedulerName",
                             "profiles[0].schedulerName: Required value"),
    "unknown plugin at a point": (
        "{profiles: [{plugins: {score: {enabled: [{name: Foo}]}}}]}", "profiles[0].plugins.score.enabled[0]",
        'profiles[0].plugins.score.enabled[0]: Invalid value: "Foo": plugin does not exist; known plugins: '
        "CustomSort, DefaultBinder, DefaultPreemption, InterPodAffinity, NodeAffinity, NodeName, NodePorts, "
        "NodeResourceTopologyMatch, NodeResourcesBalancedAllocation, NodeResourcesFit, NodeUnschedulable, "
        "PrioritySort, SchedulingGates, TaintToleration",
    ),
    "nameless plugin in multiPoint": ("{profiles: [{plugins: {multiPoint: {enabled: [{}, {name: Foo}]}}}]}",
                                     "profiles[0].plugins.multiPoint.enabled[0]", None),
    "plugin at a point it does not implement": (
        "{profiles: [{plugins: {filter: {enabled: [{name: DefaultBinder}]}}}]}",
        "profiles[0].plugins.filter.enabled[0]",
        'profiles[0].plugins.filter.enabled[0]: Invalid value: "DefaultBinder": '
        "plugin does not implement the filter extension point",
    ),
    "plugin twice at a point": (
        f"{{profiles: [{{plugins: {{filter: {{enabled: [{{name: {NRT}}}, {{name: {NRT}}}]}}}}}}]}}",
        "profiles[0].plugins.filter.enabled[1]",
        f'profiles[0].plugins.filter.enabled[1]: Duplicate value: "{NRT}": already enabled at filter',
    ),
    "plugin twice in multiPoint": (
        f"{{profiles: [{{plugins: {{multiPoint: {{enabled: [{{name: {NRT}}}, {{name: {NRT}}}]}}}}}}]}}",
        "profiles[0].plugins.multiPoint.enabled[1]",
        f'profiles[0].plugins.multiPoint.enabled[1]: Duplicate value: "{NRT}": already enabled through multiPoint',
    ),
    "removed plugin": (
        "{profiles: [{plugins: {filter: {enabled: [{name: NodeName}, {name: EBSLimits}]}}}]}",
        "profiles[0].plugins.filter.enabled[1]",
        'profiles[0].plugins.filter.enabled[1]: Invalid value: "EBSLimits": was invalid in version '
        '"kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")',
    ),
    "removed plugin's config": ("{profiles: [{pluginConfig: [{name: GCEPDLimits}]}]}", "profiles[0].pluginConfig[0]",
                                None),
    "weight as a string": ("{profiles: [{plugins: {score: {enabled: [{name: NodeAffinity, weight: '3'}]}}}]}",
                           "profiles[0].plugins.score.enabled[0].weight",
                           'profiles[0].plugins.score.enabled[0].weight: Invalid value: "3": expected an integer'),
    "enabled not a list": ("{profiles: [{plugins: {score: {enabled: {name: NodeAffinity}}}}]}",
                           "profiles[0].plugins.score.enabled", None),
    "duplicate pluginConfig": (
        f"{{profiles: [{{pluginConfig: [{{name: {NRT}}}, {{name: {NRT}}}]}}]}}", "profiles[0].pluginConfig[1]",
        f'profiles[0].pluginConfig[1]: Duplicate value: "{NRT}"',
    ),
    "args of another kind": (
        f"{{profiles: [{{pluginConfig: [{{name: {NRT}, args: {{kind: NodeResourcesFitArgs}}}}]}}]}}",
        "profiles[0].pluginConfig[0].args.kind",
        f'profiles[0].pluginConfig[0].args.kind: Invalid value: "NodeResourcesFitArgs": args of plugin {NRT} '
        f'must be of kind "{NRT}Args"',
    ),
    "args of an unknown version": (
        f"{{profiles: [{{pluginConfig: [{{name: {NRT}, args: {{apiVersion: v1}}}}]}}]}}",
        "profiles[0].pluginConfig[0].args.apiVersion", None,
    ),
    "args not an object": (f"{{profiles: [{{pluginConfig: [{{name: {NRT}, args: [1]}}]}}]}}",
                           "profiles[0].pluginConfig[0].args",
                           "profiles[0].pluginConfig[0].args: Invalid value: [1]: expected an object"),
    "no queue sort plugin": ("{profiles: [{plugins: {multiPoint: {disabled: [{name: PrioritySort}]}}}]}",
                             "profiles[0].plugins.queueSort",
                             "profiles[0].plugins.queueSort: Invalid value: []: exactly one queue sort plugin is "
                             "required"),
    "two queue sort plugins": (
        "{profiles: [{plugins: {queueSort: {enabled: [{name: CustomSort}]}}}]}", "profiles[0].plugins.queueSort",
        'profiles[0].plugins.queueSort: Invalid value: ["PrioritySort", "CustomSort"]: exactly one queue sort '
        "plugin is required",
    ),
    "no bind plugin": ("{profiles: [{plugins: {bind: {disabled: [{name: '*'}]}}}]}", "profiles[0].plugins.bind",
                       'profiles[0].plugins.bind: Required value: at least one bind plugin is needed for profile '
                       '"default-scheduler"'),
    "queue sort differs between profiles": (
        "{profiles: [{schedulerName: a}, {schedulerName: b, plugins: {queueSort: {disabled: [{name: '*'}], "
        "enabled: [{name: CustomSort}]}}}]}",
        "profiles[1].plugins.queueSort",
        'profiles[1].plugins.queueSort: Invalid value: ["CustomSort"]: must be the same for all profiles',
    ),
    "queue sort configured differently although it resolves the same": (
        "{profiles: [{schedulerName: a}, {schedulerName: b, plugins: {queueSort: {enabled: [{name: PrioritySort}]}}}]}",
        "profiles[1].plugins.queueSort",
        'profiles[1].plugins.queueSort: Invalid value: ["PrioritySort"]: must be the same for all profiles',
    ),
    "queue sort args differ between profiles": (
        "{profiles: ["
        "{schedulerName: a, plugins: {queueSort: {disabled: [{name: '*'}], enabled: [{name: CustomSort}]}}},"
        "{schedulerName: b, plugins: {queueSort: {disabled: [{name: '*'}], enabled: [{name: CustomSort}]}},"
        " pluginConfig: [{name: CustomSort, args: {order: desc}}]}]}",
        "profiles[1].pluginConfig",
        'profiles[1].pluginConfig: Invalid value: "CustomSort": queueSort args must be the same for all profiles',
    ),
}  # fmt: skip


@pytest.mark.parametrize(("patch", "field", "message"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_invalid_configurations_are_rejected_naming_the_field(
    patch: str, field: str, message: str | None
) -> None:
    body = yaml.safe_load(patch)
    doc = {**HEAD, **body} if isinstance(body, dict) else body
    with pytest.raises(ConfigError) as err:
        parse(doc)
    assert err.value.field == field
    if message is not None:
        assert str(err.value) == message
    assert str(err.value).startswith(f"{field}: " if field else "")


def test_unknown_fields_list_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        parse(doc_of("{profiles: [{schedulerName: a, plugin: {}}]}"))
    assert (
        err.value.detail
        == "unknown field; known fields: schedulerName, percentageOfNodesToScore, plugins, pluginConfig"
    )


def test_queue_sort_with_the_same_args_everywhere_is_accepted() -> None:
    sort = "{queueSort: {disabled: [{name: '*'}], enabled: [{name: CustomSort}]}}"
    cfg = parse(
        doc_of(f"""
        profiles:
        - {{schedulerName: a, plugins: {sort}, pluginConfig: [{{name: CustomSort, args: {{order: asc}}}}]}}
        - {{schedulerName: b, plugins: {sort}}}
        """)
    )
    assert [p.plugin_args["CustomSort"] for p in cfg.profiles] == ["asc", "asc"]
    assert [p.plugins["queueSort"] for p in cfg.profiles] == [[PluginRef("CustomSort")]] * 2


# ----------------------------------------------------------------------------- the example files


def _nrt_points(*, reserve: bool, weight: int = 1, filter_: list[str] | None = None) -> dict[str, list[Any]]:
    return {
        **DEFAULT_POINTS,
        "preFilter": [*DEFAULT_POINTS["preFilter"], NRT],
        "filter": filter_ or [*DEFAULT_POINTS["filter"], NRT],
        "score": [*DEFAULT_POINTS["score"], (NRT, weight)],
        **({"reserve": [NRT]} if reserve else {}),
        "postBind": [NRT],
    }


EXAMPLE_CASES: dict[str, tuple[list[tuple[str, dict[str, list[Any]], Any]], dict[str, Any]]] = {
    "nrt-without-cache.yaml": (
        [("topo-aware-scheduler", _nrt_points(reserve=False), TopologyArgs("LeastAllocated"))],
        {"leader_elect": False, "kubeconfig": "/etc/kubernetes/scheduler.conf"},
    ),
    "nrt-with-cache.yaml": (
        [
            (
                "topo-aware-scheduler",
                _nrt_points(reserve=True),
                TopologyArgs(
                    "LeastAllocated",
                    5,
                    (
                        ("foreignPodsDetect", "OnlyExclusiveResources"),
                        ("informerMode", "Dedicated"),
                        ("resyncMethod", "OnlyExclusiveResources"),
                    ),
                ),
            )
        ],
        {"leader_elect": True, "lease": ("topo-aware-scheduler", "numaresources"), "qps": (100.0, 200)},
    ),
    "nrt-v1beta3.yaml": (
        [
            (
                "topo-aware-scheduler",
                {**_nrt_points(reserve=False), "postBind": []},
                TopologyArgs("MostAllocated"),
            )
        ],
        {
            "leader_elect": False,
            "api_version": "kubescheduler.config.k8s.io/v1beta3",
            "kubeconfig": "/etc/kubernetes/scheduler.conf",
        },
    ),
    "two-profiles.yaml": (
        [
            ("default-scheduler", DEFAULT_POINTS, None),
            (
                "topo-aware-scheduler",
                _nrt_points(
                    reserve=True,
                    weight=5,
                    filter_=["NodeUnschedulable", "TaintToleration", "NodeResourcesFit", NRT],
                ),
                TopologyArgs("LeastNUMANodes"),
            ),
        ],
        {"leader_elect": False, "percentage": (50, [None, 100])},
    ),
}


def test_every_example_file_has_a_golden_case() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == sorted(EXAMPLE_CASES)


@pytest.mark.parametrize(("name", "case"), EXAMPLE_CASES.items(), ids=EXAMPLE_CASES.keys())
def test_example_files_resolve_as_expected(name: str, case: tuple[list[Any], dict[str, Any]]) -> None:
    profiles, settings = case
    cfg = config.load(EXAMPLES / name, REGISTRY, NOT_IMPLEMENTED_PLUGINS, UPSTREAM_DEFAULTS)
    assert [p.scheduler_name for p in cfg.profiles] == [p[0] for p in profiles]
    for profile, (_, expected_points, nrt_args) in zip(cfg.profiles, profiles, strict=True):
        assert points(profile) == {k: v for k, v in expected_points.items() if v}
        assert profile.plugin_args.get(NRT) == nrt_args
        assert profile.skipped == SKIPPED_DEFAULTS
    assert cfg.leader_election.leader_elect is settings["leader_elect"]
    assert cfg.api_version == settings.get("api_version", V1)
    assert cfg.client_connection.kubeconfig == settings.get("kubeconfig", "")
    if "lease" in settings:
        le = cfg.leader_election
        assert (le.resource_name, le.resource_namespace) == settings["lease"]
    if "qps" in settings:
        assert (cfg.client_connection.qps, cfg.client_connection.burst) == settings["qps"]
    if "percentage" in settings:
        overall, per_profile = settings["percentage"]
        assert cfg.percentage_of_nodes_to_score == overall
        assert [p.percentage_of_nodes_to_score for p in cfg.profiles] == per_profile


# ----------------------------------------------------------------------------- files and kubeconfig


def test_load_reads_json_too(tmp_path: Path) -> None:
    path = tmp_path / "sched.json"
    path.write_text(json.dumps({**HEAD, "profiles": [{"schedulerName": "j"}]}))
    assert (
        config.load(path, REGISTRY, NOT_IMPLEMENTED_PLUGINS, UPSTREAM_DEFAULTS).profiles[0].scheduler_name
        == "j"
    )


LOAD_ERRORS = {
    "missing file": ("absent.yaml", None, "cannot read scheduler configuration {path}: No such file or directory"),
    "broken YAML": ("c.yaml", "profiles: [\n", "scheduler configuration {path} is not valid YAML: "),
    "key given twice": ("c.yaml", "kind: A\nkind: B\n", "scheduler configuration {path} is not valid YAML: "),
    "JSON key given twice": ("c.json", '{"kind": "A", "kind": "B"}',
                             "scheduler configuration {path} is not valid JSON: duplicate key 'kind'"),
    "empty file": ("c.yaml", "", "expected a KubeSchedulerConfiguration object, got null"),
}  # fmt: skip


@pytest.mark.parametrize(("name", "text", "message"), LOAD_ERRORS.values(), ids=LOAD_ERRORS.keys())
def test_load_errors_name_the_file(tmp_path: Path, name: str, text: str | None, message: str) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as err:
        config.load(path, REGISTRY)
    assert err.value.field == ""
    assert str(err.value).startswith(message.format(path=path))


def test_duplicate_keys_are_reported_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: x\nprofiles:\n- schedulerName: a\n  schedulerName: b\n")
    with pytest.raises(ConfigError) as err:
        config.load(path, REGISTRY)
    assert "duplicate key 'schedulerName'" in str(err.value)
    assert "line 4" in str(err.value)


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        apiVersion: {V1}
        kind: KubeSchedulerConfiguration
        profiles:
        - &base
          schedulerName: a
          plugins: {{multiPoint: {{enabled: [{{name: {NRT}}}]}}}}
        - <<: *base
          schedulerName: b
        """)
    )
    cfg = config.load(path, REGISTRY, NOT_IMPLEMENTED_PLUGINS, UPSTREAM_DEFAULTS)
    assert [(p.scheduler_name, [r.name for r in p.plugins["reserve"]]) for p in cfg.profiles] == [
        ("a", [NRT]),
        ("b", [NRT]),
    ]


KUBECONFIG_CASES = {
    "clientConnection.kubeconfig wins": ("/etc/k.conf", {"KUBECONFIG": "/env.conf"}, "/etc/k.conf"),
    "then KUBECONFIG, as given": ("", {"KUBECONFIG": "/a.conf:/b.conf"}, "/a.conf:/b.conf"),
    "empty KUBECONFIG is unset": ("", {"KUBECONFIG": ""}, None),
    "else in-cluster": ("", {}, None),
}


@pytest.mark.parametrize(
    ("kubeconfig", "environ", "expected"), KUBECONFIG_CASES.values(), ids=KUBECONFIG_CASES.keys()
)
def test_kubeconfig_source(kubeconfig: str, environ: dict[str, str], expected: str | None) -> None:
    cfg = SchedulerConfiguration(profiles=[], client_connection=ClientConnection(kubeconfig=kubeconfig))
    assert kubeconfig_source(cfg, environ) == expected
