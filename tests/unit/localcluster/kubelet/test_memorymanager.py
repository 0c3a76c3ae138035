"""Table tests of the memory manager's Static policy (and e2e_node memory_manager_test.go scenarios)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nrop.localcluster.kubelet.cm.hints import TopologyHint
from nrop.localcluster.kubelet.cm.memorycheckpoint import CorruptCheckpointError, MemoryManagerCheckpoint
from nrop.localcluster.kubelet.cm.memorymanager import (
    Block,
    MemoryContainer,
    MemoryManagerConfigError,
    MemoryManagerError,
    MemoryPod,
    MemoryReservation,
    MemoryTable,
    NUMANodeMemory,
    StaticPolicy,
    format_binary_si,
    hugepage_resource_name,
    new_static_policy,
    validate_reserved_memory,
)
from nrop.localcluster.kubelet.cm.topologymanager import TopologyManager

Mi = 1 << 20
Gi = 1 << 30
HP1G = "hugepages-1Gi"


def h(nodes: Sequence[int] | None, preferred: bool) -> TopologyHint:
    return TopologyHint(None if nodes is None else frozenset(nodes), preferred)


def two_numa() -> StaticPolicy:
    """Worked example: 2 × 32Gi, 4 × 1Gi pages on NUMA 0, 1100Mi reserved on NUMA 0."""
    nodes = [NUMANodeMemory(0, 32 * Gi, {Gi: 4}), NUMANodeMemory(1, 32 * Gi)]
    return new_static_policy(nodes, {"memory": 1100 * Mi}, [MemoryReservation(0, {"memory": 1100 * Mi})])


def four_numa() -> StaticPolicy:
    """4 × 8Gi, 1Gi reserved on NUMA 0: allocatable 7Gi, 8Gi, 8Gi, 8Gi."""
    nodes = [NUMANodeMemory(n, 8 * Gi) for n in range(4)]
    return new_static_policy(nodes, {"memory": Gi}, [MemoryReservation(0, {"memory": Gi})])


def gu_pod(
    uid: str, *apps: int, inits: Sequence[int] = (), sidecars: Sequence[int] = (), hp: int = 0
) -> MemoryPod:
    def requests(size: int) -> dict[str, int]:
        return {"memory": size, "cpu": 1} | ({HP1G: hp} if hp else {})

    init_containers = [MemoryContainer(f"init{i}", requests(s)) for i, s in enumerate(inits)]
    init_containers += [
        MemoryContainer(f"sidecar{i}", requests(s), restartable=True) for i, s in enumerate(sidecars)
    ]
    return MemoryPod(
        uid,
        True,
        tuple(init_containers),
        tuple(MemoryContainer(f"app{i}", requests(s)) for i, s in enumerate(apps)),
    )


def ctr(pod: MemoryPod, name: str) -> MemoryContainer:
    return next(c for c in pod.all_containers() if c.name == name)


ANY_NOT_PREFERRED = TopologyHint(None, False)


def allocate_all(policy: StaticPolicy, pod: MemoryPod, affinity: TopologyHint = ANY_NOT_PREFERRED) -> None:
    for container in pod.all_containers():
        policy.allocate(pod, container, affinity)


def free(policy: StaticPolicy, resource: str = "memory") -> dict[int, int]:
    return {
        n: s.memory_map[resource].free for n, s in policy.machine_state.items() if resource in s.memory_map
    }


# --- configuration and machine state -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(1100 * Mi, "1100Mi", id="mebibytes"),
        pytest.param(2 * Gi, "2Gi", id="gibibytes"),
        pytest.param(0, "0", id="zero"),
        pytest.param(1536, "1536", id="not-a-binary-multiple"),
        pytest.param(512, "512", id="below-1024"),
    ],
)
def test_format_binary_si(value: int, expected: str) -> None:
    assert format_binary_si(value) == expected


def test_hugepage_resource_names() -> None:
    assert (hugepage_resource_name(2 * Mi), hugepage_resource_name(Gi)) == ("hugepages-2Mi", "hugepages-1Gi")


def test_machine_state_reference_example() -> None:
    state = two_numa().machine_state
    assert state[0].memory_map == {
        HP1G: MemoryTable(4 * Gi, 0, 4 * Gi, 0, 4 * Gi),
        "memory": MemoryTable(32 * Gi, 1100 * Mi, 28 * Gi - 1100 * Mi, 0, 28 * Gi - 1100 * Mi),
    }
    assert state[1].memory_map == {"memory": MemoryTable(32 * Gi, 0, 32 * Gi, 0, 32 * Gi)}
    assert (state[0].cells, state[0].number_of_assignments) == ([0], 0)


@pytest.mark.parametrize(
    ("reservation", "reserved", "message"),
    [
        pytest.param(
            {"memory": 1100 * Mi}, [MemoryReservation(0, {"memory": 1100 * Mi})], None, id="e2e-settings"
        ),
        pytest.param(
            {"memory": 1100 * Mi},
            [MemoryReservation(0, {"memory": 600 * Mi}), MemoryReservation(1, {"memory": 500 * Mi})],
            None,
            id="split-over-nodes",
        ),
        pytest.param(
            {"memory": 1100 * Mi},
            [MemoryReservation(0, {"memory": 1000 * Mi})],
            'the total amount "1000Mi" of type "memory" is not equal to the value "1100Mi" determined by Node '
            "Allocatable feature",
            id="sum-differs",
        ),
        pytest.param(
            {"memory": 1100 * Mi},
            [],
            'the total amount "0" of type "memory" is not equal to the value "1100Mi" determined by Node '
            "Allocatable feature",
            id="no-reserved-memory",
        ),
        pytest.param(
            {"memory": 1100 * Mi, "cpu": 1},
            [MemoryReservation(0, {"memory": 1100 * Mi, HP1G: Gi})],
            'the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0" determined by Node '
            "Allocatable feature",
            id="hugepages-cannot-be-reserved",
        ),
        pytest.param(
            {"memory": 1100 * Mi},
            [MemoryReservation(3, {"memory": 1100 * Mi})],
            "the reserved memory configuration references a NUMA node 3 that does not exist on this machine",
            id="unknown-numa-node",
        ),
    ],
)
def test_validate_reserved_memory(
    reservation: dict[str, int], reserved: list[MemoryReservation], message: str | None
) -> None:
    if message is None:
        validate_reserved_memory([0, 1], reservation, reserved)
        return
    with pytest.raises(MemoryManagerConfigError) as excinfo:
        validate_reserved_memory([0, 1], reservation, reserved)
    assert str(excinfo.value) == message


def test_static_requires_reserved_memory() -> None:
    with pytest.raises(
        MemoryManagerConfigError, match=r"^\[memorymanager\] you should specify the system reserved"
    ):
        StaticPolicy([NUMANodeMemory(0, 8 * Gi)], {0: {}})


# --- hints -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            gu_pod("p", Gi),
            {"memory": [h([0], True), h([1], True), h([0, 1], False)]},
            id="1Gi-fits-anywhere",
        ),
        pytest.param(gu_pod("p", 40 * Gi), {"memory": [h([0, 1], True)]}, id="40Gi-needs-both"),
        pytest.param(
            gu_pod("p", Gi, hp=2 * Gi),
            {"memory": [h([0], True), h([0, 1], False)], HP1G: [h([0], True), h([0, 1], False)]},
            id="hugepages-only-on-numa0",
        ),
        pytest.param(gu_pod("p", Gi, hp=5 * Gi), {}, id="more-hugepages-than-machine"),
        pytest.param(
            MemoryPod("p", False, (), (MemoryContainer("app0", {"memory": Gi}),)), None, id="burstable"
        ),
        pytest.param(
            MemoryPod("p", True, (), (MemoryContainer("app0", {"memory": Gi}),), pod_level_resources=True),
            None,
            id="pod-level-resources-skipped",
        ),
    ],
)
def test_container_hints_two_numa(pod: MemoryPod, expected: dict[str, list[TopologyHint]] | None) -> None:
    policy = two_numa()
    assert policy.get_topology_hints(pod, pod.containers[0]) == expected


def test_hints_four_numa_two_nodes_needed() -> None:
    hints = four_numa().get_topology_hints(gu_pod("p", 12 * Gi), MemoryContainer("app0", {"memory": 12 * Gi}))
    assert hints is not None
    preferred = sorted(sorted(x.numa_nodes or ()) for x in hints["memory"] if x.preferred)
    others = sorted(sorted(x.numa_nodes or ()) for x in hints["memory"] if not x.preferred)
    assert preferred == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    assert others == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 3], [0, 2, 3], [1, 2, 3]]


@pytest.mark.parametrize(
    ("first", "size_next", "expected"),
    [
        pytest.param(
            ([0, 1], 12 * Gi),
            Gi,
            [h([2], True), h([3], True), h([0, 1], False), h([2, 3], False)],
            id="grouped-nodes-only-with-their-group",
        ),
        pytest.param(
            ([0, 1], 12 * Gi),
            12 * Gi,
            [h([2, 3], True)],
            id="group-too-full-and-groups-cannot-mix",
        ),
        pytest.param(
            ([2], Gi),
            12 * Gi,
            [h([0, 1], True), h([0, 3], True), h([1, 3], True), h([0, 1, 3], False)],
            id="single-numa-node-never-joins-a-group",
        ),
    ],
)
def test_cross_numa_group_rules(
    first: tuple[list[int], int], size_next: int, expected: list[TopologyHint]
) -> None:
    policy = four_numa()
    nodes, size = first
    policy.allocate(gu_pod("first", size), MemoryContainer("app0", {"memory": size}), h(nodes, True))
    hints = policy.get_topology_hints(
        gu_pod("next", size_next), MemoryContainer("app0", {"memory": size_next})
    )
    assert hints == {"memory": expected}


def test_group_is_cleared_when_assignments_drop_to_zero() -> None:
    policy = four_numa()
    policy.allocate(gu_pod("first", 12 * Gi), MemoryContainer("app0", {"memory": 12 * Gi}), h([0, 1], True))
    assert [policy.machine_state[n].cells for n in range(4)] == [[0, 1], [0, 1], [2], [3]]
    policy.remove_stale_state({})
    assert [policy.machine_state[n].cells for n in range(4)] == [[0], [1], [2], [3]]
    assert free(policy) == {0: 7 * Gi, 1: 8 * Gi, 2: 8 * Gi, 3: 8 * Gi}
    assert policy.assignments == {}


def test_pod_requested_init_max_and_sidecars() -> None:
    pod = gu_pod("p", Gi, Gi, inits=[3 * Gi, Gi], sidecars=[Gi])
    # init0 (3Gi) runs before the sidecar; app sum 2Gi + sidecar 1Gi = 3Gi.
    assert pod.requested() == {"memory": 3 * Gi}
    pod = MemoryPod(
        "p",
        True,
        (MemoryContainer("s", {"memory": 2 * Gi}, True), MemoryContainer("i", {"memory": 3 * Gi})),
        (MemoryContainer("a", {"memory": Gi}),),
    )
    assert pod.requested() == {"memory": 5 * Gi}


def test_pod_hints_regenerate_from_existing_blocks() -> None:
    policy = two_numa()
    pod = gu_pod("p", Gi)
    assert policy.get_pod_topology_hints(pod) == {"memory": [h([0], True), h([1], True), h([0, 1], False)]}
    allocate_all(policy, pod, h([1], True))
    assert policy.get_pod_topology_hints(pod) == {"memory": [h([1], True)]}
    assert policy.get_topology_hints(pod, pod.containers[0]) == {"memory": [h([1], True)]}
    bigger = MemoryContainer("app0", {"memory": 2 * Gi})
    assert policy.get_topology_hints(pod, bigger) is None, "size changed: no preference"


# --- allocation --------------------------------------------------------------------------


def test_e2e_init_and_app_land_on_numa0_with_reuse() -> None:
    policy = two_numa()
    pod = gu_pod("p", 2 * Gi, inits=[2 * Gi])
    allocate_all(policy, pod)
    assert policy.container_numa_nodes("p", "app0") == frozenset({0})
    assert policy.container_numa_nodes("p", "init0") == frozenset({0})
    table = policy.machine_state[0].memory_map["memory"]
    assert table.reserved == 2 * Gi, "the app container reused the init container's memory"
    assert policy.machine_state[0].number_of_assignments == 2
    assert policy.memory_blocks("p", "init0") == [Block((0,), "memory", 0)]
    assert policy.memory_blocks("p", "app0") == [Block((0,), "memory", 2 * Gi)]


def test_sidecar_memory_is_not_reused() -> None:
    policy = two_numa()
    allocate_all(policy, gu_pod("p", Gi, sidecars=[Gi]))
    assert policy.machine_state[0].memory_map["memory"].reserved == 2 * Gi


def test_e2e_two_pods_both_on_numa0() -> None:
    policy = two_numa()
    for uid in ("a", "b"):
        allocate_all(policy, gu_pod(uid, 128 * Mi))
        assert policy.container_numa_nodes(uid, "app0") == frozenset({0})


def test_memory_and_hugepages_count_two_assignments() -> None:
    policy = two_numa()
    allocate_all(policy, gu_pod("p", Gi, hp=2 * Gi))
    node = policy.machine_state[0]
    assert node.number_of_assignments == 2
    assert (node.memory_map[HP1G].reserved, node.memory_map[HP1G].free) == (2 * Gi, 2 * Gi)
    assert policy.memory_blocks("p", "app0") == [Block((0,), "memory", Gi), Block((0,), HP1G, 2 * Gi)]


def test_cross_numa_allocation_is_greedy_lowest_node_first() -> None:
    policy = two_numa()
    allocate_all(policy, gu_pod("p", 40 * Gi))
    numa0 = 28 * Gi - 1100 * Mi
    assert free(policy) == {0: 0, 1: 32 * Gi - (40 * Gi - numa0)}
    assert [policy.machine_state[n].cells for n in (0, 1)] == [[0, 1], [0, 1]]
    policy.remove_container("p", "app0")
    assert free(policy) == {0: numa0, 1: 32 * Gi}


@pytest.mark.parametrize(
    ("affinity", "expected_nodes"),
    [
        pytest.param(h([0], False), {0, 1}, id="best-effort-narrow-hint-extended"),
        pytest.param(h([1], True), {0, 1}, id="preferred-narrow-hint-extended-to-preferred"),
        pytest.param(h(None, False), {0, 1}, id="no-affinity-default-hint"),
        pytest.param(h([0, 1], True), {0, 1}, id="exact"),
    ],
)
def test_allocate_extends_topology_hint(affinity: TopologyHint, expected_nodes: set[int]) -> None:
    policy = two_numa()
    allocate_all(policy, gu_pod("p", 40 * Gi), affinity)
    assert policy.container_numa_nodes("p", "app0") == frozenset(expected_nodes)


def _fill_each_numa_leaving_256mi(policy: StaticPolicy) -> None:
    for node in sorted(policy.machine_state):
        size = policy.machine_state[node].memory_map["memory"].free - 256 * Mi
        allocate_all(policy, gu_pod(f"filler{node}", size), h([node], True))


@pytest.mark.parametrize(
    ("tm_policy", "message"),
    [
        pytest.param(
            "none",
            "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
            "enough memory is available, which is unexpected",
            id="tm-none",
        ),
        pytest.param(
            "restricted",
            "Allocate failed due to [memorymanager] preferred hint violates NUMA node allocation, which is unexpected",
            id="tm-restricted",
        ),
        pytest.param(
            "single-numa-node",
            "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
            "enough memory is available, which is unexpected",
            id="tm-single-numa-node",
        ),
    ],
)
def test_e2e_no_numa_node_fits_rejected(tm_policy: str, message: str) -> None:
    policy = two_numa()
    _fill_each_numa_leaving_256mi(policy)
    pod = gu_pod("late", 384 * Mi)
    assert policy.get_topology_hints(pod, pod.containers[0]) == {}, "empty map: no preference"
    result = TopologyManager([0, 1], tm_policy).admit(
        ["app0"],
        container_hints=lambda name: [policy.get_topology_hints(pod, ctr(pod, name))],
        allocate=lambda name, hint: policy.allocate(pod, ctr(pod, name), hint),
    )
    assert (result.admit, result.reason, result.message) == (False, "UnexpectedAdmissionError", message)
    assert "Allocate failed due to [memorymanager]" in result.message


@pytest.mark.parametrize(
    ("setup", "affinity", "message"),
    [
        pytest.param(
            [("single", [0], Gi), ("single", [1], Gi)],
            h([0], True),
            "[memorymanager] failed to find NUMA nodes to extend the current topology hint",
            id="cannot-extend",
        ),
        pytest.param(
            [("group", [0, 1], 40 * Gi)],
            h([0, 1], False),
            None,
            id="same-group-is-fine",
        ),
    ],
)
def test_allocate_errors(
    setup: list[tuple[str, list[int], int]], affinity: TopologyHint, message: str | None
) -> None:
    policy = two_numa()
    for uid, nodes, size in setup:
        allocate_all(policy, gu_pod(uid, size), h(nodes, True))
    pod = gu_pod("late", 30 * Gi if message else 2 * Gi)
    if message is None:
        allocate_all(policy, pod, affinity)
        return
    with pytest.raises(MemoryManagerError) as excinfo:
        allocate_all(policy, pod, affinity)
    assert str(excinfo.value) == message


def test_allocate_is_idempotent_and_non_guaranteed_skipped() -> None:
    policy = two_numa()
    pod = gu_pod("p", Gi)
    allocate_all(policy, pod)
    allocate_all(policy, pod)
    assert policy.machine_state[0].memory_map["memory"].reserved == Gi
    burstable = MemoryPod("b", False, (), (MemoryContainer("app0", {"memory": Gi}),))
    allocate_all(policy, burstable)
    assert policy.memory_blocks("b", "app0") is None
    assert policy.container_numa_nodes("b", "app0") is None


def test_allocatable_memory_blocks() -> None:
    assert two_numa().allocatable_memory() == [
        Block((0,), HP1G, 4 * Gi),
        Block((0,), "memory", 28 * Gi - 1100 * Mi),
        Block((1,), "memory", 32 * Gi),
    ]


# --- checkpoint --------------------------------------------------------------------------

UPSTREAM_CHECKPOINT = (
    '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,'
    '"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},"entries":{"pod":'
    '{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},"checksum":4215593881}'
)


def test_checkpoint_upstream_golden_is_byte_identical() -> None:
    checkpoint = MemoryManagerCheckpoint.from_json(UPSTREAM_CHECKPOINT)
    assert checkpoint.entries == {"pod": {"container1": [Block((0,), "memory", 512)]}}
    assert checkpoint.to_json() == UPSTREAM_CHECKPOINT


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param('"free":1024', '"free":1023', id="free-changed"),
        pytest.param('"size":512', '"size":256', id="block-size-changed"),
        pytest.param('"checksum":4215593881', '"checksum":0', id="checksum-zeroed"),
        pytest.param('"cells":[]', '"cells":[0]', id="cells-changed"),
    ],
)
def test_checkpoint_corruption_detected(old: str, new: str) -> None:
    with pytest.raises(CorruptCheckpointError, match="checkpoint is corrupted"):
        MemoryManagerCheckpoint.from_json(UPSTREAM_CHECKPOINT.replace(old, new))


def test_checkpoint_round_trip_and_restore() -> None:
    policy = four_numa()
    allocate_all(policy, gu_pod("p", 12 * Gi, 1 * Gi), h([0, 1], True))
    text = policy.checkpoint().to_json()
    assert text.startswith('{"policyName":"Static","machineState":{"0":')
    parsed = MemoryManagerCheckpoint.from_json(text)
    assert parsed.to_json() == text
    restored = four_numa()
    restored.restore(parsed)
    assert restored.machine_state == policy.machine_state
    assert restored.assignments == policy.assignments


def test_checkpoint_json_sorts_numa_ids_as_strings() -> None:
    policy = new_static_policy(
        [NUMANodeMemory(n, Gi) for n in range(11)], {"memory": Mi}, [MemoryReservation(0, {"memory": Mi})]
    )
    text = policy.checkpoint().to_json()
    assert text.index('"10":') < text.index('"2":')
    assert MemoryManagerCheckpoint.from_json(text).machine_state == policy.machine_state


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(
            lambda cp: setattr(cp, "policy_name", "None"),
            'could not restore state from checkpoint: [memorymanager] configured policy "Static" differs from state '
            'checkpoint policy "None", please drain this node and delete the memory manager checkpoint file '
            '"/var/lib/kubelet/memory_manager_state" before restarting Kubelet',
            id="policy-changed",
        ),
        pytest.param(
            lambda cp: cp.entries["p"].pop("app1"),
            "[memorymanager] the expected machine state is different from the real one",
            id="assignments-do-not-add-up",
        ),
        pytest.param(
            lambda cp: setattr(cp.machine_state[1].memory_map["memory"], "system_reserved", 5),
            "[memorymanager] the expected machine state is different from the real one",
            id="reserved-memory-changed",
        ),
        pytest.param(
            lambda cp: cp.machine_state.clear(),
            "[memorymanager] machine state can not be empty when it has memory assignments",
            id="empty-machine-state-with-assignments",
        ),
    ],
)
def test_restore_validation(mutate: object, message: str) -> None:
    policy = four_numa()
    allocate_all(policy, gu_pod("p", 12 * Gi, Gi), h([0, 1], True))
    checkpoint = MemoryManagerCheckpoint.from_json(policy.checkpoint().to_json())
    assert callable(mutate)
    mutate(checkpoint)
    with pytest.raises(MemoryManagerConfigError) as excinfo:
        four_numa().restore(checkpoint)
    assert str(excinfo.value) == message
