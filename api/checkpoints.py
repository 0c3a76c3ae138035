"""The kubelet's resource-manager checkpoint files, as bytes on disk.

Owns the wire format of ``/var/lib/kubelet/cpu_manager_state`` (v2),
``/var/lib/kubelet/memory_manager_state`` (the 1.3x layout, no ``podEntries``) and the
device manager's ``device-plugins/kubelet_internal_checkpoint`` (v2, ``DeviceIDs`` per
NUMA node, base64 ``AllocResp``), which two sides of the project share: the emulated
kubelet writes and restores them, and the numainfo exporter (``nrop.rte``, which must not
import the embedded cluster) reads them on a real node. So the format lives here, byte
compatible with upstream:

* the checksum, FNV-32a over go-spew's ``%#v`` rendering of the checkpoint struct with
  ``Checksum`` zeroed (map keys sorted, ``[]int`` as ``[0 1]``, nil as ``<nil>``);
* Go's ``encoding/json`` output (compact, ``<``, ``>``, ``&``, U+2028/9 escaped);
* decoding with upstream's checks: the CPU manager accepts ``checksum: 0`` unverified
  ("empty checksum for compatibility"), the memory manager's v2 checkpoint does not.

Errors are :class:`CheckpointError` (the content is not a checkpoint of that kind) and
its subclass :class:`CorruptCheckpointError` (the checksum does not match, upstream's
``checkpoint is corrupted``). Policy checks and the managers' own consistency checks
belong to their users. No I/O: bytes in, bytes out.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CPU_MANAGER_POLICIES",
    "CPU_MANAGER_STATE_FILE",
    "DEVICE_MANAGER_CHECKPOINT_FILE",
    "MEMORY_MANAGER_POLICIES",
    "MEMORY_MANAGER_STATE_FILE",
    "Assignments",
    "Block",
    "CPUManagerCheckpoint",
    "CheckpointError",
    "CorruptCheckpointError",
    "DeviceCheckpoint",
    "MachineState",
    "MemoryManagerCheckpoint",
    "MemoryTable",
    "NUMANodeState",
    "PodDevicesEntry",
    "cpu_manager_checksum",
    "decode_cpu_manager_checkpoint",
    "encode_cpu_manager_checkpoint",
    "fnv32a",
    "go_json",
]

CPU_MANAGER_STATE_FILE: Final = "cpu_manager_state"
MEMORY_MANAGER_STATE_FILE: Final = "memory_manager_state"
#: The ``policyName`` values each manager writes (``--cpu-manager-policy``, ``--memory-manager-policy``).
CPU_MANAGER_POLICIES: Final = ("none", "static")
MEMORY_MANAGER_POLICIES: Final = ("None", "Static")

_UINT32_MAX: Final = 0xFFFFFFFF
_UINT64_MAX: Final = 0xFFFFFFFFFFFFFFFF
_INT64_MAX: Final = 2**63 - 1
_GO_INT_RE: Final = re.compile(r"[+-]?[0-9]+")


class CheckpointError(ValueError):
    """The bytes are not a checkpoint of the expected kind; the text says which field is wrong."""


class CorruptCheckpointError(CheckpointError):
    """The checkpoint's checksum does not match its content (``checkpoint is corrupted``)."""


# --- shared encodings ------------------------------------------------------------------------


def fnv32a(data: bytes) -> int:
    """Go's ``hash/fnv`` 32-bit FNV-1a."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & _UINT32_MAX
    return value


def go_json(value: Any) -> str:
    """``encoding/json.Marshal``: compact, keys in the given order, non-ASCII kept, HTML characters escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _parse_json_object(data: bytes | str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise CheckpointError(f"could not parse checkpoint: {exc}") from None
    if not isinstance(obj, dict):
        raise CheckpointError("could not parse checkpoint: not a JSON object")
    return obj


def _field(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    # encoding/json matches struct fields by exact name first, then case-insensitively.
    if name in obj:
        return True, obj[name]
    for key, value in obj.items():
        if key.lower() == name.lower():
            return True, value
    return False, None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checksum_field(value: Any) -> int:
    if value is None:
        return 0
    if not _is_int(value) or not 0 <= value <= _UINT32_MAX:
        raise CheckpointError("could not parse checkpoint: checksum must be a uint32")
    return value


# --- CPU manager (cpu_manager_state, v2) ------------------------------------------------------


@dataclass(frozen=True)
class CPUManagerCheckpoint:
    """``state.CPUManagerCheckpoint`` with its cpusets as the strings written in the file."""

    policy_name: str
    default_cpuset: str
    #: ``entries[pod uid][container name]`` = cpuset string.
    entries: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    checksum: int = 0


def cpu_manager_checksum(
    policy_name: str, default_cpuset: str, entries: Mapping[str, Mapping[str, str]] | None
) -> int:
    """FNV-32a over ``dump.ForHash(&CPUManagerCheckpoint{..., Checksum: 0})`` (go-spew ``%#v``)."""
    if entries is None:
        rendered_entries = "<nil>"
    else:
        pods = " ".join(
            f"{pod}:map[{' '.join(f'{c}:{s}' for c, s in sorted(entries[pod].items()))}]"
            for pod in sorted(entries)
        )
        rendered_entries = f"map[{pods}]"
    dump = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){policy_name} DefaultCPUSet:(string){default_cpuset} "
        f"Entries:(map[string]map[string]string){rendered_entries} Checksum:(checksum.Checksum)0}}"
    )
    return fnv32a(dump.encode())


def encode_cpu_manager_checkpoint(
    policy_name: str, default_cpuset: str, entries: Mapping[str, Mapping[str, str]]
) -> bytes:
    """The file's bytes exactly as the kubelet's ``json.Marshal`` writes them (``entries`` omitted when empty)."""
    kept = {pod: dict(sorted(cs.items())) for pod, cs in sorted(entries.items()) if cs}
    checksum = cpu_manager_checksum(policy_name, default_cpuset, kept)
    body = f'{{"policyName":{go_json(policy_name)},"defaultCpuSet":{go_json(default_cpuset)}'
    if kept:
        body += f',"entries":{go_json(kept)}'
    return f'{body},"checksum":{checksum}}}'.encode()


def decode_cpu_manager_checkpoint(data: bytes | str) -> CPUManagerCheckpoint:
    """Parse a v2 checkpoint and verify its checksum (``checksum: 0`` is accepted unverified, like upstream).

    The policy is not checked and the cpusets are not parsed: that is the reader's business.
    """
    obj = _parse_json_object(data)
    _, name = _field(obj, "policyName")
    _, default = _field(obj, "defaultCpuSet")
    has_entries, entries = _field(obj, "entries")
    _, checksum = _field(obj, "checksum")
    name = "" if name is None else name
    default = "" if default is None else default
    if not isinstance(name, str) or not isinstance(default, str):
        raise CheckpointError("could not parse checkpoint: policyName and defaultCpuSet must be strings")
    checksum = _checksum_field(checksum)
    if not has_entries:
        entries = {}
    if entries is not None and not (
        isinstance(entries, dict)
        and all(
            isinstance(cs, dict) and all(isinstance(s, str) for s in cs.values()) for cs in entries.values()
        )
    ):
        raise CheckpointError(
            "could not parse checkpoint: entries must map pod uid to container name to cpuset"
        )
    if checksum != 0 and checksum != cpu_manager_checksum(name, default, entries):
        raise CorruptCheckpointError("checkpoint is corrupted")
    return CPUManagerCheckpoint(name, default, entries or {}, checksum)


# --- memory manager (memory_manager_state) ---------------------------------------------------


@dataclass
class MemoryTable:
    total: int
    system_reserved: int
    allocatable: int
    reserved: int = 0
    free: int = 0


@dataclass
class NUMANodeState:
    number_of_assignments: int
    memory_map: dict[str, MemoryTable]
    #: This node plus the nodes it is grouped with by a cross-NUMA allocation.
    cells: list[int] | None


MachineState = dict[int, NUMANodeState]


@dataclass(frozen=True)
class Block:
    numa_affinity: tuple[int, ...]
    type: str
    size: int


Assignments = dict[str, dict[str, list[Block]]]


def _spew_ints(values: Sequence[int] | None) -> str:
    return "<nil>" if values is None else "[" + " ".join(str(v) for v in values) + "]"


class _Fields:
    """Typed access to one JSON object of the memory checkpoint; errors name the field's path."""

    def __init__(self, obj: Any, path: str) -> None:
        if not isinstance(obj, dict):
            raise CheckpointError(f"could not parse checkpoint: {path} must be an object")
        self.obj, self.path = obj, path

    def _get(self, name: str, expected: str, accept: Callable[[Any], bool]) -> Any:
        _, value = _field(self.obj, name)
        if value is not None and not accept(value):
            raise CheckpointError(f"could not parse checkpoint: {self.path}.{name} must be {expected}")
        return value

    def string(self, name: str) -> str:
        return self._get(name, "a string", lambda v: isinstance(v, str)) or ""

    def int64(self, name: str) -> int:
        # Go decodes a JSON number into an integer field only if it is integral and in range.
        return self._get(name, "an int64", lambda v: _is_int(v) and -_INT64_MAX - 1 <= v <= _INT64_MAX) or 0

    def uint64(self, name: str) -> int:
        return self._get(name, "a uint64", lambda v: _is_int(v) and 0 <= v <= _UINT64_MAX) or 0

    def ints(self, name: str) -> list[int] | None:
        def accept(value: Any) -> bool:
            return isinstance(value, list) and all(
                _is_int(i) and -_INT64_MAX - 1 <= i <= _INT64_MAX for i in value
            )

        return self._get(name, "a list of integers", accept)

    def mapping(self, name: str) -> dict[str, Any]:
        return self._get(name, "an object", lambda v: isinstance(v, dict)) or {}


def _numa_id(key: str) -> int:
    if not _GO_INT_RE.fullmatch(key) or not -_INT64_MAX - 1 <= int(key) <= _INT64_MAX:
        raise CheckpointError(f"could not parse checkpoint: machineState key {key!r} is not a NUMA node id")
    return int(key)


@dataclass
class MemoryManagerCheckpoint:
    """``/var/lib/kubelet/memory_manager_state`` (the 1.3x format: no ``podEntries``)."""

    policy_name: str
    machine_state: MachineState = field(default_factory=dict)
    entries: Assignments = field(default_factory=dict)
    checksum: int = 0

    def render_for_hash(self) -> str:
        """The go-spew ``%#v`` text upstream hashes (``Checksum`` zeroed, keys sorted)."""
        nodes = []
        for node in sorted(self.machine_state):
            s = self.machine_state[node]
            tables = " ".join(
                f"{name}:<*>{{TotalMemSize:(uint64){t.total} SystemReserved:(uint64){t.system_reserved} "
                f"Allocatable:(uint64){t.allocatable} Reserved:(uint64){t.reserved} Free:(uint64){t.free}}}"
                for name, t in sorted(s.memory_map.items())
            )
            nodes.append(
                f"{node}:<*>{{NumberOfAssignments:(int){s.number_of_assignments} "
                f"MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[{tables}] Cells:([]int){_spew_ints(s.cells)}}}"
            )
        pods = []
        for uid in sorted(self.entries):
            ctrs = []
            for ctr in sorted(self.entries[uid]):
                blocks = " ".join(
                    f"{{NUMAAffinity:([]int){_spew_ints(b.numa_affinity)} Type:(v1.ResourceName){b.type} Size:(uint64){b.size}}}"
                    for b in self.entries[uid][ctr]
                )
                ctrs.append(f"{ctr}:[{blocks}]")
            pods.append(f"{uid}:map[{' '.join(ctrs)}]")
        return (
            f"(*state.MemoryManagerCheckpoint){{PolicyName:(string){self.policy_name} "
            f"MachineState:(state.NUMANodeMap)map[{' '.join(nodes)}] "
            f"Entries:(state.ContainerMemoryAssignments)map[{' '.join(pods)}] Checksum:(checksum.Checksum)0}}"
        )

    def compute_checksum(self) -> int:
        return fnv32a(self.render_for_hash().encode())

    def to_json(self) -> str:
        """``MarshalCheckpoint``: sets ``checksum`` and returns the file content."""
        self.checksum = self.compute_checksum()
        body: dict[str, Any] = {
            "policyName": self.policy_name,
            "machineState": {
                str(node): {
                    "numberOfAssignments": s.number_of_assignments,
                    "memoryMap": {
                        name: {
                            "total": t.total,
                            "systemReserved": t.system_reserved,
                            "allocatable": t.allocatable,
                            "reserved": t.reserved,
                            "free": t.free,
                        }
                        for name, t in sorted(s.memory_map.items())
                    },
                    "cells": s.cells,
                }
                # Go sorts integer map keys by their string form in JSON.
                for node, s in sorted(self.machine_state.items(), key=lambda item: str(item[0]))
            },
        }
        if self.entries:
            body["entries"] = {
                uid: {
                    ctr: [
                        {"numaAffinity": list(b.numa_affinity), "type": b.type, "size": b.size}
                        for b in self.entries[uid][ctr]
                    ]
                    for ctr in sorted(self.entries[uid])
                }
                for uid in sorted(self.entries)
            }
        body["checksum"] = self.checksum
        return go_json(body)

    @classmethod
    def from_json(cls, data: str | bytes) -> MemoryManagerCheckpoint:
        """Parse and verify: :class:`CheckpointError` names a malformed field, :class:`CorruptCheckpointError`
        a checksum mismatch (``checksum: 0`` included, as upstream's v2 checkpoint)."""
        raw = _Fields(_parse_json_object(data), "checkpoint")
        machine_state: MachineState = {}
        for key, value in raw.mapping("machineState").items():
            node = _Fields(value, f"machineState[{key}]")
            memory_map = {}
            for name, table in node.mapping("memoryMap").items():
                t = _Fields(table, f"machineState[{key}].memoryMap[{name}]")
                memory_map[name] = MemoryTable(
                    *(t.uint64(n) for n in ("total", "systemReserved", "allocatable", "reserved", "free"))
                )
            machine_state[_numa_id(key)] = NUMANodeState(
                node.int64("numberOfAssignments"), memory_map, node.ints("cells")
            )
        entries: Assignments = {}
        for uid, containers in raw.mapping("entries").items():
            per_container = _Fields(containers, f"entries[{uid}]")
            entries[uid] = {}
            for ctr in per_container.obj:
                blocks = per_container.obj[ctr]
                if blocks is None:
                    blocks = []
                if not isinstance(blocks, list):
                    raise CheckpointError(f"could not parse checkpoint: entries[{uid}][{ctr}] must be a list")
                parsed = []
                for index, block in enumerate(blocks):
                    b = _Fields(block, f"entries[{uid}][{ctr}][{index}]")
                    parsed.append(
                        Block(
                            tuple(b.ints("numaAffinity") or ()),
                            b.string("type"),
                            b.uint64("size"),
                        )
                    )
                entries[uid][ctr] = parsed
        checkpoint = cls(
            raw.string("policyName"), machine_state, entries, _checksum_field(_field(raw.obj, "checksum")[1])
        )
        if checkpoint.checksum != checkpoint.compute_checksum():
            raise CorruptCheckpointError("checkpoint is corrupted")
        return checkpoint


# --- device manager (device-plugins/kubelet_internal_checkpoint, v2) ---------------------------

DEVICE_MANAGER_CHECKPOINT_FILE: Final = "kubelet_internal_checkpoint"


def _spew_list(values: Sequence[Any] | None) -> str:
    return "<nil>" if values is None else "[" + " ".join(str(v) for v in values) + "]"


@dataclass
class PodDevicesEntry:
    pod_uid: str
    container_name: str
    resource_name: str
    device_ids: dict[int, list[str] | None]
    alloc_resp: bytes | None = None


@dataclass
class DeviceCheckpoint:
    """``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint`` (v2, ``DeviceIDs`` per NUMA)."""

    entries: list[PodDevicesEntry] | None = None
    registered: dict[str, list[str] | None] | None = None
    checksum: int = 0
    #: Written by master kubelets only (outside the checksummed data).
    boot_id: str = ""

    def render_for_hash(self) -> str:
        """The go-spew ``%#v`` text of ``Data`` that upstream hashes."""
        if self.entries is None:
            entries = "<nil>"
        else:
            entries = (
                "["
                + " ".join(
                    f"{{PodUID:(string){e.pod_uid} ContainerName:(string){e.container_name} "
                    f"ResourceName:(string){e.resource_name} DeviceIDs:(checkpoint.DevicesPerNUMA)map["
                    + " ".join(f"{node}:{_spew_list(e.device_ids[node])}" for node in sorted(e.device_ids))
                    + f"] AllocResp:([]uint8){_spew_list(None if e.alloc_resp is None else list(e.alloc_resp))}}}"
                    for e in self.entries
                )
                + "]"
            )
        if self.registered is None:
            registered = "<nil>"
        else:
            registered = (
                "map["
                + " ".join(f"{res}:{_spew_list(self.registered[res])}" for res in sorted(self.registered))
                + "]"
            )
        return (
            f"(checkpoint.checkpointData){{PodDeviceEntries:([]checkpoint.PodDevicesEntry){entries} "
            f"RegisteredDevices:(map[string][]string){registered}}}"
        )

    def compute_checksum(self) -> int:
        return fnv32a(self.render_for_hash().encode())

    def to_json(self) -> str:
        """``MarshalCheckpoint``: sets ``checksum`` and returns the file content."""
        self.checksum = self.compute_checksum()
        entries = None
        if self.entries is not None:
            entries = [
                {
                    "PodUID": e.pod_uid,
                    "ContainerName": e.container_name,
                    "ResourceName": e.resource_name,
                    # Go sorts integer map keys by their string form in JSON ("-1" < "0").
                    "DeviceIDs": {str(n): e.device_ids[n] for n in sorted(e.device_ids, key=str)},
                    "AllocResp": None if e.alloc_resp is None else base64.b64encode(e.alloc_resp).decode(),
                }
                for e in self.entries
            ]
        registered = (
            None if self.registered is None else {r: self.registered[r] for r in sorted(self.registered)}
        )
        body: dict[str, Any] = {
            "Data": {"PodDeviceEntries": entries, "RegisteredDevices": registered},
            "Checksum": self.checksum,
        }
        if self.boot_id:
            body["BootID"] = self.boot_id
        return go_json(body)

    @classmethod
    def from_json(cls, data: str | bytes) -> DeviceCheckpoint:
        """Parse and verify; raises :class:`CorruptCheckpointError` on a checksum mismatch."""
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise CheckpointError(f"could not parse checkpoint: {exc}") from None
        body = raw.get("Data") or {}
        entries = None
        if body.get("PodDeviceEntries") is not None:
            entries = [
                PodDevicesEntry(
                    e.get("PodUID", ""),
                    e.get("ContainerName", ""),
                    e.get("ResourceName", ""),
                    {int(n): ids for n, ids in (e.get("DeviceIDs") or {}).items()},
                    None if e.get("AllocResp") is None else base64.b64decode(e["AllocResp"]),
                )
                for e in body["PodDeviceEntries"]
            ]
        registered = body.get("RegisteredDevices")
        checkpoint = cls(entries, registered, int(raw.get("Checksum", 0)), raw.get("BootID", ""))
        if checkpoint.checksum != checkpoint.compute_checksum():
            raise CorruptCheckpointError("checkpoint is corrupted")
        return checkpoint
