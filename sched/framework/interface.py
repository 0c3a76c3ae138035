"""The scheduling framework's vocabulary: statuses, cycle state, node snapshots and plugin interfaces.

Everything a plugin sees is plain data: pods and nodes are the JSON bodies the API
returns, node resources are integer amounts (``cpu`` in millicores, everything else in
base units, as upstream's ``framework.Resource``).  Plugins are plain objects that
implement one or more extension-point methods (``filter``, ``score`` …); the runtime
(:mod:`nrop.sched.framework.runtime`) decides which points a plugin takes part in by the methods
it has, as upstream does with Go interfaces.

A pod's inter-pod affinity terms are parsed once, on first use, into
:class:`PodAffinityTerms` (upstream's ``AffinityTerm`` and the affinity part of
``PodInfo``, selectors being :mod:`nrop.api.selectors`'), and a :class:`NodeInfo` keeps
its pods with affinity apart, as upstream's does.

The only I/O a plugin may reach is through its :class:`Handle` (listers backed by the
scheduler's watch caches, the binder), so every decision stays testable with tables.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from nrop.api import podrequests
from nrop.api.selectors import LabelSelector, SelectorError, label_selector_from_dict

Obj = dict[str, Any]

#: Upstream's score bounds.
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(enum.IntEnum):
    """Upstream's ``framework.Code``; the order matters to ``Status.merge``."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(frozen=True, slots=True)
class Status:
    """The result of a plugin call: a code, the reasons shown to users, and the plugin at fault."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        """The pod cannot go to this node (as upstream ``IsRejected``)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, (message,), plugin)

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, tuple(reasons), plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), plugin)

    @classmethod
    def skip(cls, plugin: str = "") -> Status:
        return cls(Code.SKIP, (), plugin)


_SUCCESS = Status()


class CycleState:
    """Per-pod scratch space shared by the plugins of one scheduling cycle (upstream ``CycleState``)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        other = CycleState()
        other._data = {k: (v.clone() if hasattr(v, "clone") else copy.copy(v)) for k, v in self._data.items()}
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        return other


# ------------------------------------------------------------------------------ resources

Resources = dict[str, int]
"""Amounts by resource name: ``cpu`` in millicores, ``pods`` as a count, the rest in base units."""

#: Upstream's non-zero defaults for scoring pods that request nothing (``schedutil``).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


resource_amount = podrequests.amount


def to_resources(values: Mapping[str, Any] | None) -> Resources:
    return {name: resource_amount(name, v) for name, v in (values or {}).items()}


def add_resources(into: Resources, other: Mapping[str, int], sign: int = 1) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + sign * amount


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """The pod's effective request (upstream ``resource.PodRequests``, :mod:`nrop.api.podrequests`)."""
    return podrequests.pod_requests(pod.get("spec") or {})


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_priority(pod: Mapping[str, Any]) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


# ------------------------------------------------------------------------------ pod affinity terms


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm`` (upstream ``framework.AffinityTerm``).

    ``namespaces`` is the term's list, or the pod's own namespace when the term gives
    neither namespaces nor a namespaceSelector; an absent namespaceSelector selects no
    namespace, ``{}`` every one.
    """

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` is in the term's namespaces (or its namespace's labels match) and its labels match."""
        meta = pod.get("metadata") or {}
        if meta.get("namespace", "") in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(meta.get("labels"))
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    """A parsed ``WeightedPodAffinityTerm``."""

    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's inter-pod (anti-)affinity terms, parsed once (the affinity part of upstream ``PodInfo``).

    A list with a label selector apimachinery refuses is left empty and ``error`` says why,
    in upstream's words (``requiredAffinityTerms: <selector error>``, several joined as an
    aggregate).
    """

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    error: str = ""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodAffinityTerms:
        affinity = (pod.get("spec") or {}).get("affinity") or {}
        pod_affinity = affinity.get("podAffinity") or {}
        anti_affinity = affinity.get("podAntiAffinity") or {}
        if not pod_affinity and not anti_affinity:
            return _NO_AFFINITY_TERMS
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        errors: list[str] = []
        required = "requiredDuringSchedulingIgnoredDuringExecution"
        preferred = "preferredDuringSchedulingIgnoredDuringExecution"
        return cls(
            _affinity_terms(namespace, pod_affinity.get(required), "requiredAffinityTerms", errors),
            _affinity_terms(namespace, anti_affinity.get(required), "requiredAntiAffinityTerms", errors),
            _weighted_terms(namespace, pod_affinity.get(preferred), "preferredAffinityTerms", errors),
            _weighted_terms(namespace, anti_affinity.get(preferred), "preferredAntiAffinityTerms", errors),
            errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else ""),
        )


_NO_AFFINITY_TERMS = PodAffinityTerms()


def affinity_term(namespace: str, term: Mapping[str, Any]) -> AffinityTerm:
    """Parse one ``PodAffinityTerm`` of a pod in ``namespace``; raises :class:`SelectorError`."""
    selector = label_selector_from_dict(term.get("labelSelector"))
    names = term.get("namespaces") or []
    if not names and term.get("namespaceSelector") is None:
        names = [namespace]
    return AffinityTerm(
        frozenset(names),
        selector,
        term.get("topologyKey") or "",
        label_selector_from_dict(term.get("namespaceSelector")),
    )


def _affinity_terms(
    namespace: str, terms: Sequence[Mapping[str, Any]] | None, what: str, errors: list[str]
) -> tuple[AffinityTerm, ...]:
    try:
        return tuple(affinity_term(namespace, t or {}) for t in terms or ())
    except SelectorError as exc:
        errors.append(f"{what}: {exc}")
        return ()


def _weighted_terms(
    namespace: str, terms: Sequence[Mapping[str, Any]] | None, what: str, errors: list[str]
) -> tuple[WeightedAffinityTerm, ...]:
    weighted: list[WeightedAffinityTerm] = []
    try:
        for item in terms or ():
            body = item or {}
            term = affinity_term(namespace, body.get("podAffinityTerm") or {})
            weighted.append(WeightedAffinityTerm(term, int(body.get("weight") or 0)))
    except SelectorError as exc:
        errors.append(f"{what}: {exc}")
        return ()
    return tuple(weighted)


def has_pod_affinity(pod: Mapping[str, Any]) -> bool:
    """Whether the pod states podAffinity or podAntiAffinity at all (upstream ``podWithAffinity``)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None


# ------------------------------------------------------------------------------ snapshots


@dataclass(slots=True)
class PodInfo:
    """A pod with the figures plugins ask for again and again, computed once.

    ``affinity`` (its inter-pod affinity terms) is parsed on first use.
    """

    pod: Obj
    requests: Resources = field(default_factory=dict)
    non_zero: Resources = field(default_factory=dict)
    _affinity: PodAffinityTerms | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, pod: Obj) -> PodInfo:
        non_missing = non_missing_pod_requests(pod)
        return cls(
            pod, pod_requests(pod), {"cpu": non_missing.get("cpu", 0), "memory": non_missing.get("memory", 0)}
        )

    @property
    def key(self) -> str:
        return pod_key(self.pod)

    @property
    def uid(self) -> str:
        return (self.pod.get("metadata") or {}).get("uid", "")

    @property
    def priority(self) -> int:
        return pod_priority(self.pod)

    @property
    def affinity(self) -> PodAffinityTerms:
        if self._affinity is None:
            self._affinity = PodAffinityTerms.of(self.pod)
        return self._affinity


_NON_MISSING = {"cpu": f"{DEFAULT_MILLI_CPU_REQUEST}m", "memory": str(DEFAULT_MEMORY_REQUEST)}


def _with_non_missing(container: Mapping[str, Any]) -> Mapping[str, Any]:
    resources = container.get("resources") or {}
    present = set(resources.get("requests") or {}) | set(resources.get("limits") or {})
    missing = {k: v for k, v in _NON_MISSING.items() if k not in present}
    if not missing:
        return container
    return {
        **container,
        "resources": {**resources, "requests": {**(resources.get("requests") or {}), **missing}},
    }


def non_missing_pod_requests(pod: Mapping[str, Any]) -> Resources:
    """The pod's requests as scoring counts them: 100m cpu / 200Mi memory for each container stating none.

    Upstream ``PodRequests`` with ``NonMissingContainerRequests``: a container that states
    ``cpu: 0`` keeps 0; only an absent request is replaced.
    """
    spec = pod.get("spec") or {}
    patched = {
        **spec,
        "containers": [_with_non_missing(c) for c in spec.get("containers") or []],
        "initContainers": [_with_non_missing(c) for c in spec.get("initContainers") or []],
    }
    return pod_requests({**pod, "spec": patched})


@dataclass(slots=True)
class NodeInfo:
    """One node and the pods the scheduler believes run there (bound or assumed).

    As upstream, the pods stating any inter-pod affinity and those with required
    anti-affinity terms are also kept apart, so InterPodAffinity looks at few pods.
    """

    node: Obj
    pods: list[PodInfo] = field(default_factory=list)
    requested: Resources = field(default_factory=dict)
    non_zero_requested: Resources = field(default_factory=dict)
    allocatable: Resources = field(default_factory=dict)
    generation: int = 0
    pods_with_affinity: list[PodInfo] = field(default_factory=list)
    pods_with_required_anti_affinity: list[PodInfo] = field(default_factory=list)

    @classmethod
    def of(cls, node: Obj, pods: Iterable[Obj] = ()) -> NodeInfo:
        info = cls(node, allocatable=to_resources((node.get("status") or {}).get("allocatable")))
        for pod in pods:
            info.add_pod(PodInfo.of(pod))
        return info

    @property
    def name(self) -> str:
        return (self.node.get("metadata") or {}).get("name", "")

    def add_pod(self, info: PodInfo) -> None:
        self.pods.append(info)
        if has_pod_affinity(info.pod):
            self.pods_with_affinity.append(info)
            if info.affinity.required_anti_affinity:
                self.pods_with_required_anti_affinity.append(info)
        self._account(info, 1)

    def remove_pod(self, key: str) -> PodInfo | None:
        for i, info in enumerate(self.pods):
            if info.key == key:
                del self.pods[i]
                if has_pod_affinity(info.pod):
                    self.pods_with_affinity = [p for p in self.pods_with_affinity if p is not info]
                    self.pods_with_required_anti_affinity = [
                        p for p in self.pods_with_required_anti_affinity if p is not info
                    ]
                self._account(info, -1)
                return info
        return None

    def _account(self, info: PodInfo, sign: int) -> None:
        add_resources(self.requested, info.requests, sign)
        add_resources(self.non_zero_requested, info.non_zero, sign)
        self.requested["pods"] = self.requested.get("pods", 0) + sign
        self.generation += 1

    def clone(self) -> NodeInfo:
        return NodeInfo(
            self.node,
            list(self.pods),
            dict(self.requested),
            dict(self.non_zero_requested),
            dict(self.allocatable),
            self.generation,
            list(self.pods_with_affinity),
            list(self.pods_with_required_anti_affinity),
        )


# ------------------------------------------------------------------------------ cluster events


class ActionType(enum.IntFlag):
    """What changed (upstream ``framework.ActionType``), used to re-queue unschedulable pods."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE = 64  # any other update
    #: A bound pod's labels changed (upstream ``UpdatePodLabel`` of an assigned pod).
    UPDATE_POD_LABEL = 128
    ALL = 255


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of change: ``resource`` is ``Pod``, ``Node`` or a plural.version.group such as the NRT's."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        return (self.resource in (other.resource, "*")) and bool(self.action & other.action)


NRT_RESOURCE = "noderesourcetopologies.v1alpha2.topology.node.k8s.io"


# ------------------------------------------------------------------------------ handle


@runtime_checkable
class Handle(Protocol):
    """What a plugin may use of the scheduler around it (upstream ``framework.Handle``).

    Listers read the scheduler's watch caches; they never block.
    """

    @property
    def profile_name(self) -> str: ...

    def scheduler_names(self) -> frozenset[str]:
        """The schedulerName of every profile this process runs."""
        ...

    def list_pods(self) -> Iterable[Obj]: ...

    def get_nrt(self, node_name: str) -> Obj | None:
        """The latest NodeResourceTopology of that node the scheduler has seen, or None."""
        ...

    def list_nrts(self) -> Iterable[Obj]: ...

    def get_namespace(self, name: str) -> Obj | None:
        """The Namespace object of that name the scheduler has seen, or None."""
        ...

    def list_namespaces(self) -> Iterable[Obj]: ...

    def on_pod_event(self, callback: Callable[[str, Obj], None]) -> None:
        """Call ``callback(event_type, pod)`` (``ADDED``/``MODIFIED``/``DELETED``) for every pod change."""
        ...

    def on_nrt_event(self, callback: Callable[[str, Obj], None]) -> None: ...

    def now(self) -> float:
        """Monotonic seconds (the injected clock)."""
        ...

    async def bind_pod(self, pod: Obj, node_name: str) -> None:
        """Bind through ``pods/binding`` (what DefaultBinder uses); raises on failure."""
        ...


class Plugin(Protocol):
    """Every plugin has a name; extension points are the methods it implements:

    * ``less(a: QueuedPodInfo, b) -> bool``                               (QueueSort)
    * ``pre_enqueue(pod) -> Status``                                      (PreEnqueue)
    * ``pre_filter(state, pod) -> Status | tuple[Status, frozenset[str] | None]`` (PreFilter; the
      set, when given, narrows the candidate nodes to those names)
    * ``add_pod(state, pod, pod_to_add, node_info)`` / ``remove_pod(...)``  (PreFilter extensions)
    * ``filter(state, pod, node_info) -> Status``                         (Filter)
    * ``post_filter(state, pod, statuses: dict[str, Status]) -> tuple[str | None, Status]`` (PostFilter)
    * ``pre_score(state, pod, nodes: list[NodeInfo]) -> Status``          (PreScore)
    * ``score(state, pod, node_info) -> tuple[int, Status]``              (Score)
    * ``normalize_score(state, pod, scores: dict[str, int]) -> Status``   (Score extensions; optional)
    * ``reserve(state, pod, node_name) -> Status`` / ``unreserve(state, pod, node_name)`` (Reserve)
    * ``async bind(state, pod, node_name) -> Status``                     (Bind)
    * ``post_bind(state, pod, node_name)``                                (PostBind)
    * ``events_to_register() -> list[ClusterEvent]``                      (EnqueueExtensions)

    A plugin class is built as ``cls(args, handle)``.  If it takes args it has a
    classmethod ``parse_args(args: Mapping | None, path: str) -> Any`` that applies the
    upstream defaults and raises :class:`nrop.sched.errors.ConfigError` naming the field
    (``path`` is the JSON path of the args, e.g. ``profiles[0].pluginConfig[1].args``).
    """

    name: str


#: Extension point name (as in KubeSchedulerConfiguration ``plugins``) -> the method that implements it.
EXTENSION_POINTS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def implements(plugin_type: type, point: str) -> bool:
    """Whether a plugin class takes part in an extension point (by having its method)."""
    return callable(getattr(plugin_type, EXTENSION_POINTS[point], None))
