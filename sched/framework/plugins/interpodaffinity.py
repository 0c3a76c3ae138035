"""InterPodAffinity: pods placed by the pods already running, per topology domain (upstream ``interpodaffinity``).

This module owns the plugin's decisions, as kube-scheduler v1.33 makes them:

* **PreFilter** counts, per topology pair (``topologyKey``, the node's value for it),
  the existing pods whose *required anti-affinity* matches the incoming pod, and the
  existing pods matching the incoming pod's required affinity (only pods matching *all*
  its terms count) and anti-affinity terms.  The incoming pod's terms have their
  ``namespaceSelector`` unrolled into namespace names first (the namespaces the
  scheduler's informer holds); existing pods' terms are matched against the incoming
  pod's namespace labels.  When neither the incoming pod nor any existing pod has such
  terms, PreFilter returns Skip and Filter does not run.  A pod whose terms carry a
  label selector apimachinery refuses is UnschedulableAndUnresolvable
  ("parsing pod: …").
* **AddPod / RemovePod** (PreFilter extensions, run for nominated pods and preemption)
  move those counts for one pod.
* **Filter**: the node must hold every affinity topology key and a domain with a
  matching pod, unless no pod in the cluster matches and the pod matches its own terms
  (the first pod of a group with affinity to itself) — else UnschedulableAndUnresolvable
  :data:`ERR_REASON_AFFINITY_RULES_NOT_MATCH`; no domain of the node may hold a pod its
  anti-affinity names (Unschedulable :data:`ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH`)
  nor a pod whose anti-affinity names it (Unschedulable
  :data:`ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH`).
* **PreScore / Score / NormalizeScore**: per topology pair, the weights of the incoming
  pod's preferred terms matched by existing pods (anti-affinity negative), plus the
  existing pods' preferred terms and, with ``hardPodAffinityWeight``, their required
  affinity terms matched by the incoming pod; a node scores the sum over its labels,
  normalised between the lowest and the highest score to ``[0, 100]``.
  ``ignorePreferredTermsOfExistingPods`` skips scoring for pods without preferred terms.

The nodes come from the cycle's :class:`~nrop.sched.framework.cycle.CycleView` (all nodes, not only
the feasible ones, as upstream's snapshot lister); the Namespaces from the handle.
Parsed terms (:class:`~nrop.sched.framework.interface.PodAffinityTerms`) and label selectors are the
framework's and :mod:`nrop.api.selectors`'.  ``matchLabelKeys`` / ``mismatchLabelKeys`` are
not read here: since v1.31 the API server merges them into the label selector at pod
creation.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api.selectors import NOTHING
from nrop.sched.config.decoding import get_bool, get_int
from nrop.sched.errors import ConfigError
from nrop.sched.framework.cycle import FRAMEWORK_KEY, CycleView
from nrop.sched.framework.interface import (
    MAX_NODE_SCORE,
    ActionType,
    AffinityTerm,
    ClusterEvent,
    CycleState,
    Handle,
    NodeInfo,
    Obj,
    PodAffinityTerms,
    PodInfo,
    Status,
    WeightedAffinityTerm,
)

from .helper import args_mapping, invalid

log = logging.getLogger(__name__)

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

TopologyPair = tuple[str, str]
"""A topology key and a node's value for it."""
Counts = dict[TopologyPair, int]
"""Matching pods per topology pair (upstream ``topologyToMatchedTermCount``)."""
TopologyScore = dict[str, dict[str, int]]
"""Topology key -> value -> summed weights (upstream ``scoreMap``)."""


def _labels(node: Obj) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _namespace_of(pod: Obj) -> str:
    return (pod.get("metadata") or {}).get("namespace", "")


# ------------------------------------------------------------------------------ args


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False


# ------------------------------------------------------------------------------ terms and counts


def merge_namespaces(term: AffinityTerm, namespaces: Iterable[Obj]) -> AffinityTerm:
    """Unroll a non-empty namespaceSelector into the term's namespaces (``mergeAffinityTermNamespacesIfNotEmpty``).

    The selector becomes "nothing", so matching the incoming pod's terms never needs the
    existing pods' namespace labels; an empty selector (``{}``, every namespace) is kept.
    """
    if _nothing_to_merge(term):
        return term
    selected = {
        (ns.get("metadata") or {}).get("name", "")
        for ns in namespaces
        if term.namespace_selector.matches((ns.get("metadata") or {}).get("labels"))
    }
    return dataclasses.replace(term, namespaces=term.namespaces | selected, namespace_selector=NOTHING)


def _nothing_to_merge(term: AffinityTerm) -> bool:
    # An absent namespaceSelector selects nothing: listing the namespaces would add none.
    return term.namespace_selector.empty or term.namespace_selector.nothing


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: Obj) -> bool:
    """True when there are terms and ``pod`` matches each (namespace selectors already unrolled)."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)


def _add(counts: Counts, labels: Mapping[str, str], key: str, value: int) -> None:
    if key in labels:
        pair = (key, labels[key])
        total = counts.get(pair, 0) + value
        # Values may be negative (RemovePod): a pair down to zero is dropped.
        if total:
            counts[pair] = total
        else:
            counts.pop(pair, None)


def _add_affinity(
    counts: Counts, terms: Sequence[AffinityTerm], pod: Obj, labels: Mapping[str, str], value: int
) -> None:
    if pod_matches_all_terms(terms, pod):
        for term in terms:
            _add(counts, labels, term.topology_key, value)


def _add_anti_affinity(
    counts: Counts,
    terms: Sequence[AffinityTerm],
    pod: Obj,
    namespace_labels: Mapping[str, str] | None,
    labels: Mapping[str, str],
    value: int,
) -> None:
    for term in terms:
        if term.matches(pod, namespace_labels):
            _add(counts, labels, term.topology_key, value)


def existing_anti_affinity_counts(
    pod: Obj, namespace_labels: Mapping[str, str], nodes: Iterable[NodeInfo]
) -> Counts:
    """Per topology pair, the existing pods whose required anti-affinity terms match ``pod``."""
    counts: Counts = {}
    for node_info in nodes:
        if not node_info.pods_with_required_anti_affinity:
            continue
        labels = _labels(node_info.node)
        for existing in node_info.pods_with_required_anti_affinity:
            _add_anti_affinity(
                counts, existing.affinity.required_anti_affinity, pod, namespace_labels, labels, 1
            )
    return counts


def incoming_affinity_counts(
    affinity: Sequence[AffinityTerm], anti_affinity: Sequence[AffinityTerm], nodes: Iterable[NodeInfo]
) -> tuple[Counts, Counts]:
    """Per topology pair, the existing pods matching all of ``affinity``, and those matching each anti-affinity term."""
    affinity_counts: Counts = {}
    anti_affinity_counts: Counts = {}
    if not affinity and not anti_affinity:
        return affinity_counts, anti_affinity_counts
    for node_info in nodes:
        labels = _labels(node_info.node)
        for existing in node_info.pods:
            _add_affinity(affinity_counts, affinity, existing.pod, labels, 1)
            _add_anti_affinity(anti_affinity_counts, anti_affinity, existing.pod, None, labels, 1)
    return affinity_counts, anti_affinity_counts


@dataclass(slots=True)
class PreFilterState:
    """What PreFilter computed for Filter (upstream ``preFilterState``); AddPod/RemovePod update it."""

    pod: Obj
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    namespace_labels: Mapping[str, str]
    existing_anti_affinity_counts: Counts
    affinity_counts: Counts
    anti_affinity_counts: Counts

    def clone(self) -> PreFilterState:
        return dataclasses.replace(
            self,
            existing_anti_affinity_counts=dict(self.existing_anti_affinity_counts),
            affinity_counts=dict(self.affinity_counts),
            anti_affinity_counts=dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, info: PodInfo, node: Obj, multiplier: int) -> None:
        """Count ``info`` (placed on ``node``) in or out: ``multiplier`` is 1 or -1."""
        labels = _labels(node)
        _add_anti_affinity(
            self.existing_anti_affinity_counts,
            info.affinity.required_anti_affinity,
            self.pod,
            self.namespace_labels,
            labels,
            multiplier,
        )
        _add_affinity(self.affinity_counts, self.affinity, info.pod, labels, multiplier)
        _add_anti_affinity(self.anti_affinity_counts, self.anti_affinity, info.pod, None, labels, multiplier)


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node: Obj) -> bool:
    """No domain of the node holds a pod whose required anti-affinity names the incoming pod."""
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    return not any(counts.get(pair, 0) > 0 for pair in _labels(node).items())


def satisfies_pod_anti_affinity(state: PreFilterState, node: Obj) -> bool:
    """No domain of the node (per anti-affinity term) holds a pod the incoming pod's anti-affinity names."""
    if not state.anti_affinity_counts:
        return True
    labels = _labels(node)
    for term in state.anti_affinity:
        key = term.topology_key
        if key in labels and state.anti_affinity_counts.get((key, labels[key]), 0) > 0:
            return False
    return True


def satisfies_pod_affinity(state: PreFilterState, node: Obj) -> bool:
    """The node has every topology key, and each domain a matching pod — or no pod matches anywhere and the pod matches itself."""
    labels = _labels(node)
    pods_exist = True
    for term in state.affinity:
        key = term.topology_key
        if key not in labels:
            return False
        if state.affinity_counts.get((key, labels[key]), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself would otherwise stay pending forever.
    return not state.affinity_counts and pod_matches_all_terms(state.affinity, state.pod)


def filter_node(state: PreFilterState, node: Obj) -> Status:
    """Upstream ``Filter``: affinity first (unresolvable), then the pod's and the existing pods' anti-affinity."""
    if not satisfies_pod_affinity(state, node):
        return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    if not satisfies_pod_anti_affinity(state, node):
        return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if not satisfies_existing_pods_anti_affinity(state, node):
        return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return Status.success()


# ------------------------------------------------------------------------------ scoring


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """What PreScore computed for Score (upstream ``preScoreState``)."""

    topology_score: TopologyScore


def _score_term(
    scores: TopologyScore,
    term: AffinityTerm,
    weight: int,
    pod: Obj,
    namespace_labels: Mapping[str, str] | None,
    labels: Mapping[str, str],
    multiplier: int,
) -> None:
    if term.matches(pod, namespace_labels) and term.topology_key in labels:
        by_value = scores.setdefault(term.topology_key, {})
        value = labels[term.topology_key]
        by_value[value] = by_value.get(value, 0) + weight * multiplier


def _score_terms(
    scores: TopologyScore,
    terms: Sequence[WeightedAffinityTerm],
    pod: Obj,
    namespace_labels: Mapping[str, str] | None,
    labels: Mapping[str, str],
    multiplier: int,
) -> None:
    for weighted in terms:
        _score_term(scores, weighted.term, weighted.weight, pod, namespace_labels, labels, multiplier)


def score_existing_pod(
    scores: TopologyScore,
    incoming: Obj,
    preferred_affinity: Sequence[WeightedAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedAffinityTerm],
    namespace_labels: Mapping[str, str],
    existing: PodInfo,
    node: Obj,
    hard_pod_affinity_weight: int,
) -> None:
    """Add what one existing pod on ``node`` contributes to the incoming pod's scores (``processExistingPod``)."""
    labels = _labels(node)
    if not labels:
        return
    # The incoming pod's terms had their namespaceSelector unrolled: no namespace labels needed.
    _score_terms(scores, preferred_affinity, existing.pod, None, labels, 1)
    _score_terms(scores, preferred_anti_affinity, existing.pod, None, labels, -1)
    terms = existing.affinity
    if hard_pod_affinity_weight > 0:
        for term in terms.required_affinity:
            _score_term(scores, term, hard_pod_affinity_weight, incoming, namespace_labels, labels, 1)
    _score_terms(scores, terms.preferred_affinity, incoming, namespace_labels, labels, 1)
    _score_terms(scores, terms.preferred_anti_affinity, incoming, namespace_labels, labels, -1)


def node_score(topology_score: TopologyScore, node: Obj) -> int:
    """The sum of the scores of the node's topology pairs (negative when anti-affinity weighs more)."""
    labels = _labels(node)
    return sum(values.get(labels[key], 0) for key, values in topology_score.items() if key in labels)


def normalize_scores(scores: dict[str, int]) -> None:
    """Scale to ``[0, 100]`` between the lowest and the highest score, truncating as Go's float conversion."""
    if not scores:
        return
    lowest, highest = min(scores.values()), max(scores.values())
    spread = highest - lowest
    for name, score in scores.items():
        scaled = float(MAX_NODE_SCORE) * (float(score - lowest) / float(spread)) if spread > 0 else 0.0
        scores[name] = math.trunc(scaled)


# ------------------------------------------------------------------------------ the plugin


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self.args = args or InterPodAffinityArgs()

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> InterPodAffinityArgs:
        body = args_mapping(args, path, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"))
        weight = get_int(body, "hardPodAffinityWeight", path)
        ignore = get_bool(body, "ignorePreferredTermsOfExistingPods", path)
        if weight is None:
            weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            detail = f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
            raise ConfigError(f"{path}.hardPodAffinityWeight", invalid(weight, detail))
        return InterPodAffinityArgs(weight, bool(ignore))

    # -------------------------------------------------------------------------- namespaces

    def _namespaces(self) -> list[Obj]:
        return list(self._handle.list_namespaces()) if self._handle is not None else []

    def _merge_namespaces(self, terms: Iterable[AffinityTerm]) -> tuple[AffinityTerm, ...]:
        terms = tuple(terms)
        if all(_nothing_to_merge(t) for t in terms):
            return terms
        namespaces = self._namespaces()
        return tuple(merge_namespaces(t, namespaces) for t in terms)

    def _namespace_labels(self, name: str) -> Mapping[str, str]:
        """A copy of the labels of the incoming pod's namespace (``GetNamespaceLabelsSnapshot``)."""
        namespace = self._handle.get_namespace(name) if self._handle is not None else None
        if namespace is None:
            log.debug("namespace %r not found, assuming empty set of namespace labels", name)
            return {}
        return dict((namespace.get("metadata") or {}).get("labels") or {})

    # -------------------------------------------------------------------------- filtering

    def pre_filter(self, state: CycleState, pod: Obj) -> Status:
        view: CycleView | None = state.read(FRAMEWORK_KEY)
        if view is None:
            return Status.error("no node snapshot in the cycle state")
        terms = PodAffinityTerms.of(pod)
        if terms.error:
            return Status.unresolvable(f"parsing pod: {terms.error}")
        affinity = self._merge_namespaces(terms.required_affinity)
        anti_affinity = self._merge_namespaces(terms.required_anti_affinity)
        namespace_labels = self._namespace_labels(_namespace_of(pod))
        existing = existing_anti_affinity_counts(pod, namespace_labels, view.nodes)
        if not existing and not affinity and not anti_affinity:
            return Status.skip()
        affinity_counts, anti_affinity_counts = incoming_affinity_counts(affinity, anti_affinity, view.nodes)
        state.write(
            _PRE_FILTER_KEY,
            PreFilterState(
                pod,
                affinity,
                anti_affinity,
                namespace_labels,
                existing,
                affinity_counts,
                anti_affinity_counts,
            ),
        )
        return Status.success()

    @staticmethod
    def _pre_filter_state(state: CycleState) -> PreFilterState | None:
        return state.read(_PRE_FILTER_KEY)

    def add_pod(self, state: CycleState, pod: Obj, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        pre_filter = self._pre_filter_state(state)
        if pre_filter is None:
            return Status.error(f'error reading "{_PRE_FILTER_KEY}" from cycleState: not found')
        pre_filter.update_with_pod(pod_info, node_info.node, 1)
        return Status.success()

    def remove_pod(self, state: CycleState, pod: Obj, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        pre_filter = self._pre_filter_state(state)
        if pre_filter is None:
            return Status.error(f'error reading "{_PRE_FILTER_KEY}" from cycleState: not found')
        pre_filter.update_with_pod(pod_info, node_info.node, -1)
        return Status.success()

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        pre_filter = self._pre_filter_state(state)
        if pre_filter is None:
            return Status.error(f'error reading "{_PRE_FILTER_KEY}" from cycleState: not found')
        return filter_node(pre_filter, node_info.node)

    # -------------------------------------------------------------------------- scoring

    def pre_score(self, state: CycleState, pod: Obj, nodes: list[NodeInfo]) -> Status:
        affinity = (pod.get("spec") or {}).get("affinity") or {}
        preferred = "preferredDuringSchedulingIgnoredDuringExecution"
        has_constraints = bool(
            ((affinity.get("podAffinity") or {}).get(preferred))
            or ((affinity.get("podAntiAffinity") or {}).get(preferred))
        )
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        view: CycleView | None = state.read(FRAMEWORK_KEY)
        if view is None:
            return Status.error("no node snapshot in the cycle state")
        terms = PodAffinityTerms.of(pod)
        if terms.error:
            # PreFilter catches these first.
            return Status.error(f"failed to parse pod: {terms.error}")
        preferred_affinity = self._merge_weighted(terms.preferred_affinity)
        preferred_anti_affinity = self._merge_weighted(terms.preferred_anti_affinity)
        namespace_labels = self._namespace_labels(_namespace_of(pod))
        scores: TopologyScore = {}
        for node_info in view.nodes:
            # Unless the incoming pod has preferred terms, only pods with affinity can matter.
            existing_pods = node_info.pods if has_constraints else node_info.pods_with_affinity
            for existing in existing_pods:
                score_existing_pod(
                    scores,
                    pod,
                    preferred_affinity,
                    preferred_anti_affinity,
                    namespace_labels,
                    existing,
                    node_info.node,
                    self.args.hard_pod_affinity_weight,
                )
        if not scores:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, PreScoreState(scores))
        return Status.success()

    def _merge_weighted(self, terms: Sequence[WeightedAffinityTerm]) -> tuple[WeightedAffinityTerm, ...]:
        merged = self._merge_namespaces(w.term for w in terms)
        return tuple(WeightedAffinityTerm(term, w.weight) for term, w in zip(merged, terms, strict=True))

    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        pre_score: PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if pre_score is None:
            return 0, Status.error(f'failed to read "{_PRE_SCORE_KEY}" from cycleState: not found')
        return node_score(pre_score.topology_score, node_info.node), Status.success()

    def normalize_score(self, state: CycleState, pod: Obj, scores: dict[str, int]) -> Status:
        pre_score: PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if pre_score is None:
            return Status.error(f'failed to read "{_PRE_SCORE_KEY}" from cycleState: not found')
        if pre_score.topology_score:
            normalize_scores(scores)
        return Status.success()

    def events_to_register(self) -> list[ClusterEvent]:
        # Upstream v1.33 with queueing hints: a bound pod added, relabelled or deleted may
        # satisfy or stop violating a term; a node added or relabelled may bring the topology key.
        return [
            ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        ]
