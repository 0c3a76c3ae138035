"""Where NodeResourceTopologyMatch gets NRT objects from: upstream's three caches (``cache`` package).

* :class:`PassthroughCache` reads the latest object every time (no Reserve bookkeeping);
* :class:`DiscardReservedCache` hides a node's NRT (``invalid node topology data``)
  while a pod reserved on it has not been bound yet;
* :class:`OverReserveCache` keeps the objects listed at start-up and subtracts the
  requests of pods it reserved from **every** zone (pessimistic over-allocation) until
  a resync proves the exporter has seen those pods: a node is resynced only when it is
  dirty (a Filter failed on it, or a foreign pod landed there) and the pods fingerprint
  the NRT carries matches the pods the scheduler sees, or when its topology-manager
  configuration changed.

One deliberate difference from upstream's OverReserve: a dirty node is not flushed while a
pod this cache reserved on it is still on its way (listed unbound, or bound and Pending).
Such a pod is in neither fingerprint yet (the exporter has not published it, the pod
listing leaves Pending pods out), so upstream's check matches and the flush drops the
pod's reservation before any NRT counts it: the next pod is then placed on resources
already taken and the kubelet rejects it (``TopologyAffinityError``). Upstream's review
of the cache (scheduler-plugins#437) names this window; its specs assume it is never hit.
Waiting for the pod to run (or end, or go away) keeps the node over-reserved a little
longer, the safe direction, and decides nothing else differently.

Decoding is memoized: :class:`ParsedNRTs` decodes an object once per
``(name, resourceVersion)``, and the OverReserve cache keeps per node the sum of its
assumed requests and the view derived from it, rebuilt only when a reservation or a
flush changes them. Each lookup hands out a shallow copy (its own zone list; zones and
resources are shared and must be treated as read-only, which the filter and score do:
they copy amounts into their own NUMA node lists).

These are plain classes with no I/O and no threads: NRT objects and pod lists are
passed in (getters over the scheduler's watch caches), and the periodic
:meth:`OverReserveCache.resync` is called by whoever owns the loop. Nothing here locks:
the caller serialises calls, as the scheduling loop does. Dirty nodes are visited in
name order where upstream walks a Go map; the outcome does not depend on the order.

:class:`SchedulerProfiles` is upstream's process-wide set of the profile names whose NRT
plugin tracks foreign pods: a bound pod whose ``schedulerName`` is not in it is foreign.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from nrop.api import fingerprint
from nrop.api.nrt import NodeResourceTopology, ResourceInfo, topology_manager_config
from nrop.api.quantity import Quantity
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    CacheArgs,
    CacheResyncMethod,
    ForeignPodsDetectMode,
    InformerMode,
)
from nrop.sched.framework.podrequests import ResourceList, are_exclusive_for_pod, pod_effective_request

__all__ = [
    "PROCESS_PROFILES",
    "CachedNRT",
    "DesyncedNodes",
    "DiscardReservedCache",
    "NRTCache",
    "NRTGetter",
    "OverReserveCache",
    "ParsedNRTs",
    "PassthroughCache",
    "PodData",
    "ResyncReport",
    "SchedulerProfiles",
    "nrt_from_object",
    "nrt_resource_names",
    "nrt_view",
    "pod_fingerprint_for_node_topology",
    "pods_on_their_way",
    "subtract_assumed",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
NRTGetter = Callable[[str], "Obj | None"]
"""``get_nrt(node_name)``: the latest NRT object of a node, or None (the scheduler's watch cache)."""

_ZERO: Final = Quantity(0)


@dataclass(frozen=True, slots=True)
class CachedNRT:
    """What a cache answers for a node: the object to use (None: the node has no NRT) and whether to trust it."""

    nrt: NodeResourceTopology | None
    fresh: bool
    generation: int = 0


class NRTCache(Protocol):
    """The calls the plugin makes on any cache (upstream ``cache.Interface``)."""

    def get_cached_nrt_copy(self, node_name: str, pod: Obj) -> CachedNRT: ...
    def node_maybe_over_reserved(self, node_name: str, pod: Obj) -> None: ...
    def reserve(self, node_name: str, pod: Obj) -> None: ...
    def unreserve(self, node_name: str, pod: Obj) -> None: ...
    def post_bind(self, node_name: str, pod: Obj) -> None: ...


def nrt_from_object(obj: Obj | None) -> NodeResourceTopology | None:
    """Decode an NRT body; a malformed one counts as missing (upstream's decode error), logged."""
    if obj is None:
        return None
    try:
        return NodeResourceTopology.from_dict(obj)
    except (KeyError, TypeError, ValueError) as exc:
        name = (obj.get("metadata") or {}).get("name", "")
        log.warning("ignoring malformed NodeResourceTopology %r: %s", name, exc)
        return None


def nrt_resource_names(nrt: NodeResourceTopology | None) -> frozenset[str] | None:
    """Every resource name any zone lists (upstream ``ResourceNamesFromNRT``); None without an NRT."""
    if nrt is None:
        return None
    return frozenset(res.name for zone in nrt.zones for res in zone.resources)


def nrt_view(nrt: NodeResourceTopology) -> NodeResourceTopology:
    """A shallow copy a caller may reshape (its own zone list); zones and their resources are shared."""
    return NodeResourceTopology(
        nrt.name, list(nrt.zones), nrt.attributes, nrt.topology_policies, nrt.metadata
    )


class ParsedNRTs:
    """Decoded NRT objects, one per node, reused while the object's ``resourceVersion`` is unchanged.

    An object without a ``resourceVersion`` is decoded on every call (nothing proves it unchanged).
    """

    def __init__(self) -> None:
        self._parsed: dict[str, tuple[str, NodeResourceTopology | None]] = {}

    def get(self, obj: Obj | None) -> NodeResourceTopology | None:
        if obj is None:
            return None
        meta = obj.get("metadata") or {}
        name, version = str(meta.get("name", "")), str(meta.get("resourceVersion") or "")
        if version:
            hit = self._parsed.get(name)
            if hit is not None and hit[0] == version:
                return hit[1]
        nrt = nrt_from_object(obj)
        if version:
            self._parsed[name] = (version, nrt)
        return nrt


def subtract_assumed(nrt: NodeResourceTopology, assumed: ResourceList) -> NodeResourceTopology:
    """``nrt`` with ``assumed`` taken off every zone, clamped at 0; untouched zones are shared.

    With amounts >= 0, clamping the sum once equals clamping after each pod in turn.
    """
    zones = []
    for zone in nrt.zones:
        resources = [_take(res, assumed.get(res.name)) for res in zone.resources]
        changed = any(new is not old for new, old in zip(resources, zone.resources, strict=True))
        zones.append(dataclasses.replace(zone, resources=resources) if changed else zone)
    return NodeResourceTopology(nrt.name, zones, nrt.attributes, nrt.topology_policies, nrt.metadata)


def _sum_requests(requests: Iterable[ResourceList]) -> ResourceList:
    total: dict[str, Quantity] = {}
    for request in requests:
        for name, amount in request.items():
            total[name] = total[name] + amount if name in total else amount
    return total


def _pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def pods_on_their_way(pods: Iterable[Obj]) -> set[str]:
    """Keys of the listed pods not yet settled on a node: unbound, or bound and still Pending."""
    return {
        _pod_key(pod)
        for pod in pods
        if not _node_name(pod) or (pod.get("status") or {}).get("phase", "Pending") == "Pending"
    }


# ----------------------------------------------------------------------- passthrough


class PassthroughCache:
    """No cache: every lookup reads the latest object; a missing or bad one lets the node pass."""

    def __init__(self, get_nrt: NRTGetter) -> None:
        self._get_nrt = get_nrt
        self._parsed = ParsedNRTs()

    def get_cached_nrt_copy(self, node_name: str, pod: Obj) -> CachedNRT:
        nrt = self._parsed.get(self._get_nrt(node_name))
        return CachedNRT(None if nrt is None else nrt_view(nrt), fresh=True)

    def node_maybe_over_reserved(self, node_name: str, pod: Obj) -> None:
        """Nothing to resync without a cache."""

    def reserve(self, node_name: str, pod: Obj) -> None:
        """Nothing is accounted without a cache."""

    def unreserve(self, node_name: str, pod: Obj) -> None:
        """Nothing is accounted without a cache."""

    def post_bind(self, node_name: str, pod: Obj) -> None:
        """Nothing is accounted without a cache."""


class DiscardReservedCache(PassthroughCache):
    """Passthrough, except that a node with a reserved-but-unbound pod is not trusted at all."""

    def __init__(self, get_nrt: NRTGetter) -> None:
        super().__init__(get_nrt)
        self._reservations: dict[str, set[str]] = {}

    def get_cached_nrt_copy(self, node_name: str, pod: Obj) -> CachedNRT:
        if self._reservations.get(node_name):
            return CachedNRT(None, fresh=False)
        return super().get_cached_nrt_copy(node_name, pod)

    def reserve(self, node_name: str, pod: Obj) -> None:
        self._reservations.setdefault(node_name, set()).add(_uid(pod))

    def unreserve(self, node_name: str, pod: Obj) -> None:
        self._reservations.get(node_name, set()).discard(_uid(pod))

    def post_bind(self, node_name: str, pod: Obj) -> None:
        self._reservations.get(node_name, set()).discard(_uid(pod))


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


# ------------------------------------------------------------------ foreign pods


class SchedulerProfiles:
    """Profile names whose NRT plugin tracks foreign pods; pods they schedule are not foreign.

    Upstream keeps one such set per process, filled by every plugin instance with
    foreign-pod detection enabled (see :data:`PROCESS_PROFILES`).
    """

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names = set(names)

    def register(self, name: str) -> None:
        self._names.add(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def names(self) -> frozenset[str]:
        return frozenset(self._names)


PROCESS_PROFILES: Final = SchedulerProfiles()
"""The process-wide set, as upstream's package-level one."""


# ------------------------------------------------------------------- fingerprints


def pod_fingerprint_for_node_topology(
    nrt: NodeResourceTopology, method: CacheResyncMethod
) -> tuple[str, bool]:
    """The fingerprint an NRT carries and whether it covers only pods with exclusive resources.

    The attribute wins over the legacy annotation. With the attribute, ``Autodetect``
    trusts the attribute ``nodeTopologyPodsFingerprintMethod``; with the annotation the
    fingerprint always covers all pods. ``""`` when the NRT carries none.
    """
    value = nrt.attribute(fingerprint.ATTRIBUTE)
    if value is not None:
        if method is CacheResyncMethod.ONLY_EXCLUSIVE_RESOURCES:
            only_exclusive = True
        elif method is CacheResyncMethod.AUTODETECT:
            only_exclusive = (
                nrt.attribute(fingerprint.ATTRIBUTE_METHOD) == fingerprint.Method.WITH_EXCLUSIVE_RESOURCES
            )
        else:
            only_exclusive = False
        return value, only_exclusive
    return str((nrt.metadata.get("annotations") or {}).get(fingerprint.ANNOTATION, "")), False


@dataclass(frozen=True, slots=True)
class PodData:
    """A pod as a fingerprint check sees it."""

    namespace: str
    name: str
    exclusive_resources: bool


@dataclass(frozen=True, slots=True)
class DesyncedNodes:
    generation: int
    maybe_over_reserved: tuple[str, ...]
    config_changed: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.maybe_over_reserved) + len(self.config_changed)


@dataclass(frozen=True, slots=True)
class ResyncReport:
    """What one resync did: the nodes flushed (in order), and why the others were kept."""

    generation: int
    flushed: tuple[str, ...] = ()
    skipped: Mapping[str, str] = dataclasses.field(default_factory=dict)


# ---------------------------------------------------------------------- OverReserve


class OverReserveCache:
    """The NRTs listed at start-up, minus what this scheduler reserved, resynced on proof.

    Objects created after construction are never added: their nodes have no NRT for this
    cache (they pass Filter and score 0), as upstream.
    """

    def __init__(self, nrts: Iterable[Obj], args: CacheArgs) -> None:
        self._args = args
        self._nrts: dict[str, NodeResourceTopology] = {}
        self._resource_names: dict[str, frozenset[str]] = {}
        self._views: dict[str, NodeResourceTopology] = {}
        for obj in nrts:
            nrt = nrt_from_object(obj)
            if nrt is not None:
                self._store(nrt)
        self._assumed: dict[str, dict[str, ResourceList]] = {}
        self._maybe_over_reserved: dict[str, int] = {}
        self._foreign_pods: dict[str, int] = {}
        self._attr_updates: dict[str, int] = {}
        self.generation = 0
        log.info(
            "NRT cache initialized with %d objects (resync method %s, scope %s)",
            len(self._nrts),
            args.resync_method,
            args.resync_scope,
        )

    def _store(self, nrt: NodeResourceTopology) -> None:
        """Keep a private copy of ``nrt`` (start-up and flushes only) and drop the node's derived view."""
        self._nrts[nrt.name] = copy.deepcopy(nrt)
        self._resource_names[nrt.name] = nrt_resource_names(nrt) or frozenset()
        self._views.pop(nrt.name, None)

    def _view(self, node_name: str, stored: NodeResourceTopology) -> NodeResourceTopology:
        view = self._views.get(node_name)
        if view is None:
            assumed = self._assumed.get(node_name)
            view = subtract_assumed(stored, _sum_requests(assumed.values())) if assumed else stored
            self._views[node_name] = view
        return view

    # -- plugin hooks
    def get_cached_nrt_copy(self, node_name: str, pod: Obj) -> CachedNRT:
        """A copy of the stored NRT with the assumed pods' summed requests taken off every zone (clamped at 0)."""
        if node_name in self._foreign_pods:
            return CachedNRT(None, fresh=False, generation=self.generation)
        stored = self._nrts.get(node_name)
        if stored is None:
            return CachedNRT(None, fresh=True, generation=self.generation)
        return CachedNRT(nrt_view(self._view(node_name, stored)), fresh=True, generation=self.generation)

    def node_maybe_over_reserved(self, node_name: str, pod: Obj) -> None:
        self._maybe_over_reserved[node_name] = self._maybe_over_reserved.get(node_name, 0) + 1

    def node_has_foreign_pods(self, node_name: str, pod: Obj) -> None:
        if node_name not in self._nrts:
            return
        self._foreign_pods[node_name] = self._foreign_pods.get(node_name, 0) + 1
        log.info("node %s has foreign pod %s", node_name, _pod_key(pod))

    def reserve(self, node_name: str, pod: Obj) -> None:
        if node_name not in self._nrts:
            return
        self._assumed.setdefault(node_name, {})[_pod_key(pod)] = pod_effective_request(pod)
        self._views.pop(node_name, None)

    def unreserve(self, node_name: str, pod: Obj) -> None:
        if self._assumed.get(node_name, {}).pop(_pod_key(pod), None) is not None:
            self._views.pop(node_name, None)

    def post_bind(self, node_name: str, pod: Obj) -> None:
        """The assumed requests stay until a resync flushes the node."""

    # -- events from the watch caches
    def is_foreign_pod(self, pod: Obj, profiles: SchedulerProfiles) -> bool:
        """A bound pod that no NRT-aware profile scheduled (and, in that mode, with exclusive resources)."""
        node_name = _node_name(pod)
        if not node_name:
            return False
        if (pod.get("spec") or {}).get("schedulerName", "") in profiles:
            return False
        if self._args.foreign_pods_detect is ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES:
            return are_exclusive_for_pod(pod, self._resource_names.get(node_name))
        return True

    def on_pod_event(self, pod: Obj, profiles: SchedulerProfiles) -> None:
        """A pod was added, updated or deleted: mark its node if the pod is foreign."""
        if self.is_foreign_pod(pod, profiles):
            self.node_has_foreign_pods(_node_name(pod), pod)

    def on_nrt_event(self, event_type: str, obj: Obj) -> None:
        """A watched NRT changed: note a node whose topology-manager configuration differs from the stored one."""
        if event_type != "MODIFIED":
            return
        new = nrt_from_object(obj)
        if new is None or new.name not in self._nrts:
            return
        if topology_manager_config(self._nrts[new.name]) != topology_manager_config(new):
            log.info("topology manager configuration of node %s changed", new.name)
            self._attr_updates[new.name] = self._attr_updates.get(new.name, 0) + 1

    # -- resync
    def is_pod_relevant(self, pod: Obj) -> bool:
        """Which listed pods count on their node: Running ones (shared informer), or bound non-Pending ones."""
        phase = (pod.get("status") or {}).get("phase")
        if self._args.informer_mode is InformerMode.SHARED:
            return phase == "Running"
        return phase != "Pending" and bool(_node_name(pod))

    def desynced_nodes(self) -> DesyncedNodes:
        dirty = sorted(set(self._foreign_pods) | set(self._maybe_over_reserved))
        return DesyncedNodes(self.generation, tuple(dirty), tuple(sorted(self._attr_updates)))

    def _pods_by_node(self, pods: Iterable[Obj]) -> dict[str, list[PodData]]:
        by_node: dict[str, list[PodData]] = {}
        for pod in pods:
            if not self.is_pod_relevant(pod):
                continue
            node_name = _node_name(pod)
            meta = pod.get("metadata") or {}
            by_node.setdefault(node_name, []).append(
                PodData(
                    str(meta.get("namespace", "")),
                    str(meta.get("name", "")),
                    are_exclusive_for_pod(pod, self._resource_names.get(node_name)),
                )
            )
        return by_node

    def _fingerprint_gate(self, nrt: NodeResourceTopology, pods: list[PodData]) -> str | None:
        """Why the NRT cannot be trusted yet, or None when its fingerprint matches ``pods``."""
        expected, only_exclusive = pod_fingerprint_for_node_topology(nrt, self._args.resync_method)
        if not expected:
            return "missing NodeTopology podset fingerprint data"
        counted = [(p.namespace, p.name) for p in pods if p.exclusive_resources or not only_exclusive]
        try:
            fingerprint.check(counted, expected)
        except fingerprint.SignatureMismatchError:
            return "NodeTopology podset fingerprint mismatch"
        except fingerprint.FingerprintError as exc:
            return f"checking NodeTopology podset fingerprint: {exc}"
        return None

    def resync(self, get_nrt: NRTGetter, list_pods: Callable[[], Iterable[Obj]]) -> ResyncReport:
        """One resync step: flush dirty nodes whose fingerprint matches, and reconfigured nodes.

        A dirty node where a pod reserved here is still on its way is not checked this step
        (see the module's note). Dirty nodes that cannot be verified stay dirty (and keep over-reserving) until a
        later step succeeds.
        """
        desynced = self.desynced_nodes()
        if not desynced:
            return ResyncReport(self.generation)
        listed = list(list_pods())
        pods_by_node = self._pods_by_node(listed)
        arriving = pods_on_their_way(listed)
        updates: list[NodeResourceTopology] = []
        skipped: dict[str, str] = {}
        for node_name in desynced.maybe_over_reserved:
            waiting = sorted(arriving.intersection(self._assumed.get(node_name, {})))
            if waiting:
                skipped[node_name] = f"reserved pod {waiting[0]} is not running yet"
                continue
            nrt = nrt_from_object(get_nrt(node_name))
            if nrt is None:
                skipped[node_name] = "failed to get NodeTopology"
                continue
            pods = pods_by_node.get(node_name)
            if pods is None:
                skipped[node_name] = "cannot find any pod for node"
                continue
            reason = self._fingerprint_gate(nrt, pods)
            if reason is not None:
                skipped[node_name] = reason
                continue
            updates.append(nrt)
        for node_name in desynced.config_changed:
            nrt = nrt_from_object(get_nrt(node_name))
            if nrt is None:
                skipped.setdefault(node_name, "failed to get NodeTopology")
                continue
            skipped.pop(node_name, None)
            updates.append(nrt)
        for node_name, reason in skipped.items():
            log.debug("resync: node %s kept dirty: %s", node_name, reason)
        generation = self.flush_nodes(updates)
        flushed = tuple(dict.fromkeys(nrt.name for nrt in updates))
        return ResyncReport(generation, flushed, skipped)

    def flush_nodes(self, nrts: Iterable[NodeResourceTopology]) -> int:
        """Replace the stored NRTs and forget everything assumed or noted about those nodes."""
        flushed = False
        for nrt in nrts:
            log.info("flushing NRT cache of node %s", nrt.name)
            self._store(nrt)
            for table in (self._assumed, self._maybe_over_reserved, self._foreign_pods, self._attr_updates):
                table.pop(nrt.name, None)
            flushed = True
        if flushed:
            self.generation += 1
        return self.generation


def _take(res: ResourceInfo, amount: Quantity | None) -> ResourceInfo:
    if amount is None:
        return res
    left = _ZERO if res.available < amount else res.available - amount
    return dataclasses.replace(res, available=left)
