"""RTE's sysfs reader against trees written by the embedded kubelet's sysfs writer (and hand-made oddities)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrop.localcluster.kubelet.cm import CPUTopology
from nrop.localcluster.kubelet.machine import Machine, NUMANode
from nrop.localcluster.kubelet.sysfs import sysfs_path, write_sysfs
from nrop.localcluster.profiles import load_profile
from nrop.rte.sysinfo import (
    MachineInfo,
    SysinfoError,
    format_cpulist,
    hugepage_resource_name,
    parse_cpulist,
    parse_meminfo_total,
    read_machine,
)

GiB = 1024**3
MiB = 1024**2


def _write(root: Path, machine: Machine) -> Path:
    write_sysfs(root, machine)
    return sysfs_path(root)


@pytest.fixture
def default_worker(tmp_path: Path) -> tuple[Path, Machine]:
    machine = load_profile("devices").nodes()[1].machine
    return _write(tmp_path, machine), machine


def test_default_worker_numa_layout(default_worker: tuple[Path, Machine]) -> None:
    sysfs, _ = default_worker
    info = read_machine(sysfs)
    assert [n.id for n in info.nodes] == [0, 1]
    assert info.nodes[0].cpus == (*range(8), *range(16, 24))
    assert info.nodes[1].cpus == (*range(8, 16), *range(24, 32))
    assert info.nodes[0].distances == (10, 21)
    assert info.nodes[1].distances == (21, 10)
    assert info.online_cpus == tuple(range(32))
    assert info.cpu_to_numa()[17] == 0
    assert info.cpu_to_numa()[31] == 1


def test_memory_and_hugepages_honour_the_root(default_worker: tuple[Path, Machine]) -> None:
    """Upstream reads memory from the host's /sys whatever --sysfs says; we read the tree given."""
    sysfs, machine = default_worker
    info = read_machine(sysfs)
    for node, expected in zip(info.nodes, machine.numa_nodes, strict=True):
        assert node.memory_bytes == expected.memory_bytes
        assert dict(node.hugepages) == {
            "hugepages-2Mi": expected.hugepages.get(2 * MiB, 0) * 2 * MiB,
            "hugepages-1Gi": expected.hugepages.get(GiB, 0) * GiB,
        }
    assert dict(info.nodes[0].hugepages) == {"hugepages-2Mi": GiB, "hugepages-1Gi": 2 * GiB}


def test_four_numa_distances_and_cpus(tmp_path: Path) -> None:
    info = read_machine(_write(tmp_path, load_profile("four-numa").nodes()[1].machine))
    assert [n.distances for n in info.nodes] == [
        (10, 11, 21, 21),
        (11, 10, 21, 21),
        (21, 21, 10, 11),
        (21, 21, 11, 10),
    ]
    assert info.nodes[2].cpus == (*range(16, 24), *range(48, 56))


def test_offline_cpu_is_skipped(default_worker: tuple[Path, Machine]) -> None:
    sysfs, _ = default_worker
    (sysfs / "devices/system/cpu/cpu5/online").write_text("0\n")
    info = read_machine(sysfs)
    assert 5 not in info.nodes[0].cpus
    assert len(info.nodes[0].cpus) == 15


def test_reserved_cpus_are_carried(default_worker: tuple[Path, Machine]) -> None:
    sysfs, _ = default_worker
    info = read_machine(sysfs, reserved_cpus=[16, 0, 0])
    assert info.reserved_cpus == (0, 16)
    assert info.with_reserved_cpus([3]).reserved_cpus == (3,)


def test_ten_nodes_sort_numerically(tmp_path: Path) -> None:
    topology = CPUTopology.from_scheme(
        "linux-contiguous", sockets=1, numa_nodes_per_socket=10, cores_per_numa_node=1, threads_per_core=1
    )
    nodes = tuple(NUMANode(id=n, memory_bytes=GiB) for n in range(10))
    info = read_machine(_write(tmp_path, Machine(topology=topology, numa_nodes=nodes)))
    assert [n.id for n in info.nodes] == list(range(10))
    assert info.nodes[9].cpus == (9,)


def test_missing_hugepages_dir_means_none(default_worker: tuple[Path, Machine]) -> None:
    sysfs, _ = default_worker
    hp = sysfs / "devices/system/node/node1/hugepages"
    for sub in hp.iterdir():
        for f in sub.iterdir():
            f.unlink()
        sub.rmdir()
    hp.rmdir()
    assert dict(read_machine(sysfs).nodes[1].hugepages) == {}


def test_other_hugepage_sizes_are_named_binary(default_worker: tuple[Path, Machine]) -> None:
    sysfs, _ = default_worker
    extra = sysfs / "devices/system/node/node0/hugepages/hugepages-64kB"
    extra.mkdir()
    (extra / "nr_hugepages").write_text("16\n")
    assert read_machine(sysfs).nodes[0].hugepages["hugepages-64Ki"] == 16 * 64 * 1024


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(
            lambda s: (s / "devices/system/node/node0/meminfo").unlink(), "meminfo", id="no-meminfo"
        ),
        pytest.param(
            lambda s: (s / "devices/system/node/node0/meminfo").write_text("Node 0 MemFree: 1 kB\n"),
            "no MemTotal",
            id="no-memtotal",
        ),
        pytest.param(
            lambda s: (s / "devices/system/node/node1/distance").write_text("10 x\n"),
            "distance",
            id="bad-distance",
        ),
        pytest.param(
            lambda s: (s / "devices/system/node/node0/hugepages/stray").write_text(""),
            "hugepages-<size>kB",
            id="stray-hugepages-entry",
        ),
        pytest.param(
            lambda s: (s / "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages").write_text(
                "many\n"
            ),
            "nr_hugepages",
            id="bad-page-count",
        ),
    ],
)
def test_malformed_trees_say_what_is_wrong(
    default_worker: tuple[Path, Machine], mutate, message: str
) -> None:
    sysfs, _ = default_worker
    mutate(sysfs)
    with pytest.raises(SysinfoError, match=message):
        read_machine(sysfs)


def test_not_a_sysfs_tree(tmp_path: Path) -> None:
    with pytest.raises(SysinfoError, match="is --sysfs"):
        read_machine(tmp_path)
    (tmp_path / "devices/system/node").mkdir(parents=True)
    with pytest.raises(SysinfoError, match="no NUMA node"):
        read_machine(tmp_path)


def test_hugepage_counter_escaping_its_dir_is_refused(
    default_worker: tuple[Path, Machine], tmp_path: Path
) -> None:
    sysfs, _ = default_worker
    outside = tmp_path / "elsewhere"
    outside.write_text("3\n")
    counter = sysfs / "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
    counter.unlink()
    counter.symlink_to(outside)
    with pytest.raises(SysinfoError, match="outside"):
        read_machine(sysfs)


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        pytest.param("", (), id="empty"),
        pytest.param("0-3,8,10-11\n", (0, 1, 2, 3, 8, 10, 11), id="mixed"),
        pytest.param("7", (7,), id="single"),
    ],
)
def test_cpulist_round_trip(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpulist(text) == cpus
    assert parse_cpulist(format_cpulist(cpus)) == cpus


@pytest.mark.parametrize("text", ["3-1", "a", "1,,2", "-1"])
def test_cpulist_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


def test_meminfo_and_hugepage_names() -> None:
    assert parse_meminfo_total("Node 0 MemTotal:       16777216 kB\nNode 0 MemFree: 1 kB\n") == 16 * GiB
    assert hugepage_resource_name(2 * MiB) == "hugepages-2Mi"
    assert hugepage_resource_name(GiB) == "hugepages-1Gi"


def test_machine_lookup() -> None:
    info = MachineInfo(nodes=())
    assert info.node(0) is None
    assert info.cpu_to_numa() == {}
