"""NodeAffinity: ``nodeSelector`` and node affinity terms filter and score nodes (upstream ``nodeaffinity``).

Filter: the node must carry every ``spec.nodeSelector`` label and match at least one
``requiredDuringSchedulingIgnoredDuringExecution`` term; a term ANDs its
``matchExpressions`` (on labels: In, NotIn, Exists, DoesNotExist, Gt, Lt) and its
``matchFields`` (only ``metadata.name`` with In/NotIn and exactly one value).  A term with
no requirement, or with an invalid one, matches nothing, as upstream's lazy-error selector.

PreFilter narrows the candidate nodes when every required term names nodes through
``matchFields metadata.name In`` (upstream ``PreFilterResult``); it returns
``(Status, frozenset[str] | None)`` as :mod:`nrop.sched.runtime` accepts.

Score: the sum of the weights of the preferred terms the node matches, normalised so the
best node gets 100.  Args (``NodeAffinityArgs.addedAffinity``) add scheduler-enforced
terms to every pod.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.sched.errors import ConfigError
from nrop.sched.framework import ActionType, ClusterEvent, CycleState, Handle, NodeInfo, Obj, Status

from .helper import args_mapping, default_normalize_score

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_OBJECT_NAME_FIELD = "metadata.name"
_INT64 = re.compile(r"^[+-]?[0-9]+$")
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

Matcher = Callable[[Mapping[str, str], str], bool]
"""``matcher(node_labels, node_name)``."""


def _parse_int64(text: str) -> int | None:
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def requirement_error(req: Mapping[str, Any], *, field: bool) -> tuple[str, str] | None:
    """Why a node selector requirement is invalid as ``(subfield, message)``, or None.

    The checks are upstream's when it builds label and field selectors from the terms.
    """
    op = req.get("operator")
    values = req.get("values") or []
    if field:
        if op not in ("In", "NotIn"):
            return "operator", f'Unsupported value: "{op}": supported values: "In", "NotIn"'
        return None if len(values) == 1 else ("values", "must have one element")
    if op not in _LABEL_OPERATORS:
        return "operator", f'Unsupported value: "{op}"'
    if op in ("In", "NotIn") and not values:
        return "values", "for 'in', 'notin' operators, values set can't be empty"
    if op in ("Exists", "DoesNotExist") and values:
        return "values", "values set must be empty for exists and does not exist"
    if op in ("Gt", "Lt") and (len(values) != 1 or _parse_int64(str(values[0])) is None):
        return "values", "for 'Gt', 'Lt' operators, exactly one integer value is required"
    return None


def _label_matcher(req: Mapping[str, Any]) -> Matcher:
    key = req.get("key", "")
    op = req["operator"]
    values = frozenset(str(v) for v in req.get("values") or [])
    if op == "In":
        return lambda labels, _name: key in labels and labels[key] in values
    if op == "NotIn":
        return lambda labels, _name: key not in labels or labels[key] not in values
    if op == "Exists":
        return lambda labels, _name: key in labels
    if op == "DoesNotExist":
        return lambda labels, _name: key not in labels
    bound = _parse_int64(next(iter(values)))
    assert bound is not None  # requirement_error() vetted it

    def compare(labels: Mapping[str, str], _name: str) -> bool:
        if key not in labels:
            return False
        value = _parse_int64(labels[key])
        if value is None:
            return False
        return value > bound if op == "Gt" else value < bound

    return compare


def _field_matcher(req: Mapping[str, Any]) -> Matcher:
    key = req.get("key", "")
    wanted = str((req.get("values") or [""])[0])
    equal = req["operator"] == "In"

    def match(_labels: Mapping[str, str], name: str) -> bool:
        actual = name if key == _OBJECT_NAME_FIELD else ""
        return (actual == wanted) == equal

    return match


def compile_term(term: Mapping[str, Any]) -> Matcher | None:
    """A node selector term as one matcher, or None when it can match no node."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return None
    matchers: list[Matcher] = []
    for req in expressions:
        if requirement_error(req, field=False):
            return None
        matchers.append(_label_matcher(req))
    for req in fields:
        if requirement_error(req, field=True):
            return None
        matchers.append(_field_matcher(req))
    return lambda labels, name: all(m(labels, name) for m in matchers)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Required node selector terms, ORed; None stands for "no terms given" (matches all)."""

    terms: tuple[Matcher, ...] | None

    @classmethod
    def of(cls, selector: Mapping[str, Any] | None) -> NodeSelector:
        if selector is None:
            return cls(None)
        compiled = (compile_term(t) for t in selector.get("nodeSelectorTerms") or [])
        return cls(tuple(m for m in compiled if m is not None))

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.terms is None:
            return True
        return any(term(labels, name) for term in self.terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND the required affinity (upstream ``GetRequiredNodeAffinity``)."""

    node_selector: Mapping[str, str]
    affinity: NodeSelector

    @classmethod
    def of(cls, pod: Obj) -> RequiredNodeAffinity:
        spec = pod.get("spec") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        return cls(spec.get("nodeSelector") or {}, NodeSelector.of(required))

    def matches(self, node: Obj) -> bool:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False
        return self.affinity.matches(labels, meta.get("name", ""))


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Weighted preferred terms (upstream ``PreferredSchedulingTerms``)."""

    terms: tuple[tuple[int, Matcher], ...]

    @classmethod
    def of(cls, preferred: Sequence[Mapping[str, Any]] | None) -> PreferredTerms:
        terms = []
        for item in preferred or []:
            weight = int(item.get("weight") or 0)
            matcher = compile_term(item.get("preference") or {})
            if weight and matcher is not None:
                terms.append((weight, matcher))
        return cls(tuple(terms))

    def score(self, node: Obj) -> int:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        name = meta.get("name", "")
        return sum(weight for weight, matcher in self.terms if matcher(labels, name))


def _pod_preferred(pod: Obj) -> PreferredTerms:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    return PreferredTerms.of(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))


def _required_node_names(required: Mapping[str, Any]) -> frozenset[str] | None:
    """The nodes named by ``metadata.name In`` in every term, or None when some term names none."""
    names: set[str] = set()
    for term in required.get("nodeSelectorTerms") or []:
        term_names: set[str] | None = None
        for req in term.get("matchFields") or []:
            if req.get("key") == _OBJECT_NAME_FIELD and req.get("operator") == "In":
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
