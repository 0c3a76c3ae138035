"""The sysfs tree of an emulated node, written in Linux's own formats so real sysfs readers accept it.

Owns the files under ``<node root>/sys`` that describe a ``Machine``:

* ``devices/system/node/{online,possible,has_cpu,has_memory,has_normal_memory}`` and per NUMA
  node ``cpulist``, ``cpumap``, ``distance``, ``meminfo``, ``hugepages/hugepages-<kB>kB/*``
  and the ``cpu<M>`` links (what ghw, and so RTE, walks);
* ``devices/system/cpu/{online,possible,present}`` and per CPU ``online`` (not for cpu0, as
  on x86), ``node<N>`` link and ``topology/*`` (``core_id``, ``physical_package_id``,
  ``die_id``, the sibling masks and lists);
* ``bus/node/devices/node<N>`` and ``bus/cpu/devices/cpu<M>`` links, and the machine-wide
  ``kernel/mm/hugepages`` counters.

``core_id`` is the kubelet's unique core id (the lowest thread of the core), which is a
valid sysfs value and re-reads to the same topology. The format helpers are pure; only
:func:`write_sysfs` touches the disk.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.machine import HUGEPAGE_SIZES, Machine, NUMANode

__all__ = [
    "SYSFS_DIR",
    "default_distances",
    "format_cpulist",
    "format_cpumap",
    "format_meminfo",
    "sysfs_path",
    "write_sysfs",
]

#: The sysfs tree's directory inside a node root (``--sysfs`` for RTE).
SYSFS_DIR = "sys"

LOCAL_DISTANCE = 10
SAME_SOCKET_DISTANCE = 11
REMOTE_DISTANCE = 21


def sysfs_path(root: Path) -> Path:
    """Where :func:`write_sysfs` puts the tree of the node whose root is ``root``."""
    return root / SYSFS_DIR


# -- formats ----------------------------------------------------------------------------------


def format_cpulist(cpus: Iterable[int]) -> str:
    """The kernel's ``%*pbl``: ``0-7,16-23`` (empty for no CPU)."""
    return str(CPUSet(cpus))


def format_cpumap(cpus: Iterable[int], nr_bits: int) -> str:
    """The kernel's ``%*pb``: hex mask in 32-bit groups, most significant first, comma-separated.

    The first group is as wide as the leftover bits need (``ff`` for 8 CPUs,
    ``ff,ffffffff,ffffffff`` for 72), every other group has 8 digits.
    """
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    nr_bits = max(nr_bits, 1)
    groups: list[str] = []
    first = nr_bits % 32 or 32
    start = ((nr_bits + 31) // 32 - 1) * 32
    width = first
    while start >= 0:
        value = (mask >> start) & ((1 << width) - 1)
        groups.append(f"{value:0{(width + 3) // 4}x}")
        start -= 32
        width = 32
    return ",".join(groups)


def default_distances(node_sockets: dict[int, int]) -> dict[int, tuple[int, ...]]:
    """The SLIT rows firmware typically reports: 10 local, 11 same socket, 21 across sockets."""
    ids = sorted(node_sockets)
    size = max(ids) + 1 if ids else 0
    rows: dict[int, tuple[int, ...]] = {}
    for i in ids:
        row = []
        for j in range(size):
            if i == j:
                row.append(LOCAL_DISTANCE)
            elif node_sockets.get(j) == node_sockets[i]:
                row.append(SAME_SOCKET_DISTANCE)
            else:
                row.append(REMOTE_DISTANCE)
        rows[i] = tuple(row)
    return rows


def _kb(size: int) -> int:
    return size // 1024


def format_meminfo(node: NUMANode) -> str:
    """``node<N>/meminfo`` as ``drivers/base/node.c`` prints it.

    Hugepages are carved out of the node's memory, so they count as used; the
    ``HugePages_*`` lines are for the default (2 MiB) page size.
    """
    total = _kb(node.memory_bytes)
    huge = sum(_kb(size) * count for size, count in node.hugepages.items())
    free = max(0, total - huge)
    default_pages = node.hugepages.get(HUGEPAGE_SIZES[0], 0)
    n = node.id
    lines = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemUsed", total - free),
        ("SwapCached", 0),
        ("Active", 0),
        ("Inactive", 0),
        ("Dirty", 0),
        ("Writeback", 0),
        ("FilePages", 0),
        ("Mapped", 0),
        ("AnonPages", 0),
        ("Shmem", 0),
        ("KernelStack", 0),
        ("PageTables", 0),
        ("Slab", 0),
        ("SReclaimable", 0),
        ("SUnreclaim", 0),
        ("AnonHugePages", 0),
    ]
    text = "".join(f"Node {n} {name + ':':<15s} {value:8d} kB\n" for name, value in lines)
    text += f"Node {n} HugePages_Total: {default_pages:5d}\n"
    text += f"Node {n} HugePages_Free:  {default_pages:5d}\n"
    text += f"Node {n} HugePages_Surp:  {0:5d}\n"
    return text


# -- the tree ---------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def _write_hugepage_counters(directory: Path, counts: dict[int, int], *, machine_wide: bool) -> None:
    for size in HUGEPAGE_SIZES:
        pages = counts.get(size, 0)
        sub = directory / f"hugepages-{_kb(size)}kB"
        _write(sub / "nr_hugepages", str(pages))
        _write(sub / "free_hugepages", str(pages))
        _write(sub / "surplus_hugepages", "0")
        if machine_wide:
            _write(sub / "resv_hugepages", "0")
            _write(sub / "nr_overcommit_hugepages", "0")
            _write(sub / "nr_hugepages_mempolicy", str(pages))


def write_sysfs(root: Path, machine: Machine) -> None:
    """Write (or rewrite from scratch) the sysfs tree of ``machine`` under ``root/sys``."""
    sysfs = sysfs_path(root)
    if sysfs.exists():
        shutil.rmtree(sysfs)
    topology = machine.topology
    details = topology.details
    cpus = list(details)
    nr_bits = max(cpus) + 1
    node_dir = sysfs / "devices/system/node"
    cpu_dir = sysfs / "devices/system/cpu"

    numa_ids = [n.id for n in machine.numa_nodes]
    node_list = format_cpulist(numa_ids)
    for name in ("online", "possible", "has_memory", "has_normal_memory"):
        _write(node_dir / name, node_list)
    _write(node_dir / "has_cpu", format_cpulist(details.numa_nodes()))

    node_sockets = {n: min(details.sockets_in_numa_nodes(n), default=0) for n in numa_ids}
    fallback = default_distances(node_sockets)
    for node in machine.numa_nodes:
        here = node_dir / f"node{node.id}"
        node_cpus = details.cpus_in_numa_nodes(node.id)
        _write(here / "cpulist", format_cpulist(node_cpus))
        _write(here / "cpumap", format_cpumap(node_cpus, nr_bits))
        _write(here / "distance", " ".join(str(d) for d in (node.distances or fallback[node.id])))
        _write(here / "meminfo", format_meminfo(node))
        _write_hugepage_counters(here / "hugepages", dict(node.hugepages), machine_wide=False)
        for cpu in node_cpus:
            _link(here / f"cpu{cpu}", f"../../cpu/cpu{cpu}")
        _link(sysfs / "bus/node/devices" / f"node{node.id}", f"../../../devices/system/node/node{node.id}")

    all_cpus = format_cpulist(cpus)
    for name in ("online", "possible", "present"):
        _write(cpu_dir / name, all_cpus)
    for cpu in cpus:
        info = details[cpu]
        here = cpu_dir / f"cpu{cpu}"
        if cpu != 0:
            _write(here / "online", "1")
        _link(here / f"node{info.numa_node}", f"../../node/node{info.numa_node}")
        _link(sysfs / "bus/cpu/devices" / f"cpu{cpu}", f"../../../devices/system/cpu/cpu{cpu}")
        threads = details.cpus_in_cores(info.core)
        package = details.cpus_in_sockets(info.socket)
        topo = here / "topology"
        _write(topo / "core_id", str(info.core))
        _write(topo / "physical_package_id", str(info.socket))
        _write(topo / "die_id", "0")
        for name, members in (
            ("thread_siblings", threads),
            ("core_cpus", threads),
            ("core_siblings", package),
            ("package_cpus", package),
            ("die_cpus", package),
        ):
            _write(topo / name, format_cpumap(members, nr_bits))
            _write(topo / f"{name}_list", format_cpulist(members))

    totals: dict[int, int] = {}
    for node in machine.numa_nodes:
        for size, count in node.hugepages.items():
            totals[size] = totals.get(size, 0) + count
    _write_hugepage_counters(sysfs / "kernel/mm/hugepages", totals, machine_wide=True)
