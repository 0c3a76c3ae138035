"""The memory manager's state types and its ``memory_manager_state`` checkpoint, as the kubelet names them.

The state per NUMA node (``MemoryTable`` per resource, ``NUMANodeState`` with its
``cells`` group), the per-container ``Block`` assignments and the checkpoint file that
persists them (the 1.3x JSON layout, FNV-32a checksum over go-spew's ``%#v``
rendering, verified on load: ``CorruptCheckpointError``) are the wire format the
numainfo exporter reads too, so they live in ``nrop.api.checkpoints``; this module
keeps the kubelet's names for them.  The ``Static`` policy that decides the state is
in ``memorymanager``.  No I/O.
"""

from __future__ import annotations

from nrop.api.checkpoints import (
    MEMORY_MANAGER_STATE_FILE as CHECKPOINT_FILE,
)
from nrop.api.checkpoints import (
    Assignments,
    Block,
    CorruptCheckpointError,
    MachineState,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
)

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
