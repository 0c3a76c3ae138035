"""Table tests of NodeResourceTopologyMatch's Filter: NUMA node list, fit, handlers, plugin flow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nrop.api.nrt import NodeResourceTopology
from nrop.api.quantity import parse
from nrop.sched.framework.interface import Code, CycleState, NodeInfo, PodInfo, Status
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    NodeResourceTopologyMatchArgs,
    PreemptionMode,
)
from nrop.sched.framework.plugins.noderesourcetopology.cache import SchedulerProfiles
from nrop.sched.framework.plugins.noderesourcetopology.filter import (
    filter_with_topology,
    node_resource_names,
    numa_node_list,
    resources_available_in_any_numa_node,
)
from nrop.sched.framework.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from nrop.sched.framework.podrequests import pod_qos

# --- builders ------------------------------------------------------------------------------


def zone(
    name: str, available: dict[str, str], costs: dict[str, int] | None = None, ztype: str = "Node"
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": ztype}
    if costs:
        out["costs"] = [{"name": k, "value": v} for k, v in costs.items()]
    out["resources"] = [
        {"name": k, "capacity": v, "allocatable": v, "available": v} for k, v in available.items()
    ]
    return out


def nrt_obj(
    *zones: dict[str, Any],
    policy: str | None = "single-numa-node",
    scope: str | None = "container",
    name: str = "w0",
    legacy: str | None = None,
) -> dict[str, Any]:
    attrs = []
    if policy:
        attrs.append({"name": "topologyManagerPolicy", "value": policy})
    if scope:
        attrs.append({"name": "topologyManagerScope", "value": scope})
    obj: dict[str, Any] = {"metadata": {"name": name}, "zones": list(zones), "attributes": attrs}
    if legacy:
        obj["topologyPolicies"] = [legacy]
    return obj


def nrt(*zones: dict[str, Any], **kw: Any) -> NodeResourceTopology:
    return NodeResourceTopology.from_dict(nrt_obj(*zones, **kw))


ALLOCATABLE = {
    "cpu": "16",
    "memory": "64Gi",
    "pods": "110",
    "ephemeral-storage": "100Gi",
    "example.com/dev": "4",
    "hugepages-2Mi": "1Gi",
    "hugepages-1Gi": "2Gi",
}


def node_info(name: str = "w0", allocatable: dict[str, str] | None = None) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name}, "status": {"allocatable": allocatable or ALLOCATABLE}})


def ctr(
    requests: dict[str, str] | None = None, *, guaranteed: bool = True, name: str = "c", **extra: Any
) -> dict[str, Any]:
    requests = requests or {}
    resources: dict[str, Any] = {"requests": dict(requests)}
    if guaranteed:
        resources["limits"] = dict(requests)
    return {"name": name, "resources": resources, **extra}


def g(cpu: str, memory: str = "1Gi", extra: dict[str, str] | None = None) -> dict[str, Any]:
    """A Guaranteed container (limits == requests)."""
    return ctr({"cpu": cpu, "memory": memory, **(extra or {})})


def pod(
    *containers: dict[str, Any],
    init: tuple[dict[str, Any], ...] = (),
    overhead: dict[str, str] | None = None,
    scheduler: str = "topo-aware",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if overhead:
        spec["overhead"] = overhead
    return {"metadata": {"namespace": "ns", "name": "p", "uid": "uid-p"}, "spec": spec}


TWO_NUMA = (
    zone("node-0", {"cpu": "4", "memory": "8Gi", "example.com/dev": "1"}),
    zone("node-1", {"cpu": "4", "memory": "8Gi"}),
)
OK = Status.success()


def unschedulable(message: str) -> Status:
    return Status.unschedulable(message)


# --- NUMA node list ------------------------------------------------------------------------


def test_numa_node_list_keeps_node_zones_in_order_with_available_only() -> None:
    topology = nrt(
        zone("socket-0", {"cpu": "8"}, ztype="Socket"),
        zone("node-1", {"cpu": "3"}, costs={"node-0": 21, "node-1": 10}),
        zone("node-0", {"cpu": "2"}, costs={"node-0": 10, "node-1": 21, "bogus": 5, "node-65": 1}),
        zone("numa-2", {"cpu": "1"}),
        zone("node-64", {"cpu": "1"}),
        zone("node-63", {"cpu": "1"}),
        zone("node--1", {"cpu": "1"}),
    )
    nodes = numa_node_list(topology.zones)
    assert [n.numa_id for n in nodes] == [1, 0, 63]
    assert nodes[0].resources == {"cpu": parse("3")}
    assert nodes[0].costs == {0: 21, 1: 10}
    assert nodes[1].costs == {0: 10, 1: 21}
    assert nodes[2].costs == {}


def test_numa_node_list_reads_available_not_allocatable() -> None:
    obj = nrt_obj(zone("node-0", {}))  # resources set by hand below
    obj["zones"][0]["resources"] = [{"name": "cpu", "capacity": "8", "allocatable": "7", "available": "2"}]
    assert numa_node_list(NodeResourceTopology.from_dict(obj).zones)[0].resources == {"cpu": parse("2")}


def test_numa_node_list_duplicate_id_takes_costs_of_last_zone() -> None:
    topology = nrt(
        zone("node-0", {"cpu": "1"}, costs={"node-0": 10}), zone("node-0", {"cpu": "2"}, costs={"node-0": 11})
    )
    nodes = numa_node_list(topology.zones)
    assert [(n.numa_id, n.resources["cpu"], n.costs) for n in nodes] == [
        (0, parse("1"), {0: 11}),
        (0, parse("2"), {0: 11}),
    ]


def test_node_resource_names_always_has_base_four() -> None:
    assert node_resource_names({"example.com/dev": 1, "hugepages-2Mi": 2, "storage": 3, "foo": 4}) == {
        "cpu",
        "memory",
        "pods",
        "ephemeral-storage",
        "example.com/dev",
        "hugepages-2Mi",
    }


# --- single-NUMA fit --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zones", "requests", "qos", "expected_id", "reason"),
    [
        pytest.param(TWO_NUMA, {"cpu": "2", "memory": "1Gi"}, "Guaranteed", 0, "generic", id="lowest-id"),
        pytest.param(
            (zone("node-3", {"cpu": "4"}), zone("node-1", {"cpu": "4"})),
            {"cpu": "2"},
            "Guaranteed",
            1,
            "generic",
            id="lowest-id-not-first-zone",
        ),
        pytest.param(
            (zone("node-0", {"cpu": "1"}), zone("node-1", {"cpu": "4"})),
            {"cpu": "2"},
            "Guaranteed",
            1,
            "generic",
            id="only-node-1-fits",
        ),
        pytest.param(TWO_NUMA, {"cpu": "5"}, "Guaranteed", None, "cpu", id="too-big-for-any"),
        pytest.param(TWO_NUMA, {"cpu": "5"}, "Burstable", 0, "generic", id="burstable-cpu-always-fits"),
        pytest.param(
            TWO_NUMA,
            {"example.com/dev": "2"},
            "Burstable",
            None,
            "example.com/dev",
            id="burstable-device-checked",
        ),
        pytest.param(
            TWO_NUMA,
            {"example.com/gpu": "1"},
            "Guaranteed",
            None,
            "example.com/gpu",
            id="not-on-node-early-verdict",
        ),
        pytest.param(
            TWO_NUMA, {"example.com/gpu": "0"}, "Guaranteed", 0, "generic", id="zero-request-skipped"
        ),
        pytest.param(
            TWO_NUMA, {"ephemeral-storage": "1Gi"}, "Guaranteed", 0, "generic", id="storage-host-level"
        ),
        pytest.param(
            (zone("node-0", {"cpu": "4"}), zone("node-1", {"cpu": "4"})),
            {"example.com/dev": "1"},
            "Guaranteed",
            0,
            "generic",
            id="device-host-level",
        ),
        pytest.param(
            TWO_NUMA,
            {"hugepages-1Gi": "1Gi"},
            "Guaranteed",
            None,
            "hugepages-1Gi",
            id="native-unreported-fails",
        ),
        pytest.param(TWO_NUMA, {"cpu": "1500m"}, "Guaranteed", 0, "generic", id="fraction-fits"),
        pytest.param(
            (zone("node-0", {"cpu": "1"}),),
            {"cpu": "1500m"},
            "Guaranteed",
            None,
            "cpu",
            id="fraction-compared-exactly",
        ),
        pytest.param(
            TWO_NUMA,
            {"cpu": "1", "example.com/dev": "1"},
            "Guaranteed",
            0,
            "generic",
            id="device-pins-node-0",
        ),
    ],
)
def test_resources_available_in_any_numa_node(
    zones: tuple[dict[str, Any], ...],
    requests: dict[str, str],
    qos: str,
    expected_id: int | None,
    reason: str,
) -> None:
    fit = resources_available_in_any_numa_node(
        numa_node_list(nrt(*zones).zones),
        {k: parse(v) for k, v in requests.items()},
        qos,
        node_resource_names(node_info().allocatable),
    )
    assert (fit.numa_id, fit.reason, fit.ok) == (expected_id, reason, expected_id is not None)


# --- handlers --------------------------------------------------------------------------------

DEV_ON_1 = (
    zone("node-0", {"cpu": "4", "memory": "8Gi"}),
    zone("node-1", {"cpu": "4", "memory": "8Gi", "example.com/dev": "1"}),
)

FILTER_CASES = [
    # container scope, Guaranteed
    pytest.param(TWO_NUMA, "container", pod(g("2")), OK, id="ctr-fits"),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("6")),
        unschedulable("cannot align container"),
        id="ctr-too-big-fits-node-total",
    ),
    pytest.param(TWO_NUMA, "container", pod(g("3"), g("3")), OK, id="ctr-second-goes-to-node-1"),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("3"), g("3"), g("3")),
        unschedulable("cannot align container"),
        id="ctr-subtraction-exhausts",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1", "6Gi"), g("1", "6Gi")),
        OK,
        id="ctr-memory-subtracted-second-on-node-1",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1", "6Gi"), g("1", "6Gi"), g("1", "6Gi")),
        unschedulable("cannot align container"),
        id="ctr-memory-exhausted",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1"), init=(g("5"),)),
        unschedulable("cannot align init container"),
        id="init-too-big",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1"), init=(ctr({"cpu": "5", "memory": "1Gi"}, restartPolicy="Always"),)),
        unschedulable("cannot align sidecar container"),
        id="sidecar-too-big",
    ),
    pytest.param(TWO_NUMA, "container", pod(g("4"), init=(g("3"), g("3"))), OK, id="inits-not-accumulated"),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("4"), init=(ctr({"cpu": "3", "memory": "1Gi"}, restartPolicy="Always"),)),
        OK,
        id="sidecar-not-accumulated",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1", extra={"example.com/gpu": "1"})),
        unschedulable("cannot align container"),
        id="resource-missing-on-node",
    ),
    pytest.param(
        (zone("node-0", {"cpu": "4", "memory": "8Gi"}), zone("node-1", {"cpu": "4", "memory": "8Gi"})),
        "container",
        pod(g("1", extra={"example.com/dev": "3"})),
        OK,
        id="device-without-numa-affinity-host-level",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(g("1", extra={"hugepages-1Gi": "1Gi"})),
        unschedulable("cannot align container"),
        id="hugepages-unreported",
    ),
    pytest.param(
        DEV_ON_1,
        "container",
        pod(g("1", extra={"example.com/dev": "1"}), g("4")),
        OK,
        id="device-pins-node-1-next-on-node-0",
    ),
    pytest.param(
        DEV_ON_1,
        "container",
        pod(g("1", extra={"example.com/dev": "1"}), g("1", extra={"example.com/dev": "1"})),
        unschedulable("cannot align container"),
        id="device-consumed-by-first",
    ),
    pytest.param(TWO_NUMA, "container", pod(g("1500m")), OK, id="fractional-cpu-fits"),
    pytest.param(
        (zone("node-0", {"cpu": "1", "memory": "8Gi"}),),
        "container",
        pod(g("1500m")),
        unschedulable("cannot align container"),
        id="fractional-cpu-checked",
    ),
    # container scope, Burstable / BestEffort with devices
    pytest.param(
        TWO_NUMA, "container", pod(ctr({"cpu": "12"}, guaranteed=False)), OK, id="burstable-cpu-not-checked"
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(ctr({"cpu": "1", "example.com/dev": "2"}, guaranteed=False)),
        unschedulable("cannot align container"),
        id="burstable-device-checked",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(ctr({"example.com/dev": "1"}, guaranteed=False), ctr({"example.com/dev": "1"}, guaranteed=False)),
        unschedulable("cannot align container"),
        id="besteffort-devices-subtracted",
    ),
    pytest.param(
        TWO_NUMA,
        "container",
        pod(
            ctr({"cpu": "3"}, guaranteed=False),
            ctr({"cpu": "3"}, guaranteed=False),
            ctr({"cpu": "3"}, guaranteed=False),
        ),
        OK,
        id="burstable-cpu-not-subtracted",
    ),
    # pod scope
    pytest.param(TWO_NUMA, "pod", pod(g("2"), g("2")), OK, id="pod-fits"),
    pytest.param(
        TWO_NUMA, "pod", pod(g("3"), g("3")), unschedulable("cannot align pod"), id="pod-sum-too-big"
    ),
    pytest.param(
        TWO_NUMA, "pod", pod(g("1"), init=(g("5"),)), unschedulable("cannot align pod"), id="pod-init-too-big"
    ),
    pytest.param(
        TWO_NUMA,
        "pod",
        pod(g("4"), overhead={"cpu": "100m"}),
        unschedulable("cannot align pod"),
        id="pod-overhead-counts",
    ),
    pytest.param(TWO_NUMA, "pod", pod(ctr({"cpu": "12"}, guaranteed=False)), OK, id="pod-burstable-cpu"),
    pytest.param(
        TWO_NUMA,
        "pod",
        pod(g("1", extra={"example.com/dev": "1"}), g("1", extra={"example.com/dev": "1"})),
        unschedulable("cannot align pod"),
        id="pod-devices-summed",
    ),
]


@pytest.mark.parametrize(("zones", "scope", "the_pod", "expected"), FILTER_CASES)
def test_filter_with_topology(
    zones: tuple[dict[str, Any], ...], scope: str, the_pod: dict[str, Any], expected: Status
) -> None:
    assert filter_with_topology(the_pod, pod_qos(the_pod), node_info(), nrt(*zones, scope=scope)) == expected


@pytest.mark.parametrize(
    ("policy", "scope", "legacy", "expected"),
    [
        pytest.param("none", "container", None, OK, id="policy-none-not-filtered"),
        pytest.param("best-effort", "container", None, OK, id="best-effort-not-filtered"),
        pytest.param("restricted", "pod", None, OK, id="restricted-not-filtered"),
        pytest.param(None, None, None, OK, id="no-attributes-default-none"),
        pytest.param(
            None, None, "SingleNUMANodePodLevel", unschedulable("cannot align pod"), id="legacy-pod-level"
        ),
        pytest.param(
            None,
            None,
            "SingleNUMANodeContainerLevel",
            unschedulable("cannot align container"),
            id="legacy-container-level",
        ),
        pytest.param(
            "single-numa-node",
            None,
            "SingleNUMANodePodLevel",
            unschedulable("cannot align pod"),
            id="attribute-over-legacy",
        ),
        pytest.param(
            "single-numa-node",
            "bogus",
            None,
            unschedulable("cannot align container"),
            id="invalid-scope-ignored",
        ),
    ],
)
def test_filter_policies(policy: str | None, scope: str | None, legacy: str | None, expected: Status) -> None:
    topology = nrt(*TWO_NUMA, policy=policy, scope=scope, legacy=legacy)
    the_pod = pod(g("6"))
    assert filter_with_topology(the_pod, "Guaranteed", node_info(), topology) == expected


def test_inconsistent_resource_accounting_is_an_error() -> None:
    # Two zones claim NUMA id 0: the fit check sees one with room, the subtraction hits both.
    topology = nrt(
        zone("node-0", {"cpu": "4", "memory": "8Gi"}), zone("node-0", {"cpu": "1", "memory": "8Gi"})
    )
    status = filter_with_topology(pod(g("2")), "Guaranteed", node_info(), topology)
    assert status.code is Code.ERROR
    assert status.reasons == (
        "inconsistent resource accounting",
        'resource "cpu" request 2 exceeds NUMA 0 availability 1',
    )


# --- the plugin's Filter flow ----------------------------------------------------------------


class Handle:
    """An in-memory scheduler handle: NRTs and pods by name, event callbacks recorded."""

    def __init__(
        self, nrts: list[dict[str, Any]] | None = None, pods: list[dict[str, Any]] | None = None
    ) -> None:
        self.nrts = {o["metadata"]["name"]: o for o in nrts or []}
        self.pods = list(pods or [])
        self.pod_callbacks: list[Callable[[str, dict[str, Any]], None]] = []
        self.nrt_callbacks: list[Callable[[str, dict[str, Any]], None]] = []

    @property
    def profile_name(self) -> str:
        return "topo-aware"

    def scheduler_names(self) -> frozenset[str]:
        return frozenset({"topo-aware"})

    def list_pods(self) -> list[dict[str, Any]]:
        return list(self.pods)

    def get_nrt(self, node_name: str) -> dict[str, Any] | None:
        return self.nrts.get(node_name)

    def list_nrts(self) -> list[dict[str, Any]]:
        return list(self.nrts.values())

    def on_pod_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        self.pod_callbacks.append(callback)

    def on_nrt_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        self.nrt_callbacks.append(callback)

    def now(self) -> float:
        return 0.0


def plugin(handle: Handle, **args: Any) -> NodeResourceTopologyMatch:
    return NodeResourceTopologyMatch(
        NodeResourceTopologyMatchArgs(**args), handle, profiles=SchedulerProfiles()
    )


def besteffort(requests: dict[str, str] | None = None) -> dict[str, Any]:
    return ctr(requests, guaranteed=False)


@pytest.mark.parametrize(
    ("the_pod", "nrts", "expected"),
    [
        pytest.param(
            pod(g("6")), [nrt_obj(*TWO_NUMA)], unschedulable("cannot align container"), id="filtered"
        ),
        pytest.param(pod(g("6")), [], OK, id="no-nrt-passes"),
        pytest.param(pod(besteffort()), [nrt_obj(zone("node-0", {"cpu": "0"}))], OK, id="besteffort-skipped"),
        pytest.param(
            pod(besteffort({"example.com/dev": "2"})),
            [nrt_obj(*TWO_NUMA)],
            unschedulable("cannot align container"),
            id="besteffort-with-device-filtered",
        ),
        pytest.param(pod(g("6")), [nrt_obj(*TWO_NUMA, policy="best-effort")], OK, id="other-policy-passes"),
    ],
)
def test_plugin_filter(the_pod: dict[str, Any], nrts: list[dict[str, Any]], expected: Status) -> None:
    status = plugin(Handle(nrts)).filter(CycleState(), the_pod, node_info())
    assert (status.code, status.reasons) == (expected.code, expected.reasons)
    if not status.ok:
        assert status.plugin == "NodeResourceTopologyMatch"


def test_plugin_filter_node_not_found() -> None:
    status = plugin(Handle()).filter(CycleState(), pod(g("1")), NodeInfo({}))
    assert (status.code, status.reasons) == (Code.ERROR, ("node not found",))


def test_plugin_filter_invalid_topology_data_while_reserved() -> None:
    handle = Handle([nrt_obj(*TWO_NUMA)])
    p = plugin(handle, discard_reserved_nodes=True)
    state = CycleState()
    assert p.filter(state, pod(g("1")), node_info()).ok
    p.reserve(state, pod(g("1")), "w0")
    status = p.filter(state, pod(g("1")), node_info())
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ("invalid node topology data",))
    # BestEffort pods without devices never look at the NRT.
    assert p.filter(state, pod(besteffort()), node_info()).ok
    p.post_bind(state, pod(g("1")), "w0")
    assert p.filter(state, pod(g("1")), node_info()).ok


def test_plugin_filter_failure_marks_node_dirty_unless_preempting() -> None:
    running = pod(g("1"))
    running["spec"]["nodeName"] = "w0"
    running["status"] = {"phase": "Running"}
    handle = Handle([nrt_obj(*TWO_NUMA)], [running])
    normal = plugin(handle, cache_resync_period_seconds=5)
    state = CycleState()
    normal.pre_filter(state, pod(g("6")))
    assert not normal.filter(state, pod(g("6")), node_info()).ok
    report = normal.resync()
    assert report is not None
    assert dict(report.skipped) == {"w0": "missing NodeTopology podset fingerprint data"}

    preempting = plugin(handle, cache_resync_period_seconds=5, preemption_mode=PreemptionMode.ENABLED)
    state = CycleState()
    preempting.pre_filter(state, pod(g("6")))
    victim = pod(g("1"))
    assert preempting.remove_pod(state, pod(g("6")), PodInfo.of(victim), node_info()).ok
    assert not preempting.filter(state, pod(g("6")), node_info()).ok
    report = preempting.resync()
    assert report is not None
    assert dict(report.skipped) == {}
    # Once the victim is given back, a failure marks the node again.
    assert preempting.add_pod(state, pod(g("6")), PodInfo.of(victim), node_info()).ok
    assert not preempting.filter(state, pod(g("6")), node_info()).ok
    report = preempting.resync()
    assert report is not None
    assert set(report.skipped) == {"w0"}


def test_prefilter_extensions_need_prefilter_state() -> None:
    status = plugin(Handle()).add_pod(CycleState(), pod(g("1")), PodInfo.of(pod(g("1"))), node_info())
    assert status.code is Code.ERROR
