"""The machine as the exporter sees it: NUMA nodes, their CPUs, distances, memory and hugepages.

This module owns reading a sysfs tree (``--sysfs``, ``/sys`` on a real node) into a
:class:`MachineInfo`, the way upstream RTE does through ghw and its ``pkg/sysinfo``:

* NUMA nodes are the ``node<N>`` entries of ``devices/system/node``; the logical CPUs of
  a node are its ``cpu<M>`` entries (``cpulist``/``cpumap`` are not CPUs), skipping a CPU
  whose ``online`` file reads ``0``; distances come from ``node<N>/distance``;
* memory is the first ``MemTotal`` line of ``node<N>/meminfo`` (kB → bytes); hugepages
  are ``node<N>/hugepages/hugepages-<kB>kB/nr_hugepages`` × page size, named as the
  kubelet names them (``hugepages-2Mi``, ``hugepages-1Gi``).

Unlike upstream, whose memory reader ignores ``--sysfs`` and always reads the host's
``/sys``, every read here goes through the given root, so a node root of the embedded
cluster and a container's ``/host-sys`` mount both work. Nodes are returned in numeric
order (ghw sorts lexicographically, which only matters past ``node9``).

Reserved CPUs are the kubelet's (``reservedSystemCPUs``), not the kernel's: the caller
passes them in, parsed from the kubelet configuration, and they are kept here so that
every consumer sees one description of the machine.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

from nrop.api.resources import hugepage_resource_name

__all__ = [
    "DEFAULT_SYSFS",
    "MAX_CPU_ID",
    "MachineInfo",
    "NUMANodeInfo",
    "SysinfoError",
    "format_cpulist",
    "hugepage_resource_name",
    "parse_cpulist",
    "parse_meminfo_total",
    "read_machine",
]

log = logging.getLogger(__name__)

DEFAULT_SYSFS: Final = "/sys"
_NODE_DIR: Final = "devices/system/node"
_CPU_DIR: Final = "devices/system/cpu"
_HUGEPAGES_DIR_RE: Final = re.compile(r"hugepages-([0-9]+)kB")
_INT_RE: Final = re.compile(r"[0-9]+")
#: Linux's largest ``CONFIG_NR_CPUS`` is 8192; a bigger id is garbage, and expanding a range to it
#: could exhaust memory (or, past 4300 digits, overflow Python's ``int()`` conversion).
MAX_CPU_ID: Final = 65535


class SysinfoError(Exception):
    """The sysfs tree cannot be read as a NUMA machine (missing or malformed files)."""


# ----------------------------------------------------------------------------- formats


def parse_cpulist(text: str) -> tuple[int, ...]:
    """The kernel's list format (``0-3,8,10-11``) as sorted CPU ids; ``""`` is empty.

    An id above :data:`MAX_CPU_ID` is a ``ValueError``: the range is never expanded.
    """
    text = text.strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for element in text.split(","):
        bounds = element.strip().split("-", 1)
        if not all(_INT_RE.fullmatch(b) for b in bounds):
            raise ValueError(f"invalid CPU list element {element!r} in {text!r}")
        for bound in bounds:
            if len(bound.lstrip("0")) > len(str(MAX_CPU_ID)) or int(bound) > MAX_CPU_ID:
                shown = bound if len(bound) <= 24 else f"{bound[:20]}... ({len(bound)} digits)"
                raise ValueError(f"CPU id {shown} is larger than {MAX_CPU_ID}")
        start, end = int(bounds[0]), int(bounds[-1])
        if start > end:
            raise ValueError(f"invalid CPU range {element!r} ({start} > {end})")
        cpus.update(range(start, end + 1))
    return tuple(sorted(cpus))


def format_cpulist(cpus: Iterable[int]) -> str:
    """The kernel's list format of ``cpus`` (ranges collapsed, ascending)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        start = end = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else f"{start}-{end}")
        index += 1
    return ",".join(parts)


def parse_meminfo_total(text: str) -> int:
    """Bytes of the first ``MemTotal`` line of a ``node<N>/meminfo`` (upstream's parsing)."""
    for line in text.splitlines():
        if "MemTotal" not in line:
            continue
        parts = line.split(":")
        if len(parts) != 2:
            raise ValueError(f"unexpected MemTotal line {line!r}")
        value = parts[1].strip("\t\n kB")
        if not _INT_RE.fullmatch(value):
            raise ValueError(f"unexpected MemTotal value in {line!r}")
        return int(value) * 1024
    raise ValueError("no MemTotal line")


# ----------------------------------------------------------------------------- model


@dataclass(frozen=True)
class NUMANodeInfo:
    id: int
    #: Online logical CPUs of this node, ascending.
    cpus: tuple[int, ...]
    #: The SLIT row: distance to NUMA node ``j`` at index ``j``.
    distances: tuple[int, ...]
    memory_bytes: int
    #: Resource name (``hugepages-2Mi``) → bytes reserved as pages of that size.
    hugepages: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class MachineInfo:
    #: NUMA nodes in ascending id order.
    nodes: tuple[NUMANodeInfo, ...]
    #: ``devices/system/cpu/online`` (empty if the file is absent).
    online_cpus: tuple[int, ...] = ()
    #: The kubelet's ``reservedSystemCPUs`` (not read from sysfs; see the module docstring).
    reserved_cpus: tuple[int, ...] = ()

    def node(self, numa_id: int) -> NUMANodeInfo | None:
        for node in self.nodes:
            if node.id == numa_id:
                return node
        return None

    def cpu_to_numa(self) -> dict[int, int]:
        """Logical CPU id → NUMA node id (upstream's ``MakeCoreIDToNodeIDMap``)."""
        return {cpu: node.id for node in self.nodes for cpu in node.cpus}

    def with_reserved_cpus(self, cpus: Iterable[int]) -> MachineInfo:
        return MachineInfo(self.nodes, self.online_cpus, tuple(sorted(set(cpus))))


# ----------------------------------------------------------------------------- reading


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise SysinfoError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:  # sysfs attributes are ASCII: this is not one
        raise SysinfoError(f"cannot read {path}: not text ({exc.reason} at byte {exc.start})") from None


def _numbered_entries(directory: Path, prefix: str) -> list[tuple[int, str]]:
    """``(n, name)`` for entries named ``<prefix><n>``, ascending by ``n``."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise SysinfoError(f"cannot list {directory}: {exc.strerror or exc}") from exc
    found = []
    for name in names:
        if name.startswith(prefix) and _INT_RE.fullmatch(name[len(prefix) :]):
            found.append((int(name[len(prefix) :]), name))
    return sorted(found)


def _node_cpus(node_dir: Path) -> tuple[int, ...]:
    cpus = []
    for cpu, name in _numbered_entries(node_dir, "cpu"):
        online = node_dir / name / "online"
        if online.exists() and _read(online).strip() == "0":
            continue
        cpus.append(cpu)
    return tuple(cpus)


def _distances(node_dir: Path) -> tuple[int, ...]:
    text = _read(node_dir / "distance")
    try:
        return tuple(int(value) for value in text.split())
    except ValueError:
        raise SysinfoError(f"malformed {node_dir / 'distance'}: {text.strip()!r}") from None


def _hugepages(node_dir: Path) -> dict[str, int]:
    directory = node_dir / "hugepages"
    if not directory.is_dir():
        return {}  # a kernel without hugetlbfs support: no pages of any size
    root = directory.resolve()
    sizes: dict[str, int] = {}
    for name in sorted(os.listdir(directory)):
        match = _HUGEPAGES_DIR_RE.fullmatch(name)
        if match is None or not (directory / name).is_dir():
            raise SysinfoError(
                f"unexpected entry {directory / name}: expected hugepages-<size>kB directories"
            )
        try:
            counter = (directory / name / "nr_hugepages").resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, before Python 3.13
            raise SysinfoError(f"cannot resolve {directory / name / 'nr_hugepages'}: {exc}") from None
        if not counter.is_relative_to(root):
            raise SysinfoError(f"{directory / name / 'nr_hugepages'} resolves outside {directory}")
        text = _read(counter).strip()
        # A page count past 2**64 is garbage (and past 4300 digits ``int()`` refuses it).
        if not _INT_RE.fullmatch(text) or len(text) > 20:
            raise SysinfoError(f"malformed {counter}: {text[:40]!r}")
        size_kb = int(match.group(1))
        resource = hugepage_resource_name(size_kb * 1024)
        sizes[resource] = sizes.get(resource, 0) + int(text) * size_kb * 1024
    return sizes


def _read_node(node_dir: Path, numa_id: int) -> NUMANodeInfo:
    meminfo = node_dir / "meminfo"
    try:
        memory = parse_meminfo_total(_read(meminfo))
    except ValueError as exc:
        raise SysinfoError(f"malformed {meminfo}: {exc}") from None
    return NUMANodeInfo(
        id=numa_id,
        cpus=_node_cpus(node_dir),
        distances=_distances(node_dir),
        memory_bytes=memory,
        hugepages=MappingProxyType(_hugepages(node_dir)),
    )


def read_machine(sysfs_root: str | Path, reserved_cpus: Iterable[int] = ()) -> MachineInfo:
    """Read the NUMA layout under ``sysfs_root``; :class:`SysinfoError` says what is wrong."""
    root = Path(sysfs_root)
    node_root = root / _NODE_DIR
    if not node_root.is_dir():
        raise SysinfoError(f"{node_root} is not a directory: is --sysfs={root} a sysfs tree?")
    nodes = tuple(
        _read_node(node_root / name, numa_id) for numa_id, name in _numbered_entries(node_root, "node")
    )
    if not nodes:
        raise SysinfoError(f"no NUMA node directories (node<N>) under {node_root}")
    online: tuple[int, ...] = ()
    online_file = root / _CPU_DIR / "online"
    if online_file.exists():
        try:
            online = parse_cpulist(_read(online_file))
        except ValueError as exc:
            raise SysinfoError(f"malformed {online_file}: {exc}") from None
    machine = MachineInfo(nodes=nodes, online_cpus=online, reserved_cpus=tuple(sorted(set(reserved_cpus))))
    log.debug(
        "machine under %s: %s",
        root,
        "; ".join(f"node{n.id}: cpus={format_cpulist(n.cpus)} memory={n.memory_bytes}" for n in nodes),
    )
    return machine
