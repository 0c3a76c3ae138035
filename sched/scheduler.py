"""The scheduling loop: watch caches in, one pod at a time through its profile, bindings out.

This is the thin I/O shell around the pure framework (:mod:`nrop.sched.framework.runtime`,
:mod:`nrop.sched.framework.queue`, :mod:`nrop.sched.framework.cache`).  It owns:

* the informers (pods of all namespaces, nodes, NRT objects when a profile uses the
  NodeResourceTopologyMatch plugin, namespaces when one uses InterPodAffinity) and how
  their events feed the cache and re-queue unschedulable pods (upstream's event
  handlers: a pod seen bound is ``AssignedPodAdd``, a bound pod whose labels change
  ``AssignedPodUpdate``, a bound pod deleted or finished a Pod delete);
* the scheduling cycle: pop a pod, run its profile over the cached nodes, *assume* the
  pod on the chosen node and run Reserve before the next pod is looked at;
* the binding cycle, in a task per pod so that a slow API never stalls scheduling:
  Bind, then PostBind and the ``Scheduled`` event, or, on failure, Unreserve, forget and
  back-off;
* failures: a ``FailedScheduling`` event with the upstream message, the
  ``PodScheduled=False`` condition, and the pod parked as unschedulable until a
  cluster event that could help it;
* the plugins' periodic work (the NRT cache resync);
* metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nrop.api.metatime import rfc3339
from nrop.api.restapi import PODS, ApiError, NotFoundError
from nrop.sched.config.configuration import SchedulerConfiguration
from nrop.sched.config.profile import DEFAULT_SCHEDULER_NAME, ProfileConfig
from nrop.sched.events import EventBroadcaster
from nrop.sched.framework import registry as plugin_registry
from nrop.sched.framework.cache import SchedulerCache, is_terminal
from nrop.sched.framework.cycle import ScheduleResult
from nrop.sched.framework.interface import (
    NRT_RESOURCE,
    ActionType,
    ClusterEvent,
    CycleState,
    Obj,
    PodInfo,
    Status,
    pod_key,
)
from nrop.sched.framework.queue import QueuedPodInfo, SchedulingQueue
from nrop.sched.framework.runtime import Profile, build_profile
from nrop.sched.informers import Informer, InformerFactory
from nrop.sched.kubeclient import KubeClient
from nrop.sched.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

NRT_PLUGIN = "NodeResourceTopologyMatch"
#: Reads Namespace labels (namespaceSelector of pod affinity terms).
INTER_POD_AFFINITY_PLUGIN = "InterPodAffinity"

_ASSIGNED_POD_ADD = ClusterEvent("Pod", ActionType.ADD, "AssignedPodAdd")
_ASSIGNED_POD_UPDATE = ClusterEvent("Pod", ActionType.UPDATE_POD_LABEL, "AssignedPodUpdate")


def _uses(profiles: Iterable[ProfileConfig], plugin: str) -> bool:
    return any(ref.name == plugin for p in profiles for refs in p.plugins.values() for ref in refs)


def node_change(old: Obj | None, new: Obj) -> ActionType:
    """Which upstream node actions an update amounts to (what re-queueing keys on)."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    o_status, n_status = old.get("status") or {}, new.get("status") or {}
    o_spec, n_spec = old.get("spec") or {}, new.get("spec") or {}
    if o_status.get("allocatable") != n_status.get("allocatable"):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        action |= ActionType.UPDATE_NODE_LABEL
    if o_spec.get("taints") != n_spec.get("taints") or o_spec.get("unschedulable") != n_spec.get(
        "unschedulable"
    ):
        action |= ActionType.UPDATE_NODE_TAINT
    if o_status.get("conditions") != n_status.get("conditions"):
        action |= ActionType.UPDATE_NODE_CONDITION
    return action


@dataclass
class _Handle:
    """What plugins of one profile see of the scheduler (the framework's ``Handle``)."""

    scheduler: Scheduler
    profile_name: str
    _pod_callbacks: list[Callable[[str, Obj], None]] = field(default_factory=list)
    _nrt_callbacks: list[Callable[[str, Obj], None]] = field(default_factory=list)

    def scheduler_names(self) -> frozenset[str]:
        return frozenset(self.scheduler.profiles)

    def list_pods(self) -> Iterable[Obj]:
        return self.scheduler.pods.list()

    def get_nrt(self, node_name: str) -> Obj | None:
        nrts = self.scheduler.nrts
        return None if nrts is None else nrts.get(node_name)

    def list_nrts(self) -> Iterable[Obj]:
        nrts = self.scheduler.nrts
        return [] if nrts is None else nrts.list()

    def get_namespace(self, name: str) -> Obj | None:
        namespaces = self.scheduler.namespaces
        return None if namespaces is None else namespaces.get(name)

    def list_namespaces(self) -> Iterable[Obj]:
        namespaces = self.scheduler.namespaces
        return [] if namespaces is None else namespaces.list()

    def on_pod_event(self, callback: Callable[[str, Obj], None]) -> None:
        self._pod_callbacks.append(callback)

    def on_nrt_event(self, callback: Callable[[str, Obj], None]) -> None:
        self._nrt_callbacks.append(callback)

    def now(self) -> float:
        return self.scheduler.clock()

    async def bind_pod(self, pod: Obj, node_name: str) -> None:
        await self.scheduler.client.bind(pod, node_name)


class Scheduler:
    """One scheduler process (or the embedded cluster's default scheduler).

    Profiles are built in :meth:`prepare`, once the watch caches are synced: the NRT
    plugin's over-reserve cache takes its initial NRT list then, before any leader election,
    as upstream's does; :meth:`run` starts scheduling (:meth:`start` does both).
    """

    def __init__(
        self,
        config: SchedulerConfiguration,
        client: KubeClient,
        *,
        metrics: SchedulerMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        events_client: KubeClient | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.clock = clock
        self.metrics = metrics or SchedulerMetrics()
        self.rng = rng
        self.cache = SchedulerCache()
        self.factory = InformerFactory(client)
        self.pods: Informer = self.factory.pods()
        self.nodes: Informer = self.factory.nodes()
        self.nrts: Informer | None = self.factory.nrts() if _uses(config.profiles, NRT_PLUGIN) else None
        self.namespaces: Informer | None = (
            self.factory.namespaces() if _uses(config.profiles, INTER_POD_AFFINITY_PLUGIN) else None
        )
        self.handles: dict[str, _Handle] = {}
        self.profiles: dict[str, Profile] = {}
        self.queue: SchedulingQueue  # built by start(), with the profiles
        # Events go through their own client (and rate limit), as kube-scheduler's do.
        self.broadcaster = EventBroadcaster(events_client or client)
        self.recorders = {
            p.scheduler_name: self.broadcaster.recorder(p.scheduler_name) for p in config.profiles
        }
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._running = False

    # --------------------------------------------------------------------------- lifecycle

    def _build_profiles(self) -> SchedulingQueue:
        for profile_config in self.config.profiles:
            name = profile_config.scheduler_name
            by_reason: dict[str, list[str]] = {}
            for plugin, reason in profile_config.skipped:
                by_reason.setdefault(reason, []).append(plugin)
            for reason, plugins in by_reason.items():
                log.warning("profile %s: %s: %s", name, reason, ", ".join(plugins))
            self.handles[name] = _Handle(self, name)
            self.profiles[name] = build_profile(
                profile_config,
                plugin_registry.REGISTRY,
                self.handles[name],
                rng=self.rng,
                percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score,
            )
        first = next(iter(self.profiles.values()))
        return SchedulingQueue(
            first.queue_sort_less,
            clock=self.clock,
            initial_backoff=float(self.config.pod_initial_backoff_seconds),
            max_backoff=float(self.config.pod_max_backoff_seconds),
            events_to_register={name: p.events_to_register() for name, p in self.profiles.items()},
            pre_enqueue=lambda pod: self._profile_of(pod).pre_enqueue(pod),
        )

    async def start(self) -> None:
        """Start the watch caches, wait until they are synced, then start scheduling."""
        await self.prepare()
        self.run()

    async def prepare(self) -> None:
        """Everything but scheduling: synced watch caches, the profiles, the queue they feed.

        kube-scheduler does this before it takes part in leader election: a candidate's
        queue fills in the order the pods arrive while another instance still leads.
        """
        self.broadcaster.start()
        self.factory.start()
        log.info("scheduler: waiting for the pod, node, NRT and namespace caches to sync")
        await self.factory.wait_synced()
        self.queue = self._build_profiles()
        # Handlers replay what the caches hold, so the scheduler cache and queue start complete.
        self.nodes.add_handler(self._on_node)
        self.pods.add_handler(self._on_pod)
        if self.nrts is not None:
            self.nrts.add_handler(self._on_nrt, replay=False)
        log.info(
            "scheduler ready: profiles %s, %d nodes, %d pods",
            sorted(self.profiles),
            self.cache.node_count(),
            self.cache.pod_count(),
        )

    def run(self) -> None:
        """Start scheduling (after :meth:`prepare`): the scheduling loop and the plugins' periodic work."""
        self._running = True
        self._spawn(self._schedule_loop(), "schedule-loop")
        for name, profile in self.profiles.items():
            for plugin, period in profile.periodic_tasks():
                self._spawn(self._periodic(plugin, period), f"{name}-periodic")
        log.info("scheduler started: %d pods pending", sum(self.queue.pending_counts().values()))

    async def stop(self) -> None:
        self._running = False
        self._wake.set()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.broadcaster.close()
        await self.factory.close()

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --------------------------------------------------------------------------- event handlers

    def _profile_of(self, pod: Obj) -> Profile:
        return self.profiles[_scheduler_name(pod)]

    def _responsible_for(self, pod: Obj) -> bool:
        return _scheduler_name(pod) in self.profiles

    def _to_queue(self, pod: Obj, old: Obj | None) -> bool:
        """Whether an unbound pod's add or update goes to the queue.

        As upstream's ``updatePodInSchedulingQueue``, a pod being bound (our own late
        PodScheduled=False write lands, say) and an update carrying the same object are not
        queued again: the pod would go through a second scheduling cycle.
        """
        if not self._responsible_for(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return False
        return not self.cache.is_assumed(pod) and not _same_version(old, pod)

    def _on_pod(self, event: str, pod: Obj, old: Obj | None) -> None:
        spec = pod.get("spec") or {}
        bound = bool(spec.get("nodeName"))
        if event == "DELETED":
            if bound:
                self.cache.remove_pod(pod)
                self._move(ClusterEvent("Pod", ActionType.DELETE))
            else:
                self.queue.delete(pod)
        elif bound:
            was_bound = old is not None and bool((old.get("spec") or {}).get("nodeName"))
            self.cache.add_or_update_pod(pod)
            if not was_bound:
                self.queue.delete(pod)
            if is_terminal(pod) and not (old is not None and is_terminal(old)):
                # A finished pod frees its resources like a deleted one.
                self._move(ClusterEvent("Pod", ActionType.DELETE))
            elif not is_terminal(pod):
                if not was_bound:
                    # A pod some pending pod's affinity waits for may just have been placed.
                    self._move(_ASSIGNED_POD_ADD)
                elif _labels(old) != _labels(pod):
                    self._move(_ASSIGNED_POD_UPDATE)
        elif self._to_queue(pod, old):
            if event == "ADDED" or old is None:
                self.queue.add(pod)
            else:
                self.queue.update(old, pod)
            self._wake.set()
        for handle in self.handles.values():
            for callback in handle._pod_callbacks:
                callback(event, pod)

    def _on_node(self, event: str, node: Obj, old: Obj | None) -> None:
        if event == "DELETED":
            self.cache.remove_node(node)
            return
        self.cache.add_or_update_node(node)
        action = node_change(old if event != "ADDED" else None, node)
        if action:
            self._move(ClusterEvent("Node", action))

    def _on_nrt(self, event: str, nrt: Obj, old: Obj | None) -> None:
        for handle in self.handles.values():
            for callback in handle._nrt_callbacks:
                callback(event, nrt)
        if event == "ADDED":
            self._move(ClusterEvent(NRT_RESOURCE, ActionType.ADD))
        elif event == "MODIFIED":
            self._move(ClusterEvent(NRT_RESOURCE, ActionType.UPDATE))

    def _move(self, event: ClusterEvent) -> None:
        if self.queue.move_all_to_active_or_backoff(event):
            self._wake.set()

    # --------------------------------------------------------------------------- scheduling cycle

    async def _schedule_loop(self) -> None:
        while self._running:
            item = self.queue.pop()
            self.metrics.set_pending(self.queue.pending_counts())
            if item is None:
                self._wake.clear()
                delay = self.queue.next_wakeup()
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay if delay is not None else 1.0):
                        await self._wake.wait()
                continue
            try:
                self.schedule_one(item)
            except Exception:  # a bug in a plugin must not stop the scheduler
                log.exception("scheduling %s failed unexpectedly", pod_key(item.pod))
                self.queue.add_backoff(item)
            # Let watch events and bindings through between pods, as upstream's goroutines would.
            await asyncio.sleep(0)

    def schedule_one(self, item: QueuedPodInfo) -> None:
        pod = item.pod
        profile = self._profile_of(pod)
        start = self.clock()
        state = CycleState()
        result = profile.schedule(state, pod, self.cache.node_infos(), self.queue.nominated())
        if result.node is None:
            self._failed(profile, item, result, start)
            return
        assumed = _with_node(pod, result.node)
        self.cache.assume(assumed, result.node)
        status = profile.run_reserve(state, assumed, result.node)
        if not status.ok:
            profile.run_unreserve(state, assumed, result.node)
            self.cache.forget(assumed)
            self._report_failure(profile, item, status.message, "error", start)
            self.queue.add_backoff(item)
            return
        self.queue.done(pod)
        self._spawn(self._binding_cycle(profile, item, state, assumed, result.node, start), "bind")

    async def _binding_cycle(
        self, profile: Profile, item: QueuedPodInfo, state: CycleState, pod: Obj, node: str, start: float
    ) -> None:
        try:
            status = await profile.run_bind(state, pod, node)
        except ApiError as exc:
            status = Status.error(str(exc))
        if status.ok:
            profile.run_post_bind(state, pod, node)
            self.recorders[profile.name].scheduled(pod, node)
            self.metrics.observe_attempt("scheduled", profile.name, self.clock() - start, item.attempts)
            return
        message = f"Binding rejected: {status.message}"
        log.warning("binding %s to %s failed: %s", pod_key(pod), node, message)
        profile.run_unreserve(state, pod, node)
        self.cache.forget(pod)
        self._report_failure(profile, item, message, "error", start)
        self._requeue_after_failure(item)
        self._wake.set()

    def _requeue_after_failure(self, item: QueuedPodInfo) -> None:
        """Back-off re-queue after a failed binding cycle (upstream ``handleSchedulingFailure``).

        The pod is looked up in the informer cache first: one deleted while it was being bound
        (its delete event found it neither queued nor in flight) or bound meanwhile is not re-queued,
        or the scheduler would retry a pod that no longer exists forever.
        """
        current = self.pods.get(item.key)
        if current is None:
            log.info("pod %s does not exist in informer cache: not re-queued", item.key)
            return
        if (current.get("spec") or {}).get("nodeName"):
            log.info("pod %s has been assigned to a node meanwhile: not re-queued", item.key)
            return
        item.pod_info = PodInfo.of(current)
        self.queue.add_backoff(item)

    def _failed(self, profile: Profile, item: QueuedPodInfo, result: ScheduleResult, start: float) -> None:
        if result.error is None:  # an internal error of a plugin: retry after back-off
            self._report_failure(profile, item, result.message or "scheduler error", "error", start)
            self.queue.add_backoff(item)
            return
        message = result.error.message()
        self._report_failure(profile, item, message, "unschedulable", start)
        self.queue.add_unschedulable(item, result.error.unschedulable_plugins)
        if result.nominated_node is not None:
            self._spawn(self._preempt(item.pod, result), "preempt")

    def _report_failure(
        self, profile: Profile, item: QueuedPodInfo, message: str, result: str, start: float
    ) -> None:
        pod = item.pod
        self.metrics.observe_attempt(result, profile.name, self.clock() - start, item.attempts)
        self.recorders[profile.name].failed_scheduling(pod, message)
        reason = "Unschedulable" if result == "unschedulable" else "SchedulerError"
        self._spawn(self._set_condition(pod, reason, message), "condition")

    async def _set_condition(self, pod: Obj, reason: str, message: str) -> None:
        meta = pod["metadata"]
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": rfc3339(datetime.now(UTC)),
                    }
                ]
            }
        }
        try:
            await self.client.patch_status(
                PODS, meta["name"], patch, meta["namespace"], patch_type="strategic"
            )
        except NotFoundError:
            pass
        except ApiError as exc:
            log.warning("could not set PodScheduled=False on %s: %s", pod_key(pod), exc)

    async def _preempt(self, pod: Obj, result: ScheduleResult) -> None:
        """Evict the victims PostFilter chose and nominate the node (upstream ``prepareCandidate``)."""
        meta = pod["metadata"]
        self.queue.set_nominated(pod, result.nominated_node)
        for victim in result.victims:
            vmeta = victim["metadata"]
            log.info("preempting %s on %s for %s", pod_key(victim), result.nominated_node, pod_key(pod))
            try:
                await self.client.delete(PODS, vmeta["name"], vmeta["namespace"])
            except NotFoundError:
                pass
            except ApiError as exc:
                log.warning("could not preempt %s: %s", pod_key(victim), exc)
        try:
            await self.client.patch_status(
                PODS,
                meta["name"],
                {"status": {"nominatedNodeName": result.nominated_node}},
                meta["namespace"],
            )
        except ApiError as exc:
            log.warning("could not nominate %s for %s: %s", result.nominated_node, pod_key(pod), exc)

    async def _periodic(self, plugin: Any, period: float) -> None:
        """A plugin's periodic work: now, then ``period`` seconds after each step (a sliding period).

        When an NRT cache resync flushed nodes, their reservations are gone and their data
        is fresh again, but no watch event says so (the NRT objects did not change): the
        unschedulable pods are re-queued as if those NRTs had been updated, so they do not
        wait for an unrelated cluster event.
        """
        while self._running:
            try:
                report = plugin.resync()
            except Exception:
                log.exception("periodic work of %s failed", plugin.name)
            else:
                if report is not None and getattr(report, "flushed", ()):
                    log.debug("%s: resync flushed %s", plugin.name, ", ".join(report.flushed))
                    self._move(ClusterEvent(NRT_RESOURCE, ActionType.UPDATE))
            await asyncio.sleep(period)


def _scheduler_name(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME


def _same_version(old: Obj | None, new: Obj) -> bool:
    """An update event that carries the object it replaces (same resourceVersion)."""
    if old is None:
        return False
    version = (new.get("metadata") or {}).get("resourceVersion")
    return version is not None and (old.get("metadata") or {}).get("resourceVersion") == version


def _labels(obj: Obj | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _with_node(pod: Obj, node: str) -> Obj:
    spec = dict(pod.get("spec") or {})
    spec["nodeName"] = node
    return {**pod, "spec": spec}
