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

One module per format (:mod:`.cpumanager`, :mod:`.memorymanager`, :mod:`.devicemanager`) over
what they share (:mod:`.encoding`: the errors, FNV-32a, Go's JSON, the decoding helpers);
importers use the names re-exported here.
"""

from __future__ import annotations

from nrop.api.checkpoints.cpumanager import (
    CPU_MANAGER_POLICIES,
    CPU_MANAGER_STATE_FILE,
    CPUManagerCheckpoint,
    cpu_manager_checksum,
    decode_cpu_manager_checkpoint,
    encode_cpu_manager_checkpoint,
)
from nrop.api.checkpoints.devicemanager import (
    DEVICE_MANAGER_CHECKPOINT_FILE,
    DeviceCheckpoint,
    PodDevicesEntry,
)
from nrop.api.checkpoints.encoding import CheckpointError, CorruptCheckpointError, fnv32a, go_json
from nrop.api.checkpoints.memorymanager import (
    MEMORY_MANAGER_POLICIES,
    MEMORY_MANAGER_STATE_FILE,
    Assignments,
    Block,
    MachineState,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
)

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
