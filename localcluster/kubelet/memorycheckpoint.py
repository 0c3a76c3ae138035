"""The memory manager's state and its ``memory_manager_state`` checkpoint.

Owns what upstream ``pkg/kubelet/cm/memorymanager/state`` defines: the machine
state per NUMA node (``MemoryTable`` per resource, ``NUMANodeState`` with its
``cells`` group), the per-container ``Block`` assignments, and the checkpoint
file that persists them — the 1.3x JSON layout as Go's ``encoding/json`` writes
it, with the FNV-32a checksum over go-spew's ``%#v`` rendering, verified on load
(``CorruptCheckpointError``).  The ``Static`` policy that decides the state is in
``memorymanager``.  No I/O: text in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHECKPOINT_FILE",
    "Assignments",
    "Block",
    "CorruptCheckpointError",
    "MachineState",
    "MemoryManagerCheckpoint",
    "MemoryTable",
    "NUMANodeState",
]

CHECKPOINT_FILE = "memory_manager_state"


class CorruptCheckpointError(ValueError):
    """The checkpoint's checksum does not match its content (``checkpoint is corrupted``)."""


# --- state ---------------------------------------------------------------------------------


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


# --- checkpoint ----------------------------------------------------------------------------


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _spew_ints(values: Sequence[int] | None) -> str:
    return "<nil>" if values is None else "[" + " ".join(str(v) for v in values) + "]"


def _go_json(value: Any) -> str:
    # encoding/json: compact, non-ASCII kept, and <, >, & escaped.
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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
        return _fnv32a(self.render_for_hash().encode())

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
        return _go_json(body)

    @classmethod
    def from_json(cls, data: str | bytes) -> MemoryManagerCheckpoint:
        """Parse and verify; raises :class:`CorruptCheckpointError` on a checksum mismatch."""
        raw = json.loads(data)
        machine_state: MachineState = {}
        for node, s in (raw.get("machineState") or {}).items():
            machine_state[int(node)] = NUMANodeState(
                int(s.get("numberOfAssignments", 0)),
                {
                    name: MemoryTable(
                        int(t.get("total", 0)),
                        int(t.get("systemReserved", 0)),
                        int(t.get("allocatable", 0)),
                        int(t.get("reserved", 0)),
                        int(t.get("free", 0)),
                    )
                    for name, t in (s.get("memoryMap") or {}).items()
                },
                None if s.get("cells") is None else [int(c) for c in s["cells"]],
            )
        entries: Assignments = {
            uid: {
                ctr: [
                    Block(tuple(int(n) for n in b.get("numaAffinity") or ()), b["type"], int(b["size"]))
                    for b in blocks or ()
                ]
                for ctr, blocks in per.items()
            }
            for uid, per in (raw.get("entries") or {}).items()
        }
        checkpoint = cls(raw.get("policyName", ""), machine_state, entries, int(raw.get("checksum", 0)))
        if checkpoint.checksum != checkpoint.compute_checksum():
            raise CorruptCheckpointError("checkpoint is corrupted")
        return checkpoint
