"""The memory manager's checkpoint, ``/var/lib/kubelet/memory_manager_state``.

The 1.3x layout (no ``podEntries``): the machine state per NUMA node (memory tables, cells
grouped by cross-NUMA allocations) and the assignments per pod and container as blocks. Decoding
applies ``encoding/json``'s typing to each field and names the field it refuses; the checksum
over go-spew's rendering is verified, ``checksum: 0`` included (upstream's v2 checkpoint).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from nrop.api.checkpoints.encoding import (
    CheckpointError,
    CorruptCheckpointError,
    _checksum_field,
    _field,
    _is_int,
    _parse_json_object,
    fnv32a,
    go_json,
)

MEMORY_MANAGER_STATE_FILE: Final = "memory_manager_state"
#: The ``policyName`` values the manager writes (``--memory-manager-policy``).
MEMORY_MANAGER_POLICIES: Final = ("None", "Static")

_UINT64_MAX: Final = 0xFFFFFFFFFFFFFFFF
_INT64_MAX: Final = 2**63 - 1
_GO_INT_RE: Final = re.compile(r"[+-]?[0-9]+")


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
