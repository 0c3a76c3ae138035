"""The exporter's NRT build (upstream ``resourcemonitor``): counters, node resources, zones, fingerprint, middlewares.

The first tables reproduce upstream's own ``TestResourcesScan`` cases (a 24-CPU machine,
even CPUs on NUMA node 0, odd on node 1, distances 10/20); the rest pin down the
rules in the module docstring one at a time.
"""

from __future__ import annotations

import random
from types import MappingProxyType

import pytest

from nrop.api import fingerprint
from nrop.api.podresources import (
    AllocatableResources,
    ContainerDevices,
    ContainerMemory,
    ContainerResources,
    PodResources,
)
from nrop.rte.decisions.scan import (
    ContainerRef,
    NodeResources,
    PodExclude,
    ScanOptions,
    exclude_pods,
    exclusive_reason,
    node_resources,
    normalize,
    remove_shared_pool,
    scan,
    to_counters,
)
from nrop.rte.sysinfo import MachineInfo, NUMANodeInfo

GiB = 1024**3
MiB = 1024**2


def upstream_machine(memory: int = 0, hugepages: dict[str, int] | None = None) -> MachineInfo:
    """The ghw topology of upstream's resourcemonitor tests."""
    pages = MappingProxyType(hugepages or {})
    return MachineInfo(
        nodes=(
            NUMANodeInfo(0, tuple(range(0, 24, 2)), (10, 20), memory, pages),
            NUMANodeInfo(1, tuple(range(1, 24, 2)), (20, 10), memory, pages),
        )
    )


def dev(resource: str, *ids: str, numa: int | None = None) -> ContainerDevices:
    return ContainerDevices(resource, ids, None if numa is None else (numa,))


def zones_table(result) -> dict[str, dict[str, tuple[str, str, str]]]:  # type: ignore[no-untyped-def]
    """``{zone: {resource: (capacity, allocatable, available)}}`` as the object prints them."""
    return {
        z.name: {r.name: (str(r.capacity), str(r.allocatable), str(r.available)) for r in z.resources}
        for z in result.zones
    }


# ----------------------------------------------------------------------------- upstream cases


def test_upstream_no_pod_allocation() -> None:
    machine = upstream_machine()
    allocatable = AllocatableResources(
        cpu_ids=tuple(range(2, 24)),  # CPUs 0 and 1 reserved
        devices=(
            *(dev("fake.io/net", f"netAAA-{i}", numa=0) for i in range(4)),
            dev("fake.io/net", "netBBB-0", numa=1),
            dev("fake.io/net", "netBBB-1", numa=1),
            dev("fake.io/gpu", "gpuAAA", numa=1),
        ),
    )
    result = scan(machine, node_resources(machine, allocatable), [])
    assert zones_table(result) == {
        "node-0": {"cpu": ("12", "11", "11"), "fake.io/net": ("4", "4", "4")},
        "node-1": {"cpu": ("12", "11", "11"), "fake.io/gpu": ("1", "1", "1"), "fake.io/net": ("2", "2", "2")},
    }
    assert [(c.name, c.value) for c in result.zones[0].costs] == [("node-0", 10), ("node-1", 20)]
    assert [(c.name, c.value) for c in result.zones[1].costs] == [("node-0", 20), ("node-1", 10)]
    assert all(z.type == "Node" for z in result.zones)


def test_upstream_pod_allocation_with_exclude_list() -> None:
    machine = upstream_machine()
    allocatable = AllocatableResources(
        cpu_ids=tuple(range(1, 24)),  # CPU 0 reserved
        devices=(
            dev("fake.io/net", "netAAA", numa=0),
            dev("fake.io/resourceToBeExcluded", "excludeMeA", numa=0),
            dev("fake.io/net", "netBBB", numa=1),
            dev("fake.io/gpu", "gpuAAA", numa=1),
            dev("fake.io/resourceToBeExcluded", "excludeMeB", numa=1),
        ),
    )
    pods = [
        PodResources(
            namespace="default",
            name="test-pod-0",
            containers=(ContainerResources("test-cnt-0", (5, 7), (dev("fake.io/net", "netBBB", numa=1),)),),
        )
    ]
    options = ScanOptions(node_name="TEST", resource_exclude={"*": ["fake.io/resourceToBeExcluded"]})
    result = scan(machine, node_resources(machine, allocatable), pods, options)
    assert zones_table(result) == {
        "node-0": {"cpu": ("12", "11", "11"), "fake.io/net": ("1", "1", "1")},
        "node-1": {"cpu": ("12", "12", "10"), "fake.io/gpu": ("1", "1", "1"), "fake.io/net": ("1", "1", "0")},
    }


def test_upstream_normalize() -> None:
    entries, unknown = normalize(
        [dev("fake.io/net", "netAAA-0", numa=0)],
        [
            ContainerMemory("memory", 1024, (0,)),
            ContainerMemory("memory", 1024, (1,)),
            ContainerMemory("hugepages-2Mi", 1024, (1,)),
        ],
        range(24),
        upstream_machine().cpu_to_numa(),
    )
    assert unknown == []
    assert entries[0] == dev("fake.io/net", "netAAA-0", numa=0)
    assert ContainerDevices("cpu", tuple(str(c) for c in range(0, 24, 2)), (0,)) in entries
    assert ContainerDevices("cpu", tuple(str(c) for c in range(1, 24, 2)), (1,)) in entries
    assert entries[-3:] == [
        ContainerDevices("memory", ("1024",), (0,)),
        ContainerDevices("memory", ("1024",), (1,)),
        ContainerDevices("hugepages-2Mi", ("1024",), (1,)),
    ]
    assert to_counters(entries) == {
        0: {"fake.io/net": 1, "cpu": 12, "memory": 1024},
        1: {"cpu": 12, "memory": 1024, "hugepages-2Mi": 1024},
    }


# ----------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        pytest.param([dev("a/b", "x", "y", numa=1)], {1: {"a/b": 2}}, id="devices-count-ids"),
        pytest.param([dev("a/b", "x")], {}, id="no-topology-counts-nowhere"),
        pytest.param([ContainerDevices("a/b", ("x",), ())], {}, id="empty-topology-counts-nowhere"),
        pytest.param(
            [ContainerDevices("a/b", ("x",), (0, 1))], {0: {"a/b": 1}, 1: {"a/b": 1}}, id="multi-numa-device"
        ),
        pytest.param(
            [ContainerDevices("memory", ("100", "28"), (0,))], {0: {"memory": 128}}, id="memory-sums-sizes"
        ),
        pytest.param(
            [ContainerDevices("hugepages-1Gi", (str(GiB),), (1,))],
            {1: {"hugepages-1Gi": GiB}},
            id="hugepages-sum",
        ),
    ],
)
def test_to_counters(entries: list[ContainerDevices], expected: dict[int, dict[str, int]]) -> None:
    assert to_counters(entries) == expected


def test_memory_block_spanning_two_nodes_counts_in_full_on_each() -> None:
    entries, _ = normalize(
        [], [ContainerMemory("memory", GiB, (0, 1)), ContainerMemory("memory", 0, (0,))], [], {}
    )
    assert to_counters(entries) == {0: {"memory": GiB}, 1: {"memory": GiB}}


def test_unknown_cpus_are_reported_not_counted() -> None:
    entries, unknown = normalize([], [], [0, 99], {0: 0})
    assert unknown == [99]
    assert to_counters(entries) == {0: {"cpu": 1}}


def memory_machine() -> MachineInfo:
    return upstream_machine(memory=16 * GiB, hugepages={"hugepages-2Mi": GiB, "hugepages-1Gi": 2 * GiB})


def test_memory_and_hugepages_with_the_static_memory_manager() -> None:
    machine = memory_machine()
    allocatable = AllocatableResources(
        cpu_ids=tuple(range(24)),
        memory=(
            ContainerMemory("memory", 15 * GiB, (0,)),
            ContainerMemory("memory", 16 * GiB, (1,)),
            ContainerMemory("hugepages-2Mi", GiB, (0,)),
            ContainerMemory("hugepages-1Gi", 2 * GiB, (1,)),
        ),
    )
    pods = [
        PodResources(
            namespace="ns",
            name="guaranteed",
            containers=(
                ContainerResources(
                    "c",
                    (0, 2),
                    memory=(
                        ContainerMemory("memory", GiB, (0,)),
                        ContainerMemory("hugepages-2Mi", 512 * MiB, (0,)),
                    ),
                ),
            ),
        )
    ]
    table = zones_table(scan(machine, node_resources(machine, allocatable), pods))
    assert table["node-0"] == {
        "cpu": ("12", "12", "10"),
        "memory": ("17179869184", "16106127360", "15032385536"),
        "hugepages-2Mi": ("1073741824", "1073741824", "536870912"),
    }
    assert table["node-1"] == {
        "cpu": ("12", "12", "12"),
        "memory": ("17179869184", "17179869184", "17179869184"),
        "hugepages-1Gi": ("2147483648", "2147483648", "2147483648"),
    }


def test_without_the_memory_manager_memory_is_not_published() -> None:
    machine = memory_machine()
    table = zones_table(
        scan(machine, node_resources(machine, AllocatableResources(cpu_ids=tuple(range(24)))), [])
    )
    assert set(table["node-0"]) == {"cpu"}


def test_a_node_with_nothing_allocatable_publishes_cpu_zero() -> None:
    """With the none CPU policy (or every CPU reserved) a zone still appears, all CPUs reserved."""
    machine = upstream_machine()
    allocatable = AllocatableResources(devices=(dev("x.io/d", "d0", numa=1),))
    table = zones_table(scan(machine, node_resources(machine, allocatable), []))
    assert table == {"node-0": {"cpu": ("12", "0", "0")}, "node-1": {"x.io/d": ("1", "1", "1")}}


def test_devices_without_topology_are_neither_published_nor_counted() -> None:
    machine = upstream_machine()
    allocatable = AllocatableResources(
        cpu_ids=tuple(range(24)), devices=(dev("x.io/d", "a"), dev("x.io/d", "b", numa=0))
    )
    pods = [
        PodResources(
            namespace="ns", name="p", containers=(ContainerResources("c", devices=(dev("x.io/d", "a"),)),)
        )
    ]
    table = zones_table(scan(machine, node_resources(machine, allocatable), pods))
    assert table["node-0"]["x.io/d"] == ("1", "1", "1")
    assert "x.io/d" not in table["node-1"]


def test_capacity_falls_back_and_never_drops_below_allocatable() -> None:
    machine = upstream_machine(memory=GiB)
    resources = NodeResources(
        capacity={0: {"cpu": 12, "memory": GiB, "hugepages-64Ki": 0}, 1: {"cpu": 12}},
        allocatable={0: {"cpu": 14, "memory": 2 * GiB, "hugepages-64Ki": 65536}, 1: {"cpu": 12}},
    )
    result = scan(machine, resources, [])
    table = zones_table(result)
    assert table["node-0"]["cpu"] == ("14", "14", "14")
    assert table["node-0"]["memory"] == ("2147483648", "2147483648", "2147483648")
    assert table["node-0"]["hugepages-64Ki"] == ("65536", "65536", "65536")
    assert any("allocatable above capacity" in w for w in result.warnings)
    assert any("zero capacity for native resource 'hugepages-64Ki'" in w for w in result.warnings)


def test_available_never_goes_negative() -> None:
    machine = upstream_machine()
    resources = NodeResources(
        capacity={0: {"cpu": 12}, 1: {"cpu": 12}}, allocatable={0: {"cpu": 1}, 1: {"cpu": 1}}
    )
    pods = [PodResources(namespace="ns", name="p", containers=(ContainerResources("c", (0, 2, 4)),))]
    result = scan(machine, resources, pods)
    assert zones_table(result)["node-0"]["cpu"] == ("12", "1", "0")
    assert any("negative availability" in w for w in result.warnings)


def test_shared_pool_pods_change_nothing() -> None:
    """Burstable / best-effort / non-integral pods have no cpu_ids in List, only memory without topology."""
    machine = upstream_machine()
    resources = node_resources(machine, AllocatableResources(cpu_ids=tuple(range(24))))
    before = scan(machine, resources, [])
    after = scan(
        machine,
        resources,
        [PodResources(namespace="ns", name="burstable", containers=(ContainerResources("c"),))],
    )
    assert zones_table(before) == zones_table(after)
    assert before.fingerprint == after.fingerprint


def test_watch_namespace_limits_counting_not_the_fingerprint() -> None:
    machine = upstream_machine()
    resources = node_resources(machine, AllocatableResources(cpu_ids=tuple(range(24))))
    pods = [
        PodResources(namespace="a", name="p", containers=(ContainerResources("c", (0,)),)),
        PodResources(namespace="b", name="q", containers=(ContainerResources("c", (2,)),)),
    ]
    result = scan(machine, resources, pods, ScanOptions(namespace="a"))
    assert zones_table(result)["node-0"]["cpu"] == ("12", "12", "11")
    assert result.fingerprint == fingerprint.compute([("a", "p"), ("b", "q")])


def test_reserved_cpus_reported_allocatable_warn() -> None:
    machine = upstream_machine().with_reserved_cpus([0])
    resources = node_resources(machine, AllocatableResources(cpu_ids=tuple(range(24))))
    assert resources.warnings == ("the kubelet reports reserved CPUs [0] as allocatable",)
    assert node_resources(machine, AllocatableResources(cpu_ids=tuple(range(1, 24)))).warnings == ()


def test_quantities_are_canonical_decimal_si() -> None:
    machine = upstream_machine(memory=64_000_000_000)
    allocatable = AllocatableResources(
        cpu_ids=tuple(range(24)), memory=(ContainerMemory("memory", 2000, (0,)),)
    )
    obj = scan(machine, node_resources(machine, allocatable), []).zones[0].to_dict()
    memory = next(r for r in obj["resources"] if r["name"] == "memory")
    assert memory == {"name": "memory", "capacity": "64G", "allocatable": "2k", "available": "2k"}
    assert sorted(r["name"] for r in obj["resources"]) == ["cpu", "memory"]


# ----------------------------------------------------------------------------- fingerprint


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        pytest.param(
            PodResources(namespace="ns", name="p", containers=(ContainerResources("c", (3,)),)),
            "cpu",
            id="exclusive-cpus",
        ),
        pytest.param(
            PodResources(
                namespace="ns",
                name="p",
                containers=(ContainerResources("c", memory=(ContainerMemory("memory", 1, (0,)),)),),
            ),
            "memory",
            id="memory",
        ),
        pytest.param(
            PodResources(
                namespace="ns",
                name="p",
                containers=(ContainerResources("c", memory=(ContainerMemory("memory", 1, (-1,)),)),),
            ),
            None,
            id="mem-no-numa",
        ),
        pytest.param(
            PodResources(
                namespace="ns",
                name="p",
                containers=(ContainerResources("c", memory=(ContainerMemory("memory", 1),)),),
            ),
            None,
            id="mem-no-topology",
        ),
        pytest.param(
            PodResources(
                namespace="ns",
                name="p",
                containers=(ContainerResources("c", devices=(dev("x/y", "d", numa=1),)),),
            ),
            "device",
            id="device",
        ),
        pytest.param(
            PodResources(
                namespace="ns", name="p", containers=(ContainerResources("c", devices=(dev("x/y", "d"),)),)
            ),
            None,
            id="device-no-topology",
        ),
        pytest.param(
            PodResources(
                namespace="ns",
                name="p",
                containers=(ContainerResources("c", devices=(ContainerDevices("x/y", (), (0,)),)),),
            ),
            None,
            id="device-no-ids",
        ),
        pytest.param(
            PodResources(
                namespace="ns", name="p", containers=(ContainerResources("a"), ContainerResources("b", (1,)))
            ),
            "cpu",
            id="any-container",
        ),
        pytest.param(PodResources(namespace="ns", name="p", containers=()), None, id="no-containers"),
    ],
)
def test_exclusive_reason(pod: PodResources, reason: str | None) -> None:
    assert exclusive_reason(pod) == reason


PODS = [
    PodResources(namespace="ns", name="exclusive", containers=(ContainerResources("c", (1,)),)),
    PodResources(namespace="ns", name="shared", containers=(ContainerResources("c"),)),
    PodResources(
        namespace="kube-system",
        name="device",
        containers=(ContainerResources("c", devices=(dev("x/y", "d", numa=0),)),),
    ),
]


@pytest.mark.parametrize(
    ("method", "included"),
    [
        pytest.param(
            fingerprint.Method.WITH_EXCLUSIVE_RESOURCES,
            [("ns", "exclusive"), ("kube-system", "device")],
            id="excl",
        ),
        pytest.param(
            fingerprint.Method.ALL,
            [("ns", "exclusive"), ("ns", "shared"), ("kube-system", "device")],
            id="all",
        ),
    ],
)
def test_fingerprint_attributes(method: fingerprint.Method, included: list[tuple[str, str]]) -> None:
    machine = upstream_machine()
    resources = node_resources(machine, AllocatableResources(cpu_ids=tuple(range(24))))
    result = scan(machine, resources, PODS, ScanOptions(node_name="n1", fingerprint_method=method))
    sign = fingerprint.compute(included)
    assert [(a.name, a.value) for a in result.attributes] == [
        ("nodeTopologyPodsFingerprint", sign),
        ("nodeTopologyPodsFingerprintMethod", method.value),
    ]
    assert result.annotations == {"topology.node.k8s.io/fingerprint": sign}
    assert result.fingerprint_status is not None
    assert [(p.namespace, p.name) for p in result.fingerprint_status.pods] == included
    assert result.fingerprint_status.node_name == "n1"


def test_fingerprint_off() -> None:
    machine = upstream_machine()
    result = scan(
        machine, node_resources(machine, AllocatableResources()), PODS, ScanOptions(pods_fingerprint=False)
    )
    assert result.attributes == [] and result.annotations == {} and result.fingerprint == ""


def test_empty_node_fingerprint_is_the_empty_set() -> None:
    machine = upstream_machine()
    assert scan(
        machine, node_resources(machine, AllocatableResources()), []
    ).fingerprint == fingerprint.compute([])


# ----------------------------------------------------------------------------- middlewares


def test_shared_pool_is_removed_from_every_container() -> None:
    pods = [
        PodResources(
            namespace="rte",
            name="rte-pod",
            containers=(
                ContainerResources("shared-pool-container", (0, 1, 2)),
                ContainerResources("exporter"),
            ),
        ),
        PodResources(
            namespace="ns", name="stale-kubelet", containers=(ContainerResources("c", (2, 1, 7, 5)),)
        ),
    ]
    filtered = remove_shared_pool(pods, ContainerRef.parse("rte/rte-pod/shared-pool-container"))
    assert filtered[0].containers[0].cpu_ids == ()
    assert filtered[1].containers[0].cpu_ids == (5, 7)
    assert remove_shared_pool(pods, None) == pods
    assert remove_shared_pool(pods, ContainerRef("rte", "other", "c")) == pods


@pytest.mark.parametrize("text", ["a/b", "a/b/c/d", "a//c"])
def test_reference_container_syntax(text: str) -> None:
    with pytest.raises(ValueError, match="namespace/pod/container"):
        ContainerRef.parse(text)


def test_reference_container_trims() -> None:
    assert ContainerRef.parse(" a / b / c ") == ContainerRef("a", "b", "c")
    assert ContainerRef.parse("") is None


def test_pod_exclude_needs_both_globs_to_match() -> None:
    pods = [
        PodResources(namespace="kube-system", name="dns"),
        PodResources(namespace="kube-public", name="x"),
        PodResources(namespace="default", name="kube-x"),
    ]
    kept = exclude_pods(pods, [PodExclude("kube-*", "d*")])
    assert [p.name for p in kept] == ["x", "kube-x"]
    assert exclude_pods(pods, []) == pods


# ----------------------------------------------------------------------------- resource order


_ORDER_ALLOCATABLE = AllocatableResources(
    devices=(dev("x.io/d", "d0", numa=0), dev("x.io/d", "d1", numa=1)),
    cpu_ids=tuple(range(24)),
    memory=(ContainerMemory("memory", GiB, (0,)), ContainerMemory("hugepages-2Mi", GiB, (0,))),
)


@pytest.mark.parametrize(
    ("offsets", "node0", "node1"),
    [
        pytest.param(
            (0, 0), ["x.io/d", "cpu", "memory", "hugepages-2Mi"], ["x.io/d", "cpu"], id="reported-order"
        ),
        pytest.param(
            (1, 1), ["cpu", "memory", "hugepages-2Mi", "x.io/d"], ["cpu", "x.io/d"], id="start-at-1"
        ),
        pytest.param(
            (3, 5), ["hugepages-2Mi", "x.io/d", "cpu", "memory"], ["x.io/d", "cpu"], id="free-slot-wraps"
        ),
        pytest.param((7, 9), ["x.io/d", "cpu", "memory", "hugepages-2Mi"], ["cpu", "x.io/d"], id="modulo-8"),
    ],
)
def test_zone_resources_come_in_go_map_order(
    offsets, node0, node1, go_map_starts: type[random.Random]
) -> None:
    """Upstream ranges over each zone's allocatable counters (a Go map built in the order the
    kubelet reported devices, CPUs, memory blocks): a rotation from a random start."""
    machine = memory_machine()
    result = scan(machine, node_resources(machine, _ORDER_ALLOCATABLE), [], rng=go_map_starts(*offsets))
    assert [[r.name for r in z.resources] for z in result.zones] == [node0, node1]


def test_consecutive_scans_of_an_unchanged_node_differ_in_order_only() -> None:
    machine = memory_machine()
    resources = node_resources(machine, _ORDER_ALLOCATABLE)
    rng = random.Random(3)
    scans = [scan(machine, resources, [], rng=rng) for _ in range(20)]
    orders = {tuple(r.name for r in one.zones[0].resources) for one in scans}
    assert len(orders) == 4  # the four rotations of node-0's resources
    assert all(zones_table(s) == zones_table(scans[0]) for s in scans)
