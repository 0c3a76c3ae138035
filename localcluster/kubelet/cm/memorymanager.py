"""The kubelet memory manager's ``Static`` policy as pure decisions.

Owns what upstream ``pkg/kubelet/cm/memorymanager`` decides for a Linux node:

* the machine state per NUMA node (``memory``, ``hugepages-<size>``: total, systemReserved,
  allocatable, reserved, free; ``cells`` and ``numberOfAssignments`` for cross-NUMA groups);
* who is handled (Guaranteed pods only), the topology hints (``calculateHints``), ``Allocate``
  (default / extended hint, greedy lowest-NUMA-first reservation, init-container reuse) and
  ``RemoveContainer``;
* adopting a ``memory_manager_state`` checkpoint at startup (``validateState``).

What the policy is given -- the NUMA nodes, ``reservedMemory`` and its startup validation
against Node Allocatable, pods with their requested sizes per container and per pod -- is in
:mod:`.memoryinputs`.  The state types (``MemoryTable``, ``NUMANodeState``, ``Block``) and the
checkpoint format live in :mod:`.memorycheckpoint`.  Both are re-exported here because the
policy's API speaks them.

No I/O: sizes are integers in bytes; pods are described by :class:`MemoryPod`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nrop.api.resources import hugepage_resource_name
from nrop.localcluster.kubelet.cm import bitmask
from nrop.localcluster.kubelet.cm.hints import TopologyHint
from nrop.localcluster.kubelet.cm.memorycheckpoint import (
    CHECKPOINT_FILE,
    Assignments,
    Block,
    MachineState,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
)
from nrop.localcluster.kubelet.cm.memoryinputs import (
    MEMORY,
    MemoryContainer,
    MemoryManagerConfigError,
    MemoryPod,
    MemoryPolicy,
    MemoryReservation,
    NUMANodeMemory,
    format_binary_si,
    validate_reserved_memory,
)

__all__ = [
    "MEMORY",
    "Block",
    "MemoryContainer",
    "MemoryManagerConfigError",
    "MemoryManagerError",
    "MemoryPod",
    "MemoryPolicy",
    "MemoryReservation",
    "MemoryTable",
    "NUMANodeMemory",
    "NUMANodeState",
    "StaticPolicy",
    "format_binary_si",
    "hugepage_resource_name",
    "new_static_policy",
    "validate_reserved_memory",
]


class MemoryManagerError(Exception):
    """An ``Allocate`` failure; the topology manager turns it into ``UnexpectedAdmissionError``."""


def _clone_state(state: MachineState) -> MachineState:
    return {
        node: NUMANodeState(
            s.number_of_assignments,
            {
                name: MemoryTable(t.total, t.system_reserved, t.allocatable, t.reserved, t.free)
                for name, t in s.memory_map.items()
            },
            None if s.cells is None else list(s.cells),
        )
        for node, s in state.items()
    }


def _table(state: MachineState, node: int, resource: str) -> MemoryTable:
    # Upstream would dereference a nil table; a node without that page size has none of it.
    return state[node].memory_map.get(resource) or MemoryTable(0, 0, 0)


# --- configuration -------------------------------------------------------------------------


def _convert_reserved(
    numa_nodes: Iterable[int], reserved_memory: Sequence[MemoryReservation]
) -> dict[int, dict[str, int]]:
    converted: dict[int, dict[str, int]] = {node: {} for node in numa_nodes}
    for reservation in reserved_memory:
        for name, size in reservation.limits.items():
            converted[reservation.numa_node][name] = int(size)
    return converted


def new_static_policy(
    nodes: Sequence[NUMANodeMemory],
    node_allocatable_reservation: Mapping[str, int],
    reserved_memory: Sequence[MemoryReservation],
) -> StaticPolicy:
    """Validate the configuration and build the policy, as the kubelet does at startup."""
    validate_reserved_memory([n.id for n in nodes], node_allocatable_reservation, reserved_memory)
    return StaticPolicy(nodes, _convert_reserved([n.id for n in nodes], reserved_memory))


# --- the Static policy ---------------------------------------------------------------------


def _find_best_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    best: TopologyHint | None = None
    for hint in hints:
        if best is None:
            best = hint
            continue
        if hint.preferred and not best.preferred:
            best = hint
            continue
        assert hint.numa_nodes is not None and best.numa_nodes is not None
        if hint.preferred == best.preferred and bitmask.is_narrower(hint.numa_nodes, best.numa_nodes):
            best = hint
    return best


def _violates_numa_allocations(state: MachineState, mask: frozenset[int]) -> bool:
    bits = sorted(mask)
    if len(bits) == 1:
        return False
    for node in bits:
        node_state = state[node]
        if node_state.number_of_assignments == 0:
            continue
        cells = node_state.cells or []
        if len(cells) == 1 or sorted(cells) != bits:
            return True
    return False


class StaticPolicy:
    """The ``Static`` policy with its state (machine state, assignments, reusable init memory)."""

    name = MemoryPolicy.STATIC.value

    def __init__(
        self, nodes: Sequence[NUMANodeMemory], system_reserved: Mapping[int, Mapping[str, int]]
    ) -> None:
        if sum(int(r.get(MEMORY, 0)) for r in system_reserved.values()) <= 0:
            raise MemoryManagerConfigError("[memorymanager] you should specify the system reserved memory")
        self.nodes = list(nodes)
        self.system_reserved = {node: dict(r) for node, r in system_reserved.items()}
        self.machine_state: MachineState = self.default_machine_state()
        self.assignments: Assignments = {}
        #: pod UID -> mask string -> type -> bytes that regular init containers left reusable.
        self.reusable: dict[str, dict[str, dict[str, int]]] = {}

    # machine state

    def _reserved_for(self, node: int, resource: str) -> int:
        return int(self.system_reserved.get(node, {}).get(resource, 0))

    def default_machine_state(self) -> MachineState:
        state: MachineState = {}
        for node in self.nodes:
            memory_map: dict[str, MemoryTable] = {}
            hugepages_total = 0
            for page_size, pages in node.hugepages.items():
                name = hugepage_resource_name(page_size)
                total = page_size * pages
                reserved = self._reserved_for(node.id, name)
                memory_map[name] = MemoryTable(total, reserved, total - reserved, 0, total - reserved)
                hugepages_total += total
            reserved = self._reserved_for(node.id, MEMORY)
            allocatable = node.memory - reserved - hugepages_total
            memory_map[MEMORY] = MemoryTable(node.memory, reserved, allocatable, 0, allocatable)
            state[node.id] = NUMANodeState(0, memory_map, [node.id])
        return state

    def allocatable_memory(self) -> list[Block]:
        """``GetAllocatableMemory``: one single-node block per (node, type) with allocatable > 0."""
        return [
            Block((node,), name, table.allocatable)
            for node, node_state in sorted(self.machine_state.items())
            for name, table in sorted(node_state.memory_map.items())
            if table.allocatable != 0
        ]

    def memory_blocks(self, pod_uid: str, container: str) -> list[Block] | None:
        return self.assignments.get(pod_uid, {}).get(container)

    def container_numa_nodes(self, pod_uid: str, container: str) -> frozenset[int] | None:
        """``cpuset.mems`` of the container: union of its blocks' nodes; ``None`` = all nodes."""
        blocks = self.memory_blocks(pod_uid, container)
        if not blocks:
            return None
        return frozenset(node for block in blocks for node in block.numa_affinity)

    # hints

    def _pod_reusable(self, pod: MemoryPod, mask: frozenset[int], resource: str) -> int:
        return self.reusable.get(pod.uid, {}).get(bitmask.mask_string(mask), {}).get(resource, 0)

    def calculate_hints(self, pod: MemoryPod, requested: Mapping[str, int]) -> dict[str, list[TopologyHint]]:
        """``calculateHints``; an empty dict (no key at all) when nothing can fit."""
        state = self.machine_state
        numa_nodes = sorted(state)
        min_affinity_size = len(numa_nodes)
        found: list[frozenset[int]] = []
        for mask in bitmask.iterate_bitmasks(numa_nodes):
            bits = sorted(mask)
            single = len(bits) == 1
            if any(
                sum(_table(state, n, t).allocatable for n in bits) < size for t, size in requested.items()
            ):
                continue
            min_affinity_size = min(min_affinity_size, len(bits))
            if single and len(state[bits[0]].cells or []) > 1:
                continue  # the node belongs to a cross-NUMA group
            if not single and any(
                state[n].number_of_assignments > 0
                and (len(state[n].cells or []) == 1 or sorted(state[n].cells or []) != bits)
                for n in bits
            ):
                continue  # used for single-NUMA allocations, or grouped with other nodes
            if any(
                sum(_table(state, n, t).free for n in bits) + self._pod_reusable(pod, mask, t) < size
                for t, size in requested.items()
            ):
                continue
            found.append(mask)
        hints: dict[str, list[TopologyHint]] = {}
        for mask in found:
            for resource in requested:
                hints.setdefault(resource, []).append(TopologyHint(mask, len(mask) == min_affinity_size))
        return hints

    @staticmethod
    def _regenerate_hints(
        blocks: Sequence[Block], requested: Mapping[str, int]
    ) -> dict[str, list[TopologyHint]] | None:
        hints: dict[str, list[TopologyHint]] = {resource: [] for resource in requested}
        if len(blocks) != len(requested):
            return None
        for block in blocks:
            if block.type not in requested or block.size != requested[block.type]:
                return None
            hints[block.type].append(TopologyHint(frozenset(block.numa_affinity), True))
        return hints

    def get_topology_hints(
        self, pod: MemoryPod, container: MemoryContainer
    ) -> dict[str, list[TopologyHint]] | None:
        """Container-scope ``GetTopologyHints`` (``None`` = no preference)."""
        if not pod.guaranteed or pod.pod_level_resources:
            return None
        requested = container.memory_requests()
        blocks = self.memory_blocks(pod.uid, container.name)
        if blocks is not None:
            return self._regenerate_hints(blocks, requested)
        return self.calculate_hints(pod, requested)

    def get_pod_topology_hints(self, pod: MemoryPod) -> dict[str, list[TopologyHint]] | None:
        """Pod-scope ``GetPodTopologyHints``, on the pod-level requested sizes."""
        if not pod.guaranteed or pod.pod_level_resources:
            return None
        requested = pod.requested()
        for container in pod.all_containers():
            blocks = self.memory_blocks(pod.uid, container.name)
            if blocks is not None:
                return self._regenerate_hints(blocks, requested)
        return self.calculate_hints(pod, requested)

    # allocation

    def _satisfies(self, mask: frozenset[int], requested: Mapping[str, int]) -> bool:
        return all(
            sum(_table(self.machine_state, n, t).free for n in mask) >= size for t, size in requested.items()
        )

    def _update_machine_state(self, bits: list[int], resource: str, size: int) -> None:
        for node in bits:
            node_state = self.machine_state[node]
            node_state.number_of_assignments += 1
            node_state.cells = list(bits)
            if size == 0:
                continue
            table = node_state.memory_map.get(resource)
            if table is None or table.free <= 0:
                continue
            take = min(table.free, size)
            table.free -= take
            table.reserved += take
            size -= take

    def _update_pod_reusable(
        self, pod: MemoryPod, container: MemoryContainer, blocks: Sequence[Block]
    ) -> None:
        for uid in list(self.reusable):
            if uid != pod.uid:
                del self.reusable[uid]
        if pod.is_regular_init_container(container.name):
            per_pod = self.reusable.setdefault(pod.uid, {})
            for block in blocks:
                per_mask = per_pod.setdefault(bitmask.mask_string(block.numa_affinity), {})
                if block.size > per_mask.get(block.type, 0):
                    per_mask[block.type] = block.size
            return
        for block in blocks:
            mask = frozenset(block.numa_affinity)
            left = self._pod_reusable(pod, mask, block.type)
            if left != 0:
                self.reusable[pod.uid][bitmask.mask_string(mask)][block.type] = (
                    0 if block.size >= left else left - block.size
                )

    def _shrink_init_blocks(
        self, pod: MemoryPod, container: MemoryContainer, blocks: Sequence[Block]
    ) -> None:
        # Keep Σ(container blocks) == memory really held by the pod: reused init memory is
        # subtracted from the earlier regular init containers' blocks.
        for block in blocks:
            remaining = block.size
            for init in pod.init_containers:
                if init.name == container.name or remaining == 0:
                    break
                if init.restartable:
                    continue
                init_blocks = self.memory_blocks(pod.uid, init.name)
                if not init_blocks:
                    continue
                updated: list[Block] = []
                for init_block in init_blocks:
                    if (
                        init_block.size == 0
                        or init_block.type != block.type
                        or frozenset(init_block.numa_affinity) != frozenset(block.numa_affinity)
                    ):
                        updated.append(init_block)
                        continue
                    if init_block.size > remaining:
                        updated.append(
                            Block(init_block.numa_affinity, init_block.type, init_block.size - remaining)
                        )
                        remaining = 0
                    else:
                        remaining -= init_block.size
                        updated.append(Block(init_block.numa_affinity, init_block.type, 0))
                self.assignments[pod.uid][init.name] = updated

    def allocate(self, pod: MemoryPod, container: MemoryContainer, affinity: TopologyHint) -> None:
        """``Allocate`` with the topology manager's affinity; raises :class:`MemoryManagerError`."""
        if not pod.guaranteed or pod.pod_level_resources:
            return
        existing = self.memory_blocks(pod.uid, container.name)
        if existing is not None:
            self._update_pod_reusable(pod, container, existing)
            return
        requested = container.memory_requests()
        best = affinity
        if affinity.numa_nodes is None:
            hints = self.calculate_hints(pod, requested)
            if not hints:
                raise MemoryManagerError(
                    "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"
                )
            default = _find_best_hint(hints.get(MEMORY, []))
            if default is None:
                raise MemoryManagerError("[memorymanager] failed to get the default NUMA affinity")
            if not default.preferred and affinity.preferred:
                raise MemoryManagerError("[memorymanager] failed to find the default preferred hint")
            best = default
        assert best.numa_nodes is not None
        if not self._satisfies(best.numa_nodes, requested):
            current = best.numa_nodes
            candidates = [
                hint
                for hint in self.calculate_hints(pod, requested).get(MEMORY, [])
                if hint.numa_nodes is not None and current <= hint.numa_nodes
            ]
            extended = _find_best_hint(candidates)
            if extended is None:
                raise MemoryManagerError(
                    "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
                )
            if not extended.preferred and best.preferred:
                raise MemoryManagerError("[memorymanager] failed to find the extended preferred hint")
            best = extended
        assert best.numa_nodes is not None
        if _violates_numa_allocations(self.machine_state, best.numa_nodes):
            raise MemoryManagerError("[memorymanager] preferred hint violates NUMA node allocation")

        bits = sorted(best.numa_nodes)
        blocks: list[Block] = []
        # Upstream walks a Go map; memory first, then hugepages by name, for a stable file.
        for resource in sorted(requested, key=lambda name: (name != MEMORY, name)):
            size = requested[resource]
            blocks.append(Block(tuple(bits), resource, size))
            reusable = self._pod_reusable(pod, best.numa_nodes, resource)
            self._update_machine_state(bits, resource, 0 if reusable >= size else size - reusable)
        self._update_pod_reusable(pod, container, blocks)
        self.assignments.setdefault(pod.uid, {})[container.name] = blocks
        self._shrink_init_blocks(pod, container, blocks)

    def remove_container(self, pod_uid: str, container: str) -> None:
        """``RemoveContainer`` (stale-state cleanup): give the blocks' memory back."""
        blocks = self.memory_blocks(pod_uid, container)
        if blocks is None:
            return
        del self.assignments[pod_uid][container]
        if not self.assignments[pod_uid]:
            del self.assignments[pod_uid]
        for block in blocks:
            released = block.size
            for node in block.numa_affinity:
                node_state = self.machine_state[node]
                node_state.number_of_assignments -= 1
                if node_state.number_of_assignments == 0:
                    node_state.cells = [node]
                if released == 0:
                    continue
                table = node_state.memory_map.get(block.type)
                if table is None or table.reserved == 0:
                    continue
                give = min(table.reserved, released)
                table.reserved -= give
                table.free += give
                released -= give

    def remove_stale_state(self, active: Mapping[str, Iterable[str]]) -> None:
        """Remove every assignment whose (pod, container) is not in ``active`` (pod UID -> names)."""
        alive = {uid: set(names) for uid, names in active.items()}
        for uid in list(self.assignments):
            for name in list(self.assignments.get(uid, {})):
                if name not in alive.get(uid, set()):
                    self.remove_container(uid, name)

    # checkpoint

    def checkpoint(self) -> MemoryManagerCheckpoint:
        return MemoryManagerCheckpoint(
            self.name,
            _clone_state(self.machine_state),
            {
                uid: {ctr: list(blocks) for ctr, blocks in per.items()}
                for uid, per in self.assignments.items()
            },
        )

    def _expected_state(self, assignments: Assignments) -> MachineState:
        expected = self.default_machine_state()
        for uid, per_pod in assignments.items():
            for ctr, blocks in per_pod.items():
                for block in blocks:
                    size = block.size
                    for node in block.numa_affinity:
                        if node not in expected:
                            raise MemoryManagerError(
                                f"[memorymanager] (pod: {uid}, container: {ctr}) the memory assignment uses the NUMA that does not exist"
                            )
                        expected[node].number_of_assignments += 1
                        expected[node].cells = list(block.numa_affinity)
                        table = expected[node].memory_map.get(block.type)
                        if table is None:
                            raise MemoryManagerError(
                                f"[memorymanager] (pod: {uid}, container: {ctr}) the memory assignment uses memory resource that does not exist"
                            )
                        if size == 0 or table.free <= 0:
                            continue
                        take = min(table.free, size)
                        table.free -= take
                        table.reserved += take
                        size -= take
        return expected

    def restore(
        self, checkpoint: MemoryManagerCheckpoint, path: str = "/var/lib/kubelet/" + CHECKPOINT_FILE
    ) -> None:
        """Adopt a checkpoint at startup (policy check, then ``validateState``).

        Raises :class:`MemoryManagerConfigError` with the text that stops the kubelet.
        """
        if checkpoint.policy_name != self.name:
            inner = f'[memorymanager] configured policy "{self.name}" differs from state checkpoint policy "{checkpoint.policy_name}"'
            raise MemoryManagerConfigError(
                f"could not restore state from checkpoint: {inner}, please drain this node and delete "
                f'the memory manager checkpoint file "{path}" before restarting Kubelet'
            )
        if not checkpoint.machine_state:
            if checkpoint.entries:
                raise MemoryManagerConfigError(
                    "[memorymanager] machine state can not be empty when it has memory assignments"
                )
            self.machine_state = self.default_machine_state()
            self.assignments = {}
            return
        try:
            expected = self._expected_state(checkpoint.entries)
        except MemoryManagerError as error:
            raise MemoryManagerConfigError(str(error)) from error
        if not _states_equal(checkpoint.machine_state, expected):
            raise MemoryManagerConfigError(
                "[memorymanager] the expected machine state is different from the real one"
            )
        self.machine_state = _clone_state(checkpoint.machine_state)
        self.assignments = {
            uid: {c: list(b) for c, b in per.items()} for uid, per in checkpoint.entries.items()
        }


def _states_equal(first: MachineState, second: MachineState) -> bool:
    if set(first) != set(second):
        return False
    for node, one in first.items():
        two = second[node]
        if one.number_of_assignments != two.number_of_assignments:
            return False
        if sorted(one.cells or []) != sorted(two.cells or []):
            return False
        if set(one.memory_map) != set(two.memory_map):
            return False
        for name, table_one in one.memory_map.items():
            table_two = two.memory_map[name]
            if (table_one.total, table_one.system_reserved, table_one.allocatable) != (
                table_two.total,
                table_two.system_reserved,
                table_two.allocatable,
            ):
                return False
            # Within a group, only the group's sums of free and reserved must agree.
            group = one.cells or []
            for attribute in ("free", "reserved"):
                if sum(getattr(_table(first, n, name), attribute) for n in group) != sum(
                    getattr(_table(second, n, name), attribute) for n in group
                ):
                    return False
    return True
