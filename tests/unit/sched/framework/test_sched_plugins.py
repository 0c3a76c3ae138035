"""The in-tree plugins: filters with upstream reasons, hand-computed scores, args parsing, the registry."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nrop.sched.errors import ConfigError
from nrop.sched.framework import registry
from nrop.sched.framework.interface import (
    Code,
    CycleState,
    NodeInfo,
    Status,
    implements,
    non_missing_pod_requests,
)
from nrop.sched.framework.plugins.balancedallocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
)
from nrop.sched.framework.plugins.defaultbinder import DefaultBinder
from nrop.sched.framework.plugins.defaultpreemption import DefaultPreemption, pick_candidate
from nrop.sched.framework.plugins.helper import default_normalize_score
from nrop.sched.framework.plugins.nodeaffinity import NodeAffinity
from nrop.sched.framework.plugins.nodename import NodeName
from nrop.sched.framework.plugins.nodeports import NodePorts, conflicts
from nrop.sched.framework.plugins.noderesourcesfit import NodeResourcesFit, broken_linear
from nrop.sched.framework.plugins.nodeunschedulable import NodeUnschedulable
from nrop.sched.framework.plugins.prioritysort import PrioritySort
from nrop.sched.framework.plugins.schedulinggates import SchedulingGates
from nrop.sched.framework.plugins.tainttoleration import TaintToleration

GI = 1024**3
MI = 1024**2


def node(name: str = "n1", *, alloc: dict[str, Any] | None = None, labels=None, taints=None, **spec) -> dict:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi"}
    allocatable.update(alloc or {})
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"allocatable": allocatable},
    }


def container(requests: dict | None = None, limits: dict | None = None, **extra) -> dict:
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "pause", "resources": resources, **extra}


def pod(name: str = "p", *, containers=None, init=None, priority: int | None = None, **spec) -> dict:
    spec["containers"] = containers if containers is not None else [container()]
    if init:
        spec["initContainers"] = init
    if priority is not None:
        spec["priority"] = priority
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {},
    }


def run_filter(plugin: Any, p: dict, n: NodeInfo) -> Status:
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        out = plugin.pre_filter(state, p)
        status = out if isinstance(out, Status) else out[0]
        if status.code == Code.SKIP:
            return Status.success()
        assert status.ok, status
    return plugin.filter(state, p, n)


def scores_of(plugin: Any, p: dict, nodes: list[NodeInfo], normalize: bool = True) -> dict[str, int] | None:
    state = CycleState()
    if hasattr(plugin, "pre_score"):
        status = plugin.pre_score(state, p, nodes)
        if status.code == Code.SKIP:
            return None
        assert status.ok
    scores = {}
    for n in nodes:
        value, status = plugin.score(state, p, n)
        assert status.ok
        scores[n.name] = value
    if normalize and hasattr(plugin, "normalize_score"):
        assert plugin.normalize_score(state, p, scores).ok
    return scores


CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taints", "tolerations", "reason"),
    [
        pytest.param(
            [CONTROL_PLANE],
            [],
            "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
            id="control-plane",
        ),
        pytest.param(
            [CONTROL_PLANE],
            [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
            None,
            id="tolerated",
        ),
        pytest.param(
            [{"key": "testkeyNoExec", "value": "v", "effect": "NoExecute"}],
            [],
            "node(s) had untolerated taint {testkeyNoExec: v}",
            id="no-execute",
        ),
        pytest.param(
            [{"key": "soft", "effect": "PreferNoSchedule"}], [], None, id="prefer-no-schedule-not-filtered"
        ),
        pytest.param(
            [
                {"key": "testkey", "value": "val1", "effect": "NoSchedule"},
                {"key": "other", "value": "x", "effect": "NoSchedule"},
            ],
            [{"key": "testkey", "operator": "Exists", "effect": "NoSchedule"}],
            "node(s) had untolerated taint {other: x}",
            id="first-untolerated-in-node-order",
        ),
        pytest.param(
            [{"key": "testkey", "value": "val1", "effect": "NoExecute"}],
            [{"operator": "Exists"}],
            None,
            id="tolerate-everything",
        ),
    ],
)
def test_taint_toleration_filter(taints, tolerations, reason):
    status = run_filter(TaintToleration(), pod(tolerations=tolerations), NodeInfo.of(node(taints=taints)))
    if reason is None:
        assert status.ok
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,)


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        # raw intolerable PreferNoSchedule counts 0, 1, 2 -> reversed: 100, 50, 0
        pytest.param([], {"clean": 100, "one": 50, "two": 0}, id="counts-reversed"),
        pytest.param(
            [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}],
            {"clean": 100, "one": 100, "two": 0},
            id="tolerating-a",
        ),
        pytest.param([{"operator": "Exists"}], {"clean": 100, "one": 100, "two": 100}, id="all-zero-all-max"),
        pytest.param(
            [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}],
            {"clean": 100, "one": 50, "two": 0},
            id="other-effect-ignored",
        ),
    ],
)
def test_taint_toleration_score(tolerations, expected):
    soft = [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "value": "x", "effect": "PreferNoSchedule"},
    ]
    nodes = [
        NodeInfo.of(node("clean", taints=[{"key": "hard", "effect": "NoSchedule"}])),
        NodeInfo.of(node("one", taints=soft[:1])),
        NodeInfo.of(node("two", taints=soft)),
    ]
    assert scores_of(TaintToleration(), pod(tolerations=tolerations), nodes) == expected


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        pytest.param({"a": 1, "b": 3, "c": 0}, False, {"a": 33, "b": 100, "c": 0}, id="scale-by-max"),
        pytest.param({"a": 1, "b": 3, "c": 0}, True, {"a": 67, "b": 0, "c": 100}, id="reverse"),
        pytest.param({"a": 0, "b": 0}, False, {"a": 0, "b": 0}, id="all-zero"),
        pytest.param({"a": 0, "b": 0}, True, {"a": 100, "b": 100}, id="all-zero-reverse"),
    ],
)
def test_default_normalize_score(scores, reverse, expected):
    assert default_normalize_score(100, reverse, scores).ok
    assert scores == expected


# ------------------------------------------------------------------------------ node name, unschedulable


@pytest.mark.parametrize(
    ("node_name", "fits"),
    [
        pytest.param("", True, id="unset"),
        pytest.param("n1", True, id="same"),
        pytest.param("n2", False, id="other"),
    ],
)
def test_node_name(node_name, fits):
    status = run_filter(NodeName(), pod(nodeName=node_name), NodeInfo.of(node("n1")))
    assert status.ok is fits
    if not fits:
        assert status == Status.unresolvable("node(s) didn't match the requested node name")


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        pytest.param(False, [], True, id="schedulable"),
        pytest.param(True, [], False, id="cordoned"),
        pytest.param(
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            True,
            id="tolerates-cordon",
        ),
        pytest.param(True, [{"operator": "Exists"}], True, id="tolerates-all"),
        pytest.param(
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
            False,
            id="wrong-effect",
        ),
    ],
)
def test_node_unschedulable(unschedulable, tolerations, fits):
    status = run_filter(
        NodeUnschedulable(), pod(tolerations=tolerations), NodeInfo.of(node(unschedulable=unschedulable))
    )
    assert status.ok is fits
    if not fits:
        assert status == Status.unresolvable("node(s) were unschedulable")


# ------------------------------------------------------------------------------ node affinity


def required(*terms: dict) -> dict:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expr(key: str, op: str, *values: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


LABELS = {"zone": "a", "cores": "16", "gpu": "yes", "weird": "x1"}


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        pytest.param({}, True, id="nothing"),
        pytest.param({"nodeSelector": {"zone": "a"}}, True, id="selector-match"),
        pytest.param({"nodeSelector": {"zone": "a", "gpu": "no"}}, False, id="selector-mismatch"),
        pytest.param({"affinity": required(expr("zone", "In", "a", "b"))}, True, id="in"),
        pytest.param({"affinity": required(expr("zone", "In", "b"))}, False, id="in-miss"),
        pytest.param({"affinity": required(expr("zone", "NotIn", "b"))}, True, id="notin"),
        pytest.param({"affinity": required(expr("missing", "NotIn", "b"))}, True, id="notin-missing-label"),
        pytest.param({"affinity": required(expr("zone", "NotIn", "a"))}, False, id="notin-miss"),
        pytest.param({"affinity": required(expr("gpu", "Exists"))}, True, id="exists"),
        pytest.param({"affinity": required(expr("gpu", "DoesNotExist"))}, False, id="doesnotexist"),
        pytest.param({"affinity": required(expr("cores", "Gt", "8"))}, True, id="gt"),
        pytest.param({"affinity": required(expr("cores", "Gt", "16"))}, False, id="gt-equal"),
        pytest.param({"affinity": required(expr("cores", "Lt", "32"))}, True, id="lt"),
        pytest.param({"affinity": required(expr("weird", "Gt", "0"))}, False, id="gt-non-integer-label"),
        pytest.param(
            {"affinity": required(expr("cores", "Gt", "8", "9"))}, False, id="gt-two-values-invalid"
        ),
        pytest.param({"affinity": required(expr("zone", "In"))}, False, id="in-no-values-invalid"),
        pytest.param({"affinity": required({})}, False, id="empty-term-matches-nothing"),
        pytest.param(
            {"affinity": required(expr("zone", "In", "b"), expr("gpu", "Exists"))}, True, id="terms-ored"
        ),
        pytest.param(
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["a"]},
                            {"key": "gpu", "operator": "DoesNotExist"},
                        ]
                    }
                )
            },
            False,
            id="expressions-anded",
        ),
        pytest.param(
            {
                "affinity": required(
                    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
                )
            },
            False,
            id="fields-notin",
        ),
        pytest.param(
            {"affinity": required({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]})},
            False,
            id="fields-bad-operator",
        ),
        pytest.param(
            {"nodeSelector": {"zone": "b"}, "affinity": required(expr("zone", "In", "a"))},
            False,
            id="selector-and-affinity",
        ),
    ],
)
def test_node_affinity_filter(spec, fits):
    status = run_filter(NodeAffinity(), pod(**spec), NodeInfo.of(node("n1", labels=LABELS)))
    assert status.ok is fits
    if not fits:
        assert status == Status.unresolvable("node(s) didn't match Pod's node affinity/selector")


@pytest.mark.parametrize(
    ("affinity", "expected_status", "expected_nodes"),
    [
        pytest.param(None, Status.skip(), None, id="nothing-skips"),
        pytest.param(required(expr("zone", "In", "a")), Status.success(), None, id="labels-only"),
        pytest.param(
            required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]},
            ),
            Status.success(),
            frozenset({"n1", "n2", "n3"}),
            id="names-union-of-terms",
        ),
        pytest.param(
            required(
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                        {"key": "metadata.name", "operator": "In", "values": ["n2"]},
                    ]
                }
            ),
            Status.unresolvable("pod affinity terms conflict"),
            None,
            id="conflict",
        ),
        pytest.param(
            required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                expr("zone", "In", "a"),
            ),
            Status.success(),
            None,
            id="one-term-without-names",
        ),
    ],
)
def test_node_affinity_pre_filter(affinity, expected_status, expected_nodes):
    spec = {"affinity": affinity} if affinity else {}
    out = NodeAffinity().pre_filter(CycleState(), pod(**spec))
    status, names = (out, None) if isinstance(out, Status) else out
    assert status == expected_status
    assert names == expected_nodes


def test_node_affinity_preferred_score():
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 20, "preference": expr("zone", "In", "a")},
                {"weight": 80, "preference": expr("gpu", "Exists")},
                {"weight": 0, "preference": expr("zone", "Exists")},
            ]
        }
    }
    nodes = [
        NodeInfo.of(node("both", labels={"zone": "a", "gpu": "1"})),
        NodeInfo.of(node("gpu", labels={"gpu": "1"})),
        NodeInfo.of(node("zone", labels={"zone": "a"})),
        NodeInfo.of(node("none")),
    ]
    plugin = NodeAffinity()
    assert scores_of(plugin, pod(affinity=preferred), nodes, normalize=False) == {
        "both": 100,
        "gpu": 80,
        "zone": 20,
        "none": 0,
    }
    assert scores_of(plugin, pod(affinity=preferred), nodes[1:]) == {"gpu": 100, "zone": 25, "none": 0}
    assert scores_of(plugin, pod(), nodes) is None  # nothing preferred: PreScore skips


def test_node_affinity_added_affinity():
    args = NodeAffinity.parse_args(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [expr("pool", "In", "numa")]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": expr("zone", "In", "a")}
                ],
            }
        },
        "args",
    )
    plugin = NodeAffinity(args)
    enforced = run_filter(plugin, pod(), NodeInfo.of(node("n1", labels={"zone": "a"})))
    assert enforced == Status.unresolvable("node(s) didn't match scheduler-enforced node affinity")
    assert run_filter(plugin, pod(), NodeInfo.of(node("n1", labels={"pool": "numa"}))).ok
    nodes = [NodeInfo.of(node("a", labels={"zone": "a"})), NodeInfo.of(node("b"))]
    assert scores_of(plugin, pod(), nodes) == {"a": 100, "b": 0}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param({"foo": 1}, "args.foo", id="unknown-field"),
        pytest.param(
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [expr("a", "Gt", "x")]
                    }
                }
            },
            "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
            id="gt-not-integer",
        ),
        pytest.param(
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": expr("a", "Exists")}
                    ]
                }
            },
            "args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            id="weight-zero",
        ),
    ],
)
def test_node_affinity_bad_args(args, field):
    with pytest.raises(ConfigError) as err:
        NodeAffinity.parse_args(args, "args")
    assert err.value.field == field


# ------------------------------------------------------------------------------ resources fit


def busy_node(name="n1", alloc=None, pods=()) -> NodeInfo:
    return NodeInfo.of(node(name, alloc=alloc), pods)


EXISTING = pod("existing", containers=[container({"cpu": "3", "memory": "6Gi"})])


@pytest.mark.parametrize(
    ("p", "alloc", "existing", "reasons", "code"),
    [
        pytest.param(
            pod(containers=[container({"cpu": "1", "memory": "2Gi"})]),
            None,
            [EXISTING],
            (),
            None,
            id="fits-exactly",
        ),
        pytest.param(
            pod(containers=[container({"cpu": "1001m"})]),
            None,
            [EXISTING],
            ("Insufficient cpu",),
            Code.UNSCHEDULABLE,
            id="cpu",
        ),
        pytest.param(
            pod(containers=[container({"cpu": "2", "memory": "3Gi"})]),
            None,
            [EXISTING],
            ("Insufficient cpu", "Insufficient memory"),
            Code.UNSCHEDULABLE,
            id="cpu-and-memory-order",
        ),
        pytest.param(
            pod(containers=[container({"cpu": "5"})]),
            None,
            [],
            ("Insufficient cpu",),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="above-allocatable-unresolvable",
        ),
        pytest.param(
            pod(), {"pods": "1"}, [EXISTING], ("Too many pods",), Code.UNSCHEDULABLE, id="too-many-pods"
        ),
        pytest.param(
            pod(containers=[container({"cpu": "1"})]),
            {"pods": "1", "cpu": "3"},
            [EXISTING],
            ("Too many pods", "Insufficient cpu"),
            Code.UNSCHEDULABLE,
            id="pods-then-cpu",
        ),
        pytest.param(pod(), {"cpu": "0", "memory": "0"}, [], (), None, id="no-requests-fits-empty-node"),
        pytest.param(
            pod(containers=[container({"ephemeral-storage": "11Gi"})]),
            None,
            [],
            ("Insufficient ephemeral-storage",),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="ephemeral",
        ),
        pytest.param(
            pod(containers=[container({"hugepages-2Mi": "4Mi"}, {"hugepages-2Mi": "4Mi"})]),
            {"hugepages-2Mi": "2Mi"},
            [],
            ("Insufficient hugepages-2Mi",),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="hugepages",
        ),
        pytest.param(
            pod(containers=[container({"hugepages-1Gi": "1Gi"})]),
            {"hugepages-1Gi": "2Gi"},
            [],
            (),
            None,
            id="hugepages-fit",
        ),
        pytest.param(
            pod(containers=[container(limits={"example.com/gpu": "2"})]),
            {"example.com/gpu": "1"},
            [],
            ("Insufficient example.com/gpu",),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="extended-from-limits",
        ),
        pytest.param(
            pod(containers=[container({"example.com/gpu": "1"})]),
            None,
            [],
            ("Insufficient example.com/gpu",),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="extended-absent-on-node",
        ),
        pytest.param(
            pod(containers=[container({"cpu": "500m"})], overhead={"cpu": "600m"}),
            None,
            [EXISTING],
            ("Insufficient cpu",),
            Code.UNSCHEDULABLE,
            id="overhead-counts",
        ),
        pytest.param(
            pod(containers=[container({"cpu": "500m"})], init=[container({"cpu": "1500m"})]),
            None,
            [EXISTING],
            ("Insufficient cpu",),
            Code.UNSCHEDULABLE,
            id="init-container-peak",
        ),
        pytest.param(
            pod(
                containers=[container({"cpu": "600m"})],
                init=[container({"cpu": "500m"}, restartPolicy="Always")],
            ),
            None,
            [EXISTING],
            ("Insufficient cpu",),
            Code.UNSCHEDULABLE,
            id="sidecar-adds",
        ),
        pytest.param(
            pod(
                containers=[container({"cpu": "500m"})],
                init=[container({"cpu": "500m"}, restartPolicy="Always")],
            ),
            None,
            [EXISTING],
            (),
            None,
            id="sidecar-fits",
        ),
    ],
)
def test_resources_fit_filter(p, alloc, existing, reasons, code):
    status = run_filter(NodeResourcesFit(), p, busy_node(alloc=alloc, pods=existing))
    assert status.reasons == reasons
    if code is None:
        assert status.ok
    else:
        assert status.code == code


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        pytest.param({}, False, id="checked"),
        pytest.param({"ignoredResources": ["example.com/gpu"]}, True, id="ignored-resource"),
        pytest.param({"ignoredResourceGroups": ["example.com"]}, True, id="ignored-group"),
        pytest.param({"ignoredResourceGroups": ["other.com"]}, False, id="other-group"),
    ],
)
def test_resources_fit_ignored(args, fits):
    plugin = NodeResourcesFit(NodeResourcesFit.parse_args(args, "args"))
    status = run_filter(plugin, pod(containers=[container({"example.com/gpu": "1"})]), busy_node())
    assert status.ok is fits


def test_hugepages_not_ignored_by_groups():
    plugin = NodeResourcesFit(NodeResourcesFit.parse_args({"ignoredResources": ["hugepages-2Mi"]}, "args"))
    status = run_filter(plugin, pod(containers=[container({"hugepages-2Mi": "2Mi"})]), busy_node())
    assert status.reasons == ("Insufficient hugepages-2Mi",)


def two_resource_node(cpu: str, mem: str, pods=()) -> NodeInfo:
    return NodeInfo.of(node("n", alloc={"cpu": cpu, "memory": mem}), pods)


@pytest.mark.parametrize(
    ("strategy", "p", "n", "expected"),
    [
        # cpu (4000-2000)*100/4000 = 50, memory (8Gi-4Gi)*100/8Gi = 50
        pytest.param(
            None,
            pod(containers=[container({"cpu": "1", "memory": "2Gi"})]),
            two_resource_node("4", "8Gi", [pod("e", containers=[container({"cpu": "1", "memory": "2Gi"})])]),
            50,
            id="least-allocated",
        ),
        # non-zero defaults: cpu 100m of 1000m -> 90, memory 200Mi of 1000Mi -> 80, mean 85
        pytest.param(None, pod(), two_resource_node("1", "1000Mi"), 85, id="least-non-zero-defaults"),
        # two containers without requests: 200m -> 80, 400Mi of 1000Mi -> 60, mean 70
        pytest.param(
            None,
            pod(containers=[container(), container()]),
            two_resource_node("1", "1000Mi"),
            70,
            id="non-zero-per-container",
        ),
        # the node's best-effort pod counts 100m/200Mi too: cpu 800 -> 20... (1000-200)*100/1000=80, mem (1000-400)/1000 -> 60
        pytest.param(None, pod(), two_resource_node("1", "1000Mi", [pod("e")]), 70, id="non-zero-on-node"),
        pytest.param(
            None,
            pod(containers=[container({"cpu": "5"})]),
            two_resource_node("4", "8Gi"),
            48,
            id="over-capacity-scores-zero",
        ),
        pytest.param(
            {"type": "MostAllocated"},
            pod(containers=[container({"cpu": "2", "memory": "4Gi"})]),
            two_resource_node("4", "8Gi"),
            50,
            id="most-allocated",
        ),
        # (75*3 + 25*1) / 4 = 62
        pytest.param(
            {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
            },
            pod(containers=[container({"cpu": "3", "memory": "2Gi"})]),
            two_resource_node("4", "8Gi"),
            62,
            id="most-allocated-weighted",
        ),
        # linear 0..10 shape scaled to 0..100: cpu 50%, memory 25% -> round(37.5) = 38
        pytest.param(
            {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
            pod(containers=[container({"cpu": "2", "memory": "2Gi"})]),
            two_resource_node("4", "8Gi"),
            38,
            id="requested-to-capacity-ratio",
        ),
        # extended resource the node offers: least allocated 1 of 4 -> 75; cpu 100m default of 4000 -> 97; mean 86
        pytest.param(
            {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}],
            },
            pod(containers=[container({"example.com/gpu": "1"})]),
            NodeInfo.of(node("n", alloc={"example.com/gpu": "4"})),
            86,
            id="extended-resource",
        ),
    ],
)
def test_resources_fit_score(strategy, p, n, expected):
    args = NodeResourcesFit.parse_args({"scoringStrategy": strategy} if strategy else None, "args")
    assert scores_of(NodeResourcesFit(args), p, [n]) == {"n": expected}


@pytest.mark.parametrize(
    ("shape", "p", "expected"),
    [
        pytest.param([(0, 100), (100, 0)], 30, 70, id="decreasing"),
        pytest.param([(0, 100), (100, 0)], 33, 67, id="decreasing-truncates-toward-zero"),
        pytest.param([(20, 10), (80, 90)], 10, 10, id="below-first"),
        pytest.param([(20, 10), (80, 90)], 50, 50, id="middle"),
        pytest.param([(20, 10), (80, 90)], 95, 90, id="above-last"),
    ],
)
def test_broken_linear(shape, p, expected):
    assert broken_linear(shape, p) == expected


def test_non_missing_keeps_explicit_zero():
    requests = non_missing_pod_requests(
        pod(containers=[container({"cpu": "0"}), container({"memory": "1Gi"})])
    )
    assert requests == {"cpu": 100, "memory": 200 * MI + GI}


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        pytest.param(
            {"scoringStrategy": {"type": "Foo"}},
            "args.scoringStrategy.type",
            'Unsupported value: "Foo"',
            id="bad-type",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            "args.scoringStrategy.resources[0].weight",
            "Invalid value: 101",
            id="weight",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/x"]},
            "args.ignoredResourceGroups[0]",
            "can't contain '/'",
            id="group-slash",
        ),
        pytest.param(
            {"ignoredResources": ["-bad-"]},
            "args.ignoredResources[0]",
            "name part must",
            id="bad-resource-name",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "args.scoringStrategy.requestedToCapacityRatio.shape",
            "at least one point",
            id="rtcr-no-shape",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}]
                    },
                }
            },
            "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "sorted in increasing order",
            id="rtcr-unsorted",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}]},
                }
            },
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
            "not in valid range [0, 10]",
            id="rtcr-score-range",
        ),
        pytest.param({"ignoredResource": []}, "args.ignoredResource", "unknown field", id="typo"),
    ],
)
def test_resources_fit_bad_args(args, field, message):
    with pytest.raises(ConfigError) as err:
        NodeResourcesFit.parse_args(args, "args")
    assert err.value.field == field
    assert message in err.value.detail


def test_resources_fit_default_args():
    args = NodeResourcesFit.parse_args(None, "args")
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    zero = NodeResourcesFit.parse_args(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}, "a"
    )
    assert [(r.name, r.weight) for r in zero.scoring_strategy.resources] == [("cpu", 1)]


# ------------------------------------------------------------------------------ balanced allocation


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        pytest.param([1000, 3 * GI], [4000, 4 * GI], 75, id="two-resources"),
        pytest.param([2000, 4 * GI], [4000, 8 * GI], 100, id="balanced"),
        pytest.param([8000, 0], [4000, 8 * GI], 50, id="fraction-capped-at-one"),
        # fractions .5 .5 .2: mean .4, std sqrt(.06/3) = .1414 -> 85
        pytest.param([2, 2, 2], [4, 4, 10], 85, id="three-resources"),
        pytest.param([1, 0], [4, 0], 100, id="one-offered-resource"),
    ],
)
def test_balanced_resource_score(requested, allocatable, expected):
    assert balanced_resource_score(requested, allocatable) == expected


def test_balanced_allocation_plugin():
    plugin = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocation.parse_args(None, "args"))
    n = two_resource_node("4", "4Gi", [pod("e", containers=[container({"cpu": "500m", "memory": "1Gi"})])])
    assert scores_of(plugin, pod(containers=[container({"cpu": "500m", "memory": "2Gi"})]), [n]) == {"n": 75}
    assert scores_of(plugin, pod(), [n]) is None  # best-effort pods skip the plugin


def test_balanced_allocation_weights_must_be_one():
    with pytest.raises(ConfigError) as err:
        NodeResourcesBalancedAllocation.parse_args({"resources": [{"name": "cpu", "weight": 2}]}, "args")
    assert err.value.field == "args.resources[0].weight"


# ------------------------------------------------------------------------------ node ports


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        pytest.param({"0.0.0.0": {("TCP", 80)}}, ("0.0.0.0", "TCP", 80), True, id="same-port"),
        pytest.param({"0.0.0.0": {("TCP", 80)}}, ("0.0.0.0", "UDP", 80), False, id="other-protocol"),
        pytest.param({"0.0.0.0": {("TCP", 80)}}, ("10.0.0.1", "TCP", 80), True, id="used-on-all"),
        pytest.param({"10.0.0.1": {("TCP", 80)}}, ("10.0.0.2", "TCP", 80), False, id="other-ip"),
        pytest.param({"10.0.0.1": {("TCP", 80)}}, ("0.0.0.0", "TCP", 80), True, id="wanted-on-all"),
        pytest.param({"10.0.0.1": {("TCP", 80)}}, ("10.0.0.1", "TCP", 81), False, id="other-port"),
    ],
)
def test_host_port_conflicts(used, wanted, conflict):
    assert conflicts(used, wanted) is conflict


def ports(*specs: dict) -> dict:
    return container(ports=list(specs))


@pytest.mark.parametrize(
    ("existing", "wanted", "fits"),
    [
        pytest.param(
            [ports({"containerPort": 80, "hostPort": 8080})],
            [ports({"containerPort": 80, "hostPort": 8080})],
            False,
            id="taken",
        ),
        pytest.param(
            [ports({"containerPort": 80, "hostPort": 8080})],
            [ports({"containerPort": 80, "hostPort": 8081})],
            True,
            id="free",
        ),
        pytest.param([ports({"containerPort": 80})], [ports({"containerPort": 80})], True, id="no-host-port"),
        pytest.param(
            [ports({"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"})],
            [ports({"containerPort": 1, "hostPort": 8080, "hostIP": "127.0.0.2"})],
            True,
            id="distinct-ips",
        ),
    ],
)
def test_node_ports_filter(existing, wanted, fits):
    n = NodeInfo.of(node(), [pod("e", containers=existing)])
    status = run_filter(NodePorts(), pod(containers=wanted), n)
    assert status.ok is fits
    if not fits:
        assert status == Status.unschedulable("node(s) didn't have free ports for the requested pod ports")


def test_node_ports_sidecars_count_and_prefilter_skips():
    sidecar = ports({"containerPort": 80, "hostPort": 9000})
    existing = pod("e", containers=[container()], init=[{**sidecar, "restartPolicy": "Always"}])
    plain_init = pod("f", containers=[container()], init=[sidecar])
    n = NodeInfo.of(node(), [existing])
    assert not run_filter(NodePorts(), pod(containers=[ports({"containerPort": 1, "hostPort": 9000})]), n).ok
    assert run_filter(
        NodePorts(),
        pod(containers=[ports({"containerPort": 1, "hostPort": 9000})]),
        NodeInfo.of(node(), [plain_init]),
    ).ok
    assert NodePorts().pre_filter(CycleState(), pod()) == Status.skip()


# ------------------------------------------------------------------------------ queue-side plugins, binder


class Queued:
    def __init__(self, priority: int, timestamp: float) -> None:
        self.priority = priority
        self.timestamp = timestamp


@pytest.mark.parametrize(
    ("a", "b", "less"),
    [
        pytest.param(Queued(10, 5.0), Queued(0, 1.0), True, id="higher-priority-first"),
        pytest.param(Queued(0, 1.0), Queued(10, 5.0), False, id="lower-priority-later"),
        pytest.param(Queued(5, 1.0), Queued(5, 2.0), True, id="earlier-first"),
        pytest.param(Queued(5, 2.0), Queued(5, 2.0), False, id="equal"),
    ],
)
def test_priority_sort(a, b, less):
    assert PrioritySort().less(a, b) is less


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param([], Status.success(), id="none"),
        pytest.param([{"name": "a"}], Status.unresolvable("waiting for scheduling gates: [a]"), id="one"),
        pytest.param(
            [{"name": "a"}, {"name": "example.com/b"}],
            Status.unresolvable("waiting for scheduling gates: [a example.com/b]"),
            id="two",
        ),
    ],
)
def test_scheduling_gates(gates, expected):
    assert SchedulingGates().pre_enqueue(pod(schedulingGates=gates)) == expected


class BindingHandle:
    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail = fail

    async def bind_pod(self, p: dict, node_name: str) -> None:
        self.calls.append((p["metadata"]["name"], node_name))
        if self.fail:
            raise self.fail


def test_default_binder():
    handle = BindingHandle()
    assert asyncio.run(DefaultBinder(None, handle).bind(CycleState(), pod("x"), "n1")).ok
    assert handle.calls == [("x", "n1")]
    failing = DefaultBinder(None, BindingHandle(RuntimeError('pods "x" already bound')))
    assert asyncio.run(failing.bind(CycleState(), pod("x"), "n1")) == Status.error('pods "x" already bound')
    assert asyncio.run(DefaultBinder(None, None).bind(CycleState(), pod("x"), "n1")).code == Code.ERROR


# ------------------------------------------------------------------------------ preemption helpers, registry


@pytest.mark.parametrize(
    ("args", "field"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 101}, "args.minCandidateNodesPercentage", id="percentage-range"
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": -1}, "args.minCandidateNodesAbsolute", id="absolute-range"
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "args.minCandidateNodesPercentage",
            id="both-zero",
        ),
    ],
)
def test_default_preemption_bad_args(args, field):
    with pytest.raises(ConfigError) as err:
        DefaultPreemption.parse_args(args, "args")
    assert err.value.field == field


@pytest.mark.parametrize(
    ("percentage", "absolute", "nodes", "expected"),
    [
        pytest.param(10, 100, 50, 50, id="capped-at-nodes"),
        pytest.param(10, 100, 5000, 500, id="percentage"),
        pytest.param(10, 100, 500, 100, id="absolute-floor"),
    ],
)
def test_default_preemption_num_candidates(percentage, absolute, nodes, expected):
    args = DefaultPreemption.parse_args(
        {"minCandidateNodesPercentage": percentage, "minCandidateNodesAbsolute": absolute}, "a"
    )
    assert DefaultPreemption(args).num_candidates(nodes) == expected


def test_pick_candidate_criteria():
    from nrop.sched.framework.interface import PodInfo
    from nrop.sched.framework.plugins.defaultpreemption import Candidate

    def victim(name: str, priority: int, start: str = "2024-01-01T00:00:00Z") -> PodInfo:
        p = pod(name, priority=priority)
        p["status"]["startTime"] = start
        return PodInfo.of(p)

    low = Candidate("low", (victim("a", 10),))
    high = Candidate("high", (victim("b", 50),))
    assert pick_candidate([high, low]).node == "low"
    fewer_sum = Candidate("sum", (victim("c", 10), victim("d", 1)))
    more_sum = Candidate("sum2", (victim("e", 10), victim("f", 5)))
    assert pick_candidate([more_sum, fewer_sum]).node == "sum"
    later = Candidate("later", (victim("g", 10, "2024-06-01T00:00:00Z"),))
    assert pick_candidate([low, later]).node == "later"


def test_registry():
    assert set(registry.IN_TREE) == {
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "InterPodAffinity",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "DefaultBinder",
    }
    assert "InterPodAffinity" not in registry.NOT_IMPLEMENTED
    assert not set(registry.IN_TREE) & registry.NOT_IMPLEMENTED
    defaults = {p.name: p.weight for p in registry.DEFAULT_MULTI_POINT}
    assert set(defaults) <= set(registry.IN_TREE) | registry.NOT_IMPLEMENTED
    assert {n: w for n, w in defaults.items() if w} == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert implements(registry.lookup("NodeResourcesFit"), "score")
    assert all(
        implements(registry.lookup("InterPodAffinity"), point)
        for point in ("preFilter", "filter", "preScore", "score")
    )
    assert registry.lookup("VolumeBinding") is None
