"""The scheduling queue: pending pods in active, back-off and unschedulable sets (upstream ``PriorityQueue``).

Behaviour reproduced (kube-scheduler v1.33, queueing hints on, ``SchedulerPopFromBackoffQ`` on):

* **activeQ** is a heap in the profile's queue-sort order; **backoffQ** holds pods until
  their back-off ends (``initial * 2^(attempts-1)``, capped at ``max``; the expiry is
  truncated to whole seconds and a pod leaves back-off in the window after it);
  pods that failed with an error (no rejecting plugin) wait in a separate error back-off
  heap.  When activeQ is empty, :meth:`SchedulingQueue.pop` takes the head of backoffQ
  early (not of the error heap).
* **unschedulable** pods wait for a cluster event that one of their rejecting plugins
  registered (:meth:`SchedulingQueue.move_all_to_active_or_backoff`); events seen while a
  pod was being scheduled are replayed when it comes back; after 5 minutes (checked every
  30 s) they are moved anyway.
* PreEnqueue plugins gate pods: a gated pod stays in the unschedulable map (counted as
  ``gated``) until an update makes the gates pass.
* Events are matched per profile (the pod's ``spec.schedulerName``) and per plugin, as
  upstream's queueing-hint map: ``events_to_register[profile][plugin]``.
* The nominator: which pending pods were nominated to which node by preemption.

No timers run here: :meth:`SchedulingQueue.pop` moves what is due by the injected clock,
and :meth:`SchedulingQueue.next_wakeup` tells the I/O loop how long it may sleep.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from nrop.sched.framework.interface import ActionType, ClusterEvent, Obj, PodInfo, Status, pod_key

log = logging.getLogger(__name__)

DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0
BACKOFF_WINDOW = 1.0

#: The wildcard event of the periodic flush (upstream ``UnschedulableTimeout``).
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", ActionType.ALL, "UnschedulableTimeout")
_POD_UPDATE = ClusterEvent("Pod", ActionType.UPDATE, "UnscheduledPodUpdate")
_ALL_EVENTS = (ClusterEvent("*", ActionType.ALL),)
_DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(eq=False, slots=True)
class QueuedPodInfo:
    """A pending pod and its queue bookkeeping (upstream ``framework.QueuedPodInfo``)."""

    pod_info: PodInfo
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated_by: Status | None = None
    backoff_expiration: float | None = None

    @property
    def pod(self) -> Obj:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return self.pod_info.key

    @property
    def priority(self) -> int:
        return self.pod_info.priority

    @property
    def gated(self) -> bool:
        return self.gated_by is not None


T = TypeVar("T")


class _Heap(Generic[T]):
    """A binary heap keyed by pod key, with removal and in-place update (upstream ``heap.Heap``)."""

    def __init__(self, less: Callable[[T, T], bool], key: Callable[[T], str]) -> None:
        self._less = less
        self._key = key
        self._items: list[T] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def add_or_update(self, item: T) -> None:
        key = self._key(item)
        i = self._index.get(key)
        if i is None:
            self._items.append(item)
            i = len(self._items) - 1
            self._index[key] = i
        else:
            self._items[i] = item
        self._fix(i)

    def pop(self) -> T:
        item = self._items[0]
        self.delete(self._key(item))
        return item

    def delete(self, key: str) -> T | None:
        i = self._index.pop(key, None)
        if i is None:
            return None
        item = self._items[i]
        last = self._items.pop()
        if i < len(self._items):
            self._items[i] = last
            self._index[self._key(last)] = i
            self._fix(i)
        return item

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _fix(self, i: int) -> None:
        items, less = self._items, self._less
        while i > 0 and less(items[i], items[(i - 1) // 2]):
            self._swap(i, (i - 1) // 2)
            i = (i - 1) // 2
        n = len(items)
        while True:
            smallest, left, right = i, 2 * i + 1, 2 * i + 2
            if left < n and less(items[left], items[smallest]):
                smallest = left
            if right < n and less(items[right], items[smallest]):
                smallest = right
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest


def _queued_key(info: QueuedPodInfo) -> str:
    return info.key


def _scheduling_view(pod: Obj) -> Obj:
    """The pod without what changes nothing for scheduling (upstream ``isPodUpdated``)."""
    meta = {
        k: v
        for k, v in (pod.get("metadata") or {}).items()
        if k not in ("resourceVersion", "generation", "managedFields")
    }
    return {**{k: v for k, v in pod.items() if k != "status"}, "metadata": meta}


@dataclass(slots=True)
class _InFlight:
    events: list[ClusterEvent] = field(default_factory=list)
    deleted: bool = False


class SchedulingQueue:
    """Pending pods of one scheduler process.

    ``less`` is the queue sort (``Profile.queue_sort_less``), ``pre_enqueue(pod) -> Status``
    the PreEnqueue plugins of the pod's profile, ``events_to_register`` maps profile name ->
    plugin -> the events it registered (``Profile.events_to_register()``; a plugin or
    profile not listed reacts to every event) and ``clock()`` is monotonic seconds.
    """

    def __init__(
        self,
        less: Callable[[Any, Any], bool],
        *,
        pre_enqueue: Callable[[Obj], Status],
        events_to_register: Mapping[str, Mapping[str, Sequence[ClusterEvent]]],
        clock: Callable[[], float],
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        pop_from_backoff: bool = True,
    ) -> None:
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._events = events_to_register
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.pop_from_backoff = pop_from_backoff
        self._active: _Heap[QueuedPodInfo] = _Heap(less, _queued_key)
        self._backoff: _Heap[QueuedPodInfo] = _Heap(self._less_backoff_with_priority, _queued_key)
        self._error_backoff: _Heap[QueuedPodInfo] = _Heap(self._less_backoff, _queued_key)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, _InFlight] = {}
        self._nominated_node: dict[str, str] = {}
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        self._next_leftover_flush = clock() + UNSCHEDULABLE_FLUSH_INTERVAL

    # -------------------------------------------------------------------------- back-off

    def backoff_duration(self, attempts: int) -> float:
        if attempts == 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, attempts):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return duration

    def _backoff_time(self, info: QueuedPodInfo) -> float:
        if info.attempts == 0:
            return -math.inf
        if info.backoff_expiration is None:
            expiry = info.timestamp + self.backoff_duration(info.attempts)
            info.backoff_expiration = self._align(expiry)
        return info.backoff_expiration

    def _align(self, t: float) -> float:
        return math.floor(t / BACKOFF_WINDOW) * BACKOFF_WINDOW if self.pop_from_backoff else t

    def is_backing_off(self, info: QueuedPodInfo) -> bool:
        expiry = self._backoff_time(info)
        if self.pop_from_backoff:
            # The window the expiry falls in still counts as back-off.
            return expiry >= self._align(self._clock())
        return expiry > self._clock()

    def _less_backoff(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._backoff_time(a) < self._backoff_time(b)

    def _less_backoff_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta, tb = self._backoff_time(a), self._backoff_time(b)
        if ta != tb:
            return ta < tb
        return self._less(a, b)

    # -------------------------------------------------------------------------- moves

    def _gate(self, info: QueuedPodInfo) -> bool:
        """Run PreEnqueue; a gated pod records the gating plugin as its rejector."""
        status = self._pre_enqueue(info.pod)
        if status.ok:
            info.gated_by = None
            return False
        info.gated_by = status
        info.unschedulable_plugins = {status.plugin} if status.plugin else set()
        return True

    def _to_active(self, info: QueuedPodInfo, *, gate: bool = True) -> bool:
        if gate and self._gate(info):
            self._unschedulable[info.key] = info
            return False
        self._unschedulable.pop(info.key, None)
        self._active.add_or_update(info)
        return True

    def _to_backoff(self, info: QueuedPodInfo) -> bool:
        if self._gate(info):
            self._unschedulable[info.key] = info
            return False
        self._unschedulable.pop(info.key, None)
        if info.unschedulable_plugins or info.pending_plugins:
            self._backoff.add_or_update(info)
        else:
            self._error_backoff.add_or_update(info)
        return True

    def _worth_requeuing(self, info: QueuedPodInfo, event: ClusterEvent) -> bool:
        rejectors = info.unschedulable_plugins | info.pending_plugins
        if not rejectors or event.resource == "*":
            return True
        profile = self._events.get(
            (info.pod.get("spec") or {}).get("schedulerName") or _DEFAULT_SCHEDULER, {}
        )
        return any(
            registered.matches(event)
            for plugin in rejectors
            for registered in profile.get(plugin, _ALL_EVENTS)
        )

    def _requeue(self, info: QueuedPodInfo, worth: bool) -> str:
        if not worth:
            self._unschedulable[info.key] = info
            return "unschedulable"
        if self.is_backing_off(info):
            return "backoff" if self._to_backoff(info) else "unschedulable"
        return "active" if self._to_active(info) else "unschedulable"

    def _flush(self) -> None:
        for heap in (self._backoff, self._error_backoff):
            while (head := heap.peek()) is not None and not self.is_backing_off(head):
                heap.pop()
                self._to_active(head, gate=False)
        now = self._clock()
        if now >= self._next_leftover_flush:
            self._next_leftover_flush = now + UNSCHEDULABLE_FLUSH_INTERVAL
            stale = [i for i in self._unschedulable.values() if now - i.timestamp > self.max_in_unschedulable]
            for info in stale:
                self._unschedulable.pop(info.key, None)
                self._requeue(info, True)

    # -------------------------------------------------------------------------- pod events

    def _find(self, key: str) -> QueuedPodInfo | None:
        return (
            self._active.get(key)
            or self._backoff.get(key)
            or self._error_backoff.get(key)
            or self._unschedulable.get(key)
        )

    def add(self, pod: Obj) -> None:
        """A new pending pod (upstream ``Add``): to activeQ unless a PreEnqueue plugin gates it."""
        key = pod_key(pod)
        if self._find(key) is not None or key in self._in_flight:
            self.update(None, pod)
            return
        self._to_active(QueuedPodInfo(PodInfo.of(pod), self._clock()))
        self._update_nominated(pod)

    def update(self, old: Obj | None, pod: Obj) -> None:
        """A pending pod changed from ``old`` (None: unknown) to ``pod`` (upstream ``Update``)."""
        key = pod_key(pod)
        self._update_nominated(pod)
        flight = self._in_flight.get(key)
        if flight is not None:
            # A status-only write (such as our own PodScheduled condition) changes nothing.
            if old is None or _scheduling_view(old) != _scheduling_view(pod):
                flight.events.append(_POD_UPDATE)
            return
        for heap in (self._active, self._backoff, self._error_backoff):
            info = heap.get(key)
            if info is not None:
                info.pod_info = PodInfo.of(pod)
                heap.add_or_update(info)
                return
        info = self._unschedulable.get(key)
        if info is None:
            self.add(pod)
            return
        changed = _scheduling_view(old if old is not None else info.pod) != _scheduling_view(pod)
        info.pod_info = PodInfo.of(pod)
        if changed:
            del self._unschedulable[key]
            self._requeue(info, self._worth_requeuing(info, _POD_UPDATE))

    def delete(self, pod: Obj) -> None:
        """The pod is gone or no longer pending (bound, deleted, another scheduler's)."""
        key = pod_key(pod)
        for heap in (self._active, self._backoff, self._error_backoff):
            heap.delete(key)
        self._unschedulable.pop(key, None)
        flight = self._in_flight.get(key)
        if flight is not None:
            flight.deleted = True
        self._remove_nominated(key)

    def move_all_to_active_or_backoff(self, event: ClusterEvent) -> bool:
        """A cluster event: pods waiting for it leave the unschedulable map (upstream, with queueing hints).

        Returns whether a pod moved to the active or back-off queue (the loop may wake up).
        """
        for flight in self._in_flight.values():
            flight.events.append(event)
        moved = False
        for info in list(self._unschedulable.values()):
            if self._worth_requeuing(info, event):
                del self._unschedulable[info.key]
                moved = self._requeue(info, True) != "unschedulable" or moved
        return moved

    # -------------------------------------------------------------------------- the scheduling loop

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None; it is in flight until :meth:`done` or :meth:`add_unschedulable`."""
        self._flush()
        if self._active:
            info = self._active.pop()
        elif self.pop_from_backoff and self._backoff:
            info = self._backoff.pop()
        else:
            return None
        info.attempts += 1
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._clock()
        info.unschedulable_plugins = set()
        info.pending_plugins = set()
        info.backoff_expiration = None
        self._in_flight[info.key] = _InFlight()
        return info

    def done(self, pod: Obj) -> None:
        """The in-flight pod was scheduled (assumed on a node): forget its in-flight events."""
        self._in_flight.pop(pod_key(pod), None)

    def add_backoff(self, info: QueuedPodInfo) -> str:
        """Put back a pod whose attempt failed with an error (no rejecting plugin): error back-off."""
        return self.add_unschedulable(info, ())

    def add_unschedulable(self, info: QueuedPodInfo, plugins: Iterable[str]) -> str:
        """Put back a pod the ``plugins`` rejected (upstream ``AddUnschedulableIfNotPresent``).

        ``plugins`` is ``FitError.unschedulable_plugins``.  Events seen while the pod was in
        flight decide whether it waits in the unschedulable map or goes to back-off (or
        active).  Returns where it went ("dropped" if the pod was deleted meanwhile).
        """
        info.unschedulable_plugins = set(plugins)
        flight = self._in_flight.pop(info.key, _InFlight())
        if flight.deleted:
            return "dropped"
        if self._find(info.key) is not None:
            log.warning("pod %s is already queued; not re-adding it", info.key)
            return "dropped"
        info.timestamp = self._clock()
        info.backoff_expiration = None
        if not (info.unschedulable_plugins or info.pending_plugins):
            worth = True
        else:
            worth = any(self._worth_requeuing(info, event) for event in flight.events)
        return self._requeue(info, worth)

    def next_wakeup(self) -> float | None:
        """Seconds until :meth:`pop` may return a pod it cannot return now; None when only events can help."""
        if self._active or (self.pop_from_backoff and self._backoff):
            return 0.0
        now = self._clock()
        due: list[float] = []
        for heap in (self._backoff, self._error_backoff):
            head = heap.peek()
            if head is not None:
                expiry = self._backoff_time(head)
                due.append(expiry + BACKOFF_WINDOW if self.pop_from_backoff else expiry)
        if self._unschedulable:
            due.append(self._next_leftover_flush)
        return max(0.0, min(due) - now) if due else None

    def pending_counts(self) -> dict[str, int]:
        gated = sum(1 for info in self._unschedulable.values() if info.gated)
        return {
            "active": len(self._active),
            "backoff": len(self._backoff) + len(self._error_backoff),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def where(self, key: str) -> str | None:
        """Which set holds the pod: active, backoff, unschedulable, gated, in-flight or None."""
        if key in self._active:
            return "active"
        if key in self._backoff or key in self._error_backoff:
            return "backoff"
        info = self._unschedulable.get(key)
        if info is not None:
            return "gated" if info.gated else "unschedulable"
        return "in-flight" if key in self._in_flight else None

    # -------------------------------------------------------------------------- nominator

    def _update_nominated(self, pod: Obj) -> None:
        node = (pod.get("status") or {}).get("nominatedNodeName") or ""
        self.set_nominated(pod, node)

    def set_nominated(self, pod: Obj, node_name: str) -> None:
        """Record (or with "" clear) the node preemption nominated for a pending pod."""
        key = pod_key(pod)
        self._remove_nominated(key)
        if node_name:
            self._nominated_node[key] = node_name
            self._nominated.setdefault(node_name, {})[key] = PodInfo.of(pod)

    def _remove_nominated(self, key: str) -> None:
        node = self._nominated_node.pop(key, None)
        if node is not None:
            pods = self._nominated.get(node, {})
            pods.pop(key, None)
            if not pods:
                self._nominated.pop(node, None)

    def nominated(self) -> dict[str, list[PodInfo]]:
        """Node name -> pods nominated there (what :meth:`nrop.sched.framework.runtime.Profile.schedule` takes)."""
        return {node: list(pods.values()) for node, pods in self._nominated.items()}
