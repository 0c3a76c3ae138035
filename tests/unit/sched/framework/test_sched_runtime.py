"""The framework runtime: the scheduling cycle, FitError texts, preemption, scoring and the other points."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from nrop.sched.config.profile import PluginRef, ProfileConfig
from nrop.sched.framework import registry
from nrop.sched.framework.cycle import FitError, num_feasible_nodes_to_find, select_host
from nrop.sched.framework.interface import (
    ActionType,
    ClusterEvent,
    CycleState,
    NodeInfo,
    PodInfo,
    Status,
    implements,
)
from nrop.sched.framework.runtime import Profile, build_profile

# framework.EXTENSION_POINTS has no "preEnqueue" yet: PreEnqueue plugins are found by their method.
POINTS = (
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "bind",
    "postBind",
)
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def node(
    name: str, cpu: str = "4", memory: str = "8Gi", *, taints=None, labels=None, pods: str = "110"
) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def pod(name: str = "p", cpu: str | None = None, *, priority: int = 0, nominated: str = "", **spec) -> dict:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    spec = {
        "containers": [{"name": "c", "image": "pause", "resources": resources}],
        "priority": priority,
        **spec,
    }
    status = {"nominatedNodeName": nominated} if nominated else {}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": status,
    }


class Recorder:
    """A test plugin recording its calls; ``verdicts`` maps node name -> filter status."""

    def __init__(
        self,
        name: str = "Recorder",
        verdicts: dict[str, Status] | None = None,
        scores: dict[str, int] | None = None,
    ):
        self.name = name
        self.verdicts = verdicts or {}
        self.node_scores = scores or {}
        self.calls: list[tuple[str, str]] = []

    def filter(self, state, p, node_info):
        self.calls.append(("filter", node_info.name))
        return self.verdicts.get(node_info.name, Status.success())

    def score(self, state, p, node_info):
        return self.node_scores.get(node_info.name, 0), Status.success()

    def reserve(self, state, p, node_name):
        self.calls.append(("reserve", node_name))
        return self.verdicts.get(node_name, Status.success())

    def unreserve(self, state, p, node_name):
        self.calls.append(("unreserve", node_name))

    async def bind(self, state, p, node_name):
        self.calls.append(("bind", node_name))
        return self.verdicts.get("bind", Status.success())

    def post_bind(self, state, p, node_name):
        self.calls.append(("postBind", node_name))


def default_profile(
    *extra: Any, weights: dict[str, int] | None = None, rng: random.Random | None = None, **kwargs
) -> Profile:
    """Upstream's default profile, restricted to the plugins we implement, plus ``extra`` plugins."""
    plugins = [
        (registry.IN_TREE[d.name](), d.weight)
        for d in registry.DEFAULT_MULTI_POINT
        if d.name in registry.IN_TREE
    ]
    plugins.extend((p, (weights or {}).get(p.name, 1)) for p in extra)
    by_point = {point: [(p, w) for p, w in plugins if implements(type(p), point)] for point in POINTS}
    by_point["preEnqueue"] = [(p, w) for p, w in plugins if hasattr(p, "pre_enqueue")]
    return Profile("default-scheduler", by_point, rng=rng or random.Random(7), **kwargs)


def infos(*nodes: dict, pods: dict[str, list[dict]] | None = None) -> list[NodeInfo]:
    return [NodeInfo.of(n, (pods or {}).get(n["metadata"]["name"], [])) for n in nodes]


def cluster(worker_pods: dict[str, list[dict]] | None = None) -> list[NodeInfo]:
    """A tainted control plane and two 4-cpu workers."""
    return infos(node("cp", taints=[CONTROL_PLANE_TAINT]), node("w1"), node("w2"), pods=worker_pods)


# ------------------------------------------------------------------------------ pure pieces


@pytest.mark.parametrize(
    ("fit", "message"),
    [
        pytest.param(
            FitError(
                3,
                {
                    "cp": Status.unresolvable(
                        "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
                    ),
                    "w1": Status.unschedulable("Insufficient cpu"),
                    "w2": Status.unschedulable("Insufficient cpu"),
                },
                post_filter_msg="preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            ),
            # upstream prints the inner FitError's period and then its own: ".."
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..",
            id="upstream-example",
        ),
        pytest.param(
            FitError(
                2,
                {
                    "a": Status.unschedulable("Insufficient cpu", "Insufficient memory"),
                    "b": Status.unschedulable("Insufficient memory"),
                },
            ),
            "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory.",
            id="every-reason-counts",
        ),
        pytest.param(
            FitError(
                3, {}, pre_filter_msg="pod affinity terms conflict", absent_status=Status.unresolvable("x")
            ),
            "0/3 nodes are available: pod affinity terms conflict.",
            id="prefilter",
        ),
        pytest.param(
            FitError(
                5,
                {"n1": Status.unschedulable("Insufficient cpu")},
                absent_status=Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            ),
            "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="absent-nodes",
        ),
        pytest.param(
            FitError(10, {f"n{i}": Status.unschedulable("Too many pods") for i in range(10)}),
            "0/10 nodes are available: 10 Too many pods.",
            id="sorted-as-strings",
        ),
        pytest.param(
            FitError(
                12,
                {
                    **{f"a{i}": Status.unschedulable("b") for i in range(10)},
                    "x": Status.unschedulable("a"),
                    "y": Status.unschedulable("a"),
                },
            ),
            "0/12 nodes are available: 10 b, 2 a.",
            id="string-sort-not-numeric",
        ),
        pytest.param(FitError(1, {}), "0/1 nodes are available:", id="nothing-known"),
    ],
)
def test_fit_error_message(fit, message):
    assert fit.message() == message


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        pytest.param(0, 3, 3, id="few-nodes-all"),
        pytest.param(0, 99, 99, id="below-minimum-all"),
        pytest.param(0, 100, 100, id="minimum"),
        pytest.param(0, 1000, 420, id="adaptive-42-percent"),
        pytest.param(0, 5000, 500, id="adaptive-10-percent"),
        pytest.param(0, 6000, 300, id="adaptive-floor-5-percent"),
        pytest.param(10, 500, 100, id="configured-floor-100"),
        pytest.param(30, 1000, 300, id="configured"),
    ],
)
def test_num_feasible_nodes_to_find(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_select_host_breaks_ties_at_random():
    rng = random.Random(1)
    picks = {select_host([("a", 5), ("b", 9), ("c", 9), ("d", 9)], rng) for _ in range(200)}
    assert picks == {"b", "c", "d"}
    assert select_host([("a", 5), ("b", 3)], rng) == "a"


# ------------------------------------------------------------------------------ the cycle


def test_schedules_on_the_only_fitting_node_without_scoring():
    nodes = cluster({"w1": [pod("big", "3")]})
    result = default_profile().schedule(CycleState(), pod(cpu="2"), nodes)
    assert (result.node, result.evaluated, result.feasible, result.error) == ("w2", 3, 1, None)


def test_scores_prefer_least_allocated_node():
    nodes = infos(node("w1"), node("w2"), node("w3"), pods={"w1": [pod("a", "2")], "w3": [pod("b", "1")]})
    result = default_profile().schedule(CycleState(), pod(cpu="1"), nodes)
    assert (result.node, result.evaluated, result.feasible) == ("w2", 3, 3)


def test_pod_larger_than_any_node_gets_upstream_message():
    result = default_profile().schedule(CycleState(), pod(cpu="5"), cluster())
    assert result.node is None
    assert result.error.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
    )
    assert result.error.unschedulable_plugins == {"TaintToleration", "NodeResourcesFit"}
    assert result.nominated_node == ""


def test_full_nodes_without_lower_priority_pods():
    nodes = cluster({"w1": [pod("a", "3", priority=5)], "w2": [pod("b", "3", priority=5)]})
    result = default_profile().schedule(CycleState(), pod(cpu="2", priority=5), nodes)
    assert result.error.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.."
    )


def test_preemption_nominates_node_and_lists_fewest_victims():
    nodes = cluster(
        {
            "w1": [
                pod("low1", "1", priority=1),
                pod("low2", "2", priority=1),
                pod("high", "1", priority=100),
            ],
            "w2": [pod("mid", "3", priority=50)],
        }
    )
    result = default_profile().schedule(CycleState(), pod("pre", cpu="2", priority=10), nodes)
    assert result.node is None
    # w2's only victim has priority 50 > 1, so w1 wins; reprieving low1 (more important: same
    # priority, first listed) would not leave 2 cpus, low2 alone suffices.
    assert result.nominated_node == "w1"
    assert [v["metadata"]["name"] for v in result.victims] == ["low2"]
    assert result.error.post_filter_msg == ""
    assert result.error.message().endswith("2 Insufficient cpu.")


def test_preemption_policy_never():
    nodes = cluster({"w1": [pod("low", "3")], "w2": [pod("l2", "3")]})
    result = default_profile().schedule(
        CycleState(), pod(cpu="2", priority=10, preemptionPolicy="Never"), nodes
    )
    assert result.error.post_filter_msg == "preemption: not eligible due to preemptionPolicy=Never."
    assert (result.nominated_node, result.victims) == (None, ())


def test_prefilter_narrowing_counts_other_nodes_as_absent():
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w2"]}]}
                ]
            }
        }
    }
    nodes = cluster({"w2": [pod("big", "3", priority=9)]})
    result = default_profile().schedule(CycleState(), pod(cpu="2", affinity=affinity), nodes)
    assert result.evaluated == 1
    assert result.error.message() == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.."
    )


def test_prefilter_rejection_message():
    term = {
        "matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["w1"]},
            {"key": "metadata.name", "operator": "In", "values": ["w2"]},
        ]
    }
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    result = default_profile().schedule(CycleState(), pod(affinity=affinity), cluster())
    assert (result.evaluated, result.error.unschedulable_plugins) == (0, {"NodeAffinity"})
    assert result.error.message() == (
        "0/3 nodes are available: pod affinity terms conflict. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
    )


def test_filter_error_aborts_the_cycle():
    broken = Recorder("Broken", {"w1": Status.error("boom")})
    result = default_profile(broken).schedule(CycleState(), pod(), cluster())
    assert (result.node, result.error, result.message) == (None, None, 'running "Broken" filter plugin: boom')


def test_no_nodes():
    result = default_profile().schedule(CycleState(), pod(), [])
    assert (result.node, result.error, result.message) == (None, None, "no nodes available to schedule pods")


def test_start_index_rotates_over_large_clusters():
    recorder = Recorder()
    profile = default_profile(recorder)
    nodes = infos(*(node(f"n{i:03}") for i in range(250)))
    first = profile.schedule(CycleState(), pod(cpu="1"), nodes)
    seen_first = [n for kind, n in recorder.calls if kind == "filter"]
    recorder.calls.clear()
    second = profile.schedule(CycleState(), pod(cpu="1"), nodes)
    assert second.node is not None
    seen_second = [n for kind, n in recorder.calls if kind == "filter"]
    # 250 nodes: 50 - 250/125 = 48% -> 120 feasible nodes are enough
    assert (first.evaluated, first.feasible) == (120, 120)
    assert seen_first == [f"n{i:03}" for i in range(120)]
    assert seen_second == [f"n{i:03}" for i in range(120, 240)]


class Skipping(Recorder):
    def pre_filter(self, state, p):
        return Status.skip()


def test_prefilter_skip_skips_the_filter():
    skipping = Skipping("Skipping")
    state = CycleState()
    result = default_profile(skipping).schedule(state, pod(), cluster())
    assert state.skip_filter_plugins >= {"Skipping", "NodePorts"}
    assert skipping.calls == []
    assert result.node in ("w1", "w2")


def test_nominated_pods_of_higher_priority_hold_their_room():
    nodes = infos(node("w1", cpu="2"), node("w2", cpu="2"))
    waiting = PodInfo.of(pod("waiting", "2", priority=100, nominated="w1"))
    lower = PodInfo.of(pod("lower", "2", priority=0, nominated="w2"))
    result = default_profile().schedule(
        CycleState(), pod(cpu="2", priority=10), nodes, nominated={"w1": [waiting], "w2": [lower]}
    )
    assert (result.node, result.feasible) == ("w2", 1)
    again = default_profile().schedule(
        CycleState(), pod(cpu="2", priority=10), nodes[:1], nominated={"w1": [waiting]}
    )
    assert again.error.statuses == {"w1": Status.unschedulable("Insufficient cpu", plugin="NodeResourcesFit")}


def test_the_nominated_pod_itself_does_not_block():
    nodes = infos(node("w1", cpu="2"))
    me = pod("me", "2", priority=100, nominated="w1")
    result = default_profile().schedule(CycleState(), me, nodes, nominated={"w1": [PodInfo.of(me)]})
    assert result.node == "w1"


def test_nominated_node_is_tried_first():
    recorder = Recorder()
    result = default_profile(recorder).schedule(CycleState(), pod(cpu="1", nominated="w2"), cluster())
    assert (result.node, result.evaluated) == ("w2", 1)
    assert recorder.calls == [("filter", "w2")]


def test_score_weights_and_range():
    favourite = Recorder("Favourite", scores={"w1": 0, "w2": 10})
    profile = default_profile(favourite, weights={"Favourite": 50})
    assert profile.schedule(CycleState(), pod(cpu="1"), infos(node("w1"), node("w2"))).node == "w2"
    wild = Recorder("Wild", scores={"w1": 101})
    result = default_profile(wild).schedule(CycleState(), pod(), infos(node("w1"), node("w2")))
    assert result.message.startswith('plugin "Wild" returns an invalid score 101')


# ------------------------------------------------------------------------------ around the cycle


def test_reserve_unreserve_bind_post_bind_order():
    first, second = Recorder("First"), Recorder("Second", {"n1": Status.unschedulable("no room")})
    plugins = {
        "queueSort": [(registry.IN_TREE["PrioritySort"](), 0)],
        "reserve": [(first, 0), (second, 0)],
        "bind": [(first, 0)],
        "postBind": [(first, 0), (second, 0)],
    }
    profile = Profile("s", plugins)
    status = profile.run_reserve(CycleState(), pod(), "n1")
    assert status == Status.unschedulable("no room", plugin="Second")
    profile.run_unreserve(CycleState(), pod(), "n1")
    assert first.calls == [("reserve", "n1"), ("unreserve", "n1")]
    assert second.calls == [("reserve", "n1"), ("unreserve", "n1")]
    first.calls.clear()
    assert asyncio.run(profile.run_bind(CycleState(), pod(), "n2")).ok
    profile.run_post_bind(CycleState(), pod(), "n2")
    assert first.calls == [("bind", "n2"), ("postBind", "n2")]


def test_unreserve_runs_in_reverse_order():
    log: list[str] = []

    class Named(Recorder):
        def unreserve(self, state, p, node_name):
            log.append(self.name)

    plugins = {
        "queueSort": [(registry.IN_TREE["PrioritySort"](), 0)],
        "bind": [(Recorder(), 0)],
        "reserve": [(Named("A"), 0), (Named("B"), 0)],
    }
    Profile("s", plugins).run_unreserve(CycleState(), pod(), "n")
    assert log == ["B", "A"]


def test_bind_skips_to_the_next_binder():
    skipper = Recorder("Skipper", {"bind": Status.skip()})
    binder = Recorder("Binder")
    profile = Profile(
        "s", {"queueSort": [(registry.IN_TREE["PrioritySort"](), 0)], "bind": [(skipper, 0), (binder, 0)]}
    )
    assert asyncio.run(profile.run_bind(CycleState(), pod(), "n")).ok
    assert binder.calls == [("bind", "n")]
    failing = Profile(
        "s",
        {
            "queueSort": [(registry.IN_TREE["PrioritySort"](), 0)],
            "bind": [(Recorder("F", {"bind": Status.error("conflict")}), 0)],
        },
    )
    assert asyncio.run(failing.run_bind(CycleState(), pod(), "n")) == Status.error(
        'running Bind plugin "F": conflict', "F"
    )


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        pytest.param({"bind": [(Recorder(), 0)]}, "exactly one queueSort plugin", id="no-queue-sort"),
        pytest.param(
            {"queueSort": [(registry.IN_TREE["PrioritySort"](), 0)]},
            "at least one bind plugin",
            id="no-binder",
        ),
    ],
)
def test_profile_requires_sort_and_bind(plugins, message):
    with pytest.raises(ValueError, match=message):
        Profile("s", plugins)


def test_events_and_pre_enqueue():
    profile = default_profile(Recorder("Custom"))
    events = profile.events_to_register()
    assert events["Custom"] == [ClusterEvent("*", ActionType.ALL)]
    assert events["NodeResourcesFit"] == [
        ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE),
        ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    assert events["SchedulingGates"] == [ClusterEvent("Pod", ActionType.UPDATE)]
    assert "NodeResourcesBalancedAllocation" not in events  # a score plugin rejects nothing
    gated = profile.pre_enqueue(pod(schedulingGates=[{"name": "g"}]))
    assert gated == Status.unresolvable("waiting for scheduling gates: [g]", plugin="SchedulingGates")
    assert profile.pre_enqueue(pod()).ok


class Extended(Recorder):
    """A PreFilter plugin with upstream's PreFilter extensions, logging what they see."""

    def pre_filter(self, state, p):
        state.write("changes", [])
        return Status.success()

    def add_pod(self, state, p, info, node_info):
        state.read("changes").append(f"+{info.key}")
        self.calls.append(("add_pod", info.key))
        return Status.success()

    def remove_pod(self, state, p, info, node_info):
        state.read("changes").append(f"-{info.key}")
        self.calls.append(("remove_pod", info.key))
        return Status.success()


def test_preemption_runs_the_prefilter_extensions():
    extended = Extended("Extended")
    nodes = infos(
        node("w1", cpu="2"), pods={"w1": [pod("keep", "1", priority=1), pod("evict", "1", priority=1)]}
    )
    result = default_profile(extended).schedule(CycleState(), pod("pre", cpu="1", priority=9), nodes)
    assert result.nominated_node == "w1"
    assert [v["metadata"]["name"] for v in result.victims] == ["evict"]
    ext = [c for c in extended.calls if c[0] in ("add_pod", "remove_pod")]
    assert ext == [
        ("remove_pod", "default/keep"),
        ("remove_pod", "default/evict"),
        ("add_pod", "default/keep"),
        ("add_pod", "default/evict"),
        ("remove_pod", "default/evict"),
    ]


def test_nominated_pass_runs_add_pod():
    extended = Extended("Extended")
    waiting = PodInfo.of(pod("waiting", "1", priority=100, nominated="w1"))
    state = CycleState()
    result = default_profile(extended).schedule(
        state, pod(cpu="1"), infos(node("w1")), nominated={"w1": [waiting]}
    )
    assert result.node == "w1"
    assert ("add_pod", "default/waiting") in extended.calls
    assert state.read("changes") == []  # the nominated pass worked on a copy of the state


class Resyncing(Recorder):
    def __init__(self, name, period):
        super().__init__(name)
        self.period = period

    def resync_period(self):
        return self.period


def test_periodic_tasks():
    every, never = Resyncing("Every", 5.0), Resyncing("Never", None)
    profile = default_profile(every, never)
    assert profile.periodic_tasks() == [(every, 5.0)]


def test_build_profile_from_a_resolved_configuration():
    most = registry.REGISTRY["NodeResourcesFit"].parse_args(
        {"scoringStrategy": {"type": "MostAllocated"}}, "a"
    )
    config = ProfileConfig(
        "topo-aware-scheduler",
        {
            "preEnqueue": [PluginRef("SchedulingGates")],
            "queueSort": [PluginRef("PrioritySort")],
            "preFilter": [PluginRef("NodeResourcesFit")],
            "filter": [PluginRef("NodeResourcesFit"), PluginRef("TaintToleration")],
            "preScore": [PluginRef("NodeResourcesFit"), PluginRef("TaintToleration")],
            "score": [PluginRef("NodeResourcesFit", 1), PluginRef("TaintToleration", 3)],
            "bind": [PluginRef("DefaultBinder")],
        },
        {"NodeResourcesFit": most},
        percentage_of_nodes_to_score=None,
    )
    profile = build_profile(
        config, registry.REGISTRY, None, rng=random.Random(1), percentage_of_nodes_to_score=30
    )
    assert (profile.name, profile.percentage_of_nodes_to_score) == ("topo-aware-scheduler", 30)
    nodes = infos(node("w1"), node("w2"), pods={"w1": [pod("a", "2")]})
    assert profile.schedule(CycleState(), pod(cpu="1"), nodes).node == "w1"  # MostAllocated packs
    gated = profile.pre_enqueue(pod(schedulingGates=[{"name": "g"}]))
    assert gated.plugin == "SchedulingGates"
    assert set(profile.events_to_register()) == {"NodeResourcesFit", "TaintToleration", "SchedulingGates"}
