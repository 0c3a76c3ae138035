"""CPUTopology: counts, derived views and the builders, against upstream's well-known test machines."""

from __future__ import annotations

import pytest

from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.cm.cputopology import CPUInfo, CPUTopology, TopologyError

# Upstream cpumanager test machines (policy_test.go), rebuilt with the project's builders.
TOPO_SINGLE_SOCKET_HT = CPUTopology.from_scheme("linux-interleaved", sockets=1, cores_per_numa_node=4)
TOPO_DUAL_SOCKET_HT = CPUTopology.from_table({c: (c % 6, c % 2, c % 2) for c in range(12)})
TOPO_DUAL_SOCKET_NO_HT = CPUTopology.from_scheme(
    "linux-contiguous", sockets=2, cores_per_numa_node=4, threads_per_core=1
)
TOPO_DUAL_SOCKET_MULTI_NUMA_HT = CPUTopology.from_scheme(
    "linux-interleaved", sockets=2, numa_nodes_per_socket=2, cores_per_numa_node=10
)
TOPO_QUAD_SOCKET_FOUR_WAY_HT = CPUTopology.from_scheme(
    "linux-interleaved", sockets=4, cores_per_numa_node=18, threads_per_core=4
)


@pytest.mark.parametrize(
    ("topo", "counts", "per_core", "per_socket"),
    [
        pytest.param(TOPO_SINGLE_SOCKET_HT, (8, 4, 1, 1), 2, 8, id="single-socket-ht"),
        pytest.param(TOPO_DUAL_SOCKET_HT, (12, 6, 2, 2), 2, 6, id="dual-socket-ht"),
        pytest.param(TOPO_DUAL_SOCKET_NO_HT, (8, 8, 2, 2), 1, 4, id="dual-socket-no-ht"),
        pytest.param(TOPO_DUAL_SOCKET_MULTI_NUMA_HT, (80, 40, 2, 4), 2, 40, id="dual-socket-multi-numa-ht"),
        pytest.param(TOPO_QUAD_SOCKET_FOUR_WAY_HT, (288, 72, 4, 4), 4, 72, id="quad-socket-four-way-ht"),
    ],
)
def test_counts_and_derived_views(
    topo: CPUTopology, counts: tuple[int, int, int, int], per_core: int, per_socket: int
) -> None:
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == counts
    assert topo.cpus_per_core() == per_core
    assert topo.cpus_per_socket() == per_socket


@pytest.mark.parametrize(
    ("topo", "cpu", "info", "siblings"),
    [
        pytest.param(TOPO_SINGLE_SOCKET_HT, 5, CPUInfo(0, 0, 1), "1,5", id="single-socket-ht-interleaved"),
        pytest.param(TOPO_DUAL_SOCKET_HT, 7, CPUInfo(1, 1, 1), "1,7", id="dual-socket-ht-odd-on-socket1"),
        pytest.param(TOPO_DUAL_SOCKET_HT, 10, CPUInfo(0, 0, 4), "4,10", id="dual-socket-ht-even-on-socket0"),
        pytest.param(
            TOPO_DUAL_SOCKET_MULTI_NUMA_HT, 55, CPUInfo(1, 0, 15), "15,55", id="multi-numa-second-numa"
        ),
        pytest.param(
            TOPO_DUAL_SOCKET_MULTI_NUMA_HT, 30, CPUInfo(3, 1, 30), "30,70", id="multi-numa-last-numa"
        ),
        pytest.param(
            TOPO_QUAD_SOCKET_FOUR_WAY_HT, 200, CPUInfo(3, 3, 56), "56,128,200,272", id="four-way-smt"
        ),
    ],
)
def test_cpu_details(topo: CPUTopology, cpu: int, info: CPUInfo, siblings: str) -> None:
    assert topo.details[cpu] == info
    assert topo.siblings(cpu) == CPUSet.parse(siblings)


def test_contiguous_scheme_puts_siblings_next_to_each_other() -> None:
    topo = CPUTopology.from_scheme(
        "linux-contiguous", sockets=2, numa_nodes_per_socket=2, cores_per_numa_node=2
    )
    assert topo.details.cpus_in_numa_nodes(1) == CPUSet.parse("4-7")
    assert topo.details.cpus_in_sockets(1) == CPUSet.parse("8-15")
    assert topo.siblings(9) == CPUSet.of(8, 9)
    assert topo.details.cores_in_sockets(0) == CPUSet.of(0, 2, 4, 6)


def test_core_ids_are_lowest_thread_ids_even_when_sysfs_core_ids_repeat_per_socket() -> None:
    # sysfs core_id 0 exists on both sockets; the kubelet must not merge them.
    table = {
        0: (0, 0, 0),
        1: (0, 1, 1),
        2: (1, 0, 0),
        3: (1, 1, 1),
        4: (0, 0, 0),
        5: (0, 1, 1),
        6: (1, 0, 0),
        7: (1, 1, 1),
    }
    topo = CPUTopology.from_table(table)
    assert topo.num_cores == 4
    assert topo.details.cores() == CPUSet.of(0, 1, 2, 3)
    assert topo.details.cpus_in_cores(1) == CPUSet.of(1, 5)
    assert topo.details[7].core == 3


def test_details_views() -> None:
    d = TOPO_DUAL_SOCKET_MULTI_NUMA_HT.details
    assert d.numa_nodes_in_sockets(1) == CPUSet.of(2, 3)
    assert d.sockets_in_numa_nodes(1, 2) == CPUSet.of(0, 1)
    assert d.cores_in_numa_nodes(0) == CPUSet.parse("0-9")
    assert d.are_numa_nodes_in_same_socket([0, 1])
    assert not d.are_numa_nodes_in_same_socket([1, 2])
    assert not d.are_numa_nodes_in_same_socket([7])
    kept = d.keep_only(CPUSet.parse("0-4"))
    assert kept.cpus() == CPUSet.parse("0-4") and kept.sockets() == CPUSet.of(0)
    assert TOPO_DUAL_SOCKET_MULTI_NUMA_HT.physical_cpus_of(CPUSet.of(0, 41)) == CPUSet.of(0, 1, 40, 41)


def test_from_details_keeps_given_core_ids() -> None:
    topo = CPUTopology.from_details({0: CPUInfo(0, 0, 7), 1: CPUInfo(0, 0, 7)})
    assert (topo.num_cpus, topo.num_cores, topo.cpus_per_core()) == (2, 1, 2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(lambda: CPUTopology.from_table({}), "could not detect number of cpus", id="no-cpus"),
        pytest.param(
            lambda: CPUTopology.from_scheme("linux-interleaved", sockets=0, cores_per_numa_node=1),
            "must be >= 1",
            id="zero-sockets",
        ),
        pytest.param(
            lambda: CPUTopology.from_scheme("weird", sockets=1, cores_per_numa_node=1),  # type: ignore[arg-type]
            "unknown CPU numbering scheme",
            id="unknown-scheme",
        ),
    ],
)
def test_builder_errors(build, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        build()
