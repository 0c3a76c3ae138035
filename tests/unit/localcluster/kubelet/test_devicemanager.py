"""Table tests of the device manager's decisions and its checkpoint."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nrop.localcluster.kubelet.cm.devicemanager import (
    CorruptCheckpointError,
    Device,
    DeviceAllocationError,
    DeviceCheckpoint,
    DeviceContainer,
    DeviceManager,
    DevicePod,
)
from nrop.localcluster.kubelet.cm.hints import TopologyHint

RES = "example.com/dev"


def h(nodes: Sequence[int] | None, preferred: bool) -> TopologyHint:
    return TopologyHint(None if nodes is None else frozenset(nodes), preferred)


def manager(devices: Sequence[Device] | None = None, numa_nodes: Sequence[int] = (0, 1)) -> DeviceManager:
    """By default 2 devices per NUMA node: dev0, dev1 on NUMA 0; dev2, dev3 on NUMA 1."""
    dm = DeviceManager(numa_nodes)
    dm.set_devices(
        RES, devices if devices is not None else [Device(f"dev{i}", True, (i // 2,)) for i in range(4)]
    )
    return dm


def pod(uid: str, *apps: int, inits: Sequence[int] = (), sidecars: Sequence[int] = ()) -> DevicePod:
    init_containers = [DeviceContainer(f"init{i}", {RES: n}) for i, n in enumerate(inits)]
    init_containers += [
        DeviceContainer(f"sidecar{i}", {RES: n}, restartable=True) for i, n in enumerate(sidecars)
    ]
    return DevicePod(
        uid, tuple(init_containers), tuple(DeviceContainer(f"app{i}", {RES: n}) for i, n in enumerate(apps))
    )


def test_capacity_counts_unhealthy() -> None:
    dm = manager([Device("a", True, (0,)), Device("b", False, (0,)), Device("c", True, None)])
    assert dm.capacity() == {RES: (3, 2)}
    assert dm.has_topology_alignment(RES)


@pytest.mark.parametrize(
    ("devices", "requested", "taken", "expected"),
    [
        pytest.param(None, 1, set(), [h([0], True), h([1], True), h([0, 1], False)], id="1-of-2x2"),
        pytest.param(None, 2, set(), [h([0], True), h([1], True), h([0, 1], False)], id="2-of-2x2"),
        pytest.param(None, 3, set(), [h([0, 1], True)], id="3-needs-both"),
        pytest.param(None, 1, {"dev0", "dev1"}, [h([1], True), h([0, 1], False)], id="numa0-used-up"),
        pytest.param(None, 2, {"dev0"}, [h([1], True), h([0, 1], False)], id="partially-used"),
        pytest.param(None, 5, set(), [], id="more-than-exists"),
        pytest.param(None, 4, {"dev3"}, [], id="not-enough-free"),
        pytest.param([Device("a"), Device("b")], 1, set(), None, id="no-topology-no-preference"),
        pytest.param(
            [Device("a", True, ()), Device("b", True, ())], 1, set(), None, id="empty-topology-no-preference"
        ),
        pytest.param(
            [Device("a", False, (0,)), Device("b", True, (1,))],
            1,
            set(),
            [h([1], True), h([0, 1], False)],
            id="unhealthy-device-still-counts-for-min-size",
        ),
        pytest.param(
            [Device("a", True, (0, 1)), Device("b", True, (1,))],
            2,
            set(),
            [h([1], True), h([0, 1], False)],
            id="multi-numa-device",
        ),
    ],
)
def test_container_hints(
    devices: list[Device] | None, requested: int, taken: set[str], expected: list[TopologyHint] | None
) -> None:
    dm = manager(devices)
    if taken:
        dm.pod_devices["other"] = {"c": {}}
        dm.allocated[RES] = set(taken)
    p = pod("p", requested)
    assert dm.get_topology_hints(p, p.containers[0]) == {RES: expected}


def test_hints_ignore_non_plugin_resources() -> None:
    dm = manager()
    container = DeviceContainer("c", {"cpu": 2, "memory": 1 << 30})
    assert dm.get_topology_hints(DevicePod("p", (), (container,)), container) == {}


def test_hints_with_reusable_init_devices() -> None:
    dm = manager()
    p = pod("p", 1, inits=[1])
    dm.allocate(p, p.init_containers[0], h([1], True))
    assert dm.devices_to_reuse["p"][RES] == {"dev2"}
    # The reusable device pins the hints to masks that contain its NUMA node.
    assert dm.get_topology_hints(p, p.containers[0]) == {RES: [h([1], True), h([0, 1], False)]}


def test_hints_regenerated_for_allocated_container() -> None:
    dm = manager()
    p = pod("p", 2)
    dm.allocate(p, p.containers[0], h([0], True))
    assert dm.get_topology_hints(p, p.containers[0]) == {RES: [h([0], True), h([0, 1], False)]}
    resized = DeviceContainer("app0", {RES: 3})
    assert dm.get_topology_hints(p, resized) == {RES: []}


@pytest.mark.parametrize(
    ("p", "expected_request", "expected"),
    [
        pytest.param(pod("p", 1, 1), 2, [h([0], True), h([1], True), h([0, 1], False)], id="app-sum"),
        pytest.param(
            pod("p", 1, inits=[2]), 2, [h([0], True), h([1], True), h([0, 1], False)], id="init-max"
        ),
        pytest.param(pod("p", 1, sidecars=[2]), 3, [h([0, 1], True)], id="sidecar-adds-to-apps"),
        pytest.param(pod("p", 1, 1, 1, 1, 1), 5, [], id="pod-wants-more-than-exists"),
    ],
)
def test_pod_hints(p: DevicePod, expected_request: int, expected: list[TopologyHint]) -> None:
    assert p.limits() == {RES: expected_request}
    assert manager().get_pod_topology_hints(p) == {RES: expected}


@pytest.mark.parametrize(
    ("affinity", "required", "taken", "expected"),
    [
        pytest.param(h([1], True), 1, set(), {"dev2"}, id="aligned-subset"),
        pytest.param(h([1], True), 2, set(), {"dev2", "dev3"}, id="all-aligned"),
        pytest.param(h([1], False), 3, set(), {"dev2", "dev3", "dev0"}, id="aligned-first-then-unaligned"),
        pytest.param(h(None, False), 1, set(), {"dev0"}, id="no-affinity-any-device"),
        pytest.param(h([0], True), 1, {"dev0"}, {"dev1"}, id="skip-allocated"),
    ],
)
def test_devices_to_allocate(
    affinity: TopologyHint, required: int, taken: set[str], expected: set[str]
) -> None:
    dm = manager()
    dm.allocated[RES] = set(taken)
    chosen = dm.devices_to_allocate("p", "c", RES, required, reusable=set(), affinity=affinity)
    assert chosen == expected
    assert dm.allocated[RES] == taken | expected


def test_devices_without_topology_come_last() -> None:
    dm = manager([Device("n0", True, (0,)), Device("x", True, None), Device("n1", True, (1,))])
    assert dm.filter_by_affinity(RES, {"n0", "x", "n1"}, h([0], True)) == ({"n0"}, {"n1"}, {"x"})
    chosen = dm.devices_to_allocate("p", "c", RES, 2, reusable=set(), affinity=h([0], True))
    assert chosen == {"n0", "n1"}


def test_multi_numa_device_goes_by_hint_node() -> None:
    dm = manager([Device("both", True, (0, 1)), Device("one", True, (1,))])
    assert dm.filter_by_affinity(RES, {"both", "one"}, h([0], True)) == ({"both"}, {"one"}, set())


def test_preferred_allocation_is_honoured_within_aligned() -> None:
    dm = manager()
    calls: list[tuple[frozenset[str], frozenset[str], int]] = []

    def preferred(available: frozenset[str], must_include: frozenset[str], size: int) -> list[str]:
        calls.append((available, must_include, size))
        return ["dev3"]

    chosen = dm.devices_to_allocate(
        "p", "c", RES, 1, reusable=set(), affinity=h([1], True), preferred_allocation=preferred
    )
    assert chosen == {"dev3"}
    assert calls == [(frozenset({"dev2", "dev3"}), frozenset(), 1)]


@pytest.mark.parametrize(
    ("setup", "required", "message"),
    [
        pytest.param(
            "taken3",
            2,
            f"requested number of devices unavailable for {RES}. Requested: 2, Available: 1",
            id="unavailable",
        ),
        pytest.param(
            "unregistered", 1, "cannot allocate unregistered device other.com/dev", id="unregistered"
        ),
        pytest.param(
            "all-unhealthy",
            1,
            f"no healthy devices present; cannot allocate unhealthy devices {RES}",
            id="no-healthy",
        ),
        pytest.param(
            "already-1",
            2,
            f'pod "p" container "c" changed request for resource "{RES}" from 1 to 2',
            id="changed-request",
        ),
        pytest.param(
            "already-1-now-unhealthy",
            1,
            f"previously allocated devices are no longer healthy; cannot allocate unhealthy devices {RES}",
            id="previous-unhealthy",
        ),
    ],
)
def test_devices_to_allocate_errors(setup: str, required: int, message: str) -> None:
    dm = manager()
    resource = RES
    if setup == "taken3":
        dm.allocated[RES] = {"dev0", "dev1", "dev2"}
    elif setup == "unregistered":
        resource = "other.com/dev"
    elif setup == "all-unhealthy":
        dm.set_devices(RES, [Device("dev0", False, (0,))])
    elif setup.startswith("already-1"):
        p = DevicePod("p", (), (DeviceContainer("c", {RES: 1}),))
        dm.allocate(p, p.containers[0], h([0], True))
        if setup.endswith("unhealthy"):
            dm.set_devices(RES, [Device("dev0", False, (0,)), Device("dev1", True, (0,))])
    with pytest.raises(DeviceAllocationError) as excinfo:
        dm.devices_to_allocate("p", "c", resource, required, reusable=set(), affinity=h([0], True))
    assert str(excinfo.value) == message


def test_allocate_again_is_a_no_op() -> None:
    dm = manager()
    p = pod("p", 1)
    assert dm.allocate(p, p.containers[0], h([0], True)) == {RES: {"dev0"}}
    assert dm.allocate(p, p.containers[0], h([0], True)) == {}


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(
            pod("p", 1, inits=[1]), {"init0": {"dev2"}, "app0": {"dev2"}}, id="app-reuses-init-device"
        ),
        pytest.param(
            pod("p", 2, inits=[1]),
            {"init0": {"dev2"}, "app0": {"dev2", "dev3"}},
            id="app-reuses-and-takes-more",
        ),
        pytest.param(
            pod("p", 1, sidecars=[1]),
            {"sidecar0": {"dev2"}, "app0": {"dev3"}},
            id="sidecar-device-not-reused",
        ),
        pytest.param(
            pod("p", 1, 1, inits=[1]),
            {"init0": {"dev2"}, "app0": {"dev2"}, "app1": {"dev3"}},
            id="reused-once",
        ),
    ],
)
def test_init_container_reuse(p: DevicePod, expected: dict[str, set[str]]) -> None:
    dm = manager()
    for container in (*p.init_containers, *p.containers):
        dm.allocate(p, container, h([1], True))
    assert {name: dm.container_devices("p", name, RES) for name in expected} == expected


def test_update_allocated_devices_releases_inactive_pods() -> None:
    dm = manager()
    for uid in ("a", "b"):
        p = pod(uid, 2)
        dm.allocate(p, p.containers[0], h([0] if uid == "a" else [1], True))
    assert dm.available(RES) == set()
    dm.update_allocated_devices(["b"])
    assert dm.available(RES) == {"dev0", "dev1"}


def test_e2e_alignment_single_numa_node_counts() -> None:
    """Whatever the order inside the aligned set, the per-NUMA count follows the hint."""
    dm = manager([Device(f"vf{i}", True, (i // 4,)) for i in range(8)])
    p = pod("p", 3)
    dm.allocate(p, p.containers[0], h([1], True))
    entry = dm.pod_devices["p"]["app0"][RES]
    assert {node: len(ids) for node, ids in entry.per_numa.items()} == {1: 3}


# --- checkpoint --------------------------------------------------------------------------

GOLDEN_EMPTY = (
    '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"nvidia.com/gpu":'
    '["GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"]}},"Checksum":3952659280}'
)
GOLDEN_ENTRY = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"bf52b2cd-b611-4e79-86b1-280b283185c3","ContainerName":"check",'
    '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"-1":["tegra"]},"AllocResp":'
    '"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],"RegisteredDevices":{"nvidia.com/gpu":["tegra"]}},'
    '"Checksum":3660592824}'
)


@pytest.mark.parametrize(
    "text",
    [pytest.param(GOLDEN_EMPTY, id="no-entries"), pytest.param(GOLDEN_ENTRY, id="entry-with-alloc-resp")],
)
def test_checkpoint_real_kubelet_files_round_trip(text: str) -> None:
    assert DeviceCheckpoint.from_json(text).to_json() == text


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        pytest.param(GOLDEN_ENTRY, '"-1":["tegra"]', '"0":["tegra"]', id="numa-changed"),
        pytest.param(
            GOLDEN_ENTRY, '"ContainerName":"check"', '"ContainerName":"other"', id="container-renamed"
        ),
        pytest.param(GOLDEN_EMPTY, "3952659280", "3952659281", id="checksum-edited"),
        pytest.param(GOLDEN_EMPTY, '"PodDeviceEntries":null', '"PodDeviceEntries":[]', id="null-vs-empty"),
    ],
)
def test_checkpoint_corruption_detected(text: str, old: str, new: str) -> None:
    with pytest.raises(CorruptCheckpointError, match="checkpoint is corrupted"):
        DeviceCheckpoint.from_json(text.replace(old, new))


def test_checkpoint_from_manager_round_trip_and_restore() -> None:
    dm = manager([*[Device(f"dev{i}", True, (i // 2,)) for i in range(4)], Device("loose", True, None)])
    p = pod("p", 3)
    dm.allocate(p, p.containers[0], h([0], False))
    dm.set_alloc_response("p", "app0", RES, b"\x0a\x01x")
    text = dm.checkpoint().to_json()
    assert '"DeviceIDs":{"0":["dev0","dev1"],"1":["dev2"]}' in text
    assert '"RegisteredDevices":{"example.com/dev":["dev0","dev1","dev2","dev3","loose"]}' in text
    restored = DeviceManager([0, 1])
    restored.restore(DeviceCheckpoint.from_json(text))
    assert restored.container_devices("p", "app0", RES) == {"dev0", "dev1", "dev2"}
    assert restored.capacity() == {RES: (0, 0)}, "no healthy device until the plugin registers again"
    assert restored.checkpoint().entries == dm.checkpoint().entries
