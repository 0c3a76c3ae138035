"""The emulated kubelet's resource managers, laid out as upstream's ``pkg/kubelet/cm``.

Owns the pure decisions that upstream's container manager delegates to its managers, so that a
pod is pinned or rejected here exactly as on a real node:

* the CPU manager (:mod:`.cpumanager`): ``none``/``static`` policies, their options, hints and
  exclusive CPU assignment (:mod:`.cpuassignment`, over the machine's :mod:`.cputopology`),
  and the ``cpu_manager_state`` checkpoint (:mod:`.cpumanagerstate`);
* the memory manager (:mod:`.memorymanager`): the ``Static`` policy over the inputs of
  :mod:`.memoryinputs`, and the ``memory_manager_state`` checkpoint (:mod:`.memorycheckpoint`);
* the device manager (:mod:`.devicemanager`): device inventory, hints and allocation, and the
  ``kubelet_internal_checkpoint`` (its format is :mod:`nrop.api.checkpoints`, as the other two);
* the topology manager (:mod:`.topologymanager`): policies, scopes and hint merging, over the
  :class:`TopologyHint` every provider returns (:mod:`.hints`) and NUMA bitmasks (:mod:`.bitmask`).

No I/O: :mod:`nrop.localcluster.kubelet.decisions.admission` composes the managers and the kubelet shell
(:mod:`nrop.localcluster.kubelet.kubelet`) writes their checkpoints and calls device plugins.
CPU sets are :mod:`nrop.localcluster.kubelet.cm.cpuset` (upstream ``k8s.io/utils/cpuset``), shared
with the kubelet's sysfs tree and node status.

Other packages use the names below, or the managers' modules for the names several managers
share (``StaticPolicy``, ``CHECKPOINT_FILE``); the other modules are this package's own.
"""

from __future__ import annotations

from nrop.localcluster.kubelet.cm import (
    cpumanager,
    cpumanagerstate,
    devicemanager,
    memorymanager,
    topologymanager,
)
from nrop.localcluster.kubelet.cm.cpumanager import (
    ContainerCPURequest,
    PodCPURequest,
    PolicyOptionError,
    num_reserved_cpus,
)
from nrop.localcluster.kubelet.cm.cpumanagerstate import CPUManagerState
from nrop.localcluster.kubelet.cm.cputopology import CPUInfo, CPUTopology, TopologyError
from nrop.localcluster.kubelet.cm.devicemanager import (
    NODE_WITHOUT_TOPOLOGY,
    DeviceCheckpoint,
    DeviceContainer,
    DeviceManager,
    DevicePod,
    PreferredAllocation,
)
from nrop.localcluster.kubelet.cm.hints import TopologyHint
from nrop.localcluster.kubelet.cm.memorycheckpoint import MemoryManagerCheckpoint
from nrop.localcluster.kubelet.cm.memorymanager import format_binary_si
from nrop.localcluster.kubelet.cm.topologymanager import ProviderHints, TopologyManager

__all__ = [
    "NODE_WITHOUT_TOPOLOGY",
    "CPUInfo",
    "CPUManagerState",
    "CPUTopology",
    "ContainerCPURequest",
    "DeviceCheckpoint",
    "DeviceContainer",
    "DeviceManager",
    "DevicePod",
    "MemoryManagerCheckpoint",
    "PodCPURequest",
    "PolicyOptionError",
    "PreferredAllocation",
    "ProviderHints",
    "TopologyError",
    "TopologyHint",
    "TopologyManager",
    "cpumanager",
    "cpumanagerstate",
    "cpuset",
    "devicemanager",
    "format_binary_si",
    "memorymanager",
    "num_reserved_cpus",
    "topologymanager",
]
