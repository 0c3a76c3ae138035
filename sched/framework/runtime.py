"""A configured scheduling framework (one profile) running a pod through its extension points.

Owns upstream's ``frameworkImpl`` and the algorithm of ``schedule_one.go``:

* ``schedule``: PreFilter (Skip adds the plugin to the skip set; Unschedulable still runs
  the other PreFilters; UnschedulableAndUnresolvable stops; a PreFilter may narrow the
  candidate nodes by returning ``(Status, frozenset[str] | None)``), the pod's nominated
  node first, Filter over the nodes from a rotating start index until
  ``num_feasible_nodes_to_find`` nodes fit (filters run a second time with the nominated
  pods of equal or higher priority added), PostFilter when none fits, no scoring when
  exactly one fits, else PreScore, Score, NormalizeScore, weights and a random pick among
  the best (the injected ``random.Random``).
* Reserve / Unreserve (reverse order), Bind (first plugin not returning Skip), PostBind,
  PreEnqueue and the queue sort, and the cluster events each plugin registers.

A plugin returning an Error status aborts the cycle: the result has no node, no
``error`` and the reason in ``message`` (the pod is retried after back-off); a pod that
fits nowhere gets a :class:`~nrop.sched.framework.cycle.FitError` whose message is upstream's event
text.  PostFilter plugins read the snapshot through the :class:`~nrop.sched.framework.cycle.CycleView`
stored under :data:`~nrop.sched.framework.cycle.FRAMEWORK_KEY` and may store the pods to evict under
:data:`~nrop.sched.framework.cycle.VICTIMS_KEY`.  What a cycle produces and shares lives in
:mod:`nrop.sched.framework.cycle`.
PreFilter plugins may have upstream's PreFilter extensions ``add_pod(state, pod,
pod_info, node_info)`` / ``remove_pod(...)``: they run when nominated pods are added to a
node and when preemption removes or gives back victims.

:func:`build_profile` instantiates a resolved configuration profile
(:class:`nrop.sched.config.profile.ProfileConfig`).  Nothing here does I/O except awaiting bind
plugins.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nrop.sched.framework.cycle import (
    FRAMEWORK_KEY,
    NO_NODES_AVAILABLE,
    VICTIMS_KEY,
    CycleView,
    FitError,
    NoNodesAvailableError,
    ScheduleResult,
    SchedulingCycleError,
    num_feasible_nodes_to_find,
    select_host,
)
from nrop.sched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    NodeInfo,
    Obj,
    PodInfo,
    Status,
    pod_key,
    pod_priority,
)

if TYPE_CHECKING:
    from nrop.sched.config.profile import ProfileConfig
    from nrop.sched.framework.interface import Handle

log = logging.getLogger(__name__)

#: The extension points whose plugins' events can move a pod they rejected (upstream).
_REQUEUE_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")
_ALL_EVENTS = ClusterEvent("*", ActionType.ALL)
_REJECTED = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

PluginList = Sequence[tuple[Any, int]]
"""Plugins of one extension point in order, each with its weight (used by ``score`` only)."""

Nominated = Mapping[str, Sequence[PodInfo]]
"""Node name -> the pods nominated to run there (see :meth:`nrop.sched.framework.queue.SchedulingQueue.nominated`)."""


def _plugin_name(plugin: Any) -> str:
    return getattr(plugin, "name", type(plugin).__name__)


class Profile:
    """One ``KubeSchedulerConfiguration`` profile: plugin instances per extension point.

    ``plugins`` maps extension point names (as in the configuration: ``queueSort``,
    ``preEnqueue``, ``preFilter``, ``filter``, ``postFilter``, ``preScore``, ``score``,
    ``reserve``, ``bind``, ``postBind``) to ``(plugin, weight)`` lists in order; a score
    weight of 0 counts as 1, as upstream.  ``name`` is the profile's schedulerName.
    """

    def __init__(
        self,
        name: str,
        plugins: Mapping[str, PluginList],
        *,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng or random.Random()
        self._plugins = {point: [p for p, _ in entries] for point, entries in plugins.items()}
        sorters = self._plugins.get("queueSort", [])
        if len(sorters) != 1:
            raise ValueError(f"profile {name!r}: exactly one queueSort plugin must be enabled")
        if not self._plugins.get("bind"):
            raise ValueError(f"profile {name!r}: at least one bind plugin is needed")
        #: The queue sort, ``less(a, b)`` over queued pods; every profile of a process shares it.
        self.queue_sort_less: Callable[[Any, Any], bool] = sorters[0].less
        self._pre_enqueue = self._methods("preEnqueue", "pre_enqueue")
        self._pre_filters = self._methods("preFilter", "pre_filter")
        self._add_pod = [(n, p.add_pod) for n, p in self._named("preFilter") if hasattr(p, "add_pod")]
        self._remove_pod = [
            (n, p.remove_pod) for n, p in self._named("preFilter") if hasattr(p, "remove_pod")
        ]
        self._filters = self._methods("filter", "filter")
        self._post_filters = self._methods("postFilter", "post_filter")
        self._pre_scores = self._methods("preScore", "pre_score")
        self._reserves = self._plugins.get("reserve", [])
        self._binds = self._methods("bind", "bind")
        self._post_binds = self._methods("postBind", "post_bind")
        self._scores = [
            (_plugin_name(p), p.score, getattr(p, "normalize_score", None), weight or 1)
            for p, weight in plugins.get("score", ())
        ]
        self._next_start = 0

    def _named(self, point: str) -> list[tuple[str, Any]]:
        return [(_plugin_name(p), p) for p in self._plugins.get(point, [])]

    def _methods(self, point: str, method: str) -> list[tuple[str, Callable[..., Any]]]:
        return [(name, getattr(p, method)) for name, p in self._named(point)]

    def periodic_tasks(self) -> list[tuple[Any, float]]:
        """``(plugin, period)`` for plugins with periodic work: ``resync_period()`` not None; run ``resync()``."""
        tasks: list[tuple[Any, float]] = []
        seen: set[int] = set()
        for plugins in self._plugins.values():
            for plugin in plugins:
                period_of = getattr(plugin, "resync_period", None)
                if period_of is None or id(plugin) in seen:
                    continue
                seen.add(id(plugin))
                period = period_of()
                if period is not None:
                    tasks.append((plugin, period))
        return tasks

    # -------------------------------------------------------------------------- queue side

    def pre_enqueue(self, pod: Obj) -> Status:
        for name, fn in self._pre_enqueue:
            status = fn(pod)
            if not status.ok:
                return status.with_plugin(name)
        return Status.success()

    def events_to_register(self) -> dict[str, list[ClusterEvent]]:
        """Per plugin that may reject pods, the events that may make them schedulable again.

        Upstream registers every event for a plugin without ``events_to_register``.  The
        queue moves a pod on an event only if a plugin that rejected it registered a
        matching one.
        """
        events: dict[str, list[ClusterEvent]] = {}
        for point in _REQUEUE_POINTS:
            for plugin in self._plugins.get(point, []):
                register = getattr(plugin, "events_to_register", None)
                events[_plugin_name(plugin)] = list(register()) if register else [_ALL_EVENTS]
        return events

    # -------------------------------------------------------------------------- filtering

    def run_pre_filter(self, state: CycleState, pod: Obj) -> tuple[Status, frozenset[str] | None, set[str]]:
        """PreFilter plugins: (status, nodes they narrowed to or None, plugins that narrowed)."""
        nodes: frozenset[str] | None = None
        narrowing: set[str] = set()
        rejected: Status | None = None
        for name, fn in self._pre_filters:
            out = fn(state, pod)
            status, names = (out, None) if isinstance(out, Status) else out
            if status.code == Code.SKIP:
                state.skip_filter_plugins.add(name)
                continue
            if not status.ok:
                status = status.with_plugin(name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return status, None, set()
                if status.code == Code.UNSCHEDULABLE:
                    # Later PreFilters still run, so preemption can use their state.
                    rejected = status
                    continue
                raise SchedulingCycleError(
                    Status.error(f'running PreFilter plugin "{name}": {status.message}', name)
                )
            if names is not None:
                narrowing.add(name)
                nodes = names if nodes is None else nodes & names
                if not nodes:
                    if len(narrowing) == 1:
                        msg = f"node(s) didn't satisfy plugin {name}"
                    else:
                        msg = (
                            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}] simultaneously"
                        )
                    return Status.unresolvable(msg), nodes, narrowing
        return rejected or Status.success(), nodes, narrowing

    def _active_filters(self, state: CycleState) -> list[tuple[str, Callable[..., Status]]]:
        skip = state.skip_filter_plugins
        return [(n, fn) for n, fn in self._filters if n not in skip] if skip else self._filters

    @staticmethod
    def _filter_node(
        filters: Sequence[tuple[str, Callable[..., Status]]], state: CycleState, pod: Obj, node_info: NodeInfo
    ) -> Status:
        for name, fn in filters:
            status = fn(state, pod, node_info)
            if status.code:
                if status.code not in _REJECTED:
                    raise SchedulingCycleError(
                        Status.error(f'running "{name}" filter plugin: {status.message}', name)
                    )
                return status.with_plugin(name)
        return Status.success()

    def _run_extension(
        self,
        which: str,
        runners: Sequence[tuple[str, Callable[..., Status]]],
        state: CycleState,
        pod: Obj,
        info: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        for name, fn in runners:
            if name in state.skip_filter_plugins:
                continue
            status = fn(state, pod, info, node_info)
            if not status.ok:
                return Status.error(f'running {which} on PreFilter plugin "{name}": {status.message}', name)
        return Status.success()

    def run_add_pod(self, state: CycleState, pod: Obj, info: PodInfo, node_info: NodeInfo) -> Status:
        """PreFilter extensions once ``info`` was added to ``node_info`` (upstream ``RunPreFilterExtensionAddPod``)."""
        return self._run_extension("AddPod", self._add_pod, state, pod, info, node_info)

    def run_remove_pod(self, state: CycleState, pod: Obj, info: PodInfo, node_info: NodeInfo) -> Status:
        """PreFilter extensions once ``info`` was removed from ``node_info``."""
        return self._run_extension("RemovePod", self._remove_pod, state, pod, info, node_info)

    def run_filters(
        self, state: CycleState, pod: Obj, node_info: NodeInfo, nominated: Nominated | None = None
    ) -> Status:
        """Filter plugins on one node; with nominated pods of >= priority first (upstream two passes)."""
        filters = self._active_filters(state)
        extra = nominated.get(node_info.name) if nominated else None
        if extra:
            priority, uid = pod_priority(pod), (pod.get("metadata") or {}).get("uid")
            added = [p for p in extra if p.uid != uid and p.priority >= priority]
            if added:
                with_nominated, nominated_state = node_info.clone(), state.clone()
                for info in added:
                    with_nominated.add_pod(info)
                    status = self.run_add_pod(nominated_state, pod, info, with_nominated)
                    if not status.ok:
                        raise SchedulingCycleError(status)
                status = self._filter_node(filters, nominated_state, pod, with_nominated)
                if not status.ok:
                    return status
        return self._filter_node(filters, state, pod, node_info)

    def _find_feasible(
        self,
        state: CycleState,
        pod: Obj,
        nodes: Sequence[NodeInfo],
        statuses: dict[str, Status],
        nominated: Nominated | None,
    ) -> list[NodeInfo]:
        count = len(nodes)
        if not count:
            return []
        to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, count)
        start = self._next_start
        if not self._filters:
            return [nodes[(start + i) % count] for i in range(to_find)]
        feasible: list[NodeInfo] = []
        if not nominated:
            filters = self._active_filters(state)
            check = self._filter_node
            for i in range(count):
                node_info = nodes[(start + i) % count]
                status = check(filters, state, pod, node_info)
                if status.code:
                    statuses[node_info.name] = status
                else:
                    feasible.append(node_info)
                    if len(feasible) >= to_find:
                        break
            return feasible
        for i in range(count):
            node_info = nodes[(start + i) % count]
            status = self.run_filters(state, pod, node_info, nominated)
            if status.ok:
                feasible.append(node_info)
                if len(feasible) >= to_find:
                    break
            else:
                statuses[node_info.name] = status
        return feasible

    # -------------------------------------------------------------------------- the cycle

    def schedule(
        self, state: CycleState, pod: Obj, nodes: Sequence[NodeInfo], nominated: Nominated | None = None
    ) -> ScheduleResult:
        """Find a node for ``pod`` among ``nodes`` (upstream ``schedulePod`` + PostFilter)."""
        try:
            return self._schedule(state, pod, nodes, nominated)
        except SchedulingCycleError as exc:
            log.info("scheduling %s failed: %s", pod_key(pod), exc.status.message)
            return ScheduleResult(None, 0, 0, message=exc.status.message)

    def _schedule(
        self, state: CycleState, pod: Obj, nodes: Sequence[NodeInfo], nominated: Nominated | None
    ) -> ScheduleResult:
        if not nodes:
            raise NoNodesAvailableError(Status.unresolvable(NO_NODES_AVAILABLE))
        view = CycleView(
            nodes,
            lambda st, p, ni: self.run_filters(st, p, ni, nominated),
            self.run_add_pod,
            self.run_remove_pod,
            self.rng,
        )
        state.write(FRAMEWORK_KEY, view)
        status, narrowed, narrowing = self.run_pre_filter(state, pod)
        if not status.ok:
            fit = FitError(
                len(nodes),
                {},
                pre_filter_msg=status.message,
                unschedulable_plugins={status.plugin} if status.plugin else set(narrowing),
                absent_status=status,
            )
            return self._post_filter(state, pod, nodes, fit, evaluated=0)

        statuses: dict[str, Status] = {}
        nominated_name = (pod.get("status") or {}).get("nominatedNodeName")
        if nominated_name:
            chosen = next((n for n in nodes if n.name == nominated_name), None)
            if chosen is not None and self._find_feasible(state, pod, [chosen], statuses, nominated):
                return ScheduleResult(nominated_name, 1 + len(statuses), 1)

        candidates: Sequence[NodeInfo] = nodes
        absent: Status | None = None
        if narrowed is not None:
            candidates = [n for n in nodes if n.name in narrowed]
            absent = Status.unresolvable(f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]")
        feasible = self._find_feasible(state, pod, candidates, statuses, nominated)
        self._next_start = (self._next_start + len(feasible) + len(statuses)) % len(nodes)
        evaluated = len(feasible) + len(statuses)
        if not feasible:
            plugins = {s.plugin for s in statuses.values() if s.plugin} | narrowing
            fit = FitError(len(nodes), statuses, unschedulable_plugins=plugins, absent_status=absent)
            return self._post_filter(state, pod, nodes, fit, evaluated)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1)
        scores = self._prioritize(state, pod, feasible)
        return ScheduleResult(select_host(scores, self.rng), evaluated, len(feasible))

    def _post_filter(
        self, state: CycleState, pod: Obj, nodes: Sequence[NodeInfo], fit: FitError, evaluated: int
    ) -> ScheduleResult:
        if not self._post_filters:
            return ScheduleResult(None, evaluated, 0, fit)
        statuses = fit.all_statuses(nodes)
        nominated: str | None = None
        reasons: list[str] = []
        status = Status.success()
        for name, fn in self._post_filters:
            result, status = fn(state, pod, statuses)
            if status.ok or status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                nominated = result
                break
            if not status.rejected:
                log.error("PostFilter plugin %s failed for pod %s: %s", name, pod_key(pod), status.message)
                nominated = None
                break
            if result is not None:
                nominated = result
            reasons.extend(status.reasons)
        else:
            status = Status.unschedulable(*reasons)
        fit.post_filter_msg = status.message
        victims = tuple(state.read(VICTIMS_KEY) or ()) if status.ok else ()
        return ScheduleResult(None, evaluated, 0, fit, nominated, victims)

    def _prioritize(self, state: CycleState, pod: Obj, feasible: list[NodeInfo]) -> list[tuple[str, int]]:
        """PreScore, Score, NormalizeScore and weights: each feasible node's total (upstream ``prioritizeNodes``)."""
        if not self._scores:
            return [(n.name, 1) for n in feasible]
        for name, fn in self._pre_scores:
            status = fn(state, pod, feasible)
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(name)
            elif not status.ok:
                raise SchedulingCycleError(
                    Status.error(f'running PreScore plugin "{name}": {status.message}', name)
                )
        totals = dict.fromkeys((n.name for n in feasible), 0)
        skip = state.skip_score_plugins
        for name, score, normalize, weight in self._scores:
            if name in skip:
                continue
            scores: dict[str, int] = {}
            for node_info in feasible:
                value, status = score(state, pod, node_info)
                if not status.ok:
                    raise SchedulingCycleError(
                        Status.error(f'running Score plugin "{name}": {status.message}', name)
                    )
                scores[node_info.name] = value
            if normalize is not None:
                status = normalize(state, pod, scores)
                if not status.ok:
                    raise SchedulingCycleError(
                        Status.error(f'running Normalize on Score plugin "{name}": {status.message}', name)
                    )
            for node, value in scores.items():
                if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                    raise SchedulingCycleError(
                        Status.error(
                            f'plugin "{name}" returns an invalid score {value}, it should in the range of '
                            f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                            name,
                        )
                    )
                totals[node] += value * weight
        return list(totals.items())

    # -------------------------------------------------------------------------- after the cycle

    def run_reserve(self, state: CycleState, pod: Obj, node_name: str) -> Status:
        """Reserve plugins in order; the first failure stops (the caller then runs :meth:`run_unreserve`)."""
        for plugin in self._reserves:
            name = _plugin_name(plugin)
            status = plugin.reserve(state, pod, node_name)
            if not status.ok:
                if status.rejected:
                    return status.with_plugin(name)
                return Status.error(f'running Reserve plugin "{name}": {status.message}', name)
        return Status.success()

    def run_unreserve(self, state: CycleState, pod: Obj, node_name: str) -> None:
        for plugin in reversed(self._reserves):
            plugin.unreserve(state, pod, node_name)

    async def run_bind(self, state: CycleState, pod: Obj, node_name: str) -> Status:
        """The first bind plugin that does not return Skip binds the pod."""
        status = Status.skip()
        for name, fn in self._binds:
            status = await fn(state, pod, node_name)
            if status.code == Code.SKIP:
                continue
            if status.ok:
                return status
            if status.rejected:
                return status.with_plugin(name)
            return Status.error(f'running Bind plugin "{name}": {status.message}', name)
        return status

    def run_post_bind(self, state: CycleState, pod: Obj, node_name: str) -> None:
        for _name, fn in self._post_binds:
            fn(state, pod, node_name)


def build_profile(
    config: ProfileConfig,
    registry: Mapping[str, type],
    handle: Handle,
    *,
    rng: random.Random | None = None,
    percentage_of_nodes_to_score: int = 0,
) -> Profile:
    """Instantiate a resolved profile: one instance per plugin (``cls(args, handle)``) shared by its points.

    ``percentage_of_nodes_to_score`` is the configuration-wide value, used when the profile
    sets none.
    """
    instances: dict[str, Any] = {}

    def instance(name: str) -> Any:
        if name not in instances:
            instances[name] = registry[name](config.plugin_args.get(name), handle)
        return instances[name]

    plugins: dict[str, list[tuple[Any, int]]] = {
        point: [(instance(ref.name), ref.weight) for ref in refs] for point, refs in config.plugins.items()
    }
    percentage = config.percentage_of_nodes_to_score
    return Profile(
        config.scheduler_name,
        plugins,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score if percentage is None else percentage,
        rng=rng,
    )
