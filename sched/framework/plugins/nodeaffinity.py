"""NodeAffinity: ``nodeSelector`` and node affinity terms filter and score nodes (upstream ``nodeaffinity``).

Filter: the node must carry every ``spec.nodeSelector`` label and match at least one
``requiredDuringSchedulingIgnoredDuringExecution`` term; a term ANDs its
``matchExpressions`` (on labels: In, NotIn, Exists, DoesNotExist, Gt, Lt) and its
``matchFields`` (only ``metadata.name`` with In/NotIn and exactly one value).  A term with
no requirement, or with an invalid one, matches nothing, as upstream's lazy-error selector.

PreFilter narrows the candidate nodes when every required term names nodes through
``matchFields metadata.name In`` (upstream ``PreFilterResult``); it returns
``(Status, frozenset[str] | None)`` as :mod:`nrop.sched.framework.runtime` accepts.

Score: the sum of the weights of the preferred terms the node matches, normalised so the
best node gets 100.  Args (``NodeAffinityArgs.addedAffinity``) add scheduler-enforced
terms to every pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nrop.api.nodeaffinity import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    PreferredTerms,
    RequiredNodeAffinity,
    requirement_error,
)
from nrop.sched.errors import ConfigError
from nrop.sched.framework.interface import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

from .helper import args_mapping, default_normalize_score

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


def _pod_preferred(pod: Obj) -> PreferredTerms:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    return PreferredTerms.of(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))


def _required_node_names(required: Mapping[str, Any]) -> frozenset[str] | None:
    """The nodes named by ``metadata.name In`` in every term, or None when some term names none."""
    names: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        term_names: set[str] | None = None
        for req in term.get("matchFields") or []:
            if req.get("key") == OBJECT_NAME_FIELD and req.get("operator") == "In":
                values = {str(v) for v in req.get("values") or []}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


# ------------------------------------------------------------------------------ args


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    added_affinity: Mapping[str, Any] | None = None


def _validate_selector_terms(terms: Any, path: str) -> None:
    if not isinstance(terms, list):
        raise ConfigError(path, "must be a list")
    for i, term in enumerate(terms):
        for kind, field in (("matchExpressions", False), ("matchFields", True)):
            for j, req in enumerate((term or {}).get(kind) or []):
                error = requirement_error(req, field=field)
                if error:
                    raise ConfigError(f"{path}[{i}].{kind}[{j}].{error[0]}", error[1])


class NodeAffinity:
    name = NAME

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        added = (args or NodeAffinityArgs()).added_affinity or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self._added_selector = NodeSelector.of(required) if required is not None else None
        preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution")
        self._added_preferred = PreferredTerms.of(preferred) if preferred else None

    @classmethod
    def parse_args(cls, args: Mapping[str, Any] | None, path: str) -> NodeAffinityArgs:
        body = args_mapping(args, path, ("addedAffinity",))
        added = body.get("addedAffinity")
        if added is None:
            return NodeAffinityArgs()
        apath = f"{path}.addedAffinity"
        if not isinstance(added, Mapping):
            raise ConfigError(apath, "must be an object")
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            _validate_selector_terms(
                (required or {}).get("nodeSelectorTerms") or [],
                f"{apath}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
            )
        for i, item in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            ipath = f"{apath}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            weight = item.get("weight")
            if not isinstance(weight, int) or not 1 <= weight <= 100:
                raise ConfigError(f"{ipath}.weight", f"Invalid value: {weight!r}: must be in the range 1-100")
            _validate_selector_terms([item.get("preference") or {}], f"{ipath}.preference")
        return NodeAffinityArgs(dict(added))

    def pre_filter(self, state: CycleState, pod: Obj) -> Status | tuple[Status, frozenset[str] | None]:
        spec = pod.get("spec") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        if required is None and self._added_selector is None and spec.get("nodeSelector") is None:
            return Status.skip()
        state.write(_PRE_FILTER_KEY, RequiredNodeAffinity.of(pod))
        if not required or not required.get("nodeSelectorTerms"):
            return Status.success()
        names = _required_node_names(required)
        if names is None:
            return Status.success()
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT), None
        return Status.success(), names

    def filter(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> Status:
        node = node_info.node
        if self._added_selector is not None:
            meta = node.get("metadata") or {}
            if not self._added_selector.matches(meta.get("labels") or {}, meta.get("name", "")):
                return Status.unresolvable(ERR_REASON_ENFORCED)
        required = state.read(_PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity.of(pod)
        if not required.matches(node):
            return Status.unresolvable(ERR_REASON_POD)
        return Status.success()

    def pre_score(self, state: CycleState, pod: Obj, nodes: list[NodeInfo]) -> Status:
        preferred = _pod_preferred(pod)
        if not preferred.terms and self._added_preferred is None:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, preferred)
        return Status.success()

    def score(self, state: CycleState, pod: Obj, node_info: NodeInfo) -> tuple[int, Status]:
        total = self._added_preferred.score(node_info.node) if self._added_preferred else 0
        preferred = state.read(_PRE_SCORE_KEY)
        if preferred is None:
            preferred = _pod_preferred(pod)
        return total + preferred.score(node_info.node), Status.success()

    def normalize_score(self, state: CycleState, pod: Obj, scores: dict[str, int]) -> Status:
        return default_normalize_score(100, False, scores)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]
