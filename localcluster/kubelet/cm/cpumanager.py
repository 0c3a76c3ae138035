"""The kubelet CPU manager's ``static`` policy as pure decisions over plain data (``policy_static.go``).

Owns: policy options and their validation; the reserved CPUs; who gets exclusive CPUs;
``allocate`` / ``remove_container`` against a ``CPUManagerState`` (the shared/default
pool plus per-container assignments), including init-container CPU reuse; topology
hints for the topology manager in container and pod scope; the CPU part of node
capacity/allocatable.  ``CPUManagerState`` and the ``/var/lib/kubelet/cpu_manager_state``
checkpoint live in ``cpumanagerstate`` (``CPUManagerState`` and the ``CPUManagerError``
base are re-exported here, since the policy's API speaks them).

No I/O: the kubelet reads/writes the checkpoint bytes, asks the topology manager for
the affinity, and maps errors to admission results (``SMTAlignmentError.reason`` for
``SMTAlignmentError``; any other error is ``UnexpectedAdmissionError`` with message
``"Allocate failed due to <str(err)>, which is unexpected"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

from nrop.localcluster.kubelet.cm.cpuassignment import (
    CPUAssignmentError,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from nrop.localcluster.kubelet.cm.cpumanagerstate import POLICY_STATIC, CPUManagerError, CPUManagerState
from nrop.localcluster.kubelet.cm.cpuset import CPUSet
from nrop.localcluster.kubelet.cm.cputopology import CPUTopology
from nrop.localcluster.kubelet.cm.hints import TopologyHint

__all__ = [
    "ALIGN_BY_SOCKET",
    "DISTRIBUTE_CPUS_ACROSS_CORES",
    "DISTRIBUTE_CPUS_ACROSS_NUMA",
    "FULL_PCPUS_ONLY",
    "POLICY_STATIC",
    "STRICT_CPU_RESERVATION",
    "CPUAssignmentError",
    "CPUManagerError",
    "CPUManagerState",
    "ContainerCPURequest",
    "PodCPURequest",
    "PolicyOptionError",
    "SMTAlignmentError",
    "StateValidationError",
    "StaticPolicy",
    "StaticPolicyOptions",
    "guaranteed_cpus",
    "node_cpu_capacity_and_allocatable",
    "num_reserved_cpus",
    "parse_static_policy_options",
    "pod_guaranteed_cpus",
    "validate_static_policy_options",
]

RESOURCE_CPU = "cpu"

FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
PREFER_ALIGN_CPUS_BY_UNCORECACHE = "prefer-align-cpus-by-uncorecache"

# Maturity as of 1.33-1.36: the gates CPUManagerPolicyAlphaOptions (off by default) and
# CPUManagerPolicyBetaOptions (on by default) decide which of these may be used.
_ALPHA_OPTIONS = frozenset({ALIGN_BY_SOCKET, DISTRIBUTE_CPUS_ACROSS_CORES})
_BETA_OPTIONS = frozenset(
    {STRICT_CPU_RESERVATION, DISTRIBUTE_CPUS_ACROSS_NUMA, PREFER_ALIGN_CPUS_BY_UNCORECACHE}
)
_STABLE_OPTIONS = frozenset({FULL_PCPUS_ONLY})

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


# -- errors ----------------------------------------------------------------------------------


class PolicyOptionError(CPUManagerError):
    """Bad ``cpuManagerPolicyOptions`` or reservation: the kubelet refuses to start."""


class StateValidationError(CPUManagerError):
    """The restored state does not fit this machine/policy: the kubelet refuses to start."""


class SMTAlignmentError(CPUManagerError):
    """full-pcpus-only refused a container; admission reason ``SMTAlignmentError``."""

    reason = "SMTAlignmentError"

    def __init__(
        self,
        requested_cpus: int,
        cpus_per_core: int,
        available_physical_cpus: int = 0,
        caused_by_physical_cpus: bool = False,
    ) -> None:
        self.requested_cpus = requested_cpus
        self.cpus_per_core = cpus_per_core
        self.available_physical_cpus = available_physical_cpus
        self.caused_by_physical_cpus = caused_by_physical_cpus
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.caused_by_physical_cpus:
            return (
                "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                f"{self.available_physical_cpus}, requested CPUs = {self.requested_cpus}, "
                f"CPUs per core = {self.cpus_per_core}"
            )
        return f"SMT Alignment Error: requested {self.requested_cpus} cpus not multiple cpus per core = {self.cpus_per_core}"


# -- options -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticPolicyOptions:
    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False


def _go_parse_bool(value: str) -> bool:
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_static_policy_options(
    options: Mapping[str, str] | None,
    *,
    alpha_options_enabled: bool = False,
    beta_options_enabled: bool = True,
) -> StaticPolicyOptions:
    """``NewStaticPolicyOptions``: known names, feature-gate maturity, Go booleans, incompatible pairs.

    Options are checked in sorted order (upstream walks a Go map, so with several bad
    options the reported one is random there).
    """
    values: dict[str, bool] = {}
    for name in sorted(options or {}):
        if name not in _ALPHA_OPTIONS | _BETA_OPTIONS | _STABLE_OPTIONS:
            raise PolicyOptionError(f'unknown CPU Manager Policy option: "{name}"')
        if name in _ALPHA_OPTIONS and not alpha_options_enabled:
            raise PolicyOptionError(
                f'CPU Manager Policy Alpha-level Options not enabled, but option "{name}" provided'
            )
        if name in _BETA_OPTIONS and not beta_options_enabled:
            raise PolicyOptionError(
                f'CPU Manager Policy Beta-level Options not enabled, but option "{name}" provided'
            )
        try:
            values[name] = _go_parse_bool((options or {})[name])
        except ValueError as exc:
            raise PolicyOptionError(f'bad value for option "{name}": {exc}') from None
    if values.get(PREFER_ALIGN_CPUS_BY_UNCORECACHE):
        # Needs uncore-cache ids in the machine model, which the emulator does not have.
        raise PolicyOptionError(
            f'CPU Manager Policy option "{PREFER_ALIGN_CPUS_BY_UNCORECACHE}" is not supported by this emulator'
        )
    opts = StaticPolicyOptions(
        full_pcpus_only=values.get(FULL_PCPUS_ONLY, False),
        distribute_cpus_across_numa=values.get(DISTRIBUTE_CPUS_ACROSS_NUMA, False),
        align_by_socket=values.get(ALIGN_BY_SOCKET, False),
        distribute_cpus_across_cores=values.get(DISTRIBUTE_CPUS_ACROSS_CORES, False),
        strict_cpu_reservation=values.get(STRICT_CPU_RESERVATION, False),
    )
    for on, a, b in (
        (
            opts.full_pcpus_only and opts.distribute_cpus_across_cores,
            FULL_PCPUS_ONLY,
            DISTRIBUTE_CPUS_ACROSS_CORES,
        ),
        (
            opts.distribute_cpus_across_numa and opts.distribute_cpus_across_cores,
            DISTRIBUTE_CPUS_ACROSS_NUMA,
            DISTRIBUTE_CPUS_ACROSS_CORES,
        ),
    ):
        if on:
            raise PolicyOptionError(f"static policy options {a} and {b} can not be used at the same time")
    return opts


def validate_static_policy_options(
    opts: StaticPolicyOptions, topology: CPUTopology, topology_manager_policy: str
) -> None:
    """``ValidateStaticPolicyOptions``: what the machine and the topology manager policy allow."""
    if opts.align_by_socket:
        if topology_manager_policy == "single-numa-node":
            raise PolicyOptionError(
                f"Topolgy manager single-numa-node policy is incompatible with CPUManager {ALIGN_BY_SOCKET} policy option"
            )
        if topology.num_sockets > topology.num_numa_nodes:
            raise PolicyOptionError(
                "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA"
            )


# -- reservation and node allocatable ------------------------------------------------------------


def num_reserved_cpus(reservation_millis: int | None) -> int:
    """Whole CPUs the static policy reserves: ceil((systemReserved.cpu + kubeReserved.cpu) / 1000m)."""
    if reservation_millis is None:
        raise PolicyOptionError("[cpumanager] unable to determine reserved CPU resources for static policy")
    if reservation_millis == 0:
        raise PolicyOptionError(
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"
        )
    return -(-reservation_millis // 1000)


def node_cpu_capacity_and_allocatable(
    topology: CPUTopology,
    *,
    system_reserved_millis: int | None = None,
    kube_reserved_millis: int | None = None,
    reserved_system_cpus: CPUSet | None = None,
) -> tuple[int, int | None, int]:
    """(capacity, reservation or None, allocatable) of ``cpu`` in millicores (Node Allocatable).

    With ``reservedSystemCPUs`` the kubelet drops kubeReserved.cpu and sets
    systemReserved.cpu to the number of listed CPUs. Allocatable is not rounded
    (16 CPUs - 500m = 15500m). Validating reservation > capacity is the kubelet's job.
    """
    capacity = topology.num_cpus * 1000
    if reserved_system_cpus is not None and reserved_system_cpus.size() > 0:
        system_reserved_millis, kube_reserved_millis = reserved_system_cpus.size() * 1000, None
    parts = [m for m in (system_reserved_millis, kube_reserved_millis) if m is not None]
    reservation = sum(parts) if parts else None
    return capacity, reservation, max(0, capacity - (reservation or 0))


# -- pods as the CPU manager sees them ----------------------------------------------------------


@dataclass(frozen=True)
class ContainerCPURequest:
    """One container: its cpu *request* in millicores (rounded up, as ``MilliValue``) and sidecar-ness."""

    name: str
    cpu_request_millis: int | None = None
    restartable: bool = False  # an init container with restartPolicy: Always (sidecar)


@dataclass(frozen=True)
class PodCPURequest:
    """The parts of a pod the CPU manager reads. ``qos_class`` is ``status.qosClass``."""

    uid: str
    qos_class: str
    init_containers: tuple[ContainerCPURequest, ...] = ()
    containers: tuple[ContainerCPURequest, ...] = ()
    pod_level_resources: bool = False  # spec.resources set: 1.34+ kubelets skip such pods

    def all_containers(self) -> tuple[ContainerCPURequest, ...]:
        return self.init_containers + self.containers


def guaranteed_cpus(pod: PodCPURequest, container: ContainerCPURequest) -> int:
    """Exclusive CPUs for a container: its integer cpu request in a Guaranteed pod, else 0 (shared)."""
    if pod.qos_class != "Guaranteed" or pod.pod_level_resources:
        return 0
    millis = container.cpu_request_millis
    if millis is None or millis % 1000 != 0:
        return 0
    return millis // 1000


def pod_guaranteed_cpus(pod: PodCPURequest) -> int:
    """Pod-scope count: max(largest init need incl. earlier sidecars, app sum + sidecar sum)."""
    init_max = 0
    restartable_sum = 0
    for c in pod.init_containers:
        if c.cpu_request_millis is None:
            continue
        n = guaranteed_cpus(pod, c)
        if c.restartable:
            restartable_sum += n
        elif restartable_sum + n > init_max:
            init_max = restartable_sum + n
    app_sum = sum(guaranteed_cpus(pod, c) for c in pod.containers if c.cpu_request_millis is not None)
    return max(init_max, app_sum + restartable_sum)


# -- the policy ----------------------------------------------------------------------------------


class StaticPolicy:
    """Upstream ``staticPolicy``. Holds the (in-memory, non-checkpointed) init-container reuse sets."""

    name = POLICY_STATIC

    def __init__(
        self,
        topology: CPUTopology,
        *,
        num_reserved_cpus: int = 0,
        reserved_cpus: CPUSet | None = None,
        options: StaticPolicyOptions | Mapping[str, str] | None = None,
        topology_manager_policy: str = "none",
        alpha_options_enabled: bool = False,
        beta_options_enabled: bool = True,
    ) -> None:
        """``reserved_cpus`` is ``reservedSystemCPUs``; without it ``num_reserved_cpus`` are taken by topology."""
        if not isinstance(options, StaticPolicyOptions):
            options = parse_static_policy_options(
                options,
                alpha_options_enabled=alpha_options_enabled,
                beta_options_enabled=beta_options_enabled,
            )
        validate_static_policy_options(options, topology, topology_manager_policy)
        self.topology = topology
        self.options = options
        self.cpu_group_size = topology.cpus_per_core()
        self.cpus_to_reuse: dict[str, CPUSet] = {}
        if reserved_cpus is not None and reserved_cpus.size() > 0:
            reserved = reserved_cpus
            num_reserved_cpus = reserved_cpus.size()
        else:
            try:
                reserved = self.take_by_topology(topology.all_cpus(), num_reserved_cpus)
            except CPUAssignmentError:
                reserved = CPUSet()
        if reserved.size() != num_reserved_cpus:
            raise PolicyOptionError(
                f"[cpumanager] unable to reserve the required amount of CPUs (size of {reserved} did not equal {num_reserved_cpus})"
            )
        unknown = reserved.difference(topology.all_cpus())
        if unknown:
            raise PolicyOptionError(
                f"[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: {unknown.to_list()[0]}"
            )
        self.reserved_cpus = reserved
        self.reserved_physical_cpus = topology.physical_cpus_of(reserved)

    # -- pools ---------------------------------------------------------------------------

    def all_cpus(self) -> CPUSet:
        cpus = self.topology.all_cpus()
        return cpus.difference(self.reserved_cpus) if self.options.strict_cpu_reservation else cpus

    def allocatable_cpus(self) -> CPUSet:
        """``GetAllocatableCPUs`` (PodResources): every CPU but the reserved ones."""
        return self.topology.all_cpus().difference(self.reserved_cpus)

    def available_cpus(self, state: CPUManagerState) -> CPUSet:
        """CPUs that can still be exclusively allocated: the shared pool minus the reserved CPUs."""
        return state.default_cpuset.difference(self.reserved_cpus)

    def available_physical_cpus(self, state: CPUManagerState) -> CPUSet:
        return state.default_cpuset.difference(self.reserved_physical_cpus)

    def container_cpuset(self, state: CPUManagerState, pod_uid: str, container: str) -> CPUSet:
        """What ``cpuset.cpus`` the container runs on: its exclusive set, else the current shared pool."""
        assigned = state.get(pod_uid, container)
        return assigned if assigned is not None else state.default_cpuset

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, state: CPUManagerState) -> None:
        """``validateState``: initialise an empty state, or check a restored one (raises on mismatch)."""
        all_cpus = self.all_cpus()
        default = state.default_cpuset
        if default.is_empty():
            if state.entries:
                raise StateValidationError("default cpuset cannot be empty")
            state.default_cpuset = all_cpus
            return
        if self.options.strict_cpu_reservation:
            overlap = self.reserved_cpus.intersection(default)
            if overlap:
                raise StateValidationError(
                    f'some of strictly reserved cpus: "{overlap}" are present in defaultCpuSet: "{default}"'
                )
        elif self.reserved_cpus.intersection(default) != self.reserved_cpus:
            raise StateValidationError(
                f'not all reserved cpus: "{self.reserved_cpus}" are present in defaultCpuSet: "{default}"'
            )
        for pod_uid, containers in state.entries.items():
            for name, cpus in containers.items():
                if default.intersection(cpus):
                    raise StateValidationError(
                        f'pod: {pod_uid}, container: {name} cpuset: "{cpus}" overlaps with default cpuset "{default}"'
                    )
        known = default.union(*(c for cs in state.entries.values() for c in cs.values()))
        if known != all_cpus:
            raise StateValidationError(
                f'current set of available CPUs "{all_cpus}" doesn\'t match with CPUs in state "{known}"'
            )

    def take_by_topology(self, available: CPUSet, num_cpus: int) -> CPUSet:
        strategy = "spread" if self.options.distribute_cpus_across_cores else "packed"
        if self.options.distribute_cpus_across_numa:
            group = self.cpu_group_size if self.options.full_pcpus_only else 1
            return take_by_topology_numa_distributed(self.topology, available, num_cpus, group, strategy)
        return take_by_topology_numa_packed(self.topology, available, num_cpus, strategy)

    def _enforce_smt_alignment(self, state: CPUManagerState, num_cpus: int) -> None:
        if not self.options.full_pcpus_only:
            return
        if num_cpus % self.cpu_group_size != 0:
            raise SMTAlignmentError(num_cpus, self.cpu_group_size)
        available_physical = self.available_physical_cpus(state).size()
        if num_cpus > available_physical:
            raise SMTAlignmentError(
                num_cpus, self.cpu_group_size, available_physical, caused_by_physical_cpus=True
            )

    def _update_cpus_to_reuse(self, pod: PodCPURequest, container: ContainerCPURequest, cpus: CPUSet) -> None:
        # Only the pod being admitted keeps reusable CPUs.
        for uid in [u for u in self.cpus_to_reuse if u != pod.uid]:
            del self.cpus_to_reuse[uid]
        reusable = self.cpus_to_reuse.get(pod.uid, CPUSet())
        init = next((c for c in pod.init_containers if c.name == container.name), None)
        if init is not None and not init.restartable:
            self.cpus_to_reuse[pod.uid] = reusable.union(cpus)
        else:
            self.cpus_to_reuse[pod.uid] = reusable.difference(cpus)

    def allocate(
        self,
        state: CPUManagerState,
        pod: PodCPURequest,
        container: ContainerCPURequest,
        affinity: frozenset[int] | None = None,
    ) -> CPUSet | None:
        """``Allocate``: pin an exclusive set for the container (None = shared pool).

        ``affinity`` is the NUMA node set the topology manager chose for this container
        (``GetAffinity``), or None. Raises ``SMTAlignmentError`` or ``CPUAssignmentError``;
        on error the state is unchanged.
        """
        num_cpus = guaranteed_cpus(pod, container)
        if num_cpus == 0:
            return None
        self._enforce_smt_alignment(state, num_cpus)
        existing = state.get(pod.uid, container.name)
        if existing is not None:
            self._update_cpus_to_reuse(pod, container, existing)
            return existing
        cpus = self._allocate_cpus(state, num_cpus, affinity, self.cpus_to_reuse.get(pod.uid, CPUSet()))
        state.set(pod.uid, container.name, cpus)
        self._update_cpus_to_reuse(pod, container, cpus)
        return cpus

    def _aligned_cpus(self, affinity: frozenset[int], allocatable: CPUSet) -> CPUSet:
        details = self.topology.details
        if self.options.align_by_socket:
            sockets = details.sockets_in_numa_nodes(*affinity)
            return allocatable.intersection(details.cpus_in_sockets(*sockets))
        return allocatable.intersection(details.cpus_in_numa_nodes(*affinity))

    def _allocate_cpus(
        self, state: CPUManagerState, num_cpus: int, affinity: frozenset[int] | None, reusable: CPUSet
    ) -> CPUSet:
        allocatable = self.available_cpus(state).union(reusable)
        result = CPUSet()
        if affinity is not None:
            aligned = self._aligned_cpus(affinity, allocatable)
            result = self.take_by_topology(aligned, min(num_cpus, aligned.size()))
        result = result.union(self.take_by_topology(allocatable.difference(result), num_cpus - result.size()))
        state.default_cpuset = state.default_cpuset.difference(result)
        return result

    def remove_container(self, state: CPUManagerState, pod_uid: str, container: str) -> None:
        """Drop the assignment; give back only CPUs no other container of the pod still holds."""
        released = state.get(pod_uid, container)
        if released is None:
            return
        state.delete(pod_uid, container)
        in_use = CPUSet().union(*state.entries.get(pod_uid, {}).values())
        state.default_cpuset = state.default_cpuset.union(released.difference(in_use))

    def remove_stale_state(self, state: CPUManagerState, active: Iterable[tuple[str, str]]) -> None:
        """Release assignments of (pod uid, container) pairs not among the active pods' containers."""
        keep = set(active)
        for pod_uid in list(state.entries):
            for name in list(state.entries.get(pod_uid, {})):
                if (pod_uid, name) not in keep:
                    self.remove_container(state, pod_uid, name)

    # -- topology hints ------------------------------------------------------------------

    def get_topology_hints(
        self, state: CPUManagerState, pod: PodCPURequest, container: ContainerCPURequest
    ) -> dict[str, list[TopologyHint]]:
        """Container-scope hints; ``{}`` = no preference, ``{"cpu": []}`` = cannot be satisfied."""
        requested = guaranteed_cpus(pod, container)
        if requested == 0:
            return {}
        allocated = state.get(pod.uid, container.name)
        if allocated is not None:
            if allocated.size() != requested:
                return {RESOURCE_CPU: []}
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(allocated, CPUSet(), requested)}
        reusable = self.cpus_to_reuse.get(pod.uid, CPUSet())
        return {
            RESOURCE_CPU: self.generate_cpu_topology_hints(self.available_cpus(state), reusable, requested)
        }

    def get_pod_topology_hints(
        self, state: CPUManagerState, pod: PodCPURequest
    ) -> dict[str, list[TopologyHint]]:
        """Pod-scope hints over ``pod_guaranteed_cpus``, counting CPUs already assigned in the pod."""
        requested = pod_guaranteed_cpus(pod)
        if requested == 0:
            return {}
        assigned = CPUSet()
        for c in pod.all_containers():
            allocated = state.get(pod.uid, c.name)
            if allocated is None:
                continue
            if allocated.size() != guaranteed_cpus(pod, c):
                return {RESOURCE_CPU: []}
            assigned = assigned.union(allocated)
        if assigned.size() == requested:
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(assigned, CPUSet(), requested)}
        reusable = self.cpus_to_reuse.get(pod.uid, CPUSet()).union(assigned)
        return {
            RESOURCE_CPU: self.generate_cpu_topology_hints(self.available_cpus(state), reusable, requested)
        }

    def generate_cpu_topology_hints(
        self, available: CPUSet, reusable: CPUSet, request: int
    ) -> list[TopologyHint]:
        """One hint per NUMA subset (by size, then lexicographic) that can hold the request.

        Preferred = as few NUMA nodes as the *machine* (not the free CPUs) needs, or with
        align-by-socket, spanning as few sockets as that minimum needs.
        """
        details = self.topology.details
        numa_nodes = details.numa_nodes().to_list()
        min_affinity = len(numa_nodes)
        masks: list[frozenset[int]] = []
        for size in range(1, len(numa_nodes) + 1):
            for combo in combinations(numa_nodes, size):
                mask = frozenset(combo)
                if details.cpus_in_numa_nodes(*combo).size() >= request and size < min_affinity:
                    min_affinity = size
                if any(details[c].numa_node not in mask for c in reusable):
                    continue
                # Reusable and available CPUs are counted separately, as upstream does.
                matching = reusable.size() + sum(1 for c in available if details[c].numa_node in mask)
                if matching < request:
                    continue
                masks.append(mask)
        return [TopologyHint(m, self._preferred(m, min_affinity)) for m in masks]

    def _preferred(self, mask: frozenset[int], min_affinity: int) -> bool:
        if self.options.align_by_socket:
            per_socket = self.topology.numa_nodes_per_socket()
            if per_socket:
                min_sockets = -(-min_affinity // per_socket)
                if self.topology.details.sockets_in_numa_nodes(*mask).size() == min_sockets:
                    return True
        return len(mask) == min_affinity
