"""Table tests of NodeResourceTopologyMatch's Score, every expected integer computed by hand."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from nrop.api.nrt import NodeResourceTopology
from nrop.api.quantity import parse
from nrop.sched.framework.interface import CycleState, NodeInfo
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    NodeResourceTopologyMatchArgs,
    ResourceSpec,
    ScoringStrategy,
    ScoringStrategyType,
)
from nrop.sched.framework.plugins.noderesourcetopology.cache import SchedulerProfiles
from nrop.sched.framework.plugins.noderesourcetopology.filter import numa_node_list
from nrop.sched.framework.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from nrop.sched.framework.plugins.noderesourcetopology.score import (
    GO_INT64_OF_NAN,
    avg_distance,
    balanced_allocation_score,
    least_allocated_score,
    most_allocated_score,
    normalize_least_numa_score,
    numa_nodes_required,
    sample_variance,
    score_with_topology,
)

MOST = ScoringStrategyType.MOST_ALLOCATED
LEAST = ScoringStrategyType.LEAST_ALLOCATED
BALANCED = ScoringStrategyType.BALANCED_ALLOCATION
LEAST_NUMA = ScoringStrategyType.LEAST_NUMA_NODES
W11 = {"cpu": 1, "memory": 1}

# --- builders -------------------------------------------------------------------------------


def zone(name: str, available: dict[str, str], costs: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": "Node"}
    if costs:
        out["costs"] = [{"name": k, "value": v} for k, v in costs.items()]
    out["resources"] = [
        {"name": k, "capacity": v, "allocatable": v, "available": v} for k, v in available.items()
    ]
    return out


def nrt_obj(
    *zones: dict[str, Any],
    policy: str = "single-numa-node",
    scope: str = "container",
    max_numa: str | None = None,
) -> dict[str, Any]:
    attrs = [
        {"name": "topologyManagerPolicy", "value": policy},
        {"name": "topologyManagerScope", "value": scope},
    ]
    if max_numa:
        attrs.append({"name": "topologyManagerMaxNUMANodes", "value": max_numa})
    return {"metadata": {"name": "w0"}, "zones": list(zones), "attributes": attrs}


def nrt(*zones: dict[str, Any], **kw: Any) -> NodeResourceTopology:
    return NodeResourceTopology.from_dict(nrt_obj(*zones, **kw))


def g(cpu: str, memory: str = "1Gi", extra: dict[str, str] | None = None, name: str = "c") -> dict[str, Any]:
    values = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"name": name, "resources": {"requests": dict(values), "limits": dict(values)}}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"metadata": {"namespace": "ns", "name": "p", "uid": "u"}, "spec": spec}


def q(values: dict[str, str]) -> dict[str, Any]:
    return {k: parse(v) for k, v in values.items()}


def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


# node-0: 4 cpus, node-1: 8 cpus; 8Gi each.
UNEVEN = (zone("node-0", {"cpu": "4", "memory": "8Gi"}), zone("node-1", {"cpu": "8", "memory": "8Gi"}))


# --- per-NUMA strategies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "requested", "available", "weights", "expected"),
    [
        # cpu 2*100//4 = 50, memory 4Gi*100//8Gi = 50 -> (50+50)//2
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            50,
            id="most-half",
        ),
        # cpu 2*100//8 = 25, memory 50 -> 75//2 = 37 (truncated)
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            W11,
            37,
            id="most-truncates",
        ),
        # (25*3 + 50*1)//4 = 31
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            {"cpu": 3},
            31,
            id="most-weighted",
        ),
        # weights < 1 count as 1: (25 + 50)//2 = 37
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            {"cpu": -4, "memory": 0},
            37,
            id="most-weight-below-one",
        ),
        # cpu over -> 0; memory 1Gi*100//8Gi = 12 -> 12//2 = 6
        pytest.param(
            most_allocated_score,
            {"cpu": "6", "memory": "1Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            6,
            id="most-one-resource-over",
        ),
        # missing device scores 0 but weighs: (50+50+0)//3 = 33
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi", "example.com/dev": "1"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            33,
            id="most-missing-resource",
        ),
        # Value() rounds 500m up to 1: 1*100//4 = 25, memory 12 -> 37//2 = 18
        pytest.param(
            most_allocated_score,
            {"cpu": "500m", "memory": "1Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            18,
            id="most-value-rounds-up",
        ),
        # zero available scores 0: (0 + 50)//2 = 25
        pytest.param(
            most_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "0", "memory": "8Gi"},
            W11,
            25,
            id="most-zero-available",
        ),
        # zero request still counts: (0 + 50)//2 = 25
        pytest.param(
            most_allocated_score,
            {"cpu": "0", "memory": "4Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            25,
            id="most-zero-request",
        ),
        # (4-2)*100//4 = 50, 50 -> 50
        pytest.param(
            least_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            50,
            id="least-half",
        ),
        # (8-2)*100//8 = 75, 50 -> 125//2 = 62
        pytest.param(
            least_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            W11,
            62,
            id="least-truncates",
        ),
        # (75*1 + 50*3)//4 = 56
        pytest.param(
            least_allocated_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            {"memory": 3},
            56,
            id="least-weighted",
        ),
        # (4-1)*100//4 = 75, (8Gi-1Gi)*100//8Gi = 87 -> 162//2 = 81
        pytest.param(
            least_allocated_score,
            {"cpu": "500m", "memory": "1Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            81,
            id="least-value-rounds-up",
        ),
        # cpu over -> 0; (8Gi-1Gi)*100//8Gi = 87 -> 43
        pytest.param(
            least_allocated_score,
            {"cpu": "6", "memory": "1Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            43,
            id="least-one-resource-over",
        ),
        # fractions .5 .5 -> variance 0 -> 100
        pytest.param(
            balanced_allocation_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            100,
            id="balanced-equal",
        ),
        # .25 .5: sample variance .03125 -> 96.875 -> 96
        pytest.param(
            balanced_allocation_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "8", "memory": "8Gi"},
            W11,
            96,
            id="balanced-sample-variance",
        ),
        # .75 .125: sample variance .1953125 -> 80.46875 -> 80
        pytest.param(
            balanced_allocation_score,
            {"cpu": "6", "memory": "1Gi"},
            {"cpu": "8", "memory": "8Gi"},
            W11,
            80,
            id="balanced-spread",
        ),
        # cpu 6/4 > 1 -> 0
        pytest.param(
            balanced_allocation_score,
            {"cpu": "6", "memory": "1Gi"},
            {"cpu": "4", "memory": "8Gi"},
            W11,
            0,
            id="balanced-over",
        ),
        # zero available counts as fraction 1: 1 and .5 -> variance .125 -> 87.5 -> 87
        pytest.param(
            balanced_allocation_score,
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "0", "memory": "8Gi"},
            W11,
            87,
            id="balanced-zero-available",
        ),
        # three equal fractions -> 100; weights ignored
        pytest.param(
            balanced_allocation_score,
            {"cpu": "2", "memory": "4Gi", "example.com/dev": "1"},
            {"cpu": "4", "memory": "8Gi", "example.com/dev": "2"},
            {"cpu": 9},
            100,
            id="balanced-three",
        ),
        # a single fraction: variance NaN -> Go's int64(NaN)
        pytest.param(
            balanced_allocation_score,
            {"cpu": "2"},
            {"cpu": "4"},
            W11,
            GO_INT64_OF_NAN,
            id="balanced-single-nan",
        ),
    ],
)
def test_per_numa_strategies(
    fn: Any, requested: dict[str, str], available: dict[str, str], weights: dict[str, int], expected: int
) -> None:
    assert fn(q(requested), q(available), weights) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([0.25, 0.5], 0.03125, id="two"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 1.6666666666666667, id="four-sample-not-population"),
        pytest.param([0.5, 0.5, 0.5], 0.0, id="constant"),
    ],
)
def test_sample_variance(values: list[float], expected: float) -> None:
    assert sample_variance(values) == expected


def test_sample_variance_of_one_is_nan() -> None:
    value = sample_variance([0.5])
    assert value != value


# --- node score: min over NUMA nodes, scopes, policies -------------------------------------

SCORE_CASES = [
    # pod scope, request cpu 2 memory 4Gi: node-0 50, node-1 37 -> min 37
    pytest.param(MOST, "pod", pod(g("2", "4Gi")), UNEVEN, 37, id="most-pod-min"),
    # least: node-0 50, node-1 62 -> 50
    pytest.param(LEAST, "pod", pod(g("2", "4Gi")), UNEVEN, 50, id="least-pod-min"),
    # balanced: node-0 100, node-1 96 -> 96
    pytest.param(BALANCED, "pod", pod(g("2", "4Gi")), UNEVEN, 96, id="balanced-pod-min"),
    # most, cpu 6: node-0 6 (cpu over, memory 12), node-1 (75+12)//2 = 43 -> smallest non-zero 6
    pytest.param(MOST, "pod", pod(g("6")), UNEVEN, 6, id="most-partial-fit-still-counts"),
    # balanced, cpu 6: node-0 0, node-1 80 -> zero ignored -> 80
    pytest.param(BALANCED, "pod", pod(g("6")), UNEVEN, 80, id="balanced-zero-numa-ignored"),
    # nothing fits anywhere -> 0
    pytest.param(BALANCED, "pod", pod(g("10", "10Gi")), UNEVEN, 0, id="all-zero"),
    # effective request cpu max(1, 2+4)=6, memory 6Gi: node-0 (0+75)//2 = 37, node-1 (75+75)//2 = 75 -> 37
    pytest.param(
        MOST,
        "pod",
        pod(g("2", "4Gi"), g("4", "2Gi"), init=(g("1", "1Gi"),)),
        UNEVEN,
        37,
        id="most-pod-effective-request",
    ),
    # container scope: init 12, app 37, app 37 (each vs untouched zones) -> 86/3 = 28.67 -> 28
    pytest.param(
        MOST,
        "container",
        pod(g("2", "4Gi"), g("4", "2Gi"), init=(g("1", "1Gi"),)),
        UNEVEN,
        28,
        id="most-container-mean-truncated",
    ),
    # container scope, no subtraction: two cpu-4 containers both score node-0 at 100/..: each min(62, 37) = 37 -> 37
    pytest.param(
        MOST, "container", pod(g("4", "2Gi"), g("4", "2Gi")), UNEVEN, 37, id="container-no-subtraction"
    ),
]


@pytest.mark.parametrize(("strategy", "scope", "the_pod", "zones", "expected"), SCORE_CASES)
def test_score_with_topology(
    strategy: ScoringStrategyType,
    scope: str,
    the_pod: dict[str, Any],
    zones: tuple[dict[str, Any], ...],
    expected: int,
) -> None:
    assert score_with_topology(the_pod, "Guaranteed", nrt(*zones, scope=scope), strategy, W11) == expected


@pytest.mark.parametrize("strategy", [MOST, LEAST, BALANCED])
@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted"])
def test_allocation_strategies_score_only_single_numa_node(
    strategy: ScoringStrategyType, policy: str
) -> None:
    assert (
        score_with_topology(pod(g("2", "4Gi")), "Guaranteed", nrt(*UNEVEN, policy=policy), strategy, W11) == 0
    )


# --- LeastNUMANodes --------------------------------------------------------------------------


def four_numa(cpus: tuple[str, str, str, str] = ("4", "4", "4", "4")) -> tuple[dict[str, Any], ...]:
    """Pairs (0,1) and (2,3) at distance 12, across pairs 20, self 10."""

    def dist(i: int, j: int) -> int:
        if i == j:
            return 10
        return 12 if i // 2 == j // 2 else 20

    return tuple(
        zone(f"node-{i}", {"cpu": cpus[i], "memory": "8Gi"}, {f"node-{j}": dist(i, j) for j in range(4)})
        for i in range(4)
    )


@pytest.mark.parametrize(
    ("count", "is_min", "max_numa", "expected"),
    [
        pytest.param(1, True, 8, 94, id="one-min"),
        pytest.param(1, False, 8, 88, id="one"),
        pytest.param(2, True, 8, 82, id="two-min"),
        pytest.param(2, False, 8, 76, id="two"),
        pytest.param(1, True, 4, 87, id="max4-one-min"),
        pytest.param(3, False, 3, 1, id="max3-three"),
        pytest.param(2, True, 200, 100, id="unit-zero"),
    ],
)
def test_normalize_least_numa_score(count: int, is_min: bool, max_numa: int, expected: int) -> None:
    assert normalize_least_numa_score(count, is_min, max_numa) == expected


def test_avg_distance_is_float32() -> None:
    nodes = numa_node_list(
        nrt(
            zone("node-0", {"cpu": "1"}, {"node-0": 10, "node-1": 11, "node-2": 12}),
            zone("node-1", {"cpu": "1"}, {"node-0": 11, "node-1": 10, "node-2": 13}),
            zone("node-2", {"cpu": "1"}, {"node-0": 12, "node-1": 13}),
        ).zones
    )
    # 10+11+12 + 11+10+13 + 12+13+255 (node-2 has no distance to itself) = 347 over 9 pairs
    assert avg_distance(nodes, (0, 1, 2)) == f32(347 / 9)
    assert avg_distance(nodes, (0, 1, 2)) != 347 / 9
    assert avg_distance(nodes, (0, 1)) == 10.5
    assert avg_distance(nodes, ()) == 255


@pytest.mark.parametrize(
    ("cpus", "request_cpu", "expected"),
    [
        pytest.param(("4", "4", "4", "4"), "2", ({0}, True), id="one-node-lowest"),
        pytest.param(("1", "4", "4", "4"), "2", ({1}, True), id="one-node-skips-small"),
        pytest.param(("4", "4", "4", "4"), "6", ({0, 1}, True), id="closest-pair"),
        pytest.param(("4", "1", "4", "4"), "6", ({2, 3}, True), id="closest-pair-found-after-farther-fit"),
        pytest.param(("4", "1", "4", "1"), "6", ({0, 2}, False), id="only-far-pairs"),
        pytest.param(("4", "4", "4", "4"), "20", (None, False), id="does-not-fit"),
    ],
)
def test_numa_nodes_required(
    cpus: tuple[str, str, str, str], request_cpu: str, expected: tuple[set[int] | None, bool]
) -> None:
    ids, is_min = numa_nodes_required(
        "Guaranteed", numa_node_list(nrt(*four_numa(cpus)).zones), q({"cpu": request_cpu, "memory": "1Gi"})
    )
    assert (None if ids is None else set(ids), is_min) == expected


def test_numa_nodes_required_needs_every_requested_key_even_zero() -> None:
    nodes = numa_node_list(nrt(*four_numa()).zones)
    assert numa_nodes_required(
        "Guaranteed", nodes, q({"cpu": "1", "memory": "1Gi", "example.com/dev": "0"})
    ) == (None, False)


LEAST_NUMA_CASES = [
    pytest.param("pod", pod(g("2")), four_numa(), None, 94, id="pod-one-node"),
    pytest.param("pod", pod(g("6")), four_numa(), None, 82, id="pod-closest-pair"),
    pytest.param("pod", pod(g("6")), four_numa(("4", "1", "4", "1")), None, 76, id="pod-far-pair"),
    pytest.param("pod", pod(g("20")), four_numa(), None, 0, id="pod-does-not-fit"),
    pytest.param("pod", pod(g("2")), four_numa(), "4", 87, id="pod-max-numa-from-attribute"),
    pytest.param(
        "pod", pod(g("2")), (zone("node-0", {"example.com/dev": "1"}),), None, 100, id="pod-only-non-numa"
    ),
    pytest.param(
        "pod", pod(g("1", extra={"example.com/dev": "0"})), four_numa(), None, 0, id="pod-zero-key-unreported"
    ),
    # container scope: each container takes its share off the zones before the next one is placed
    pytest.param("container", pod(g("3"), g("3")), four_numa(), None, 94, id="ctr-each-on-one-node"),
    pytest.param("container", pod(g("5")), four_numa(), None, 82, id="ctr-needs-pair"),
    pytest.param(
        "container",
        pod(g("3"), g("4"), g("2")),
        four_numa(("4", "4", "0", "0")),
        None,
        0,
        id="ctr-subtraction-exhausts",
    ),
    pytest.param(
        "container", pod(g("3"), g("3")), four_numa(("4", "4", "0", "0")), None, 94, id="ctr-second-on-node-1"
    ),
    pytest.param("container", pod(g("1"), init=(g("6"),)), four_numa(), None, 82, id="ctr-init-counts"),
    pytest.param(
        "container",
        pod(g("1"), g("6")),
        four_numa(("4", "4", "4", "1")),
        None,
        82,
        id="ctr-max-count-all-min",
    ),
    pytest.param(
        "container", pod(g("2"), g("6")), four_numa(("4", "1", "4", "1")), None, 76, id="ctr-one-not-min"
    ),
    pytest.param(
        "container",
        pod(g("2")),
        (zone("node-0", {"example.com/dev": "1"}),),
        None,
        100,
        id="ctr-all-non-numa",
    ),
    # zones listed node-0 (1 cpu), node-5: the first container lands on node 5, an id past the list end,
    # which upstream would index out of range; it is not subtracted, so the second fits node 5 again.
    pytest.param(
        "container",
        pod(g("3", "1Gi"), g("3", "1Gi")),
        (
            zone("node-0", {"cpu": "1", "memory": "8Gi"}, {"node-0": 10}),
            zone("node-5", {"cpu": "4", "memory": "8Gi"}, {"node-5": 10}),
        ),
        None,
        94,
        id="ctr-id-past-list-end",
    ),
]


@pytest.mark.parametrize(("scope", "the_pod", "zones", "max_numa", "expected"), LEAST_NUMA_CASES)
@pytest.mark.parametrize("policy", ["single-numa-node", "none"])
def test_least_numa_nodes(
    scope: str,
    the_pod: dict[str, Any],
    zones: tuple[dict[str, Any], ...],
    max_numa: str | None,
    expected: int,
    policy: str,
) -> None:
    topology = nrt(*zones, scope=scope, policy=policy, max_numa=max_numa)
    assert score_with_topology(the_pod, "Guaranteed", topology, LEAST_NUMA, {}) == expected


# --- the plugin's Score flow ------------------------------------------------------------------


class Handle:
    def __init__(self, nrts: list[dict[str, Any]]) -> None:
        self.nrts = {o["metadata"]["name"]: o for o in nrts}

    profile_name = "topo-aware"

    def scheduler_names(self) -> frozenset[str]:
        return frozenset({"topo-aware"})

    def list_pods(self) -> list[dict[str, Any]]:
        return []

    def get_nrt(self, node_name: str) -> dict[str, Any] | None:
        return self.nrts.get(node_name)

    def list_nrts(self) -> list[dict[str, Any]]:
        return list(self.nrts.values())

    def on_pod_event(self, callback: Any) -> None:
        pass

    def on_nrt_event(self, callback: Any) -> None:
        pass

    def now(self) -> float:
        return 0.0


NODE = NodeInfo.of({"metadata": {"name": "w0"}, "status": {"allocatable": {"cpu": "12", "memory": "16Gi"}}})


def burstable() -> dict[str, Any]:
    return pod({"name": "c", "resources": {"requests": {"cpu": "1"}}})


@pytest.mark.parametrize(
    ("args", "the_pod", "nrts", "expected"),
    [
        pytest.param({}, burstable(), [nrt_obj(*UNEVEN)], 100, id="non-guaranteed-max"),
        pytest.param({}, pod(g("2", "4Gi")), [], 0, id="no-nrt-zero"),
        pytest.param({}, pod(g("2", "4Gi")), [nrt_obj(*UNEVEN)], 50, id="default-least-allocated"),
        pytest.param(
            {"scoring_strategy": ScoringStrategy(MOST, (ResourceSpec("cpu", 3), ResourceSpec("memory", 1)))},
            pod(g("2", "4Gi")),
            [nrt_obj(*UNEVEN, scope="pod")],
            31,
            id="weights-from-args",
        ),
        pytest.param(
            {"scoring_strategy": ScoringStrategy(LEAST_NUMA)},
            pod(g("6")),
            [nrt_obj(*four_numa(), policy="none")],
            82,
            id="least-numa-any-policy",
        ),
        pytest.param(
            {}, pod(g("2", "4Gi")), [nrt_obj(*UNEVEN, policy="restricted")], 0, id="other-policy-zero"
        ),
    ],
)
def test_plugin_score(
    args: dict[str, Any], the_pod: dict[str, Any], nrts: list[dict[str, Any]], expected: int
) -> None:
    plugin = NodeResourceTopologyMatch(
        NodeResourceTopologyMatchArgs(**args), Handle(nrts), profiles=SchedulerProfiles()
    )
    score, status = plugin.score(CycleState(), the_pod, NODE)
    assert (score, status.ok) == (expected, True)


def test_plugin_score_zero_while_node_reserved() -> None:
    plugin = NodeResourceTopologyMatch(
        NodeResourceTopologyMatchArgs(discard_reserved_nodes=True),
        Handle([nrt_obj(*UNEVEN)]),
        profiles=SchedulerProfiles(),
    )
    state = CycleState()
    assert plugin.score(state, pod(g("2", "4Gi")), NODE)[0] == 50
    plugin.reserve(state, pod(g("1")), "w0")
    assert plugin.score(state, pod(g("2", "4Gi")), NODE)[0] == 0
    plugin.unreserve(state, pod(g("1")), "w0")
    assert plugin.score(state, pod(g("2", "4Gi")), NODE)[0] == 50
