"""Table tests of the emulated kubelet's admission pipeline, with kubernetes' ``test/e2e_node`` scenarios.

The nodes are built here: the shipped-style 2-NUMA HT node (2 x 8 cores x 2 threads,
reserved CPUs 0 and its sibling 16, 16Gi per NUMA node, 2Mi pages on NUMA 0 and 1Gi pages
on NUMA 1, a device only on NUMA 0 and one on both) and a 4-NUMA node.
"""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.deviceplugin import Device
from nrop.localcluster.kubelet.cm import CPUTopology
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.decisions.admission import (
    ContainerKind,
    DeviceAllocation,
    MemoryAllocation,
    NodeResourceManagers,
    machine_devices,
)
from nrop.localcluster.kubelet.machine import (
    DeviceGroup,
    KubeletConfig,
    Machine,
    MemoryReservation,
    NodeSpec,
    NUMANode,
)

GI = 1024**3
MI = 1024**2
TAE = "TopologyAffinityError"
UAE = "UnexpectedAdmissionError"
TOPOLOGY_MESSAGE = "Resources cannot be allocated with Topology locality"
NUMA0_DEV = "example.com/numa0dev"
SRIOV = "example.com/sriov"

HT2 = CPUTopology.from_scheme("linux-interleaved", sockets=2, cores_per_numa_node=8, threads_per_core=2)
NUMA_CPUS = {0: CPUSet.parse("0-7,16-23"), 1: CPUSet.parse("8-15,24-31")}
RESERVED = CPUSet.of(0, 16)
#: smtLevel x coresPerSocket of the e2e tests: one whole NUMA node / socket.
WHOLE_SOCKET = 16


def two_numa(
    policy: str = "single-numa-node",
    *,
    scope: str = "container",
    cpu_policy: str = "static",
    cpu_options: dict[str, str] | None = None,
    memory_policy: str = "Static",
    max_pods: int = 110,
) -> NodeResourceManagers:
    machine = Machine(
        HT2,
        (
            NUMANode(0, 16 * GI, {2 * MI: 512}, (10, 20)),
            NUMANode(1, 16 * GI, {GI: 4}, (20, 10)),
        ),
        devices=(DeviceGroup(NUMA0_DEV, {0: 2}), DeviceGroup(SRIOV, {0: 4, 1: 4})),
    )
    config = KubeletConfig(
        cpu_manager_policy=cpu_policy,
        cpu_manager_policy_options=cpu_options or {},
        reserved_system_cpus="0,16",
        system_reserved={"memory": "500Mi"},
        kube_reserved={"memory": "500Mi"},
        memory_manager_policy=memory_policy,
        reserved_memory=(MemoryReservation(0, {"memory": 1100 * MI}),) if memory_policy == "Static" else (),
        topology_manager_policy=policy,
        topology_manager_scope=scope,
        max_pods=max_pods,
    )
    return NodeResourceManagers(NodeSpec("worker-0", machine, config))


DISTANCES_4 = ((10, 21, 11, 21), (21, 10, 21, 11), (11, 21, 10, 21), (21, 11, 21, 10))


def four_numa(policy: str, options: dict[str, str] | None = None) -> NodeResourceManagers:
    topology = CPUTopology.from_scheme(
        "linux-interleaved", sockets=2, numa_nodes_per_socket=2, cores_per_numa_node=4, threads_per_core=2
    )
    machine = Machine(topology, tuple(NUMANode(n, 8 * GI, {}, DISTANCES_4[n]) for n in range(4)))
    config = KubeletConfig(
        cpu_manager_policy="static",
        kube_reserved={"cpu": "200m"},
        topology_manager_policy=policy,
        topology_manager_policy_options=options or {},
    )
    return NodeResourceManagers(NodeSpec("worker-4", machine, config))


def ctr(
    name: str, cpu: str | None = None, memory: str = "100Mi", *, gu: bool = True, **extra: str
) -> dict[str, Any]:
    """A container; Guaranteed ones set limits == requests, the others requests only."""
    values = {k.replace("example_com_", "example.com/").replace("_", "-"): v for k, v in extra.items()}
    if cpu is not None:
        values["cpu"] = cpu
    if memory:
        values["memory"] = memory
    resources = {"limits": dict(values), "requests": dict(values)} if gu else {"requests": dict(values)}
    return {"name": name, "resources": resources}


def sidecar(container: dict[str, Any]) -> dict[str, Any]:
    return {**container, "restartPolicy": "Always"}


def pod(uid: str, *containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"metadata": {"uid": uid, "name": f"pod-{uid}", "namespace": "test"}, "spec": spec}


def cpus_of(node: NodeResourceManagers, uid: str, container: str = "c") -> CPUSet:
    allocation = node.allocations()[uid]
    return next(c.cpus for c in allocation.containers if c.name == container)


def numa_of(cpus: CPUSet) -> set[int]:
    return {n for n, members in NUMA_CPUS.items() if cpus.intersection(members)}


def siblings(cpus: CPUSet) -> bool:
    return cpus.size() == 2 and HT2.physical_cpus_of(cpus) == cpus


# --- who gets exclusive CPUs (e2e_node topology/CPU manager suites) -------------------------


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", "single-numa-node"])
@pytest.mark.parametrize(
    ("containers", "sizes"),
    [
        pytest.param([ctr("c", "1")], {"c": 1}, id="gu-1-cpu"),
        pytest.param([ctr("c", "2")], {"c": 2}, id="gu-2-cpus"),
        pytest.param([ctr("c", "1"), ctr("d", "1")], {"c": 1, "d": 1}, id="gu-2-containers-1-cpu-each"),
        pytest.param([ctr("c", "3"), ctr("d", "2")], {"c": 3, "d": 2}, id="gu-3-plus-2"),
    ],
)
def test_guaranteed_pod_gets_exclusive_cpus_from_one_zone(
    policy: str, containers: list[dict[str, Any]], sizes: dict[str, int]
) -> None:
    node = two_numa(policy)
    result = node.admit(pod("p", *containers))
    assert result.admitted, result
    assert result.allocation is not None
    got = {c.name: c.cpus for c in result.allocation.containers}
    assert {name: cpus.size() for name, cpus in got.items()} == sizes
    every = CPUSet().union(*got.values())
    assert every.size() == sum(sizes.values()), "exclusive sets are disjoint"
    assert not every.intersection(RESERVED)
    assert len(numa_of(every)) == 1
    assert node.shared_cpus() == HT2.all_cpus().difference(every)
    if sizes.get("c") == 2:
        assert siblings(got["c"])


@pytest.mark.parametrize(
    ("containers", "mems"),
    [
        pytest.param([ctr("c", "1", gu=False)], {0, 1}, id="burstable"),
        pytest.param([{"name": "c"}], {0, 1}, id="best-effort"),
        # Still Guaranteed: the memory manager pins its memory even though its CPUs are shared.
        pytest.param([ctr("c", "1500m")], {0}, id="guaranteed-non-integral-cpu"),
    ],
)
def test_non_integral_or_non_guaranteed_containers_run_in_the_shared_pool(
    containers: list[dict[str, Any]], mems: set[int]
) -> None:
    node = two_numa()
    result = node.admit(pod("p", *containers))
    assert result.admitted
    assert result.allocation is not None
    assert result.allocation.containers[0].cpus == CPUSet()
    assert node.container_cpus("p", "c") == HT2.all_cpus()
    assert node.container_mems("p", "c") == mems


def test_mixed_pod_and_shared_container_shrinks_with_exclusive_allocations() -> None:
    node = two_numa()
    assert node.admit(pod("gu", ctr("c", "2"), ctr("shared", "1500m"))).admitted
    assert node.admit(pod("bu", ctr("c", "1", gu=False))).admitted
    exclusive = cpus_of(node, "gu")
    assert cpus_of(node, "gu", "shared") == CPUSet()
    assert node.container_cpus("bu", "c") == HT2.all_cpus().difference(exclusive)
    assert node.container_cpus("gu", "shared") == HT2.all_cpus().difference(exclusive)


# --- topology manager policies (e2e_node topology manager suite) ----------------------------


SRIOV_1 = {"example_com_sriov": "1"}


@pytest.mark.parametrize(
    ("policy", "memory_policy", "extra", "admitted", "zones"),
    [
        pytest.param("single-numa-node", "None", {}, False, None, id="single-numa-node-rejects"),
        pytest.param(
            "single-numa-node", "Static", SRIOV_1, False, None, id="single-numa-node-rejects-with-device"
        ),
        pytest.param("restricted", "None", {}, True, {0, 1}, id="restricted-admits-across-zones"),
        # A device's or the memory manager's preferred single-zone hints never equal the CPUs'
        # {0,1}: no merged hint is preferred, so restricted refuses (upstream behaviour).
        pytest.param("restricted", "None", SRIOV_1, False, None, id="restricted-rejects-with-device"),
        pytest.param("restricted", "Static", {}, False, None, id="restricted-rejects-with-memory-manager"),
        pytest.param("best-effort", "Static", SRIOV_1, True, {0, 1}, id="best-effort-admits"),
        pytest.param("none", "Static", SRIOV_1, True, {0, 1}, id="none-admits"),
    ],
)
def test_pod_that_fits_only_across_zones(
    policy: str, memory_policy: str, extra: dict[str, str], admitted: bool, zones: set[int] | None
) -> None:
    """e2e_node topology manager negative case: a whole socket + 1 CPU (+ 1 device)."""
    node = two_numa(policy, memory_policy=memory_policy)
    result = node.admit(pod("p", ctr("c", str(WHOLE_SOCKET + 1), **extra)))
    assert result.admitted is admitted
    if not admitted:
        assert (result.reason, result.message) == (TAE, TOPOLOGY_MESSAGE)
        assert result.rejection_status() == {
            "phase": "Failed",
            "reason": TAE,
            "message": "Pod was rejected: Resources cannot be allocated with Topology locality",
        }
        assert node.shared_cpus() == HT2.all_cpus()
        assert node.allocations() == {}
    else:
        assert numa_of(cpus_of(node, "p")) == zones


def test_single_numa_node_picks_the_zone_that_still_fits() -> None:
    # NUMA 0 has 14 usable CPUs (0 and 16 reserved): 15 CPUs only fit NUMA 1.
    node = two_numa("single-numa-node")
    assert node.admit(pod("p", ctr("c", "15"))).admitted
    assert numa_of(cpus_of(node, "p")) == {1}


@pytest.mark.parametrize(
    ("policy", "admitted", "cpu_zones"),
    [
        pytest.param("best-effort", True, {0, 1}, id="best-effort-admits-non-preferred"),
        pytest.param("restricted", False, None, id="restricted-rejects-non-preferred"),
        pytest.param("single-numa-node", False, None, id="single-numa-node-rejects"),
    ],
)
def test_device_only_on_a_zone_without_room_for_the_cpus(
    policy: str, admitted: bool, cpu_zones: set[int] | None
) -> None:
    """Worked merge: CPU hints [{1}T, {0,1}F] and device hints [{0}T, {0,1}F] merge to {0}, not preferred."""
    node = two_numa(policy)
    assert node.admit(pod("filler", ctr("c", "13"))).admitted
    assert numa_of(cpus_of(node, "filler")) == {0}
    result = node.admit(pod("p", ctr("c", "2", example_com_numa0dev="1")))
    assert result.admitted is admitted
    if admitted:
        assert numa_of(cpus_of(node, "p")) == cpu_zones
        assert result.allocation is not None
        assert [d.numa_node for d in result.allocation.containers[0].devices] == [0]
    else:
        assert (result.reason, result.message) == (TAE, TOPOLOGY_MESSAGE)
        assert node.devices.allocated.get(NUMA0_DEV, set()) == set(), "device rolled back"


@pytest.mark.parametrize(
    ("scope", "admitted"),
    [
        pytest.param("container", True, id="container-scope-each-container-fits-a-zone"),
        pytest.param("pod", False, id="pod-scope-pod-total-exceeds-a-zone"),
    ],
)
def test_pod_scope_vs_container_scope(scope: str, admitted: bool) -> None:
    node = two_numa("single-numa-node", scope=scope)
    result = node.admit(pod("p", ctr("c", "10"), ctr("d", "10")))
    assert result.admitted is admitted
    if admitted:
        assert numa_of(cpus_of(node, "p", "c")) == {0}
        assert numa_of(cpus_of(node, "p", "d")) == {1}
    else:
        assert result.reason == TAE
        assert node.shared_cpus() == HT2.all_cpus()


def test_pod_scope_whole_socket_plus_one_rejected() -> None:
    node = two_numa("single-numa-node", scope="pod")
    result = node.admit(pod("p", ctr("c", str(WHOLE_SOCKET)), ctr("d", "1")))
    assert (result.admitted, result.reason) == (False, TAE)


def test_pod_scope_init_containers_pods_land_on_different_zones() -> None:
    """e2e_node pod scope: init [(n/2+1), 1] + apps [1, 1]: demand = max(init max, app sum)."""
    node = two_numa("single-numa-node", scope="pod")
    zones = []
    for uid in ("a", "b"):
        spec = pod(
            uid, ctr("c", "1"), ctr("d", "1"), init=(ctr("i1", str(WHOLE_SOCKET // 2 + 1)), ctr("i2", "1"))
        )
        assert node.admit(spec).admitted
        allocation = node.allocations()[uid]
        every = CPUSet().union(*(c.cpus for c in allocation.containers))
        zones.append(numa_of(every))
    assert zones == [{0}, {1}]


def test_pod_scope_two_oversized_sidecars_rejected() -> None:
    node = two_numa("single-numa-node", scope="pod")
    half = str(WHOLE_SOCKET // 2 + 1)
    result = node.admit(pod("p", ctr("c", "1"), init=(sidecar(ctr("s1", half)), sidecar(ctr("s2", half)))))
    assert (result.admitted, result.reason) == (False, TAE)


@pytest.mark.parametrize(
    ("containers", "init", "zones"),
    [
        pytest.param([ctr("c", "1", example_com_sriov="1")], (), [{0}], id="1-core-1-device"),
        pytest.param([ctr("c", "2", example_com_sriov="1")], (), [{0}], id="2-cores-1-device"),
        pytest.param(
            [ctr("c", "2", example_com_sriov="1"), ctr("d", "2", example_com_sriov="1")],
            (),
            [{0}, {0}],
            id="2-containers-2-cores-1-device",
        ),
        pytest.param(
            [ctr("c", "1", example_com_sriov="1")],
            (sidecar(ctr("s", "1", example_com_sriov="1")),),
            [{0}, {0}],
            id="sidecar-and-app-1-core-1-device",
        ),
        pytest.param([ctr("c", "2", example_com_numa0dev="1")], (), [{0}], id="device-pins-the-cpus-zone"),
    ],
)
def test_device_and_cpu_alignment(
    containers: list[dict[str, Any]], init: tuple[dict[str, Any], ...], zones: list[set[int]]
) -> None:
    """e2e_node node alignment suite (single-numa-node): each container's CPUs and devices on one zone."""
    node = two_numa("single-numa-node")
    result = node.admit(pod("p", *containers, init=init))
    assert result.admitted, result
    assert result.allocation is not None
    for container, expected in zip(result.allocation.containers, zones, strict=True):
        assert numa_of(container.cpus) == expected
        assert {d.numa_node for d in container.devices} == expected


def test_device_plugin_devices_pull_cpus_to_their_zone() -> None:
    node = two_numa("single-numa-node")
    node.set_plugin_devices("example.com/plug", [Device("p0", True, (1,)), Device("p1", True, (1,))])
    assert node.node_resources().allocatable["example.com/plug"] == 2
    result = node.admit(pod("p", ctr("c", "2", example_com_plug="1")))
    assert result.admitted
    assert numa_of(cpus_of(node, "p")) == {1}
    assert result.allocation is not None
    assert result.allocation.containers[0].devices == (DeviceAllocation("example.com/plug", "p0", 1),)
    node.remove_plugin_devices("example.com/plug")
    assert "example.com/plug" not in node.node_resources().capacity


def test_prefer_closest_numa_nodes_on_four_numa_node() -> None:
    """With distances 0-2 and 1-3 close, a two-zone request goes to {0,2}, else to {0,1}."""
    zones = {}
    for options in ({}, {"prefer-closest-numa-nodes": "true"}):
        node = four_numa("best-effort", options)
        assert node.admit(pod("p", ctr("c", "10"))).admitted
        cpus = cpus_of(node, "p")
        details = node.spec.machine.topology.details
        zones[bool(options)] = {details[c].numa_node for c in cpus}
    assert zones == {False: {0, 1}, True: {0, 2}}


def test_single_numa_node_on_four_numa_node() -> None:
    node = four_numa("single-numa-node")
    assert node.admit(pod("ok", ctr("c", "7"))).admitted
    assert node.admit(pod("too-big", ctr("c", "9"))).reason == TAE


# --- full-pcpus-only (e2e_node CPU manager suite) ------------------------------------------


@pytest.mark.parametrize(
    ("cpus", "reason", "message"),
    [
        pytest.param(
            "1",
            "SMTAlignmentError",
            "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2",
            id="odd-1",
        ),
        pytest.param(
            "3",
            "SMTAlignmentError",
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2",
            id="odd-3",
        ),
        pytest.param("2", "", "", id="one-full-core"),
    ],
)
def test_full_pcpus_only(cpus: str, reason: str, message: str) -> None:
    node = two_numa("single-numa-node", cpu_options={"full-pcpus-only": "true"})
    result = node.admit(pod("p", ctr("c", cpus)))
    assert (result.reason, result.message) == (reason, message)
    if reason:
        assert result.rejection_status()["message"] == "Pod was rejected: " + message
    else:
        assert siblings(cpus_of(node, "p"))


def test_full_pcpus_only_out_of_physical_cpus() -> None:
    node = two_numa("none", cpu_options={"full-pcpus-only": "true"})
    assert node.admit(pod("big", ctr("c", "30"))).admitted
    result = node.admit(pod("p", ctr("c", "2")))
    assert (result.reason, result.message) == (
        "SMTAlignmentError",
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 0, "
        "requested CPUs = 2, CPUs per core = 2",
    )


# --- resource fit and the order of the admit handlers ----------------------------------------

ALLOCATABLE_MEMORY = (32 * 1024 - 1100 - 1024 - 4096) * MI


@pytest.mark.parametrize(
    ("before", "spec", "reason", "message"),
    [
        pytest.param(
            [],
            pod("p", ctr("c", "31", gu=False)),
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 31000, used: 0, capacity: 30000",
            id="out-of-cpu",
        ),
        pytest.param(
            [pod("bu", ctr("c", "20", gu=False))],
            pod("p", ctr("c", "10500m", gu=False)),
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 10500, used: 20000, capacity: 30000",
            id="out-of-cpu-counting-other-pods",
        ),
        pytest.param(
            [],
            pod("p", ctr("c", "1", "30Gi", gu=False)),
            "OutOfmemory",
            f"Node didn't have enough resource: memory, requested: {30 * GI}, used: 0, capacity: {ALLOCATABLE_MEMORY}",
            id="out-of-memory",
        ),
        pytest.param(
            [],
            pod("p", ctr("c", "1", gu=False, hugepages_1Gi="5Gi")),
            "OutOfhugepages-1Gi",
            f"Node didn't have enough resource: hugepages-1Gi, requested: {5 * GI}, used: 0, capacity: {4 * GI}",
            id="out-of-hugepages",
        ),
        pytest.param(
            [],
            pod("p", ctr("c", "1", gu=False, ephemeral_storage="200Gi")),
            "OutOfephemeral-storage",
            f"Node didn't have enough resource: ephemeral-storage, requested: {200 * GI}, used: 0, "
            f"capacity: {100 * GI}",
            id="out-of-ephemeral-storage",
        ),
        pytest.param(
            [],
            pod("p", ctr("c", "31")),
            UAE,
            "Allocate failed due to not enough cpus available to satisfy request: requested=31, available=30, "
            "which is unexpected",
            id="guaranteed-too-many-cpus-refused-by-cpu-manager-not-predicate",
        ),
        pytest.param(
            [],
            pod("p", ctr("c", "1", example_com_numa0dev="3")),
            UAE,
            "Allocate failed due to requested number of devices unavailable for example.com/numa0dev. "
            "Requested: 3, Available: 2, which is unexpected",
            id="too-many-devices-refused-by-device-manager",
        ),
    ],
)
def test_rejections_with_topology_manager_none(
    before: list[dict[str, Any]], spec: dict[str, Any], reason: str, message: str
) -> None:
    node = two_numa("none")
    for other in before:
        assert node.admit(other).admitted
    result = node.admit(spec)
    assert (result.admitted, result.reason, result.message) == (False, reason, message)
    assert set(node.allocations()) == {p["metadata"]["uid"] for p in before}


def test_out_of_pods() -> None:
    node = two_numa(max_pods=2)
    assert node.admit(pod("a", {"name": "c"})).admitted
    assert node.admit(pod("b", {"name": "c"})).admitted
    result = node.admit(pod("c", {"name": "c"}))
    assert (result.reason, result.message) == (
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    )


def test_extended_resource_the_node_does_not_advertise_is_ignored() -> None:
    assert two_numa().admit(pod("p", ctr("c", "1", gu=False, example_com_unknown="1"))).admitted


def test_predicate_rejection_after_allocation_rolls_back_the_cpus() -> None:
    # Without the memory manager only the predicate sees the 30Gi: the CPUs were already pinned.
    node = two_numa("single-numa-node", memory_policy="None")
    result = node.admit(pod("p", ctr("c", "2", "30Gi")))
    assert result.reason == "OutOfmemory"
    assert node.shared_cpus() == HT2.all_cpus()
    assert node.cpu_state.entries == {}


# --- memory manager and hugepages alignment ----------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "zone"),
    [
        pytest.param({"hugepages_1Gi": "2Gi"}, 1, id="1Gi-pages-only-on-numa-1"),
        pytest.param({"hugepages_2Mi": "8Mi"}, 0, id="2Mi-pages-only-on-numa-0"),
    ],
)
def test_hugepages_aligned_with_cpus(extra: dict[str, str], zone: int) -> None:
    node = two_numa("single-numa-node")
    result = node.admit(pod("p", ctr("c", "2", "1Gi", **extra)))
    assert result.admitted
    assert result.allocation is not None
    container = result.allocation.containers[0]
    assert numa_of(container.cpus) == {zone}
    assert {m.numa_nodes for m in container.memory} == {(zone,)}
    assert node.container_mems("p", "c") == {zone}


def test_memory_manager_guaranteed_pods_go_to_numa_0() -> None:
    node = two_numa("none")
    for uid in ("a", "b"):
        spec = pod(uid, ctr("c", "100m", "128Mi", hugepages_2Mi="8Mi"), init=(ctr("i", "100m", "128Mi"),))
        assert node.admit(spec).admitted
        assert node.container_mems(uid, "c") == {0}
    blocks = next(c.memory for c in node.allocations()["a"].containers if c.name == "c")
    assert blocks == (
        MemoryAllocation("memory", 128 * MI, (0,)),
        MemoryAllocation("hugepages-2Mi", 8 * MI, (0,)),
    )


def test_memory_manager_rejects_when_no_zone_has_room() -> None:
    """e2e_node case: fill each zone to (free - 256Mi); a 384Mi pod is refused by the memory manager."""
    node = two_numa("none")
    for zone in node.numa_summary():
        free = zone.memory_allocatable - zone.memory_allocated - 256 * MI
        assert node.admit(pod(f"fill-{zone.numa}", ctr("c", "100m", f"{free}"))).admitted
    assert [z.memory_allocatable - z.memory_allocated for z in node.numa_summary()] == [256 * MI, 256 * MI]
    result = node.admit(pod("p", ctr("c", "100m", "384Mi")))
    assert result.reason == UAE
    assert "Allocate failed due to [memorymanager]" in result.message


# --- init containers, release, reconcile ---------------------------------------------------------


def test_init_container_cpus_and_memory_are_reused() -> None:
    node = two_numa("single-numa-node")
    assert node.admit(pod("p", ctr("c", "2", "1Gi"), init=(ctr("i", "4", "2Gi"),))).admitted
    init, app = node.allocations()["p"].containers
    assert (init.kind, app.kind) == (ContainerKind.INIT, ContainerKind.APP)
    assert app.cpus.is_subset_of(init.cpus)
    assert node.shared_cpus().size() == 32 - 4
    assert node.numa_summary()[0].memory_allocated == 2 * GI


def test_sidecar_cpus_are_not_reused() -> None:
    node = two_numa("single-numa-node")
    assert node.admit(pod("p", ctr("c", "2"), init=(sidecar(ctr("s", "2")),))).admitted
    side, app = node.allocations()["p"].containers
    assert side.kind == ContainerKind.SIDECAR
    assert not side.cpus.intersection(app.cpus)
    assert node.shared_cpus().size() == 32 - 4


def test_release_returns_resources_so_an_identical_pod_fits() -> None:
    node = two_numa("single-numa-node")
    first = pod("a", ctr("c", "14", "4Gi", example_com_numa0dev="2"))
    assert node.admit(first).admitted
    assert node.admit(pod("b", ctr("c", "16"))).admitted
    taken = cpus_of(node, "a")
    second = pod("c", ctr("c", "14", "4Gi", example_com_numa0dev="2"))
    assert node.admit(second).reason == TAE
    node.release("a")
    assert node.numa_summary()[0].memory_allocated == 0
    assert node.admit(second).admitted
    assert cpus_of(node, "c") == taken


def test_reconcile_releases_pods_that_are_no_longer_active() -> None:
    node = two_numa()
    for uid in ("a", "b"):
        assert node.admit(pod(uid, ctr("c", "2"))).admitted
    node.reconcile(["b"])
    assert set(node.allocations()) == {"b"}
    assert node.shared_cpus().size() == 30


# --- read views and checkpoints ---------------------------------------------------------------


def test_allocatable_and_numa_summary() -> None:
    node = two_numa("single-numa-node")
    allocatable = node.allocatable()
    assert allocatable.cpus == HT2.all_cpus().difference(RESERVED)
    assert MemoryAllocation("memory", 16 * GI - 1100 * MI - GI, (0,)) in allocatable.memory
    assert MemoryAllocation("hugepages-1Gi", 4 * GI, (1,)) in allocatable.memory
    assert DeviceAllocation(NUMA0_DEV, "numa0dev-0", 0) in allocatable.devices
    assert node.admit(pod("p", ctr("c", "4", "2Gi", hugepages_1Gi="1Gi", example_com_sriov="1"))).admitted
    zone0, zone1 = node.numa_summary()
    assert (zone0.cpus_allocatable, zone0.cpus_allocated, zone1.cpus_allocatable, zone1.cpus_allocated) == (
        14,
        0,
        16,
        4,
    )
    assert (zone1.memory_allocated, zone1.hugepages_allocated, zone1.devices_allocated[SRIOV]) == (
        2 * GI,
        {"hugepages-1Gi": GI},
        1,
    )
    assert zone0.devices_allocatable == {NUMA0_DEV: 2, SRIOV: 4}


def test_cpu_policy_none_gives_no_exclusive_cpus() -> None:
    node = two_numa("none", cpu_policy="none", memory_policy="None")
    assert node.admit(pod("p", ctr("c", "2"))).admitted
    assert cpus_of(node, "p") == CPUSet()
    assert node.allocatable().cpus == CPUSet()
    assert node.allocatable().memory == ()
    assert node.container_cpus("p", "c") == HT2.all_cpus()
    assert node.cpu_manager_checkpoint().startswith(b'{"policyName":"none","defaultCpuSet":""')


def test_checkpoint_round_trip_restores_identical_state() -> None:
    node = two_numa("single-numa-node")
    pods = [
        pod("a", ctr("c", "4", "2Gi", hugepages_1Gi="1Gi", example_com_sriov="1")),
        pod("b", ctr("c", "2", "1Gi", example_com_numa0dev="1"), ctr("d", "1")),
        pod("c", ctr("c", "500m", gu=False)),
    ]
    for spec in pods:
        assert node.admit(spec).admitted
    saved = (
        node.cpu_manager_checkpoint(),
        node.memory_manager_checkpoint(),
        node.device_manager_checkpoint(),
    )

    restarted = two_numa("single-numa-node")
    restarted.restore(cpu_manager=saved[0], memory_manager=saved[1], device_manager=saved[2])
    assert (
        restarted.cpu_manager_checkpoint(),
        restarted.memory_manager_checkpoint(),
        restarted.device_manager_checkpoint(),
    ) == saved
    assert restarted.numa_summary() == node.numa_summary()
    for spec in pods:  # the kubelet re-admits the running pods and finds their allocations
        assert restarted.admit(spec).admitted
    assert restarted.allocations() == node.allocations()
    assert restarted.cpu_manager_checkpoint() == saved[0]
    assert restarted.memory_manager_checkpoint() == saved[1]
    assert restarted.admit(pod("d", ctr("c", "2"))).admitted
    assert not cpus_of(restarted, "d").intersection(cpus_of(restarted, "a").union(cpus_of(restarted, "b")))


def test_restore_drops_pods_that_did_not_come_back() -> None:
    node = two_numa("single-numa-node")
    assert node.admit(pod("a", ctr("c", "4", "2Gi"))).admitted
    restarted = two_numa("single-numa-node")
    restarted.restore(
        cpu_manager=node.cpu_manager_checkpoint(), memory_manager=node.memory_manager_checkpoint()
    )
    assert restarted.shared_cpus().size() == 28
    restarted.reconcile([])
    assert restarted.shared_cpus() == HT2.all_cpus()
    assert restarted.numa_summary()[0].memory_allocated == 0


# --- building blocks ---------------------------------------------------------------------------


def test_machine_devices_naming_and_health() -> None:
    devices = machine_devices(DeviceGroup("example.com/x", {None: 1, 1: 1, 0: 1}, unhealthy=1))
    assert devices == [Device("x-0", True, (0,)), Device("x-1", True, (1,)), Device("x-2", False, None)]


def test_admission_checks_fit_against_the_allocatable_the_node_status_shows() -> None:
    """One computation of Node Allocatable: the fit predicate and ``status.allocatable`` agree."""
    from nrop.api import quantity
    from nrop.localcluster.kubelet.decisions import nodestatus

    managers = two_numa()
    shown = nodestatus.node_resources(managers.spec)
    checked = managers.node_resources()
    for name, text in shown.allocatable.items():
        value = quantity.parse(text)
        expected = value.milli_value() if name == "cpu" else value.value()
        assert checked.allocatable[name] == expected, name


@pytest.mark.parametrize(
    ("gates", "starts"),
    [
        pytest.param({}, False, id="alpha-option-without-gate-refused"),
        pytest.param({"CPUManagerPolicyAlphaOptions": True}, True, id="alpha-option-with-gate-accepted"),
    ],
)
def test_cpu_manager_alpha_options_follow_the_feature_gate(gates: dict[str, bool], starts: bool) -> None:
    from dataclasses import replace

    from nrop.localcluster.kubelet.cm.cpumanager import PolicyOptionError

    spec = two_numa().spec
    config = replace(
        spec.kubelet,
        cpu_manager_policy_options={"distribute-cpus-across-cores": "true"},
        feature_gates=gates,
    )
    if starts:
        managers = NodeResourceManagers(replace(spec, kubelet=config))
        assert managers.cpu is not None and managers.cpu.options.distribute_cpus_across_cores
    else:
        with pytest.raises(PolicyOptionError, match="distribute-cpus-across-cores"):
            NodeResourceManagers(replace(spec, kubelet=config))
