"""The kubelet topology manager's pure decisions: configuration, hint merging and admission.

Owns what upstream ``pkg/kubelet/cm/topologymanager`` decides, so that an emulated kubelet
admits or rejects a pod exactly like a real one:

* the configuration (policy, scope, policy options) with upstream's startup error texts;
* ``filterProvidersHints`` (a provider with no preference vs. one that cannot satisfy a
  resource), the cross-product of the providers' hint lists, ``mergePermutation`` and the
  ``HintMerger`` comparison (preferred first, then narrowest or, with
  ``prefer-closest-numa-nodes``, closest; the non-preferred "best count" rule);
* the policies ``none``, ``best-effort``, ``restricted`` and ``single-numa-node``;
* ``Admit`` for the ``container`` and ``pod`` scopes, including the order in which hints are
  gathered and allocations are made, and the admission reason/message of every outcome.

No I/O: hint providers and allocators are plain callables supplied by the kubelet shell.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import product

from nrop.api.fielderrors import go_quote
from nrop.localcluster.kubelet.cm import bitmask
from nrop.localcluster.kubelet.cm.hints import TopologyHint

__all__ = [
    "DEFAULT_MAX_ALLOWABLE_NUMA_NODES",
    "MAX_ALLOWABLE_NUMA_NODES_OPTION",
    "PREFER_CLOSEST_NUMA_NODES_OPTION",
    "TOPOLOGY_AFFINITY_MESSAGE",
    "AdmissionReason",
    "AdmitResult",
    "HintMerger",
    "NUMAInfo",
    "Policy",
    "PolicyOptions",
    "ProviderHints",
    "Scope",
    "TopologyAffinityError",
    "TopologyManager",
    "TopologyManagerConfigError",
    "admit_result_for_error",
    "filter_providers_hints",
    "merge_permutation",
]

PREFER_CLOSEST_NUMA_NODES_OPTION = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES_OPTION = "max-allowable-numa-nodes"
#: Upstream refuses to start with more NUMA nodes than this (the hint space explodes).
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"

#: One provider's answer: ``None``/``{}`` = no preference at all; per resource, ``None`` =
#: no preference for that resource, ``[]`` = that resource cannot be satisfied.
ProviderHints = Mapping[str, Sequence[TopologyHint] | None] | None


class Policy(StrEnum):
    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"


class Scope(StrEnum):
    CONTAINER = "container"
    POD = "pod"


class AdmissionReason(StrEnum):
    """``PodAdmitResult.Reason`` values this module produces (``status.reason`` of a rejected pod)."""

    TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
    UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


class TopologyManagerConfigError(ValueError):
    """The kubelet would refuse to start with this configuration; the text is upstream's."""


class TopologyAffinityError(Exception):
    """Upstream's ``TopologyAffinityError``: an admission error with its own reason."""

    reason = AdmissionReason.TOPOLOGY_AFFINITY_ERROR.value

    def __init__(self) -> None:
        super().__init__(TOPOLOGY_AFFINITY_MESSAGE)


_GO_BOOL = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}
_GO_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class PolicyOptions:
    """``topologyManagerPolicyOptions`` after validation (``NewPolicyOptions``)."""

    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES

    @classmethod
    def parse(cls, options: Mapping[str, str] | None) -> PolicyOptions:
        """Validate the option map; raises :class:`TopologyManagerConfigError` with upstream's text.

        Both options are GA/beta-on-by-default in the versions emulated, so no feature gate
        is consulted.  Upstream walks a Go map (random order); with several bad options the
        reported one may differ, here the first in sorted order is reported.
        """
        prefer_closest = False
        max_nodes = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
        for name in sorted(options or {}):
            value = (options or {})[name]
            if name == PREFER_CLOSEST_NUMA_NODES_OPTION:
                if value not in _GO_BOOL:
                    raise TopologyManagerConfigError(
                        f"bad value for option {go_quote(name)}: "
                        f"strconv.ParseBool: parsing {go_quote(value)}: invalid syntax"
                    )
                prefer_closest = _GO_BOOL[value]
            elif name == MAX_ALLOWABLE_NUMA_NODES_OPTION:
                if not _GO_INT.fullmatch(value):
                    raise TopologyManagerConfigError(
                        f"unable to convert policy option to integer {go_quote(name)}: "
                        f"strconv.Atoi: parsing {go_quote(value)}: invalid syntax"
                    )
                number = int(value)
                if number < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                    raise TopologyManagerConfigError(
                        f"the minimum value of {go_quote(name)} should not be less than "
                        f"{DEFAULT_MAX_ALLOWABLE_NUMA_NODES}"
                    )
                max_nodes = number
            else:
                raise TopologyManagerConfigError(f"unknown Topology Manager Policy option: {go_quote(name)}")
        return cls(prefer_closest_numa=prefer_closest, max_allowable_numa_nodes=max_nodes)


@dataclass(frozen=True)
class NUMAInfo:
    """The machine's NUMA nodes and (for prefer-closest) the sysfs distance matrix."""

    nodes: tuple[int, ...]
    #: ``distances[i][j]``: row ``i`` of ``/sys/devices/system/node/node<i>/distance``,
    #: indexed by NUMA node id.  Only consulted with ``prefer-closest-numa-nodes``.
    distances: Mapping[int, Sequence[int]] = field(default_factory=dict)

    @property
    def default_affinity(self) -> frozenset[int]:
        return frozenset(self.nodes)

    def average_distance(self, mask: frozenset[int]) -> float:
        """Mean of ``distances[i][j]`` over all ordered pairs of the mask, self-pairs included."""
        if not mask:
            return 0.0
        total = sum(self.distances[i][j] for i in mask for j in mask)
        return total / (len(mask) * len(mask))

    def narrowest(self, first: frozenset[int], second: frozenset[int]) -> frozenset[int]:
        return bitmask.narrowest(first, second)

    def closest(self, first: frozenset[int], second: frozenset[int]) -> frozenset[int]:
        """``NUMAInfo.Closest``: narrowest if sizes differ, else lower average distance, else lower value."""
        if len(first) != len(second):
            return self.narrowest(first, second)
        first_distance = self.average_distance(first)
        second_distance = self.average_distance(second)
        if first_distance == second_distance:
            return first if bitmask.mask_value(first) < bitmask.mask_value(second) else second
        return first if first_distance < second_distance else second


def filter_providers_hints(providers_hints: Sequence[ProviderHints]) -> list[list[TopologyHint]]:
    """``filterProvidersHints``: one hint list per (provider, resource), in provider order.

    A provider with no hints at all, or a resource whose list is ``None``, contributes
    ``[{any, preferred}]``; a resource whose list is empty contributes ``[{any, not preferred}]``.
    """
    filtered: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            filtered.append([TopologyHint(None, True)])
            continue
        # Upstream iterates a Go map here; the merge result does not depend on the order.
        for resource in sorted(hints):
            resource_hints = hints[resource]
            if resource_hints is None:
                filtered.append([TopologyHint(None, True)])
            elif len(resource_hints) == 0:
                filtered.append([TopologyHint(None, False)])
            else:
                filtered.append(list(resource_hints))
    return filtered


def merge_permutation(default_affinity: frozenset[int], permutation: Sequence[TopologyHint]) -> TopologyHint:
    """AND of the permutation's affinities; preferred only if every hint is preferred and
    every non-``None`` affinity is the same mask."""
    preferred = True
    merged = default_affinity
    first: frozenset[int] | None = None
    for hint in permutation:
        if hint.numa_nodes is not None:
            if first is None:
                first = hint.numa_nodes
            elif hint.numa_nodes != first:
                preferred = False
            merged = merged & hint.numa_nodes
        if not hint.preferred:
            preferred = False
    return TopologyHint(frozenset(merged), preferred)


def _iterate_permutations(hint_lists: Sequence[Sequence[TopologyHint]]) -> Iterator[tuple[TopologyHint, ...]]:
    # The first list is the outermost loop, like upstream's recursive iterator.
    return product(*hint_lists)


def _max_of_min_affinity_counts(hint_lists: Sequence[Sequence[TopologyHint]]) -> int:
    best = 0
    for hints in hint_lists:
        counts = [len(h.numa_nodes) for h in hints if h.numa_nodes is not None]
        if counts:
            best = max(best, min(counts))
    return best


class HintMerger:
    """Upstream's ``HintMerger``: pick the best merged hint over all permutations."""

    def __init__(
        self,
        numa_info: NUMAInfo,
        hint_lists: Sequence[Sequence[TopologyHint]],
        *,
        use_closest: bool = False,
    ) -> None:
        self.numa_info = numa_info
        self.hint_lists = [list(hints) for hints in hint_lists]
        #: Among non-preferred hints, aim for the count the most demanding resource needs.
        self.best_non_preferred_affinity_count = _max_of_min_affinity_counts(self.hint_lists)
        self.use_closest = use_closest

    def _compare_masks(self, current: TopologyHint, candidate: TopologyHint) -> TopologyHint:
        assert current.numa_nodes is not None and candidate.numa_nodes is not None
        if candidate.numa_nodes == current.numa_nodes:
            return current
        if self.use_closest:
            best = self.numa_info.closest(current.numa_nodes, candidate.numa_nodes)
        else:
            best = self.numa_info.narrowest(current.numa_nodes, candidate.numa_nodes)
        return current if best == current.numa_nodes else candidate

    def compare(self, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
        assert candidate.numa_nodes is not None
        if len(candidate.numa_nodes) == 0:
            return current
        if current is None:
            return candidate
        assert current.numa_nodes is not None
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return self._compare_masks(current, candidate)

        # Both non-preferred: get as close as possible to (but not above) the best count.
        best_count = self.best_non_preferred_affinity_count
        current_count = len(current.numa_nodes)
        candidate_count = len(candidate.numa_nodes)
        if current_count > best_count:
            return self._compare_masks(current, candidate)
        if current_count == best_count:
            if candidate_count != best_count:
                return current
            return self._compare_masks(current, candidate)
        if candidate_count > best_count:
            return current
        if candidate_count == best_count:
            return candidate
        if candidate_count > current_count:
            return candidate
        if candidate_count < current_count:
            return current
        return self._compare_masks(current, candidate)

    def merge(self) -> TopologyHint:
        default_affinity = self.numa_info.default_affinity
        best: TopologyHint | None = None
        for permutation in _iterate_permutations(self.hint_lists):
            best = self.compare(best, merge_permutation(default_affinity, permutation))
        if best is None:
            return TopologyHint(default_affinity, False)
        return best


def _filter_single_numa_hints(hint_lists: Sequence[Sequence[TopologyHint]]) -> list[list[TopologyHint]]:
    # Keep only "don't care" preferred hints and preferred single-node hints; a list may empty out.
    return [
        [h for h in hints if h.preferred and (h.numa_nodes is None or len(h.numa_nodes) == 1)]
        for hints in hint_lists
    ]


@dataclass(frozen=True)
class AdmitResult:
    """The topology manager's ``PodAdmitResult`` plus the per-container affinities it stored.

    On rejection ``affinities`` holds what was stored before the failing container (container
    scope): upstream keeps those (and their allocations) until stale-state cleanup.
    """

    admit: bool
    reason: str = ""
    message: str = ""
    affinities: Mapping[str, TopologyHint] = field(default_factory=dict)


def admit_result_for_error(
    error: BaseException | None, affinities: Mapping[str, TopologyHint]
) -> AdmitResult:
    """``admission.GetPodAdmitResult``: typed errors keep their reason, others are "unexpected".

    An error is typed when it has a string ``reason`` attribute (upstream: ``Type()``),
    e.g. :class:`TopologyAffinityError` or the CPU manager's SMT alignment error.
    """
    if error is None:
        return AdmitResult(True, affinities=dict(affinities))
    reason = getattr(error, "reason", None)
    if isinstance(reason, str) and reason:
        return AdmitResult(False, reason, str(error), dict(affinities))
    return AdmitResult(
        False,
        AdmissionReason.UNEXPECTED_ADMISSION_ERROR.value,
        f"Allocate failed due to {error}, which is unexpected",
        dict(affinities),
    )


#: Per-container hints: a mapping ``container name -> providers' hints`` or a callable
#: called once per container, *after* the previous container was allocated.
ContainerHintsSource = Mapping[str, Sequence[ProviderHints]] | Callable[[str], Sequence[ProviderHints]]
#: Pod-scope hints: the providers' ``GetPodTopologyHints`` answers, or a callable giving them.
PodHintsSource = Sequence[ProviderHints] | Callable[[], Sequence[ProviderHints]]
#: ``allocate(container, affinity)`` runs every provider's ``Allocate``; raising rejects the pod.
Allocator = Callable[[str, TopologyHint], None]


class TopologyManager:
    """A configured topology manager: ``merge`` one set of hints, or ``admit`` a whole pod."""

    def __init__(
        self,
        numa_nodes: Sequence[int],
        policy: str = Policy.NONE.value,
        scope: str = Scope.CONTAINER.value,
        options: Mapping[str, str] | None = None,
        distances: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        """Validate like ``NewManager``; raises :class:`TopologyManagerConfigError`.

        Order of checks as upstream: options, NUMA discovery (distances are needed only
        with prefer-closest), the NUMA node limit (not for ``none``), policy name, scope name.
        """
        self.options = PolicyOptions.parse(options)
        nodes = tuple(sorted(numa_nodes))
        if self.options.prefer_closest_numa:
            for node in nodes:
                row = (distances or {}).get(node)
                if row is None or any(other >= len(row) for other in nodes):
                    raise TopologyManagerConfigError(
                        "cannot discover NUMA topology: error getting NUMA distances from sysfs: "
                        f"problem reading /sys/devices/system/node/node{node}/distance"
                    )
        self.numa_info = NUMAInfo(nodes, dict(distances or {}))
        if policy != Policy.NONE and len(nodes) > self.options.max_allowable_numa_nodes:
            raise TopologyManagerConfigError(
                f"unsupported on machines with more than {self.options.max_allowable_numa_nodes} NUMA Nodes"
            )
        if policy not in set(Policy):
            raise TopologyManagerConfigError(f'unknown policy: "{policy}"')
        if scope not in set(Scope):
            raise TopologyManagerConfigError(f'unknown scope: "{scope}"')
        self.policy = Policy(policy)
        self.scope = Scope(scope)

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        """The policy's ``Merge``: the best hint and whether the policy admits it."""
        if self.policy == Policy.NONE:
            return TopologyHint(None, False), True
        hint_lists = filter_providers_hints(providers_hints)
        if self.policy == Policy.SINGLE_NUMA_NODE:
            merger = HintMerger(self.numa_info, _filter_single_numa_hints(hint_lists))
            best = merger.merge()
            if best.numa_nodes == self.numa_info.default_affinity:
                best = TopologyHint(None, best.preferred)
            return best, best.preferred
        merger = HintMerger(self.numa_info, hint_lists, use_closest=self.options.prefer_closest_numa)
        best = merger.merge()
        if self.policy == Policy.BEST_EFFORT:
            return best, True
        return best, best.preferred

    def admit(
        self,
        containers: Sequence[str],
        *,
        container_hints: ContainerHintsSource | None = None,
        pod_hints: PodHintsSource | None = None,
        allocate: Allocator | None = None,
    ) -> AdmitResult:
        """``Admit`` for one pod whose init containers then app containers are ``containers``.

        * policy ``none``: no hints; each container gets ``{any, not preferred}`` and is allocated.
        * scope ``container``: per container, gather hints, merge, reject on a refusal,
          else store the affinity and allocate before looking at the next container.
        * scope ``pod``: gather the pod's hints once, merge once, then store the same
          affinity for every container and allocate them in order.

        An exception from ``allocate`` rejects the pod (reason from the error, else
        ``UnexpectedAdmissionError``); nothing already allocated is rolled back.
        """
        affinities: dict[str, TopologyHint] = {}

        def _allocate(name: str, hint: TopologyHint) -> BaseException | None:
            if allocate is None:
                return None
            try:
                allocate(name, hint)
            except Exception as error:  # any provider error becomes an admission result
                return error
            return None

        if self.policy == Policy.NONE:
            for name in containers:
                affinities[name] = TopologyHint(None, False)
                error = _allocate(name, affinities[name])
                if error is not None:
                    return admit_result_for_error(error, affinities)
            return admit_result_for_error(None, affinities)

        if self.scope == Scope.POD:
            gathered = pod_hints() if callable(pod_hints) else (pod_hints or ())
            best, admitted = self.merge(gathered)
            if not admitted:
                return admit_result_for_error(TopologyAffinityError(), affinities)
            for name in containers:
                affinities[name] = best
                error = _allocate(name, best)
                if error is not None:
                    return admit_result_for_error(error, affinities)
            return admit_result_for_error(None, affinities)

        for name in containers:
            if callable(container_hints):
                gathered = container_hints(name)
            else:
                gathered = (container_hints or {}).get(name, ())
            best, admitted = self.merge(gathered)
            if not admitted:
                return admit_result_for_error(TopologyAffinityError(), affinities)
            affinities[name] = best
            error = _allocate(name, best)
            if error is not None:
                return admit_result_for_error(error, affinities)
        return admit_result_for_error(None, affinities)
