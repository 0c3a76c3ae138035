"""NUMA-aware preemption: placement decoding, eviction simulation, and the plugin's Filter flow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nrop.api import fingerprint
from nrop.api import numaplacement as np
from nrop.api.nrt import NodeResourceTopology
from nrop.sched.framework.interface import Code, CycleState, NodeInfo, PodInfo
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    NodeResourceTopologyMatchArgs,
    PreemptionMode,
)
from nrop.sched.framework.plugins.noderesourcetopology.cache import SchedulerProfiles
from nrop.sched.framework.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from nrop.sched.framework.plugins.noderesourcetopology.preemption import (
    EvictionSimulationError,
    PlacementPod,
    decode_placement,
    nrt_after_evictions,
    pinned_containers,
)

NRT_RESOURCES = frozenset({"cpu", "memory", "example.com/dev"})


def ctr(name: str, requests: dict[str, str], *, guaranteed: bool = True, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": dict(requests)}
    if guaranteed:
        resources["limits"] = dict(requests)
    return {"name": name, "resources": resources, **extra}


def a_pod(
    name: str,
    *containers: dict[str, Any],
    init: tuple[dict[str, Any], ...] = (),
    node: str = "w0",
    namespace: str = "ns",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "topo-aware", "containers": list(containers), "nodeName": node}
    if init:
        spec["initContainers"] = list(init)
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Running"},
    }


def zone(
    name: str, allocatable: dict[str, str], available: dict[str, str], vector: str | None = None
) -> dict:
    out: dict[str, Any] = {
        "name": name,
        "type": "Node",
        "resources": [
            {"name": k, "capacity": v, "allocatable": v, "available": available.get(k, v)}
            for k, v in allocatable.items()
        ],
    }
    if vector is not None:
        out["attributes"] = [{"name": np.ATTRIBUTE_VECTOR, "value": vector}]
    return out


ALLOC = {"cpu": "4", "memory": "8Gi"}


def nrt_obj(
    placed: dict[tuple[str, str, str], int],
    available: tuple[dict[str, str], dict[str, str]],
    *,
    policy: str = "single-numa-node",
    pods: tuple[str, ...] = (),
    metadata: str | None = None,
) -> dict[str, Any]:
    """Node ``w0``: two NUMA zones, the placement of ``placed`` encoded as the exporter does."""
    payload = np.encode(2, [np.ContainerAffinity(np.ContainerID(*k), numa) for k, numa in placed.items()])
    attrs = [
        {"name": fingerprint.ATTRIBUTE, "value": fingerprint.compute(("ns", p) for p in pods)},
        {"name": fingerprint.ATTRIBUTE_METHOD, "value": "with-exclusive-resources"},
        {"name": np.ATTRIBUTE_METADATA, "value": payload.pack_metadata() if metadata is None else metadata},
        {"name": "topologyManagerScope", "value": "container"},
        {"name": "topologyManagerPolicy", "value": policy},
    ]
    zones = [zone(f"node-{n}", ALLOC, available[n], payload.vectors.get(n)) for n in (0, 1)]
    return {"metadata": {"name": "w0"}, "zones": zones, "attributes": attrs}


def nrt(*args: Any, **kw: Any) -> NodeResourceTopology:
    return NodeResourceTopology.from_dict(nrt_obj(*args, **kw))


def available(obj: NodeResourceTopology) -> dict[str, dict[str, str]]:
    return {z.name: {r.name: str(r.available) for r in z.resources} for z in obj.zones}


# ----------------------------------------------------------------------------- pinned containers


@pytest.mark.parametrize(
    "pod,expected",
    [
        pytest.param(a_pod("p", ctr("a", {"cpu": "2", "memory": "1Gi"})), ("a",), id="integral cpu"),
        pytest.param(
            a_pod("p", ctr("a", {"cpu": "1500m", "memory": "1Gi"})), ("a",), id="memory is exclusive"
        ),
        pytest.param(
            a_pod("p", ctr("a", {"cpu": "1", "memory": "1Gi"}, guaranteed=False)),
            (),
            id="burstable cpu/memory",
        ),
        pytest.param(
            a_pod("p", ctr("a", {"example.com/dev": "1"}, guaranteed=False)),
            ("a",),
            id="burstable NRT device",
        ),
        pytest.param(
            a_pod("p", ctr("a", {"other.com/dev": "1"}, guaranteed=False)),
            (),
            id="device the NRT does not list",
        ),
        pytest.param(
            a_pod(
                "p",
                ctr("a", {"cpu": "1", "memory": "1Gi"}),
                init=(
                    ctr("init", {"cpu": "1", "memory": "1Gi"}),
                    ctr("side", {"cpu": "1", "memory": "1Gi"}, restartPolicy="Always"),
                ),
            ),
            ("side", "a"),
            id="sidecars first, init containers never",
        ),
    ],
)
def test_pinned_containers(pod: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert pinned_containers(pod, NRT_RESOURCES) == expected


# ----------------------------------------------------------------------------- decoding

PLACED = {("ns", "low", "c"): 0, ("ns", "mid", "c"): 1, ("ns", "mid", "d"): 1}
PODS = [PlacementPod("ns", "low", ("c",)), PlacementPod("ns", "mid", ("c", "d"))]
FULL = ({"cpu": "0", "memory": "4Gi"}, {"cpu": "0", "memory": "4Gi"})


def test_decode_placement() -> None:
    info = decode_placement(nrt(PLACED, FULL), PODS)
    assert info.containers == 3
    assert {k: info.numa_affinity(np.ContainerID(*k)) for k in PLACED} == PLACED


@pytest.mark.parametrize(
    "obj,pods",
    [
        pytest.param(nrt(PLACED, FULL), [], id="no pods"),
        pytest.param(nrt(PLACED, FULL, policy="restricted"), PODS, id="not single-numa-node"),
        pytest.param(nrt(PLACED, FULL, metadata="npv0v002::cc=3"), PODS, id="bad metadata"),
        pytest.param(nrt(PLACED, FULL), PODS[:1], id="container count differs"),
        pytest.param(nrt({}, FULL), [PlacementPod("ns", "low", ())], id="nothing pinned"),
        pytest.param(
            nrt(PLACED, FULL, metadata="npv0v001::ve=leb89::cc=3::nn=2::bn=0"),
            PODS,
            id="vector on the busiest",
        ),
    ],
)
def test_decode_placement_gives_nothing_when_untrustworthy(obj: NodeResourceTopology, pods: list) -> None:
    assert decode_placement(obj, pods).containers == 0


def test_decode_placement_without_metadata() -> None:
    obj = nrt(PLACED, FULL)
    obj.attributes = [a for a in obj.attributes if a.name != np.ATTRIBUTE_METADATA]
    assert decode_placement(obj, PODS).containers == 0


# ----------------------------------------------------------------------------- eviction simulation

LOW = a_pod("low", ctr("c", {"cpu": "3", "memory": "2Gi"}))
MID = a_pod("mid", ctr("c", {"cpu": "2", "memory": "1Gi"}), ctr("d", {"cpu": "1500m", "memory": "1Gi"}))


@pytest.mark.parametrize(
    "victims,expected",
    [
        pytest.param(
            [LOW],
            {"node-0": {"cpu": "3", "memory": "6Gi"}, "node-1": {"cpu": "0", "memory": "4Gi"}},
            id="one victim",
        ),
        pytest.param(
            [LOW, MID],
            {"node-0": {"cpu": "3", "memory": "6Gi"}, "node-1": {"cpu": "2", "memory": "6Gi"}},
            id="only integral cpu is exclusive",
        ),
        pytest.param(
            [LOW, a_pod("unknown", ctr("c", {"cpu": "1", "memory": "1Gi"}))],
            {"node-0": {"cpu": "3", "memory": "6Gi"}, "node-1": {"cpu": "0", "memory": "4Gi"}},
            id="containers without placement are skipped",
        ),
    ],
)
def test_nrt_after_evictions(victims: list[dict[str, Any]], expected: dict[str, dict[str, str]]) -> None:
    before = nrt(PLACED, FULL)
    after = nrt_after_evictions(before, victims, decode_placement(before, PODS))
    assert available(after) == expected
    assert available(before) == {z: dict(FULL[0]) for z in ("node-0", "node-1")}  # not modified


@pytest.mark.parametrize(
    "victims,avail,message",
    [
        pytest.param(
            [LOW],
            ({"cpu": "2", "memory": "4Gi"}, FULL[1]),
            "resource release request exceeds NUMA allocatable",
            id="beyond allocatable",
        ),
        pytest.param(
            [a_pod("low", ctr("c", {"cpu": "3", "memory": "2Gi"}, guaranteed=False))],
            FULL,
            "no resources to add, cannot process eviction simulation",
            id="burstable victim",
        ),
        pytest.param(
            [a_pod("nobody", ctr("c", {"cpu": "1", "memory": "1Gi"}))],
            FULL,
            "no resources to add, cannot process eviction simulation",
            id="unknown victim",
        ),
    ],
)
def test_nrt_after_evictions_errors(victims: list[dict[str, Any]], avail: tuple, message: str) -> None:
    obj = nrt(PLACED, avail)
    with pytest.raises(EvictionSimulationError) as err:
        nrt_after_evictions(obj, victims, decode_placement(obj, PODS))
    assert str(err.value) == message


# ----------------------------------------------------------------------------- the plugin


class Handle:
    def __init__(self, nrts: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.nrts = {o["metadata"]["name"]: o for o in nrts}
        self.pods = pods

    @property
    def profile_name(self) -> str:
        return "topo-aware"

    def list_pods(self) -> list[dict[str, Any]]:
        return list(self.pods)

    def get_nrt(self, node_name: str) -> dict[str, Any] | None:
        return self.nrts.get(node_name)

    def list_nrts(self) -> list[dict[str, Any]]:
        return list(self.nrts.values())

    def on_pod_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        """Not exercised here."""

    def on_nrt_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        """Not exercised here."""


NODE = NodeInfo.of({"metadata": {"name": "w0"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}}})
PREEMPTOR = a_pod("preemptor", ctr("c", {"cpu": "3", "memory": "1Gi"}), node="")
RUNNING = [LOW, MID]
NRT_NOW = nrt_obj(PLACED, FULL, pods=("low", "mid"))


def plugin(objs: list[dict[str, Any]], pods: list[dict[str, Any]], **args: Any) -> NodeResourceTopologyMatch:
    args.setdefault("cache_resync_period_seconds", 5)
    args.setdefault("preemption_mode", PreemptionMode.ENABLED)
    return NodeResourceTopologyMatch(
        NodeResourceTopologyMatchArgs(**args), Handle(objs, pods), profiles=SchedulerProfiles()
    )


def preempting(p: NodeResourceTopologyMatch, *victims: dict[str, Any]) -> CycleState:
    state = CycleState()
    assert p.pre_filter(state, PREEMPTOR).ok
    for victim in victims:
        assert p.remove_pod(state, PREEMPTOR, PodInfo.of(victim), NODE).ok
    return state


def flushed(p: NodeResourceTopologyMatch) -> None:
    """A normal Filter fails and marks the node; the resync then flushes it (fingerprint matches)."""
    state = CycleState()
    p.pre_filter(state, PREEMPTOR)
    assert not p.filter(state, PREEMPTOR, NODE).ok
    report = p.resync()
    assert report is not None
    assert report.flushed == ("w0",)


def test_filter_simulates_the_eviction_after_a_flush() -> None:
    p = plugin([NRT_NOW], RUNNING)
    flushed(p)
    assert p.filter(preempting(p, LOW), PREEMPTOR, NODE).ok
    # MID frees 2 CPUs on node-1 (its 1500m container shares the pool): not enough.
    status = p.filter(preempting(p, MID), PREEMPTOR, NODE)
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ("cannot align container",))
    assert p.resync().flushed == ()  # type: ignore[union-attr]  # preemption failures do not mark the node


def test_filter_without_a_flush_keeps_the_nrt() -> None:
    p = plugin([NRT_NOW], RUNNING)
    status = p.filter(preempting(p, LOW), PREEMPTOR, NODE)
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ("cannot align container",))
    assert p.resync() is not None and p.resync().flushed == ()  # type: ignore[union-attr]  # not marked dirty


def test_filter_reports_an_impossible_simulation() -> None:
    over = nrt_obj(PLACED, ({"cpu": "2", "memory": "4Gi"}, FULL[1]), pods=("low", "mid"))
    p = plugin([over], RUNNING)
    state = CycleState()
    p.pre_filter(state, a_pod("big", ctr("c", {"cpu": "4", "memory": "1Gi"}), node=""))
    assert not p.filter(state, a_pod("big", ctr("c", {"cpu": "4", "memory": "1Gi"}), node=""), NODE).ok
    assert p.resync().flushed == ("w0",)  # type: ignore[union-attr]
    status = p.filter(preempting(p, LOW), PREEMPTOR, NODE)
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE,
        ("eviction simulation in NRT is not possible:resource release request exceeds NUMA allocatable",),
    )
    assert status.plugin == "NodeResourceTopologyMatch"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"preemption_mode": PreemptionMode.DISABLED}, id="preemption disabled"),
        pytest.param({"cache_resync_period_seconds": 0}, id="passthrough cache"),
    ],
)
def test_no_simulation_without_preemption_or_over_reserve(args: dict[str, Any]) -> None:
    p = plugin([NRT_NOW], RUNNING, **args)
    state = CycleState()
    p.pre_filter(state, PREEMPTOR)
    p.filter(state, PREEMPTOR, NODE)
    p.resync()
    assert not p.filter(preempting(p, LOW), PREEMPTOR, NODE).ok
