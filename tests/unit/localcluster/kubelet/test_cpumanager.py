"""Static CPU manager policy: assignment algorithms, allocate/release, hints, options and checkpoint.

Expected values reproduce upstream's unit tests (``cpu_assignment_test.go``,
``policy_static_test.go``, ``state_checkpoint_test.go``) and the e2e scenarios of
``cpu_manager_test.go`` on the same machines.
"""

from __future__ import annotations

import json

import pytest

from nrop.localcluster.kubelet.cm.cpuassignment import (
    CPUAssignmentError,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from nrop.localcluster.kubelet.cm.cpumanager import (
    ContainerCPURequest,
    CPUManagerState,
    PodCPURequest,
    PolicyOptionError,
    SMTAlignmentError,
    StateValidationError,
    StaticPolicy,
    node_cpu_capacity_and_allocatable,
    num_reserved_cpus,
    parse_static_policy_options,
    pod_guaranteed_cpus,
)
from nrop.localcluster.kubelet.cm.cpumanagerstate import (
    CheckpointError,
    checkpoint_checksum,
    decode_checkpoint,
    encode_checkpoint,
)
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.cm.cputopology import CPUTopology
from nrop.localcluster.kubelet.cm.hints import TopologyHint

P = CPUSet.parse

SINGLE_HT = CPUTopology.from_scheme("linux-interleaved", sockets=1, cores_per_numa_node=4)
DUAL_HT = CPUTopology.from_table({c: (c % 6, c % 2, c % 2) for c in range(12)})  # upstream topoDualSocketHT
DUAL_NO_HT = CPUTopology.from_scheme("linux-contiguous", sockets=2, cores_per_numa_node=4, threads_per_core=1)
MULTI_NUMA_HT = CPUTopology.from_scheme(
    "linux-interleaved", sockets=2, numa_nodes_per_socket=2, cores_per_numa_node=10
)  # upstream topoDualSocketMultiNumaPerSocketHT (dual Xeon Gold 6230)
TWO_NUMA_16 = CPUTopology.from_scheme("linux-interleaved", sockets=2, cores_per_numa_node=4)
QUAD_FOUR_WAY = CPUTopology.from_scheme(
    "linux-interleaved", sockets=4, cores_per_numa_node=4, threads_per_core=4
)


def ctr(name: str, millis: int | None, *, restartable: bool = False) -> ContainerCPURequest:
    return ContainerCPURequest(name=name, cpu_request_millis=millis, restartable=restartable)


def pod(
    *containers: ContainerCPURequest, init: tuple[ContainerCPURequest, ...] = (), qos: str = "Guaranteed"
) -> PodCPURequest:
    return PodCPURequest(uid="fakePod", qos_class=qos, init_containers=init, containers=containers)


def hint(*numa: int, preferred: bool) -> TopologyHint:
    return TopologyHint(frozenset(numa), preferred)


# -- assignment algorithms -------------------------------------------------------------------------

COMMON_TAKE_CASES = [
    pytest.param(SINGLE_HT, "0-7", 0, "", id="take-zero"),
    pytest.param(SINGLE_HT, "0-7", 1, "0", id="take-one"),
    pytest.param(SINGLE_HT, "1,3,5-7", 1, "6", id="take-one-fills-partial-core"),
    pytest.param(SINGLE_HT, "0-7", 2, "0,4", id="take-two-is-one-core"),
    pytest.param(SINGLE_HT, "0-7", 8, "0-7", id="take-all"),
    pytest.param(SINGLE_HT, "0-3,6", 2, "2,6", id="take-two-only-one-full-core"),
    pytest.param(DUAL_HT, "0-11", 6, "0,2,4,6,8,10", id="take-a-socket"),
    pytest.param(MULTI_NUMA_HT, "0-79", 40, "0-19,40-59", id="multi-numa-take-a-socket"),
    pytest.param(MULTI_NUMA_HT, "0-79", 20, "0-9,40-49", id="multi-numa-take-a-numa-node"),
    pytest.param(MULTI_NUMA_HT, "10-39,50-79", 20, "10-19,50-59", id="multi-numa-take-numa-one-taken"),
    pytest.param(MULTI_NUMA_HT, "0-79", 60, "0-29,40-69", id="multi-numa-socket-and-numa"),
    pytest.param(MULTI_NUMA_HT, "1-39,41-79", 60, "10-39,50-79", id="multi-numa-socket-and-numa-core-taken"),
]


@pytest.mark.parametrize(
    ("topo", "available", "n", "expected"),
    [
        *COMMON_TAKE_CASES,
        pytest.param(DUAL_HT, "1-5,7-11", 1, "2", id="one-cpu-from-partial-socket0"),
        pytest.param(DUAL_HT, "0-11", 8, "0,6,2,8,4,10,1,7", id="fill-numa0-then-one-core"),
        pytest.param(MULTI_NUMA_HT, "0-79", 64, "0-29,40-69,30,31,70,71", id="three-numa-then-two-cores"),
    ],
)
def test_take_packed(topo: CPUTopology, available: str, n: int, expected: str) -> None:
    assert take_by_topology_numa_packed(topo, P(available), n) == P(expected)


@pytest.mark.parametrize(
    ("topo", "available", "n", "expected"),
    [
        pytest.param(SINGLE_HT, "0-7", 3, "0-2", id="single-socket-3"),
        pytest.param(DUAL_HT, "0-11", 2, "0,2", id="dual-2-one-thread-per-core"),
        pytest.param(DUAL_HT, "0-11", 3, "0,2,4", id="dual-3"),
        pytest.param(DUAL_HT, "0-11", 6, "0,2,4,6,8,10", id="dual-6-whole-socket"),
        pytest.param(DUAL_HT, "0-11", 8, "0,2,4,6,8,10,1,3", id="dual-8-socket-then-spread"),
        pytest.param(DUAL_NO_HT, "0-7", 2, "0,1", id="no-ht-2"),
        pytest.param(MULTI_NUMA_HT, "0-79", 8, "0-7", id="multi-numa-8"),
    ],
)
def test_take_spread(topo: CPUTopology, available: str, n: int, expected: str) -> None:
    assert take_by_topology_numa_packed(topo, P(available), n, "spread") == P(expected)


@pytest.mark.parametrize(
    ("topo", "available", "n", "group", "expected"),
    [
        *(pytest.param(*p.values[:3], 1, p.values[3], id=f"common-{p.id}") for p in COMMON_TAKE_CASES),
        pytest.param(DUAL_HT, "0-11", 8, 1, "0,6,2,8,1,7,3,9", id="4-cores-2-per-numa"),
        pytest.param(
            MULTI_NUMA_HT, "0-79", 64, 1, "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77", id="8-per-numa"
        ),
        pytest.param(MULTI_NUMA_HT, "0-79", 48, 1, "0-7,10-17,20-27,40-47,50-57,60-67", id="first-3-numa"),
        pytest.param(
            MULTI_NUMA_HT,
            "1-29,32-39,41-69,72-79",
            48,
            1,
            "1-8,10-17,20-27,41-48,50-57,60-67",
            id="first-3-numa-partial",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "2-29,31-39,42-69,71-79",
            48,
            1,
            "10-17,20-27,31-38,50-57,60-67,71-78",
            id="last-3-numa-for-balance",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71",
            16,
            1,
            "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71",
            id="2-per-numa-scarce",
        ),
        pytest.param(DUAL_HT, "1-5,7-11", 1, 1, "1", id="one-cpu-goes-to-balance-numa1"),
        pytest.param(DUAL_HT, "1-5,7-11", 1, 2, "2", id="odd-with-group-2-falls-back-to-packed"),
        pytest.param(MULTI_NUMA_HT, "0-79", 26, 1, "0-6,10-16,40-45,50-55", id="13-cores-over-2-numa"),
        pytest.param(MULTI_NUMA_HT, "0-79", 26, 2, "0-6,10-15,40-46,50-55", id="13-cores-over-2-numa-group2"),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            62,
            1,
            "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76",
            id="62-spill-to-numa-0-1",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            62,
            2,
            "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76",
            id="62-group2-spill-0-1-2",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-8,10-18,20-39,40-48,50-58,60-79",
            62,
            1,
            "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77",
            id="62-spill-to-numa-2-3-for-balance",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-8,10-18,20-39,40-48,50-58,60-79",
            62,
            2,
            "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77",
            id="62-group2-spill-0-2-3-for-balance",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76",
            34,
            1,
            "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74",
            id="remainder-only-where-cpus-left",
        ),
    ],
)
def test_take_distributed(topo: CPUTopology, available: str, n: int, group: int, expected: str) -> None:
    assert take_by_topology_numa_distributed(topo, P(available), n, group) == P(expected)


@pytest.mark.parametrize("take", [take_by_topology_numa_packed, take_by_topology_numa_distributed])
def test_take_more_than_available(take) -> None:
    with pytest.raises(CPUAssignmentError) as exc:
        take(SINGLE_HT, P("0,2,4,6"), 5)
    assert str(exc.value) == "not enough cpus available to satisfy request: requested=5, available=4"


# -- options and reservation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "kwargs", "message"),
    [
        pytest.param({"foo": "true"}, {}, 'unknown CPU Manager Policy option: "foo"', id="unknown"),
        pytest.param(
            {"align-by-socket": "true"},
            {},
            'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
            id="alpha-gate-off",
        ),
        pytest.param(
            {"distribute-cpus-across-numa": "true"},
            {"beta_options_enabled": False},
            'CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided',
            id="beta-gate-off",
        ),
        pytest.param(
            {"full-pcpus-only": "yes"},
            {},
            'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax',
            id="bad-bool",
        ),
        pytest.param(
            {"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"},
            {"alpha_options_enabled": True},
            "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time",
            id="full-pcpus-and-spread",
        ),
        pytest.param(
            {"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"},
            {"alpha_options_enabled": True},
            "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores can not be used at the same time",
            id="numa-and-cores",
        ),
    ],
)
def test_option_errors(options: dict[str, str], kwargs: dict[str, bool], message: str) -> None:
    with pytest.raises(PolicyOptionError) as exc:
        parse_static_policy_options(options, **kwargs)
    assert str(exc.value) == message


def test_options_parse_go_booleans() -> None:
    opts = parse_static_policy_options(
        {"full-pcpus-only": "T", "distribute-cpus-across-numa": "1", "strict-cpu-reservation": "False"}
    )
    assert opts.full_pcpus_only and opts.distribute_cpus_across_numa and not opts.strict_cpu_reservation


@pytest.mark.parametrize(
    ("topo", "tm_policy", "message"),
    [
        pytest.param(
            MULTI_NUMA_HT,
            "single-numa-node",
            "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option",
            id="single-numa-node-tm",
        ),
        pytest.param(
            CPUTopology.from_table({0: (0, 0, 0), 1: (0, 1, 0)}),
            "none",
            "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA",
            id="more-sockets-than-numa",
        ),
    ],
)
def test_align_by_socket_refused(topo: CPUTopology, tm_policy: str, message: str) -> None:
    with pytest.raises(PolicyOptionError) as exc:
        StaticPolicy(
            topo,
            options={"align-by-socket": "true"},
            topology_manager_policy=tm_policy,
            alpha_options_enabled=True,
        )
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("millis", "expected"),
    [
        pytest.param(500, 1, id="500m-is-one-cpu"),
        pytest.param(1000, 1, id="1"),
        pytest.param(1500, 2, id="1500m-rounds-up"),
        pytest.param(
            None, "[cpumanager] unable to determine reserved CPU resources for static policy", id="missing"
        ),
        pytest.param(
            0,
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero",
            id="zero",
        ),
    ],
)
def test_num_reserved_cpus(millis: int | None, expected: int | str) -> None:
    if isinstance(expected, int):
        assert num_reserved_cpus(millis) == expected
    else:
        with pytest.raises(PolicyOptionError) as exc:
            num_reserved_cpus(millis)
        assert str(exc.value) == expected


@pytest.mark.parametrize(
    ("topo", "num", "options", "expected"),
    [
        pytest.param(SINGLE_HT, 1, None, "0", id="single-ht-1"),
        pytest.param(SINGLE_HT, 2, None, "0,4", id="single-ht-2-one-core"),
        pytest.param(DUAL_HT, 2, None, "0,6", id="dual-ht-2"),
        pytest.param(DUAL_HT, 3, None, "0,2,6", id="dual-ht-3"),
        pytest.param(
            MULTI_NUMA_HT, 4, {"distribute-cpus-across-numa": "true"}, "0-1,40-41", id="distributed-4"
        ),
    ],
)
def test_reserved_cpus_taken_by_topology(
    topo: CPUTopology, num: int, options: dict[str, str] | None, expected: str
) -> None:
    policy = StaticPolicy(topo, num_reserved_cpus=num, options=options)
    assert policy.reserved_cpus == P(expected)


def test_reserved_system_cpus_and_errors() -> None:
    policy = StaticPolicy(DUAL_HT, num_reserved_cpus=5, reserved_cpus=P("1,6"))
    assert policy.reserved_cpus == P("1,6")
    assert policy.reserved_physical_cpus == P("0-1,6-7")
    with pytest.raises(PolicyOptionError) as exc:
        StaticPolicy(DUAL_HT, num_reserved_cpus=13)
    assert (
        str(exc.value)
        == "[cpumanager] unable to reserve the required amount of CPUs (size of  did not equal 13)"
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"kube_reserved_millis": 500}, (12000, 500, 11500), id="kube-reserved-500m"),
        pytest.param(
            {"system_reserved_millis": 1000, "kube_reserved_millis": 1000}, (12000, 2000, 10000), id="both"
        ),
        pytest.param(
            {"kube_reserved_millis": 500, "reserved_system_cpus": P("0,6")},
            (12000, 2000, 10000),
            id="reserved-cpus-win",
        ),
        pytest.param({}, (12000, None, 12000), id="nothing-reserved"),
    ],
)
def test_node_cpu_capacity_and_allocatable(kwargs: dict, expected: tuple) -> None:
    assert node_cpu_capacity_and_allocatable(DUAL_HT, **kwargs) == expected


# -- start / validate state --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("num_reserved", "entries", "default", "expected"),
    [
        pytest.param(0, {"fakePod": {"0": "0"}}, "1-11", "1-11", id="non-corrupted-state"),
        pytest.param(1, {}, "", "0-11", id="empty-state-initialised"),
        pytest.param(
            2,
            {},
            "0-1",
            'not all reserved cpus: "0,6" are present in defaultCpuSet: "0-1"',
            id="reserved-not-in-default",
        ),
        pytest.param(
            0,
            {"fakePod": {"0": "0-2"}},
            "2-11",
            'pod: fakePod, container: 0 cpuset: "0-2" overlaps with default cpuset "2-11"',
            id="assigned-overlaps-default",
        ),
        pytest.param(
            0,
            {"fakePod": {"0": "0-2", "1": "3-4"}},
            "5-12",
            'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-12"',
            id="unknown-cpu-in-state",
        ),
        pytest.param(
            0,
            {"fakePod": {"0": "0-2", "1": "3-4"}},
            "5-10",
            'current set of available CPUs "0-11" doesn\'t match with CPUs in state "0-10"',
            id="cpu-missing-from-state",
        ),
        pytest.param(
            0, {"fakePod": {"0": "0"}}, "", "default cpuset cannot be empty", id="empty-default-with-entries"
        ),
    ],
)
def test_start(num_reserved: int, entries: dict, default: str, expected: str) -> None:
    policy = StaticPolicy(DUAL_HT, num_reserved_cpus=num_reserved)
    state = CPUManagerState(P(default), {p: {c: P(s) for c, s in cs.items()} for p, cs in entries.items()})
    if expected[0].isdigit():
        policy.start(state)
        assert state.default_cpuset == P(expected)
    else:
        with pytest.raises(StateValidationError) as exc:
            policy.start(state)
        assert str(exc.value) == expected


def test_strict_cpu_reservation_keeps_reserved_out_of_shared_pool() -> None:
    policy = StaticPolicy(DUAL_HT, reserved_cpus=P("0"), options={"strict-cpu-reservation": "true"})
    state = CPUManagerState()
    policy.start(state)
    assert state.default_cpuset == P("1-11")
    bad = CPUManagerState(P("0-11"))
    with pytest.raises(
        StateValidationError, match='some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-11"'
    ):
        policy.start(bad)


# -- allocate (policy_static_test.go TestStaticPolicyAdd) ---------------------------------------------

ADD_CASES = [
    pytest.param(SINGLE_HT, {"c100": "2-3,6-7"}, "0-1,4-5", 2000, "1,5", id="single-ht-one-core"),
    pytest.param(DUAL_HT, {"c100": "2"}, "0-1,3-11", 6000, "1,3,5,7,9,11", id="dual-ht-one-socket"),
    pytest.param(DUAL_HT, {"c100": "1,5"}, "0,2-4,6-11", 6000, "2-4,8-10", id="dual-ht-three-cores"),
    pytest.param(DUAL_NO_HT, {}, "0-1,3-7", 4000, "4-7", id="dual-no-ht-one-socket"),
    pytest.param(DUAL_NO_HT, {"c100": "4-5"}, "0-1,3,6-7", 4000, "1,3,6-7", id="dual-no-ht-four-cores"),
    pytest.param(DUAL_HT, {"c100": "2"}, "0-1,3-11", 8000, "1,3-5,7,9-11", id="dual-ht-socket-and-core"),
]


@pytest.mark.parametrize("options", [None, {"full-pcpus-only": "true"}], ids=["default", "full-pcpus-only"])
@pytest.mark.parametrize(("topo", "assigned", "default", "millis", "expected"), ADD_CASES)
def test_allocate_option_insensitive(topo, assigned, default, millis, expected, options) -> None:
    policy = StaticPolicy(topo, num_reserved_cpus=1, options=options)
    state = CPUManagerState(P(default), {"fakePod": {k: P(v) for k, v in assigned.items()}})
    c = ctr("fakeContainer3", millis)
    assert policy.allocate(state, pod(c), c) == P(expected)
    assert state.get("fakePod", "fakeContainer3") == P(expected)
    assert not state.default_cpuset.intersection(P(expected))


SMT = {"full-pcpus-only": "true"}


@pytest.mark.parametrize(
    ("topo", "num_reserved", "reserved", "default", "assigned", "millis", "options", "expected"),
    [
        pytest.param(SINGLE_HT, 1, None, "0-7", {}, 1000, None, "4", id="one-cpu-takes-sibling-of-reserved"),
        pytest.param(
            SINGLE_HT, 1, None, "0-1,4-5", {"c": "2-3,6-7"}, 4000, None, "2-3,6-7", id="same-allocation-again"
        ),
        pytest.param(
            SINGLE_HT,
            1,
            None,
            "0-7",
            {},
            8000,
            None,
            "not enough cpus available to satisfy request: requested=8, available=7",
            id="more-than-available",
        ),
        pytest.param(
            DUAL_HT,
            1,
            None,
            "0,4-11",
            {"c100": "1-3"},
            10000,
            None,
            "not enough cpus available to satisfy request: requested=10, available=8",
            id="dual-not-enough",
        ),
        pytest.param(
            SINGLE_HT,
            1,
            None,
            "0-7",
            {},
            1000,
            SMT,
            "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2",
            id="full-pcpus-odd-request",
        ),
        pytest.param(
            QUAD_FOUR_WAY,
            8,
            None,
            "0-63",
            {},
            15000,
            SMT,
            "SMT Alignment Error: requested 15 cpus not multiple cpus per core = 4",
            id="full-pcpus-four-way-smt",
        ),
        pytest.param(
            DUAL_HT,
            2,
            "1,6",
            "0,2-5,7-11",
            {},
            10000,
            SMT,
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 8, "
            "requested CPUs = 10, CPUs per core = 2",
            id="full-pcpus-reserved-split-cores",
        ),
        pytest.param(
            DUAL_HT, 2, None, "1-5,7-11", {}, 10000, SMT, "1-5,7-11", id="full-pcpus-auto-reserve-2"
        ),
        pytest.param(
            DUAL_HT, 2, "0,6", "1-5,7-11", {}, 10000, SMT, "1-5,7-11", id="full-pcpus-reserved-core"
        ),
        pytest.param(DUAL_HT, 2, None, "1-5,7-11", {}, 2000, SMT, "2,8", id="full-pcpus-2-is-a-core"),
    ],
)
def test_allocate(topo, num_reserved, reserved, default, assigned, millis, options, expected) -> None:
    policy = StaticPolicy(
        topo, num_reserved_cpus=num_reserved, reserved_cpus=P(reserved) if reserved else None, options=options
    )
    state = CPUManagerState(
        P(default), {"fakePod": {k: P(v) for k, v in assigned.items()}} if assigned else {}
    )
    c = ctr("c", millis)
    if expected[0].isdigit():
        assert policy.allocate(state, pod(c), c) == P(expected)
        return
    before = state.clone()
    with pytest.raises((SMTAlignmentError, CPUAssignmentError)) as exc:
        policy.allocate(state, pod(c), c)
    assert str(exc.value) == expected
    assert state == before
    if isinstance(exc.value, SMTAlignmentError):
        assert exc.value.reason == "SMTAlignmentError"


@pytest.mark.parametrize(
    ("qos", "millis"),
    [
        pytest.param("Burstable", 1000, id="non-guaranteed"),
        pytest.param("Guaranteed", 977, id="non-integer"),
        pytest.param("Guaranteed", 1500, id="fractional"),
        pytest.param("Guaranteed", None, id="no-request"),
    ],
)
def test_shared_pool_containers_get_nothing(qos: str, millis: int | None) -> None:
    policy = StaticPolicy(SINGLE_HT, num_reserved_cpus=1)
    state = CPUManagerState(P("0-7"))
    c = ctr("c", millis)
    p = pod(c, qos=qos)
    assert policy.allocate(state, p, c) is None
    assert state.entries == {} and state.default_cpuset == P("0-7")
    assert policy.container_cpuset(state, "fakePod", "c") == P("0-7")
    assert policy.get_topology_hints(state, p, c) == {}


@pytest.mark.parametrize(
    ("n", "affinity", "expected"),
    [
        pytest.param(2, None, "0,6", id="2-no-affinity"),
        pytest.param(2, {0}, "0,6", id="2-numa0"),
        pytest.param(2, {1}, "1,7", id="2-numa1"),
        pytest.param(8, {0}, "0,6,2,8,4,10,1,7", id="8-numa0-spills-to-numa1"),
        pytest.param(8, {1}, "1,7,3,9,5,11,0,6", id="8-numa1-spills-to-numa0"),
    ],
)
def test_allocate_follows_topology_affinity(n: int, affinity: set[int] | None, expected: str) -> None:
    policy = StaticPolicy(DUAL_HT)
    state = CPUManagerState()
    policy.start(state)
    c = ctr("c", n * 1000)
    cpus = policy.allocate(state, pod(c), c, frozenset(affinity) if affinity is not None else None)
    assert cpus == P(expected)
    assert state.default_cpuset == P("0-11") - P(expected)


@pytest.mark.parametrize(
    ("align_by_socket", "expected"),
    [
        pytest.param(True, "2,11", id="align-by-socket-widens-to-socket"),
        pytest.param(False, "2,21", id="strict-numa"),
    ],
)
def test_align_by_socket_allocation(align_by_socket: bool, expected: str) -> None:
    policy = StaticPolicy(
        MULTI_NUMA_HT,
        num_reserved_cpus=1,
        options={"align-by-socket": str(align_by_socket).lower()},
        alpha_options_enabled=True,
    )
    state = CPUManagerState(P("2,11,21,22"))
    c = ctr("c", 2000)
    assert policy.allocate(state, pod(c), c, frozenset({0, 2})) == P(expected)


def test_distribute_across_numa_allocation_is_even() -> None:
    # e2e: "a request larger than one NUMA node is split evenly".
    policy = StaticPolicy(
        MULTI_NUMA_HT, reserved_cpus=P("0"), options={"distribute-cpus-across-numa": "true"}
    )
    state = CPUManagerState()
    policy.start(state)
    c = ctr("c", 24000)
    cpus = policy.allocate(state, pod(c), c)
    per_numa = [cpus.intersection(MULTI_NUMA_HT.details.cpus_in_numa_nodes(n)).size() for n in range(4)]
    assert sorted(per_numa, reverse=True)[:2] == [12, 12] and sum(per_numa) == 24


def test_e2e_multi_container_pods_get_disjoint_sets() -> None:
    policy = StaticPolicy(MULTI_NUMA_HT, reserved_cpus=P("0"))
    state = CPUManagerState()
    policy.start(state)
    sets = []
    for uid, sizes in (("p1", (1, 2)), ("p2", (3, 2)), ("p3", (4, 2)), ("p4", (2, 2))):
        containers = tuple(ctr(f"c{i}", s * 1000) for i, s in enumerate(sizes))
        p = PodCPURequest(uid=uid, qos_class="Guaranteed", containers=containers)
        for c, s in zip(containers, sizes, strict=True):
            cpus = policy.allocate(state, p, c)
            assert cpus is not None and cpus.size() == s and 0 not in cpus
            sets.append(cpus)
    everything = CPUSet().union(*sets)
    assert everything.size() == sum(s.size() for s in sets)
    assert state.default_cpuset == P("0-79") - everything
    two = sets[1]  # a 2-CPU container on SMT2: the thread siblings of one core
    assert two == MULTI_NUMA_HT.siblings(two.to_list()[0])


# -- init containers, sidecars and release ----------------------------------------------------------


def test_init_container_cpus_are_reused_then_released_partially() -> None:
    policy = StaticPolicy(SINGLE_HT)
    state = CPUManagerState(P("0-7"))
    init, app = ctr("initContainer-0", 4000), ctr("appContainer-0", 2000)
    p = pod(app, init=(init,))
    assert policy.allocate(state, p, init) == P("0-1,4-5")
    assert policy.allocate(state, p, app) == P("0,4")
    assert state.default_cpuset == P("2-3,6-7")
    policy.remove_container(state, "fakePod", "initContainer-0")
    assert state.default_cpuset == P("1-3,5-7")
    assert state.get("fakePod", "initContainer-0") is None


def test_sidecar_cpus_are_not_reused_by_app_containers() -> None:
    policy = StaticPolicy(SINGLE_HT)
    state = CPUManagerState(P("0-7"))
    init, sidecar, app = ctr("init", 2000), ctr("sidecar", 2000, restartable=True), ctr("app", 2000)
    p = pod(app, init=(init, sidecar))
    assert policy.allocate(state, p, init) == P("0,4")
    assert policy.allocate(state, p, sidecar) == P("0,4")  # may reuse the finished init container's CPUs
    assert policy.allocate(state, p, app) == P("1,5")  # but not the running sidecar's
    assert state.default_cpuset == P("2-3,6-7")


@pytest.mark.parametrize(
    ("container", "entries", "default", "expected"),
    [
        pytest.param("c1", {"c1": "1-3"}, "4-7", "1-7", id="dealloc-one"),
        pytest.param("c1", {"c1": "1-3", "c2": "4-7"}, "", "1-3", id="dealloc-one-begin-empty"),
        pytest.param("c1", {"c1": "1,3,5", "c2": "2,4"}, "6-7", "1,3,5-7", id="dealloc-one-of-two"),
        pytest.param("c2", {"c1": "1,3,5"}, "2,4,6-7", "2,4,6-7", id="nothing-to-release"),
    ],
)
def test_remove_container(container: str, entries: dict[str, str], default: str, expected: str) -> None:
    policy = StaticPolicy(SINGLE_HT)
    state = CPUManagerState(P(default), {"fakePod": {k: P(v) for k, v in entries.items()}})
    policy.remove_container(state, "fakePod", container)
    assert state.default_cpuset == P(expected)
    assert state.get("fakePod", container) is None


def test_remove_stale_state_releases_inactive_pods() -> None:
    policy = StaticPolicy(SINGLE_HT)
    state = CPUManagerState(P("4-7"), {"a": {"c": P("0-1")}, "b": {"c": P("2-3")}})
    policy.remove_stale_state(state, [("a", "c")])
    assert state.entries == {"a": {"c": P("0-1")}} and state.default_cpuset == P("2-7")


# -- topology hints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topo", "default", "millis", "options", "expected"),
    [
        pytest.param(
            DUAL_HT,
            "0-11",
            1000,
            None,
            [hint(0, preferred=True), hint(1, preferred=True), hint(0, 1, preferred=False)],
            id="1-cpu",
        ),
        pytest.param(
            DUAL_HT,
            "0-11",
            6000,
            None,
            [hint(0, preferred=True), hint(1, preferred=True), hint(0, 1, preferred=False)],
            id="6-cpus",
        ),
        pytest.param(DUAL_HT, "0-11", 7000, None, [hint(0, 1, preferred=True)], id="7-cpus-needs-both"),
        pytest.param(
            DUAL_HT,
            "0,1,3,5,7,9,11",
            2000,
            None,
            [hint(1, preferred=True), hint(0, 1, preferred=False)],
            id="numa0-full",
        ),
        pytest.param(DUAL_HT, "0-3", 6000, None, [], id="unsatisfiable-is-empty-list"),
        pytest.param(
            TWO_NUMA_16,
            "1-7,9-15",
            7000,
            None,
            [hint(1, preferred=True), hint(0, 1, preferred=False)],
            id="min-affinity-from-machine-not-free-cpus",
        ),
        pytest.param(
            TWO_NUMA_16, "0-15", 10000, None, [hint(0, 1, preferred=True)], id="wider-than-one-numa"
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            10000,
            {"align-by-socket": "true"},
            [
                hint(0, preferred=True),
                hint(1, preferred=True),
                hint(2, preferred=True),
                hint(3, preferred=True),
                hint(0, 1, preferred=True),
                hint(0, 2, preferred=False),
                hint(0, 3, preferred=False),
                hint(1, 2, preferred=False),
                hint(1, 3, preferred=False),
                hint(2, 3, preferred=True),
                hint(0, 1, 2, preferred=False),
                hint(0, 1, 3, preferred=False),
                hint(0, 2, 3, preferred=False),
                hint(1, 2, 3, preferred=False),
                hint(0, 1, 2, 3, preferred=False),
            ],
            id="align-by-socket-prefers-same-socket-pairs",
        ),
    ],
)
def test_container_hints(topo, default, millis, options, expected) -> None:
    policy = StaticPolicy(topo, options=options, alpha_options_enabled=True)
    state = CPUManagerState(P(default))
    c = ctr("c", millis)
    assert policy.get_topology_hints(state, pod(c), c) == {"cpu": expected}


@pytest.mark.parametrize(
    ("assigned", "millis", "expected"),
    [
        pytest.param(
            "1,7",
            2000,
            {"cpu": [hint(1, preferred=True), hint(0, 1, preferred=False)]},
            id="regenerated-from-assignment",
        ),
        pytest.param("1,7", 4000, {"cpu": []}, id="assignment-size-differs"),
    ],
)
def test_container_hints_already_allocated(assigned: str, millis: int, expected: dict) -> None:
    policy = StaticPolicy(DUAL_HT)
    state = CPUManagerState(P("0-6,8-11"), {"fakePod": {"c": P(assigned)}})
    c = ctr("c", millis)
    assert policy.get_topology_hints(state, pod(c), c) == expected


def test_container_hints_honour_reusable_init_cpus() -> None:
    policy = StaticPolicy(DUAL_HT)
    state = CPUManagerState(P("0-11"))
    init, app = ctr("init", 2000), ctr("app", 2000)
    p = pod(app, init=(init,))
    policy.allocate(state, p, init, frozenset({1}))
    assert policy.get_topology_hints(state, p, app) == {
        "cpu": [hint(1, preferred=True), hint(0, 1, preferred=False)]
    }


@pytest.mark.parametrize(
    ("p", "assigned", "expected"),
    [
        pytest.param(
            pod(ctr("a", 2000), ctr("b", 3000)),
            {},
            [hint(0, preferred=True), hint(1, preferred=True), hint(0, 1, preferred=False)],
            id="sum-of-apps",
        ),
        pytest.param(
            pod(ctr("a", 2000), init=(ctr("i", 8000),)),
            {},
            [hint(0, 1, preferred=True)],
            id="init-larger-than-apps",
        ),
        pytest.param(
            pod(ctr("a", 4000), init=(ctr("s", 3000, restartable=True), ctr("i", 4000))),
            {},
            [hint(0, 1, preferred=True)],
            id="sidecar-adds-to-apps-and-later-inits",
        ),
        pytest.param(
            pod(ctr("a", 2000), ctr("b", 2000)),
            {"a": "0,6"},
            [hint(0, preferred=True), hint(0, 1, preferred=False)],
            id="partially-assigned-pod-keeps-its-numa",
        ),
        pytest.param(
            pod(ctr("a", 2000), ctr("b", 2000)),
            {"a": "0,6", "b": "1,7"},
            [hint(0, 1, preferred=False)],
            id="fully-assigned-regenerates-min-from-machine",
        ),
        pytest.param(pod(ctr("a", 2000), ctr("b", 2000)), {"a": "0"}, [], id="assignment-size-differs"),
        pytest.param(pod(ctr("a", 2500)), {}, None, id="no-exclusive-cpus-no-preference"),
    ],
)
def test_pod_hints(p: PodCPURequest, assigned: dict[str, str], expected: list[TopologyHint] | None) -> None:
    policy = StaticPolicy(DUAL_HT)
    taken = CPUSet().union(*(P(v) for v in assigned.values()))
    state = CPUManagerState(
        P("0-11") - taken, {"fakePod": {k: P(v) for k, v in assigned.items()}} if assigned else {}
    )
    assert policy.get_pod_topology_hints(state, p) == ({} if expected is None else {"cpu": expected})


def test_pod_guaranteed_cpus_sidecar_rule() -> None:
    p = pod(ctr("a", 1000), init=(ctr("i1", 2000), ctr("s", 2000, restartable=True), ctr("i2", 3000)))
    assert pod_guaranteed_cpus(p) == 5  # max(2, 2+3, 1+2)


# -- checkpoint --------------------------------------------------------------------------------------

UPSTREAM_ENTRIES = {"pod": {"container1": "4-6", "container2": "1-3"}}


@pytest.mark.parametrize(
    ("policy", "default", "entries", "checksum"),
    [
        pytest.param("none", "4-6", {}, 354655845, id="upstream-none-default-only"),
        pytest.param("none", "1-3", UPSTREAM_ENTRIES, 3610638499, id="upstream-none-with-entries"),
    ],
)
def test_checksum_matches_upstream_examples(policy: str, default: str, entries: dict, checksum: int) -> None:
    assert checkpoint_checksum(policy, default, entries) == checksum
    text = json.dumps(
        {"policyName": policy, "defaultCPUSet": default, "entries": entries, "checksum": checksum}
    )
    state = decode_checkpoint(text, policy)
    assert state.default_cpuset == P(default)
    assert {p: {c: str(s) for c, s in cs.items()} for p, cs in state.entries.items()} == entries


def test_encode_is_byte_identical_to_the_kubelet() -> None:
    state = CPUManagerState(P("7-9"), {"pod": {"container2": P("1-3"), "container1": P("4-6")}})
    assert encode_checkpoint(state) == (
        b'{"policyName":"static","defaultCpuSet":"7-9",'
        b'"entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":964019483}'
    )
    empty = encode_checkpoint(CPUManagerState(P("0-11")))
    assert empty == b'{"policyName":"static","defaultCpuSet":"0-11","checksum":%d}' % checkpoint_checksum(
        "static", "0-11", {}
    )


def test_round_trip() -> None:
    state = CPUManagerState(
        P("0,3-5,9-11"), {"uid-1": {"app": P("1-2")}, "uid-2": {"a": P("6-7"), "b": P("8")}}
    )
    assert decode_checkpoint(encode_checkpoint(state), "static") == state


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"policyName":"none","defaultCpuSet":"4-6","entries":{},"checksum":1337}',
            "checkpoint is corrupted",
            id="invalid-checksum",
        ),
        pytest.param(
            '{"policyName":"none","defaultCpuSet":"4-7","entries":{},"checksum":354655845}',
            "checkpoint is corrupted",
            id="tampered-default-set",
        ),
        pytest.param(
            '{"policyName":"static","defaultCpuSet":"4-6","entries":{},"checksum":354655845}',
            "checkpoint is corrupted",
            id="tampered-policy",
        ),
        pytest.param("{", "could not parse checkpoint", id="invalid-json"),
        pytest.param(
            '{"policyName":"none","defaultCpuSet":"4-6","checksum":0}',
            'configured policy "static" differs from state checkpoint policy "none"',
            id="policy-mismatch-unverified",
        ),
        pytest.param(
            '{"policyName":"static","defaultCpuSet":"1.3","checksum":0}',
            'could not parse default CPU set "1.3": strconv.Atoi: parsing "1.3": invalid syntax',
            id="bad-default-set",
        ),
        pytest.param(
            '{"policyName":"static","defaultCpuSet":"1-3","entries":{"pod":{"c2":"asd"}},"checksum":0}',
            'could not parse cpuset "asd" for container "c2" in pod "pod": strconv.Atoi: parsing "asd": invalid syntax',
            id="bad-entry",
        ),
        pytest.param(
            '{"policyName":"static","defaultCpuSet":"7-9","entries":{"c1":"4-6"},"checksum":0}',
            "entries must map",
            id="v1-format-not-migrated",
        ),
    ],
)
def test_decode_errors(text: str, message: str) -> None:
    with pytest.raises(CheckpointError) as exc:
        decode_checkpoint(text, "static")
    assert message in str(exc.value)
