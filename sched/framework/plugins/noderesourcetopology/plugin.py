"""The NodeResourceTopologyMatch plugin: NUMA-aware Filter and Score over NodeResourceTopology objects.

This module owns the plugin's wiring, as scheduler-plugins' ``pkg/noderesourcetopology``
does it: which cache the args select, the order of the checks in Filter and Score
around the pure decisions (:mod:`nrop.sched.framework.plugins.noderesourcetopology.filter`, :mod:`nrop.sched.framework.plugins.noderesourcetopology.score`), the
Reserve/Unreserve/PostBind bookkeeping, the events that re-queue pods, and the
subscriptions that feed the OverReserve cache (foreign pods, topology-manager
configuration changes).

The periodic resync of the OverReserve cache is run by the scheduler loop:
:meth:`NodeResourceTopologyMatch.resync_period` says how often (None: never), and
:meth:`NodeResourceTopologyMatch.resync` runs one step. Upstream runs it once at start
and then ``period`` seconds after each step completes.

Preemption mode ``Enabled``: PreFilter and the ``add_pod``/``remove_pod`` pre-filter
extensions keep the victim set of a preemption attempt, and Filter then does not mark
failing nodes for resync, as upstream. With the OverReserve cache, each resync that
flushes a node also keeps the pods the scheduler saw on it (the set the fingerprint
was checked against); the first Filter of a preemption attempt on that node decodes the
NRT's ``numaplacement`` attributes against them (:mod:`nrop.sched.framework.plugins.noderesourcetopology.preemption`, kept
until the next flush of the node) and, when some container is placed, filters the NRT
with the victims' exclusive requests given back to their NUMA zones. Without placement
data (other caches, a node never flushed since start, another policy, inconsistent
attributes) the NRT is used unmodified, as upstream.

Filter and Score both fetch the node's NRT from the cache, as upstream does; the
topology-manager settings and NUMA node list read from it are memoized per node and
reused while the cache hands out the same zones (the caches share unchanged zone
objects between lookups), so Score reuses what Filter read in the same cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from nrop.api.nrt import NodeResourceTopology, Zone
from nrop.api.numaplacement import PlacementInfo
from nrop.sched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NRT_RESOURCE,
    ActionType,
    ClusterEvent,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    Status,
)
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    CacheResyncScope,
    ForeignPodsDetectMode,
    NodeResourceTopologyMatchArgs,
    PreemptionMode,
    parse_args,
)
from nrop.sched.framework.plugins.noderesourcetopology.cache import (
    PROCESS_PROFILES,
    DiscardReservedCache,
    NRTCache,
    OverReserveCache,
    PassthroughCache,
    ResyncReport,
    SchedulerProfiles,
    nrt_resource_names,
)
from nrop.sched.framework.plugins.noderesourcetopology.filter import (
    INVALID_NODE_TOPOLOGY_DATA,
    NODE_NOT_FOUND,
    ParsedTopology,
    PodDemand,
    filter_with_parsed,
    parse_topology,
    pod_demand,
)
from nrop.sched.framework.plugins.noderesourcetopology.preemption import (
    EVICTION_SIMULATION_NOT_POSSIBLE,
    EvictionSimulationError,
    decode_placement,
    nrt_after_evictions,
    placement_pods,
)
from nrop.sched.framework.plugins.noderesourcetopology.score import resource_weights, score_with_parsed
from nrop.sched.framework.podrequests import BEST_EFFORT, GUARANTEED, include_non_native, pod_qos

__all__ = ["DEMAND_STATE_KEY", "NAME", "VICTIMS_STATE_KEY", "NodeResourceTopologyMatch", "PreemptionVictims"]

log = logging.getLogger(__name__)

NAME: Final = "NodeResourceTopologyMatch"
VICTIMS_STATE_KEY: Final = "stateVictimPods"
DEMAND_STATE_KEY: Final = "nrtPodDemand"
"""Where Filter and Score keep the pod's requests, read once per cycle (the pod does not change within it)."""

Obj = dict[str, Any]


class PreemptionVictims:
    """The pods a preemption attempt removes from the node under evaluation (``namespace/name`` -> pod)."""

    def __init__(self, pods: Mapping[str, Obj] | None = None) -> None:
        self.pods: dict[str, Obj] = dict(pods or {})

    def clone(self) -> PreemptionVictims:
        return PreemptionVictims(self.pods)


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass(frozen=True, slots=True)
class _Memo:
    """A node's parsed topology and the NRT parts it was read from (compared by identity)."""

    zones: tuple[Zone, ...]
    attributes: object
    topology_policies: object
    topology: ParsedTopology

    def matches(self, nrt: NodeResourceTopology) -> bool:
        return (
            nrt.attributes is self.attributes
            and nrt.topology_policies is self.topology_policies
            and _same_objects(nrt.zones, self.zones)
        )


def _same_objects(left: Sequence[object], right: Sequence[object]) -> bool:
    return len(left) == len(right) and all(a is b for a, b in zip(left, right, strict=True))


class NodeResourceTopologyMatch:
    """Filters out nodes whose NUMA zones cannot hold the pod the way the kubelet would place it.

    Only nodes whose NRT declares the ``single-numa-node`` topology-manager policy are
    filtered; nodes without an NRT pass and score 0.
    """

    name: ClassVar[str] = NAME

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> NodeResourceTopologyMatchArgs:
        return parse_args(args, path)

    def __init__(
        self,
        args: NodeResourceTopologyMatchArgs | None,
        handle: Handle,
        *,
        profiles: SchedulerProfiles = PROCESS_PROFILES,
    ) -> None:
        self._args = args if args is not None else NodeResourceTopologyMatchArgs()
        self._handle = handle
        self._weights = resource_weights(self._args.scoring_strategy.resources)
        self._over_reserve: OverReserveCache | None = None
        self._parsed: dict[str, _Memo] = {}
        # Preemption: the pods seen on a node at its last flush, and the placement decoded from them.
        self._flushed_pods: dict[str, list[Obj]] = {}
        self._placements: dict[str, PlacementInfo] = {}
        self._cache: NRTCache
        if self._args.discard_reserved_nodes:
            self._cache = DiscardReservedCache(handle.get_nrt)
        elif self._args.cache_resync_period_seconds <= 0:
            self._cache = PassthroughCache(handle.get_nrt)
        else:
            self._over_reserve = self._cache = self._start_over_reserve(handle, profiles)
        log.info(
            "NodeResourceTopologyMatch for profile %s: scoring %s, cache %s",
            handle.profile_name,
            self._args.scoring_strategy.type,
            type(self._cache).__name__,
        )

    def _start_over_reserve(self, handle: Handle, profiles: SchedulerProfiles) -> OverReserveCache:
        cache_args = self._args.cache
        cache = OverReserveCache(handle.list_nrts(), cache_args)
        if cache_args.resync_scope is CacheResyncScope.ALL:
            handle.on_nrt_event(cache.on_nrt_event)
        if cache_args.foreign_pods_detect is ForeignPodsDetectMode.NONE:
            log.info("foreign pods detection disabled by configuration")
        else:
            profiles.register(handle.profile_name)
            handle.on_pod_event(lambda _event, pod: cache.on_pod_event(pod, profiles))
        return cache

    def _topology(self, node_name: str, nrt: NodeResourceTopology) -> ParsedTopology:
        """The parsed topology of ``nrt``, reused while the cache hands out the same zone objects."""
        memo = self._parsed.get(node_name)
        if memo is None or not memo.matches(nrt):
            memo = _Memo(tuple(nrt.zones), nrt.attributes, nrt.topology_policies, parse_topology(nrt))
            self._parsed[node_name] = memo
        return memo.topology

    @staticmethod
    def _demand(state: CycleState, pod: Obj) -> PodDemand:
        demand = state.read(DEMAND_STATE_KEY)
        if not isinstance(demand, PodDemand):
            demand = pod_demand(pod)
            state.write(DEMAND_STATE_KEY, demand)
        return demand

    # -- PreFilter and its extensions (the preemption victims)
    def pre_filter(self, state: CycleState, pod: Obj) -> Status:
        state.write(VICTIMS_STATE_KEY, PreemptionVictims())
        return Status.success()

    def add_pod(
        self, state: CycleState, pod_to_schedule: Obj, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Preemption gave a pod back to the node: it is no longer a victim."""
        victims = state.read(VICTIMS_STATE_KEY)
        if not isinstance(victims, PreemptionVictims):
            return Status.error("cannot read the preemption victims from the cycle state", plugin=self.name)
        victims.pods.pop(_pod_key(pod_to_add.pod), None)
        return Status.success()

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Obj, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Preemption takes a pod off the node: remember it as a victim."""
        victims = state.read(VICTIMS_STATE_KEY)
        if not isinstance(victims, PreemptionVictims):
            return Status.error("cannot read the preemption victims from the cycle state", plugin=self.name)
        victims.pods[_pod_key(pod_to_remove.pod)] = pod_to_remove.pod
        return Status.success()

    def _victims(self, state: CycleState) -> list[Obj]:
        """The pods the current preemption attempt evicts; empty outside of one."""
        if self._args.preemption_mode is not PreemptionMode.ENABLED:
            return []
        victims = state.read(VICTIMS_STATE_KEY)
        return list(victims.pods.values()) if isinstance(victims, PreemptionVictims) else []

    def _placement(self, node_name: str, nrt: NodeResourceTopology) -> PlacementInfo | None:
        """The node's decoded container placement, decoded on first use after a flush; None without one."""
        placement = self._placements.get(node_name)
        if placement is None:
            pods = self._flushed_pods.get(node_name)
            if pods is None:
                return None
            placement = decode_placement(nrt, placement_pods(pods, nrt_resource_names(nrt)))
            self._placements[node_name] = placement
        return placement

    # -- Filter
    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        if not node_info.node:
            return Status.error(NODE_NOT_FOUND, plugin=self.name)
        qos = pod_qos(pod)
        if qos == BEST_EFFORT and not include_non_native(pod):
            return Status.success()
        node_name = node_info.name
        cached = self._cache.get_cached_nrt_copy(node_name, pod)
        if not cached.fresh:
            log.debug("invalid topology data for node %s (generation %d)", node_name, cached.generation)
            return Status.unschedulable(INVALID_NODE_TOPOLOGY_DATA, plugin=self.name)
        if cached.nrt is None:
            return Status.success()
        victims = self._victims(state)
        topology: ParsedTopology | None = None
        if victims:
            placement = self._placement(node_name, cached.nrt)
            if placement is not None and placement.containers:
                try:
                    after = nrt_after_evictions(cached.nrt, victims, placement)
                except EvictionSimulationError as exc:
                    return Status.unschedulable(EVICTION_SIMULATION_NOT_POSSIBLE + str(exc), plugin=self.name)
                log.debug("node %s: filtering with the NRT after evicting %d pods", node_name, len(victims))
                topology = parse_topology(after)
        if topology is None:
            topology = self._topology(node_name, cached.nrt)
        status = filter_with_parsed(self._demand(state, pod), qos, node_info, topology)
        if status.ok:
            return status
        if not victims:
            self._cache.node_maybe_over_reserved(node_name, pod)
        return status.with_plugin(self.name)

    # -- Score (no NormalizeScore)
    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        qos = pod_qos(pod)
        if qos != GUARANTEED:
            return MAX_NODE_SCORE, Status.success()
        cached = self._cache.get_cached_nrt_copy(node_info.name, pod)
        if not cached.fresh or cached.nrt is None:
            return MIN_NODE_SCORE, Status.success()
        topology = self._topology(node_info.name, cached.nrt)
        score = score_with_parsed(
            self._demand(state, pod), qos, topology, self._args.scoring_strategy.type, self._weights
        )
        return score, Status.success()

    # -- Reserve, Unreserve, PostBind
    def reserve(self, state: CycleState, pod: Obj, node_name: str) -> Status:
        self._cache.reserve(node_name, pod)
        return Status.success()

    def unreserve(self, state: CycleState, pod: Obj, node_name: str) -> None:
        self._cache.unreserve(node_name, pod)

    def post_bind(self, state: CycleState, pod: Obj, node_name: str) -> None:
        self._cache.post_bind(node_name, pod)

    # -- EnqueueExtensions
    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("Pod", ActionType.DELETE),
            ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
            ClusterEvent(NRT_RESOURCE, ActionType.ADD | ActionType.UPDATE),
        ]

    # -- the cache's periodic resync, driven by the scheduler loop
    def resync_period(self) -> float | None:
        """Seconds between resync steps (the first runs at start); None when the cache needs none."""
        if self._over_reserve is None:
            return None
        return float(self._args.cache_resync_period_seconds)

    def resync(self) -> ResyncReport | None:
        """One resync step of the OverReserve cache; None with the other caches."""
        cache = self._over_reserve
        if cache is None:
            return None
        if self._args.preemption_mode is not PreemptionMode.ENABLED:
            return cache.resync(self._handle.get_nrt, self._handle.list_pods)
        # Preemption decodes placements against the pods the flush was decided on.
        listed: list[Obj] = []

        def list_pods() -> list[Obj]:
            listed.extend(self._handle.list_pods())
            return listed

        report = cache.resync(self._handle.get_nrt, list_pods)
        for node_name in report.flushed:
            self._flushed_pods[node_name] = [
                pod
                for pod in listed
                if cache.is_pod_relevant(pod) and (pod.get("spec") or {}).get("nodeName") == node_name
            ]
            self._placements.pop(node_name, None)
        return report
