"""The sysfs writer: Linux formats, and a tree that readers written like ghw / RTE sysinfo parse back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nrop.localcluster.kubelet.cm import CPUTopology
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.machine import Machine, NUMANode
from nrop.localcluster.kubelet.sysfs import (
    default_distances,
    format_cpulist,
    format_cpumap,
    format_meminfo,
    sysfs_path,
    write_sysfs,
)
from nrop.localcluster.profiles import load_profile

GiB = 1024**3
MiB = 1024**2


@pytest.mark.parametrize(
    ("cpus", "expected"),
    [
        pytest.param([], "", id="empty"),
        pytest.param([3], "3", id="single"),
        pytest.param([0, 1], "0-1", id="pair-is-a-range"),
        pytest.param([*range(8), *range(16, 24)], "0-7,16-23", id="numa0-interleaved"),
        pytest.param([0, 2, 4, 5, 6], "0,2,4-6", id="mixed"),
    ],
)
def test_cpulist(cpus: list[int], expected: str) -> None:
    assert format_cpulist(cpus) == expected


@pytest.mark.parametrize(
    ("cpus", "nr_bits", "expected"),
    [
        pytest.param(range(4), 4, "f", id="4-cpus"),
        pytest.param(range(12), 12, "fff", id="12-cpus"),
        pytest.param([*range(8), *range(16, 24)], 32, "00ff00ff", id="32-numa0"),
        pytest.param([*range(8, 16), *range(24, 32)], 32, "ff00ff00", id="32-numa1"),
        pytest.param([0, 32], 64, "00000001,00000001", id="64-two-groups"),
        pytest.param(range(72), 72, "ff,ffffffff,ffffffff", id="72-short-head"),
        pytest.param([70], 72, "40,00000000,00000000", id="72-high-bit"),
    ],
)
def test_cpumap(cpus: range | list[int], nr_bits: int, expected: str) -> None:
    assert format_cpumap(cpus, nr_bits) == expected


def test_meminfo_lines() -> None:
    node = NUMANode(id=1, memory_bytes=16 * GiB, hugepages={2 * MiB: 512, GiB: 2})
    lines = format_meminfo(node).splitlines()
    assert lines[0] == "Node 1 MemTotal:       16777216 kB"
    assert lines[1] == "Node 1 MemFree:        13631488 kB"  # 16Gi - 1Gi (2Mi pages) - 2Gi (1Gi pages)
    assert lines[2] == "Node 1 MemUsed:         3145728 kB"
    assert lines[-3:] == [
        "Node 1 HugePages_Total:   512",
        "Node 1 HugePages_Free:    512",
        "Node 1 HugePages_Surp:      0",
    ]


def test_default_distances() -> None:
    assert default_distances({0: 0, 1: 0, 2: 1, 3: 1}) == {
        0: (10, 11, 21, 21),
        1: (11, 10, 21, 21),
        2: (21, 21, 10, 11),
        3: (21, 21, 11, 10),
    }


# -- readers written like the tools that consume the tree -------------------------------------


def _ghw_topology(sysfs: Path) -> dict[int, dict[str, object]]:
    """ghw's topology walk as RTE uses it: node<N> dirs, cpu<M> subdirs, core_id, distance."""
    out: dict[int, dict[str, object]] = {}
    node_root = sysfs / "devices/system/node"
    for entry in sorted(os.listdir(node_root)):
        if not entry.startswith("node"):
            continue
        node_dir = node_root / entry
        cpus: list[int] = []
        cores: dict[int, list[int]] = {}
        for sub in os.listdir(node_dir):
            if not sub.startswith("cpu") or sub in ("cpulist", "cpumap"):
                continue
            cpu_dir = node_dir / sub
            online = cpu_dir / "online"
            if online.exists() and online.read_text().strip() == "0":
                continue
            cpu = int(sub[3:])
            core = int((cpu_dir / "topology/core_id").read_text().strip())
            cpus.append(cpu)
            cores.setdefault(core, []).append(cpu)
        distances = [int(d) for d in (node_dir / "distance").read_text().split()]
        out[int(entry[4:])] = {"cpus": sorted(cpus), "cores": cores, "distances": distances}
    return out


def _sysinfo_memory(sysfs: Path) -> dict[int, dict[str, int]]:
    """RTE's pkg/sysinfo: MemTotal from meminfo, hugepages-<kB>kB/nr_hugepages; errors on anything else."""
    out: dict[int, dict[str, int]] = {}
    node_root = sysfs / "devices/system/node"
    for entry in os.listdir(node_root):
        if not entry.startswith("node"):
            continue
        node = int(entry[4:])
        line = next(ln for ln in (node_root / entry / "meminfo").read_text().splitlines() if "MemTotal" in ln)
        parts = line.split(":")
        assert len(parts) == 2
        sizes = {"memory": 1024 * int(parts[1].strip("\t\n kB"))}
        hp_dir = node_root / entry / "hugepages"
        for sub in os.listdir(hp_dir):
            assert (hp_dir / sub).is_dir() and sub.startswith("hugepages-") and sub.endswith("kB")
            size_kb = int(sub[len("hugepages-") : -len("kB")])
            pages = int((hp_dir / sub / "nr_hugepages").resolve().read_text())
            sizes[f"hugepages-{size_kb}kB"] = pages * size_kb * 1024
        out[node] = sizes
    return out


@pytest.fixture
def worker_sysfs(tmp_path: Path) -> tuple[Path, Machine]:
    machine = load_profile("default").nodes()[1].machine
    write_sysfs(tmp_path, machine)
    return sysfs_path(tmp_path), machine


def test_tree_reads_back_like_ghw(worker_sysfs: tuple[Path, Machine]) -> None:
    sysfs, _ = worker_sysfs
    topo = _ghw_topology(sysfs)
    assert sorted(topo) == [0, 1]
    assert topo[0]["cpus"] == [*range(11), *range(22, 33)]
    assert topo[1]["cpus"] == [*range(11, 22), *range(33, 44)]
    assert topo[0]["distances"] == [10, 21]
    assert topo[1]["distances"] == [21, 10]
    cores = topo[0]["cores"]
    assert isinstance(cores, dict)
    assert len(cores) == 11 and all(len(threads) == 2 for threads in cores.values())
    assert sorted(cores[0]) == [0, 22]


def test_tree_reads_back_like_rte_sysinfo(worker_sysfs: tuple[Path, Machine]) -> None:
    sysfs, _ = worker_sysfs
    assert _sysinfo_memory(sysfs) == {
        n: {"memory": 40 * GiB, "hugepages-2048kB": GiB, "hugepages-1048576kB": 2 * GiB} for n in (0, 1)
    }


def test_tree_reads_back_like_numainfo_exporter(worker_sysfs: tuple[Path, Machine]) -> None:
    sysfs, _ = worker_sysfs
    node = sysfs / "devices/system/node"
    assert (node / "online").read_text() == "0-1\n"
    assert CPUSet.parse((node / "node1/cpulist").read_text().strip()) == CPUSet(
        [*range(11, 22), *range(33, 44)]
    )
    assert (node / "node1/cpumap").read_text() == "ffe,003ff800\n"


def test_cpu_topology_files(worker_sysfs: tuple[Path, Machine]) -> None:
    sysfs, _ = worker_sysfs
    cpu = sysfs / "devices/system/cpu"
    assert (cpu / "online").read_text() == "0-43\n"
    assert not (cpu / "cpu0/online").exists()
    assert (cpu / "cpu23/online").read_text() == "1\n"
    topo = cpu / "cpu23/topology"
    read = {f.name: f.read_text().strip() for f in topo.iterdir()}
    assert read["core_id"] == "1"
    assert read["physical_package_id"] == "0"
    assert read["thread_siblings_list"] == read["core_cpus_list"] == "1,23"
    assert read["thread_siblings"] == "000,00800002"
    assert read["core_siblings_list"] == read["package_cpus_list"] == "0-10,22-32"
    assert (sysfs / "devices/system/node/node1/cpu19").resolve() == (cpu / "cpu19").resolve()
    assert (cpu / "cpu19/node1").resolve() == (sysfs / "devices/system/node/node1").resolve()
    assert (sysfs / "bus/node/devices/node0/meminfo").is_file()


def test_hugepage_counters(worker_sysfs: tuple[Path, Machine]) -> None:
    sysfs, _ = worker_sysfs
    hp = sysfs / "devices/system/node/node0/hugepages"
    assert sorted(os.listdir(hp)) == ["hugepages-1048576kB", "hugepages-2048kB"]
    assert {f.name: f.read_text() for f in (hp / "hugepages-2048kB").iterdir()} == {
        "nr_hugepages": "512\n",
        "free_hugepages": "512\n",
        "surplus_hugepages": "0\n",
    }
    assert (sysfs / "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages").read_text() == "4\n"


def test_round_trip_rebuilds_the_topology(worker_sysfs: tuple[Path, Machine]) -> None:
    """cadvisor's view (core_id, package, node links) rebuilds the same CPUTopology."""
    sysfs, machine = worker_sysfs
    cpu_root = sysfs / "devices/system/cpu"
    table: dict[int, tuple[int, int, int]] = {}
    for cpu in CPUSet.parse((cpu_root / "online").read_text().strip()):
        topo = cpu_root / f"cpu{cpu}/topology"
        node = next(int(p.name[4:]) for p in (cpu_root / f"cpu{cpu}").iterdir() if p.name.startswith("node"))
        table[cpu] = (
            int((topo / "core_id").read_text()),
            int((topo / "physical_package_id").read_text()),
            node,
        )
    assert CPUTopology.from_table(table) == machine.topology


def test_rewrite_replaces_the_old_tree(tmp_path: Path) -> None:
    profile = load_profile("four-numa")
    write_sysfs(tmp_path, profile.nodes()[1].machine)
    write_sysfs(tmp_path, profile.nodes()[0].machine)
    assert (sysfs_path(tmp_path) / "devices/system/node/online").read_text() == "0\n"
    assert not (sysfs_path(tmp_path) / "devices/system/node/node3").exists()


def test_four_numa_distances(tmp_path: Path) -> None:
    write_sysfs(tmp_path, load_profile("four-numa").nodes()[1].machine)
    topo = _ghw_topology(sysfs_path(tmp_path))
    assert [topo[n]["distances"] for n in range(4)] == [
        [10, 11, 21, 21],
        [11, 10, 21, 21],
        [21, 21, 10, 11],
        [21, 21, 11, 10],
    ]
    assert topo[2]["cpus"] == [*range(16, 24), *range(48, 56)]
